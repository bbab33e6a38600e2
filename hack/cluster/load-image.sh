#!/usr/bin/env bash
# Imports docker-archive image tarballs (what `make image` and build.sh write) into the local
# cluster's containerd, where pods find them by their tag (docker.io/library/<repository>:<tag>)
# with imagePullPolicy IfNotPresent or Never. Re-importing a tag replaces the image.
#
#   hack/cluster/load-image.sh TARBALL...
#   hack/cluster/load-image.sh               # the e2e suite's images that build.sh wrote:
#                                            # bin/cluster/stsload.tar and redis.tar
#
# For another cluster, load the same tarballs with its own tool instead, e.g.
# `kind load image-archive TARBALL`, or `docker load -i TARBALL` and push to a registry.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root_linux
daemon_pid containerd >/dev/null || die "the local cluster is not running (make cluster-up)"
if [[ $# == 0 ]]; then
	set -- "$CLUSTER_BIN/stsload.tar" "$CLUSTER_BIN/redis.tar"
fi
for tar in "$@"; do
	[[ -f $tar ]] || die "no image tarball $tar (hack/cluster/build.sh writes bin/cluster's)"
	ctr_ images import "$tar" | sed 's/^unpacking /imported /' | sed "s/^/$(date +%H:%M:%S) cluster: /" >&2
done
