// Package docs holds the tests of what the documentation tells users to type: every kubectl
// command of the README, the chart's NOTES.txt and alerts, examples/, docs/, config/samples and
// gitops/ names a resource type that exists, the SimpleTableServer CRD's names taken from the
// generated CRD itself; and the Debian packages the README says `make test` and `make demo` install
// are those hack/debian-deps.sh installs, the one place that runs apt-get.
package docs
