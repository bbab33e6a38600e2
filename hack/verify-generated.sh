#!/usr/bin/env bash
# Fails when `make generate manifests helm` would change a generated file: the deepcopy code, the
# CRD, the RBAC role and the chart's copies of them must be what the generators write from the
# current sources. Compares against the tree as it is (not against git), so it works on a work tree
# with uncommitted changes as well as on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."

generated=(api config/crd/bases config/rbac charts/sts-operator/templates)
before=$(mktemp -d)
trap 'rm -rf "$before"' EXIT
for path in "${generated[@]}"; do
  mkdir -p "$before/$(dirname "$path")"
  cp -a "$path" "$before/$path"
done

make -s generate manifests helm >/dev/null

status=0
for path in "${generated[@]}"; do
  if ! diff -ru "$before/$path" "$path"; then
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "verify-generated: the files above were out of date and have been regenerated; commit them" >&2
fi
exit "$status"
