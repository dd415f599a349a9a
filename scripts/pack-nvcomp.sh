#!/usr/bin/env bash
# Packs nvCOMP (the PyPI wheel nvidia-libnvcomp-cu13 that scripts/setup.sh installs into .venv) for the GPU
# machine, which has none: .nvcomp/nvcomp-<version>.tar.xz (about 22 MB: the headers and libnvcomp.so.6).
# scripts/lib/gpu-env.sh (gpu_env_nvcomp) unpacks it into build-nvcomp/ there and points TUG_NVCOMP_ROOT at it,
# so that the GPU Parquet reader decompresses pages on the device. The device tool carries 64 MiB a call:
# this bundle and .peers/ (about 45 MB) do not fit together, so a call that needs the peers runs on a
# machine where an earlier call unpacked nvCOMP (build-nvcomp/ stays while the machine is warm).
#   scripts/pack-nvcomp.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(ls -d .venv/lib/python3*/site-packages/nvidia/libnvcomp 2>/dev/null | head -1)
[ -n "$src" ] || { echo "pack-nvcomp: no nvCOMP in .venv (run scripts/setup.sh)" >&2; exit 1; }
version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("nvidia-libnvcomp-cu13"))')
bundle=.nvcomp/nvcomp-$version.tar.xz
if [ -e "$bundle" ] && [ "${1:-}" != "--force" ]; then
  echo "$bundle exists"
  exit 0
fi
mkdir -p .nvcomp
rm -f .nvcomp/*.tar.xz
tar -C "$(dirname "$src")" -cJf "$bundle" libnvcomp/include libnvcomp/lib64/libnvcomp.so.6
echo "$bundle: $(du -h "$bundle" | cut -f1)"
