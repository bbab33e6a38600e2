#!/usr/bin/env bash
# make e2e: runs the end-to-end suite (test/e2e) against a real cluster.
#
# Without KUBECONFIG, or with KUBECONFIG naming the local cluster's file: brings up the local
# cluster (hack/cluster/up.sh) unless it runs already, and tears it down at the end if it
# brought it up (E2E_KEEP_CLUSTER=1 keeps it). Needs Linux and root; elsewhere it is skipped
# with a message and exit status 0 (1 with STS_REQUIRE_ALL=1, as in CI).
#
# With KUBECONFIG naming another cluster (kind, a cloud; use a disposable one: the suite
# installs and uninstalls the operator and leaves the CRD): runs there. Its nodes must find the
# images: E2E_IMAGE_LOAD is a command that loads an image tarball given as its last argument,
# e.g. E2E_IMAGE_LOAD='kind load image-archive'; without it the images (IMG, the stsload image
# and, when this machine has redis-server, the Redis image) must already be pullable by the
# nodes. Without redis-server here, the Redis test runs examples/redis's own image.
#
# Either way: builds the images, installs the operator with the Helm chart, runs
# `go test -tags e2e ./test/e2e/...`, and on failure leaves the cluster's state, events and
# logs in test/e2e/artifacts/<time>/. Environment from the Makefile: MAKE VERSION IMG HELM.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"
: "${MAKE:?run through make e2e}" "${VERSION:?}" "${IMG:?}" "${IMAGE_TAR:?}" "${HELM:?}"
started=$SECONDS

local_cluster=true
if [[ -n ${KUBECONFIG:-} && $(readlink -f "$KUBECONFIG") != $(readlink -f "$LOCAL_KUBECONFIG") ]]; then
	local_cluster=false
	log "make e2e: using the cluster of KUBECONFIG=$KUBECONFIG (unset KUBECONFIG for the local cluster)"
elif [[ $(uname -s) != Linux || $(id -u) != 0 ]]; then
	echo "make e2e: skipped: the local cluster needs Linux and root (this is $(uname -s), uid $(id -u))." \
		"Set KUBECONFIG to run the suite on another cluster."
	# CI (STS_REQUIRE_ALL=1) must run the suite: a skip there would pass for green.
	[[ ${STS_REQUIRE_ALL:-} != 1 ]] || exit 1
	exit 0
fi
# The local cluster's Debian packages first, before the long builds start; another cluster needs
# none (the Redis image is built only where redis-server is installed).
[[ $local_cluster != true ]] || "$repo/hack/debian-deps.sh" e2e

artifacts=$repo/test/e2e/artifacts/$(date +%Y%m%dT%H%M%S)
brought_up=false
finish() {
	local status=$?
	if [[ $status != 0 ]]; then
		stop_builds
		collect_artifacts || true
		log "make e2e: FAILED after $((SECONDS - started))s; the cluster's state, events and logs are in $artifacts"
	fi
	if [[ $brought_up == true && ${E2E_KEEP_CLUSTER:-} != 1 ]]; then
		"$here/down.sh" || log "tearing the local cluster down failed; run make cluster-down"
	fi
	[[ $status != 0 ]] || log "make e2e: passed in $((SECONDS - started))s"
}
trap finish EXIT

collect_artifacts() {
	mkdir -p "$artifacts"
	local k=("$KUBECTL" --request-timeout 20s)
	"${k[@]}" get nodes,namespaces,pods,services,deployments,jobs,persistentvolumes,persistentvolumeclaims,simpletableservers -A -o wide >"$artifacts/cluster.txt" 2>&1
	"${k[@]}" get events -A --sort-by .lastTimestamp >"$artifacts/events.txt" 2>&1
	"${k[@]}" describe nodes >"$artifacts/nodes.txt" 2>&1
	"${k[@]}" -n "$OPERATOR_NAMESPACE" logs "deployment/$RELEASE" --all-containers --timestamps >"$artifacts/operator.log" 2>&1
	if [[ $local_cluster == true ]]; then
		cp -r "$STATE/logs" "$artifacts/local-cluster-logs"
	fi
}

start_builds --suite
if [[ $local_cluster == true ]]; then
	export KUBECONFIG=$LOCAL_KUBECONFIG
	if cluster_running; then
		log "make e2e: reusing the running local cluster"
	else
		brought_up=true
		"$here/up.sh"
	fi
	wait_builds
	"$here/build.sh"
	"$here/load-image.sh" "$repo/$IMAGE_TAR" "$CLUSTER_BIN/stsload.tar" "$CLUSTER_BIN/redis.tar"
else
	"$here/build.sh" --tools
	wait_builds
	tars=("$repo/$IMAGE_TAR" "$CLUSTER_BIN/stsload.tar")
	[[ ! -f $CLUSTER_BIN/redis.tar.tag ]] || tars+=("$CLUSTER_BIN/redis.tar")
	if [[ -n ${E2E_IMAGE_LOAD:-} ]]; then
		for tar in "${tars[@]}"; do
			log "loading $tar: $E2E_IMAGE_LOAD $tar"
			$E2E_IMAGE_LOAD "$tar"
		done
	else
		log "E2E_IMAGE_LOAD is not set: the nodes must be able to pull $IMG$(for tar in "${tars[@]:1}"; do printf ', %s' "$(cat "$tar.tag")"; done)"
	fi
fi
install_operator "$IMG" "$repo/$IMAGE_TAR"

log "running the e2e suite (go test -tags e2e ./test/e2e/...)"
mkdir -p "$artifacts"
tests_started=$SECONDS
E2E_LOAD_IMAGE=$(cat "$CLUSTER_BIN/stsload.tar.tag")
E2E_REDIS_IMAGE=$(cat "$CLUSTER_BIN/redis.tar.tag" 2>/dev/null || true) # empty: examples/redis's own image
export E2E_LOAD_IMAGE E2E_REDIS_IMAGE E2E_KUBECTL=$KUBECTL E2E_HELM=$HELM E2E_CHART=$repo/charts/sts-operator \
	E2E_RELEASE=$RELEASE E2E_OPERATOR_NAMESPACE=$OPERATOR_NAMESPACE E2E_ARTIFACTS=$artifacts
if [[ $local_cluster == true ]]; then
	export E2E_HOSTPATH_ROOT=$STATE/hostpath # down.sh removes it
fi
(cd "$repo" && go test -tags e2e -count=1 -timeout 25m -v ./test/e2e/...) 2>&1 | tee "$artifacts/go-test.log" | grep -E '^\s*(---|ok|FAIL|PASS)|_test.go:'
log "the suite took $((SECONDS - tests_started))s"
rm -rf "$artifacts" # nothing to keep from a run that passed
