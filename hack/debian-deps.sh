#!/usr/bin/env bash
# The one place that knows which Debian packages each make target needs, and the first step of
# those targets: it installs the missing ones, or says how, before anything long starts.
#
#   hack/debian-deps.sh TARGET            bring TARGET's packages; prints nothing when all are here
#   hack/debian-deps.sh --list TARGET     print TARGET's packages on one line (the README names
#                                         the same: test/docs checks it)
#   hack/debian-deps.sh --list-nonroot TARGET   those a run as another user than root needs
#   hack/debian-deps.sh --provides PKG    print what shows that PKG is installed: commands looked
#                                         up on PATH, files given by absolute path
#
# TARGET: test, demo, e2e, cluster (make cluster-up), examples-test, bench, faults, or ci
# (everything .ci/run runs). make test, make examples-test, make bench and make faults run it as
# their first prerequisite (deps-TARGET); hack/cluster's demo.sh, e2e.sh (local cluster only) and
# up.sh before they build.
#
# A package is here when its commands are on PATH (where the tests and scripts look them up) and
# its files exist. When some are missing:
#   - as root, with apt-get: one `apt-get update` (one retry after DEBIAN_DEPS_RETRY_DELAY
#     seconds, 10 by default, for a mirror's hiccup), then one `apt-get install -y
#     --no-install-recommends` of the missing packages, quiet unless it fails; then every package
#     is checked again, and a package apt-get did not bring is an error.
#   - otherwise (not root, or no apt-get): exits 2 at once, printing the `apt-get install` line to
#     run as root.
#
# Environment:
#   DEBIAN_DEPS=off          skip this step: a machine that is not Debian, with its tools installed
#                            otherwise (the tests then say what they miss)
#   DEBIAN_DEPS_RETRY_DELAY  seconds before apt-get update's one retry (10)
#   DEBIAN_DEPS_ROOT         for hack/debian-deps-check.sh only: look for the packages' files
#                            under this directory instead of /, so that a test can hide them
set -euo pipefail

# Every target downloads from the Go module proxy over HTTPS (its tools, envtest's Kubernetes, the
# cluster's components): Go needs the CA certificates.
base=(ca-certificates)

# A package followed by :root is needed only by a run as root (its test skips otherwise).
test_packages=(
	"${base[@]}"
	gcc libc6-dev                           # go test -race needs cgo: a C compiler, libc's headers
	redis-server redis-sentinel redis-tools # internal/redistest: real servers, sentinels, clusters; redis-cli
	prometheus                              # promtool (make rules-test, test/monitoring), prometheus (test/monitoring)
	skopeo                                  # hack/imagebuild: skopeo reads the image tarball
	chromium                                # internal/sts/webui: the web page's browser tests
	default-jdk-headless                    # internal/sts/javaregex: its cases checked against java.util.regex
	containerd:root runc:root               # hack/imagebuild: the image run by containerd, as root only
)

# The local cluster (hack/cluster/up.sh): make cluster-up, make demo, make e2e.
cluster_packages=(
	"${base[@]}"
	containerd runc              # the container runtime
	containernetworking-plugins  # the pods' network: bridge, host-local, loopback, portmap
	iptables conntrack iproute2  # kube-proxy, the cluster's isolating rules, its bridges and routes
	openssl                      # the cluster's certificates
	curl                         # up.sh waits for etcd, kube-apiserver and CoreDNS
	redis-server redis-tools     # build.sh packs redis-server and redis-cli as the cluster's Redis image
)

examples_packages=(
	"${base[@]}"
	jmeter jmeter-http default-jdk-headless # JMeter 2.13; javac builds hack/jmeter/Launcher.java
	python3-locust                          # Locust
)

# make bench: the benchmarks of the Redis backend, and redis-benchmark as their yardstick.
bench_packages=("${base[@]}" redis-server redis-tools)

# make faults (issue 23's campaign): Redis paused, killed and failed over by Sentinel under the
# clients; what else it comes to need goes here.
faults_packages=("${base[@]}" redis-server redis-sentinel redis-tools)

# .ci/run: make and git before anything (the machine has Go only), curl for make readme-test's
# README blocks, python3 for make image-check and make chart-test, and every target it runs.
ci_packages=(
	make git curl python3
	"${test_packages[@]%:root}" "${examples_packages[@]}" "${cluster_packages[@]}"
)

log() { echo "debian-deps: $*" >&2; }
die() {
	log "$*"
	exit 1
}
usage() { die "usage: hack/debian-deps.sh [--list|--list-nonroot] test|demo|e2e|cluster|examples-test|bench|faults|ci, or --provides PACKAGE"; }

