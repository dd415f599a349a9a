#!/usr/bin/env bash
# The GPU check of users' own kernels (issue 22, docs/user-kernels.md), on a CUDA machine from a fresh copy
# of the repository: builds the Python module, tug_tests and tug_bench with CUDA, runs the C++ user kernel
# tests (and compute-sanitizer memcheck on them when present), seed 001's histogram64 port
# (examples/mapred_histogram.cpp) on the GPU, the Python kernel tests (the NVRTC path,
# device Python callables; CuPy and Numba when their wheels are carried) and the per-partition overhead
# benchmark on the GPU (scripts/gpu-kernel-bench.sh, run after it on the same machine, reuses build-gpu for
# the billion-row benchmark). Python packages come as wheels in .whl/ (scripts/lib/gpu-env.sh): nanobind, numpy,
# pyarrow, pytest, matplotlib, and for the CuPy and Numba tests cupy-cuda13x, numba-cuda and their deps.
#   OUT=/tmp/gpu-user-kernels scripts/gpu-user-kernels.sh    (logs and the benchmark's results in $OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-user-kernels}
mkdir -p "$OUT"
source scripts/lib/gpu-env.sh
gpu_env_snappy shared
gpu_env_python
step "configure and build _tug, tug_tests, tug_bench, example_mapred_histogram"
TUG_CMAKE_EXTRA+=(-DTUG_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$(command -v python3)" -DTUG_BUILD_EXAMPLES=ON)
gpu_env_build build-gpu "$OUT/build.log" ON _tug tug_tests tug_bench example_mapred_histogram || exit 1
rc=0
step "C++ user kernel tests"
./build-gpu/tug_tests --gtest_filter='UserKernel*:Seed000Kernel*' 2>&1 | tee "$OUT/unit.log" | tail -3 || rc=1
if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck on the user kernel tests"
  TUG_TEST_SANITIZER=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/tug_tests \
    --gtest_filter='UserKernel.*:Seed000Kernel.*' >"$OUT/memcheck.log" 2>&1 || rc=1
  tail -3 "$OUT/memcheck.log"
fi
step "seed 001's histogram64 port (a MapRed job, and a CUDA source kernel) on the GPU against a plain count"
./build-gpu/example_mapred_histogram --rows 10000000 --engine gpu >"$OUT/mapred_histogram.log" 2>&1 || rc=1
tail -1 "$OUT/mapred_histogram.log"
step "Python kernel tests (GPU paths)"
TUG_BUILD_DIR=$PWD/build-gpu python3 -m pytest -q -rs tests/python/api/test_api_kernels.py tests/python/api/test_api_seed000.py 2>&1 |
  tee "$OUT/pytest.log" | tail -15 || rc=1
step "per-partition overhead on the GPU"
python3 bench/user_kernel_overhead.py --build build-gpu --out "$OUT/user-kernel-overhead" 2>&1 | tail -30 || rc=1
exit $rc
