#!/usr/bin/env bash
# Checks the image tarball `make image` wrote (IMAGE_TAR, the first argument): a docker-archive
# whose config runs /manager as the entrypoint, as a non-root user, and whose layer holds both
# binaries. CI runs it after `make image`.
set -euo pipefail
tarball=${1:?usage: hack/image-check.sh dist/sts-operator-<version>.tar}

manifest=$(tar -xOf "$tarball" manifest.json)
config_path=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0]["Config"])' "$manifest")
layer_path=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0]["Layers"][0])' "$manifest")
config=$(tar -xOf "$tarball" "$config_path")

python3 - "$config" <<'PY'
import json, sys
cfg = json.loads(sys.argv[1])["config"]
assert cfg.get("Entrypoint") == ["/manager"], f"entrypoint is {cfg.get('Entrypoint')}, want [/manager]"
user = cfg.get("User", "")
uid = user.split(":")[0]
assert uid not in ("", "0", "root"), f"user is {user!r}: the image must not run as root"
print(f"image-check: entrypoint {cfg['Entrypoint']}, user {user}")
PY

files=$(tar -xOf "$tarball" "$layer_path" | tar -t)
for want in manager sts; do
  grep -qx "\(\./\)\?/\?$want" <<<"$files" || { echo "image-check: /$want missing from the layer" >&2; exit 1; }
done
echo "image-check: $tarball ok (manager and sts in the layer)"
