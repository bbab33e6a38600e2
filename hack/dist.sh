#!/usr/bin/env bash
# Writes the release artifacts of one version into dist/ (git-ignored), then SHA256SUMS over them:
#   install.yaml                          the operator for `kubectl apply --server-side -f`
#                                         (hack/install-yaml.sh: the chart, default values)
#   sts-operator-VERSION.tgz              the packaged Helm chart (`helm install ... <file>`)
#   sts-operator-VERSION-ARCH.tar         the image for linux/ARCH (`make image`): a tarball that
#                                         is both a docker-archive and an OCI image layout
# `make dist` runs it with VERSION (the chart's appVersion unless DIST_VERSION is set), ARCHES,
# NAMESPACE, REPOSITORY, HELM, KUBECTL and MAKE in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${VERSION:?}" "${ARCHES:?}" "${NAMESPACE:?}" "${REPOSITORY:?}" "${HELM:?}" "${KUBECTL:?}" "${MAKE:=make}"
mkdir -p dist
files=(install.yaml "sts-operator-$VERSION.tgz")

echo "dist: install.yaml (namespace $NAMESPACE, image $REPOSITORY:$VERSION)"
hack/install-yaml.sh "$VERSION" "$NAMESPACE" "$REPOSITORY" >dist/install.yaml.tmp
mv dist/install.yaml.tmp dist/install.yaml

echo "dist: the chart, version $VERSION"
"$HELM" package charts/sts-operator --version "$VERSION" --app-version "$VERSION" --destination dist >/dev/null

for arch in $ARCHES; do
	echo "dist: the image $REPOSITORY:$VERSION for linux/$arch"
	"$MAKE" --no-print-directory image VERSION="$VERSION" IMAGE_ARCH="$arch" IMG="$REPOSITORY:$VERSION" >/dev/null
	files+=("sts-operator-$VERSION-$arch.tar")
done

(cd dist && sha256sum "${files[@]}" >SHA256SUMS)
echo "dist: SHA256SUMS"
(cd dist && cat SHA256SUMS)
