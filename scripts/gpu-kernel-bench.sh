#!/usr/bin/env bash
# Issue 22's benchmark on a CUDA machine, from a fresh copy of the repository: a user kernel over a billion
# rows through tug's map_partitions against the same kernel launched by hand with CuPy on the same data
# (bench/user_kernel_vs_cupy.py: a table on stdout, README.md, results.json and a PNG chart in $OUT).
# Builds the Python module with CUDA (build-gpu, kept between runs). Uses the machine's own Python packages
# (numpy, CuPy, pyarrow, matplotlib, nanobind): .whl/ is not installed, since a carried numpy would shadow
# the machine's, which its CuPy and numba-cuda are built against.
# Fewer rows than ROWS run when they do not fit half the host's memory (the reason is printed); the table
# is printed last. From the device tool: carry [".deb"] (snappy, when the machine has none), command
# `OUT=$OUT timeout 580 bash scripts/gpu-kernel-bench.sh` (the build takes most of the time on a fresh machine).
#   OUT=/tmp/gpu-kernel-bench ROWS=1000000000 scripts/gpu-kernel-bench.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-kernel-bench}
mkdir -p "$OUT"
source scripts/lib/gpu-env.sh
gpu_env_snappy shared
step "configure and build _tug with CUDA"
TUG_CMAKE_EXTRA+=(-DTUG_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$(command -v python3)")
gpu_env_build build-gpu "$OUT/build.log" ON _tug || exit 1
step "user kernel over ${ROWS:-1000000000} rows: tug against CuPy by hand"
PYTHONUNBUFFERED=1 python3 bench/user_kernel_vs_cupy.py --build build-gpu --out "$OUT/user-kernel-vs-cupy" \
  --rows "${ROWS:-1000000000}" ${PARTITION_ROWS:+--partition-rows "$PARTITION_ROWS"} 2>&1 | tee "$OUT/bench.log"
