#!/usr/bin/env bash
# Builds what the local cluster runs, from the Go module proxy only, into git-ignored folders
# keyed by version; whatever is already built is kept.
#
#   hack/cluster/build.sh [--pin] [--tools]
#
#   bin/k8s/<K8S_VERSION>/   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#                            kube-proxy, kubectl and etcd (hack/envtest.sh builds them)
#   bin/cluster/             coredns-<version>; pause and its image pause.tar (the pods'
#                            sandbox); stsload and its image stsload.tar (the load generator
#                            of the e2e suite and the demo, test/e2e/stsload); redis.tar, the
#                            Redis of the e2e suite (examples/redis): this machine's Debian
#                            redis-server and redis-cli with the shared libraries they need
#
# Every image's tag is in <image>.tar.tag. The Redis image needs Debian's redis-server and
# redis-tools packages (/usr/bin/redis-server, /usr/bin/redis-cli).
#
# --pin re-resolves CoreDNS's build module (hack/cluster/coredns) after a version change.
# --tools builds only what a run against another cluster needs: kubectl, stsload, and the Redis
# image where redis-server is installed (without it the suite runs examples/redis's own image).
# A cold build takes several minutes and about 9 GB of Go caches; a warm one, seconds.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export CGO_ENABLED=0 GOWORK=off

build_kubernetes() { # COMPONENT...
	local missing=()
	for c in "$@"; do
		[[ -x $K8S_BIN/$c ]] || missing+=("$c")
	done
	[[ ${#missing[@]} -gt 0 ]] || return 0
	log "building ${missing[*]} from the Go module proxy into $K8S_BIN (cold: about 8 minutes on 2 cores)"
	K8S_VERSION=$K8S_VERSION ETCD_VERSION=$ETCD_VERSION ENVTEST_BIN_DIR=$repo/bin/k8s "$repo/hack/envtest.sh" "${missing[@]}" >/dev/null
}

build_coredns() {
	local src=$repo/hack/cluster/coredns out=$CLUSTER_BIN/coredns-$COREDNS_VERSION
	if [[ $pin == true ]]; then
		log "resolving github.com/coredns/coredns $COREDNS_VERSION"
		(cd "$src" && GOFLAGS=-mod=mod go get "github.com/coredns/coredns@$COREDNS_VERSION" && GOFLAGS=-mod=mod go mod tidy)
	fi
	[[ -x $out ]] && return 0
	grep -q "github.com/coredns/coredns $COREDNS_VERSION\$" "$src/go.mod" ||
		die "$src/go.mod does not pin CoreDNS $COREDNS_VERSION: run hack/cluster/build.sh --pin"
	log "building CoreDNS $COREDNS_VERSION (cold: about 2 minutes)"
	mkdir -p "$CLUSTER_BIN"
	(cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -ldflags '-s -w' -o "$out.tmp" .)
	mv "$out.tmp" "$out"
}

# build_image PACKAGE NAME REPOSITORY builds a static Go program into bin/cluster/NAME and packs
# it as a single-binary image (hack/imagebuild -program) at bin/cluster/NAME.tar, tagged with
# the binary's hash (written to NAME.tar.tag): a changed program never meets a stale image of
# the same name in a node's image store.
build_image() {
	local pkg=$1 name=$2 repository=$3 bin=$CLUSTER_BIN/$2 tar=$CLUSTER_BIN/$2.tar tag
	mkdir -p "$CLUSTER_BIN"
	(cd "$repo" && go build -trimpath -ldflags '-s -w' -o "$bin" "$pkg")
	tag=$repository:$(sha256sum "$bin" | cut -c1-12)
	[[ -f $tar && $(cat "$tar.tag" 2>/dev/null) == "$tag" ]] && return 0
	(cd "$repo" && go run ./hack/imagebuild -o "$tar" -tag "$tag" -arch "$(go env GOARCH)" -program "$bin" >/dev/null)
	echo "$tag" >"$tar.tag"
	log "wrote image $tag to $tar"
}

# build_redis_image packs this machine's /usr/bin/redis-server (the entrypoint) and
# /usr/bin/redis-cli (readiness probe, kubectl exec, the suite's client pods) with their ELF
# interpreter and shared libraries (hack/imagebuild -dynamic) at bin/cluster/redis.tar, tagged
# with the hash of the packed files (written to redis.tar.tag). With --optional a machine
# without redis-server gets no Redis image instead of an error.
build_redis_image() {
	local tar=$CLUSTER_BIN/redis.tar list tag p
	for p in "${REDIS_PROGRAMS[@]}"; do
		if [[ ! -x $p ]]; then
			if [[ ${1:-} == --optional ]]; then
				rm -f "$tar" "$tar.tag"
				log "no Redis image: $p is not installed; the e2e suite runs examples/redis's own image"
				return 0
			fi
			die "$p is not installed: the e2e suite's Redis image packs Debian's redis-server and redis-cli (apt-get install redis-server redis-tools)"
		fi
	done
	local args=(-dynamic "${REDIS_PROGRAMS[0]}" -also "${REDIS_PROGRAMS[1]}" -arch "$(go env GOARCH)")
	list=$(cd "$repo" && go run ./hack/imagebuild "${args[@]}" -list)
	tag=sts-e2e-redis:$(sha256sum <<<"$list" | cut -c1-12)
	[[ -f $tar && $(cat "$tar.tag" 2>/dev/null) == "$tag" ]] && return 0
	mkdir -p "$CLUSTER_BIN"
	(cd "$repo" && go run ./hack/imagebuild "${args[@]}" -o "$tar" -tag "$tag" >/dev/null)
	echo "$tag" >"$tar.tag"
	log "wrote image $tag to $tar ($(wc -l <<<"$list") files: ${REDIS_PROGRAMS[*]}, their ELF interpreter and libraries)"
}
REDIS_PROGRAMS=(/usr/bin/redis-server /usr/bin/redis-cli)

pin=false tools=false
for arg in "$@"; do
	case $arg in
	--pin) pin=true ;;
	--tools) tools=true ;;
	*) die "unknown option $arg" ;;
	esac
done
if [[ $tools == true ]]; then
	build_kubernetes kubectl
	build_redis_image --optional
else
	build_kubernetes kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd
	build_coredns
	build_image ./hack/cluster/pause pause sts-local-pause
	build_redis_image
fi
build_image ./test/e2e/stsload stsload sts-e2e-stsload
