#!/usr/bin/env bash
# Checks the image tarball `make image` wrote (IMAGE_TAR, the first argument): a docker-archive
# whose config runs /manager as the entrypoint, as a non-root user, on linux/ARCH (the second
# argument), and whose layer holds both binaries, built for that architecture. CI runs it after
# `make image` for the machine's architecture; `make image-check IMAGE_ARCH=arm64` checks a
# cross-built one.
set -euo pipefail
tarball=${1:?usage: hack/image-check.sh dist/sts-operator-<version>-<arch>.tar ARCH}
arch=${2:?usage: hack/image-check.sh dist/sts-operator-<version>-<arch>.tar ARCH}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xf "$tarball" -C "$work"
layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Layers"][0])' "$work/manifest.json")
mkdir "$work/rootfs"
tar -xf "$work/$layer" -C "$work/rootfs"

python3 - "$work" "$arch" <<'PY'
import json, os, sys
work, arch = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(work, "manifest.json")))[0]
image = json.load(open(os.path.join(work, manifest["Config"])))
cfg = image["config"]
assert cfg.get("Entrypoint") == ["/manager"], f"entrypoint is {cfg.get('Entrypoint')}, want [/manager]"
user = cfg.get("User", "")
assert user.split(":")[0] not in ("", "0", "root"), f"user is {user!r}: the image must not run as root"
platform = f"{image.get('os')}/{image.get('architecture')}"
assert platform == f"linux/{arch}", f"the config says {platform}, want linux/{arch}"
# ELF e_machine (offset 18, in the byte order of e_ident[5]) of each binary: what the kernel runs it as.
machines = {"amd64": 0x3E, "arm64": 0xB7, "ppc64le": 0x15, "s390x": 0x16, "riscv64": 0xF3}
for name in ("manager", "sts"):
    path = os.path.join(work, "rootfs", name)
    assert os.path.isfile(path), f"/{name} missing from the layer"
    head = open(path, "rb").read(20)
    assert head[:4] == b"\x7fELF", f"/{name} is not an ELF binary"
    machine = int.from_bytes(head[18:20], "big" if head[5] == 2 else "little")
    assert machine == machines.get(arch), f"/{name} is built for ELF machine {machine:#x}, not {arch}"
print(f"image-check: entrypoint {cfg['Entrypoint']}, user {user}, {platform}, /manager and /sts built for {arch}")
PY
echo "image-check: $tarball ok"