# provides PACKAGE prints what shows that PACKAGE is installed: commands, and files (absolute).
provides() {
	case $1 in
	make | git | gcc | redis-server | redis-sentinel | skopeo | chromium | runc | conntrack | openssl | curl | python3)
		echo "$1" ;;
	ca-certificates) echo /etc/ssl/certs/ca-certificates.crt ;;
	libc6-dev) echo /usr/include/stdlib.h ;;
	redis-tools) echo redis-cli redis-benchmark ;;
	prometheus) echo promtool prometheus ;;
	containerd) echo containerd ctr ;;
	containernetworking-plugins) echo /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /usr/lib/cni/portmap ;;
	iptables) echo iptables ip6tables ;;
	iproute2) echo ip ;;
	jmeter) echo /usr/share/jmeter/bin/ApacheJMeter.jar ;;
	jmeter-http) echo /usr/share/jmeter/lib/ext/ApacheJMeter_http.jar ;;
	default-jdk-headless) echo java javac ;;
	python3-locust) echo locust ;;
	*) return 1 ;;
	esac
}

# packages TARGET prints TARGET's packages, one a line, each once, in the order of the lists.
packages() {
	local -a list
	case $1 in
	test) list=("${test_packages[@]}") ;;
	demo | e2e | cluster) list=("${cluster_packages[@]}") ;;
	examples-test) list=("${examples_packages[@]}") ;;
	bench) list=("${bench_packages[@]}") ;;
	faults) list=("${faults_packages[@]}") ;;
	ci) list=("${ci_packages[@]}") ;;
	*) return 1 ;;
	esac
	printf '%s\n' "${list[@]}" | awk '!seen[$0]++'
}

# here PACKAGE says whether every command of PACKAGE is on PATH and every file of it exists.
here() {
	local what all
	read -ra all <<<"$(provides "$1")"
	for what in "${all[@]}"; do
		if [[ $what == /* ]]; then
			[[ -e ${DEBIAN_DEPS_ROOT:-}$what ]] || return 1
		else
			command -v "$what" >/dev/null 2>&1 || return 1
		fi
	done
}

case ${1:-} in
--list)
	[[ $# == 2 ]] || usage
	entries=$(packages "$2") || usage
	paste -sd ' ' - <<<"${entries//:root/}"
	exit 0
	;;
--list-nonroot)
	[[ $# == 2 ]] || usage
	entries=$(packages "$2") || usage
	grep -v ':root$' <<<"$entries" | paste -sd ' ' -
	exit 0
	;;
--provides)
	[[ $# == 2 ]] || usage
	provides "$2" || die "unknown package $2"
	exit 0
	;;
-* | '') usage ;;
esac
[[ $# == 1 ]] || usage
target=$1
entries=$(packages "$target") || usage
[[ ${DEBIAN_DEPS:-} != off ]] || exit 0

case $target in
ci) what=".ci/run" ;;
cluster) what="make cluster-up" ;;
*) what="make $target" ;;
esac
root=false
[[ $(id -u) != 0 ]] || root=true
missing=()
while read -r entry; do
	[[ $entry != *:root || $root == true ]] || continue
	here "${entry%:root}" || missing+=("${entry%:root}")
done <<<"$entries"
[[ ${#missing[@]} -gt 0 ]] || exit 0

if [[ $root != true ]] || ! command -v apt-get >/dev/null 2>&1; then
	log "$what needs Debian packages that are missing here: ${missing[*]}"
	if [[ $root != true ]]; then
		log "this step installs them only as root; install them (as root, or with sudo), then run $what again:"
	else
		log "this machine has no apt-get: on Debian this is the line to run (elsewhere install the same programs, or set DEBIAN_DEPS=off):"
	fi
	echo "  apt-get install --no-install-recommends ${missing[*]}" >&2
	exit 2
fi

started=$SECONDS
log "$what needs Debian packages that are missing here: installing ${missing[*]} (apt-get update, then apt-get install --no-install-recommends)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! apt-get update -qq >"$out" 2>&1; then
	delay=${DEBIAN_DEPS_RETRY_DELAY:-10}
	log "apt-get update failed; one retry in ${delay}s. It said:"
	sed 's/^/  /' "$out" >&2
	sleep "$delay"
	if ! apt-get update -qq >"$out" 2>&1; then
		cat "$out" >&2
		die "apt-get update failed twice"
	fi
fi
# Another apt-get or dpkg running on the machine holds the lock: wait for it, up to 5 minutes.
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 \
	"${missing[@]}" >"$out" 2>&1; then
	cat "$out" >&2
	die "apt-get install --no-install-recommends ${missing[*]} failed"
fi
hash -r
still=()
for p in "${missing[@]}"; do
	here "$p" || still+=("$p ($(provides "$p"))")
done
[[ ${#still[@]} == 0 ]] || die "apt-get installed them, yet still missing: ${still[*]} (PATH=$PATH)"
log "installed ${missing[*]} in $((SECONDS - started))s"
