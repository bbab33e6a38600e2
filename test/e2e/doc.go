// Package e2e is the end-to-end suite: it runs the operator, installed with the Helm chart, and
// real table-server pods on a real cluster, and drives them from load-generator pods (the
// stsload image) through their Services. Its tests carry the build tag e2e, so `go test ./...`
// does not run them; `make e2e` brings up the local cluster (hack/cluster), installs the
// operator and runs them:
//
//	go test -tags e2e -count=1 ./test/e2e/...
//
// The environment names the cluster and the tools: KUBECONFIG, E2E_LOAD_IMAGE (the stsload
// image, required), E2E_KUBECTL, E2E_HELM, E2E_CHART, E2E_RELEASE, E2E_OPERATOR_NAMESPACE,
// E2E_HOSTPATH_ROOT (where static hostPath volumes live on the node) and E2E_ARTIFACTS (where
// a failed test leaves its namespace's objects, events and logs). See hack/cluster/README.md.
package e2e
