#!/usr/bin/env bash
# Builds Kubernetes control-plane binaries from the Go module proxy, and nothing else, into a
# git-ignored folder keyed by version, and prints that folder (what KUBEBUILDER_ASSETS names).
#
#   hack/envtest.sh [--pin] [component...]
#
# Components: kube-apiserver etcd kubectl (the default: what envtest needs), kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy (for a real cluster). A binary already present is not rebuilt.
#
# The build modules are pinned by hack/envtest/kubernetes/go.{mod,sum} and hack/envtest/etcd/
# (committed). The Kubernetes main packages are copied from the k8s.io/kubernetes module into a
# work folder next to the binaries, so no copy of them lives in git. --pin re-resolves the pins
# (after changing K8S_VERSION or ETCD_VERSION) and writes the new go.mod/go.sum files back.
#
# Environment: K8S_VERSION (v1.37.2), ETCD_VERSION (v3.6.16), ENVTEST_BIN_DIR (bin/k8s).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
ALL_K8S_COMPONENTS=(kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pins=$repo/hack/envtest
base=${ENVTEST_BIN_DIR:-$repo/bin/k8s}
out=$base/$K8S_VERSION
work=$base/.work

log() { echo "envtest: $*" >&2; }
die() { log "$*"; exit 1; }

pin=false
components=()
for arg in "$@"; do
	case $arg in
	--pin) pin=true ;;
	etcd) components+=("$arg") ;;
	-*) die "unknown option $arg" ;;
	*)
		[[ " ${ALL_K8S_COMPONENTS[*]} " == *" $arg "* ]] || die "unknown component $arg (known: etcd ${ALL_K8S_COMPONENTS[*]})"
		components+=("$arg")
		;;
	esac
done
[[ ${#components[@]} -gt 0 ]] || components=(kube-apiserver etcd kubectl)

export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOWORK=off

# version_ldflags stamps the version the binaries report; kubectl refuses a server whose version
# it cannot parse.
version_ldflags() {
	local minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	local x
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		x+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done
	echo "-s -w$x"
}

# pin_kubernetes writes a build module requiring k8s.io/kubernetes with every staging module
# (its go.mod replaces them with ./staging/... paths, which a dependent cannot use) replaced by
# the published module of the matching v0 version, then resolves it with go mod tidy.
pin_kubernetes() {
	local src=$1 k8s_dir staging_version=v0.${K8S_VERSION#v1.}
	k8s_dir=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -d $k8s_dir ]] || die "go mod download k8s.io/kubernetes@$K8S_VERSION failed"
	{
		echo "// Pinned build module for Kubernetes $K8S_VERSION binaries. Written by hack/envtest.sh --pin."
		echo "module github.com/sts-operator/sts-operator/hack/envtest/kubernetes"
		echo
		echo "go $(go env GOVERSION | sed 's/^go//')"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\t\1 => \1 '"$staging_version"'#p' "$k8s_dir/go.mod"
		echo ")"
	} >"$src/go.mod"
	rm -f "$src/go.sum"
	copy_mains "$src" "${ALL_K8S_COMPONENTS[@]}"
	log "resolving k8s.io/kubernetes $K8S_VERSION (go mod tidy)"
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy)
	mkdir -p "$pins/kubernetes"
	cp "$src/go.mod" "$src/go.sum" "$pins/kubernetes/"
}

# copy_mains copies cmd/<component>/*.go (package main) from the kubernetes module into src.
copy_mains() {
	local src=$1 k8s_dir
	shift
	k8s_dir=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	for c in "$@"; do
		mkdir -p "$src/cmd/$c"
		find "$k8s_dir/cmd/$c" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$src/cmd/$c/" \;
		chmod -R u+w "$src/cmd/$c"
	done
}

build_kubernetes() {
	local wanted=() src=$work/kubernetes-$K8S_VERSION
	for c in "${components[@]}"; do
		[[ $c != etcd && ! -x $out/$c ]] && wanted+=("$c")
	done
	[[ ${#wanted[@]} -gt 0 || $pin == true ]] || return 0
	mkdir -p "$src"
	if [[ $pin == true ]]; then
		pin_kubernetes "$src"
	else
		[[ -f $pins/kubernetes/go.mod ]] || die "no pinned build module in $pins/kubernetes: run hack/envtest.sh --pin"
		grep -Eq "^(require |\s+)k8s\.io/kubernetes $K8S_VERSION\$" "$pins/kubernetes/go.mod" ||
			die "$pins/kubernetes/go.mod does not pin k8s.io/kubernetes $K8S_VERSION: run hack/envtest.sh --pin"
		cp "$pins/kubernetes/go.mod" "$pins/kubernetes/go.sum" "$src/"
	fi
	[[ ${#wanted[@]} -gt 0 ]] || return 0
	copy_mains "$src" "${wanted[@]}"
	log "building ${wanted[*]} $K8S_VERSION from the Go module proxy into ${out#"$repo"/} (several minutes when the Go caches are cold)"
	local tmp pkgs=()
	tmp=$(mktemp -d "$work/out.XXXXXX")
	for c in "${wanted[@]}"; do pkgs+=("./cmd/$c"); done
	(cd "$src" && go build -trimpath -ldflags "$(version_ldflags)" -o "$tmp/" "${pkgs[@]}")
	mkdir -p "$out"
	mv "$tmp"/* "$out/"
	rmdir "$tmp"
}

build_etcd() {
	[[ " ${components[*]} " == *" etcd "* ]] || return 0
	if [[ $pin == true ]]; then
		log "resolving go.etcd.io/etcd/server/v3 $ETCD_VERSION"
		(cd "$pins/etcd" && GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && GOFLAGS=-mod=mod go mod tidy)
	fi
	if [[ -x $out/etcd ]] && "$out/etcd" --version 2>/dev/null | grep -q "etcd Version: ${ETCD_VERSION#v}\$"; then
		return 0
	fi
	grep -Eq "^(require |\s+)go\.etcd\.io/etcd/server/v3 $ETCD_VERSION\$" "$pins/etcd/go.mod" ||
		die "$pins/etcd/go.mod does not pin go.etcd.io/etcd/server/v3 $ETCD_VERSION: run hack/envtest.sh --pin etcd"
	log "building etcd $ETCD_VERSION from the Go module proxy into ${out#"$repo"/}"
	mkdir -p "$out" "$work"
	local tmp
	tmp=$(mktemp -d "$work/out.XXXXXX")
	(cd "$pins/etcd" && go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" .)
	mv "$tmp/etcd" "$out/etcd"
	rmdir "$tmp"
}

mkdir -p "$work"
build_kubernetes
build_etcd
echo "$out"
