#!/usr/bin/env bash
# The GPU check, run on a CUDA machine from a fresh copy of the repository (see docs/gpu.md):
# configure and build with CUDA, run the whole unit test suite (engine automatic = GPU), the
# differential tests against DuckDB on the GPU engine, compute-sanitizer memcheck on the CUDA tests and
# racecheck on a representative subset, and the GPU benchmark suite (bench/gpu_ops.cpp, about 4 minutes
# at the issue's sizes on an H100); prints a short table and the benchmark table last. Logs, the
# benchmarks' JSON (gpu_bench.json) and table (gpu_bench.md) go to $OUT (default /tmp/gpu-check).
#   scripts/gpu-check.sh [--quick] [--no-bench] [--bench-only]   (--quick: benchmarks at 2% of the sizes,
#     no sanitizers; --no-bench: no benchmarks; --bench-only: build and benchmarks only, for a second
#     device call: the whole check takes longer than one call may run)
# Needs: nvcc, cmake, ninja, gtest, Google Benchmark, zlib/zstd/lz4 (the GPU image has them); snappy and
# DuckDB may be carried as .deb/ (libsnappy*.deb) and .whl/ (duckdb wheel) or .peers/ (scripts/pack-peers.sh)
# in the repository root, and nvCOMP as .nvcomp/ (scripts/pack-nvcomp.sh: the GPU Parquet reader then
# decompresses checked pages on the device) (scripts/lib/gpu-env.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
QUICK=0 BENCH=1 TESTS=1
for a in "$@"; do
  case $a in
    --quick) QUICK=1 ;;
    --no-bench) BENCH=0 ;;
    --bench-only) TESTS=0 ;;
  esac
done
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh

step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
NPROC=$(nproc)

gpu_env_snappy
gpu_env_nvcomp
gpu_env_python
PY=python3

step "configure and build ($NPROC jobs)"
gpu_env_build build-gpu "$OUT/build.log" ON || exit 1

unit_rc="skipped (--bench-only)"; unit_line=""; cuda_line="skipped"; cuda_fail=""
diff_line="skipped"; mem_line="skipped"; race_line="skipped"
if [ $TESTS = 1 ]; then
  step "unit tests (GPU engine)"
  ./build-gpu/tug_tests >"$OUT/unit.log" 2>&1
  unit_rc=$?
  unit_line=$(grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head -2 | tr '\n' ' ')
  grep -E "^\[  FAILED  \]" "$OUT/unit.log" | head -40

  cuda_line=$(grep -cE "^\[ +OK \] Cuda" "$OUT/unit.log")
  cuda_fail=$(grep -oE "^\[  FAILED  \] Cuda[A-Za-z0-9_.]+" "$OUT/unit.log" | sed 's/^\[  FAILED  \] //' | sort -u | tr '\n' ' ')

  diff_line="skipped (no duckdb)"
  if $PY -c "import duckdb" 2>/dev/null; then
    step "differential tests vs DuckDB (GPU engine)"
    # the Python API's cases run the CPU engine through the `tug` module, which this script does not build
    sel=() note=""
    if ! $PY -c "import tug" 2>/dev/null; then sel=(-k "not python_api"); note=" (python_api cases left out: no tug module)"; fi
    TUG_BUILD_DIR=$PWD/build-gpu $PY -m pytest -q -p no:cacheprovider tests/differential "${sel[@]}" >"$OUT/differential.log" 2>&1
    diff_line="$(tail -1 "$OUT/differential.log")$note"
  fi

  mem_line="skipped"; race_line="skipped"
  # The sanitizers slow every launch by 10-100x: they run one small test per operator family
  # (TUG_TEST_SANITIZER=1 trims the sweeps), all at once (one process per tool and test, each under its own
  # time limit), and report per test.
  SAN_TESTS="CudaSanitized.AggregationPaths CudaSanitized.DirectTier CudaStrings.FloatsToAndFromStringsMatchCpu CudaExpr.FiltersMatchCpu CudaSort.MultiKey CudaJoin.SlicedInputs CudaStrings.FiltersMatchCpu CudaRegex.SlicedInputsMatchCpu"
  sanitize_all() {
    local tool t
    for tool in memcheck racecheck; do
      for t in $SAN_TESTS; do
        (TUG_TEST_SANITIZER=1 timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 9 ./build-gpu/tug_tests \
          --gtest_filter="$t" >"$OUT/$tool-$t.log" 2>&1; echo $? >"$OUT/$tool-$t.rc") &
      done
    done
    wait
  }
  sanitize_line() {  # tool -> "test: rc=N summary; ..." (rc 0 = no errors, 9 = errors, 124 = time limit)
    local t res=""
    for t in $SAN_TESTS; do
      res+="$t: rc=$(cat "$OUT/$1-$t.rc") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$1-$t.log" | tail -1); "
    done
    echo "$res"
  }
  if [ $QUICK = 0 ] && command -v compute-sanitizer >/dev/null; then
    step "compute-sanitizer memcheck and racecheck (one test per operator family, in parallel)"
    sanitize_all
    mem_line=$(sanitize_line memcheck)
    race_line=$(sanitize_line racecheck)
  fi
fi

SCALE=1
[ $QUICK = 1 ] && SCALE=0.02
if [ $BENCH = 0 ]; then
  bench_rc="skipped (--no-bench)"
  : >"$OUT/gpu_bench.md"
elif [ -x ./build-gpu/tug_bench ]; then
  step "benchmarks (tug_bench tug_gpu/*)"
  TUG_GPU_BENCH_SCALE=$SCALE timeout 330 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/' \
    --benchmark_out="$OUT/gpu_bench.json" --benchmark_out_format=json >"$OUT/gpu_bench.log" 2>&1
  bench_rc="rc=$? (scale $SCALE; table below)"
  $PY bench/gpu_report.py "$OUT/gpu_bench.json" --md "$OUT/gpu_bench.md" --png "$OUT/gpu_bench.png" \
    >/dev/null 2>>"$OUT/gpu_bench.log" || echo "no benchmark results (see gpu_bench.log)" >"$OUT/gpu_bench.md"
else
  bench_rc="tug_bench was not built (Google Benchmark missing?)"
  : >"$OUT/gpu_bench.md"
fi

echo
echo "## gpu-check $(date -u +%F) on $(cat "$OUT/device.txt")"
echo "| step | result |"
echo "|---|---|"
echo "| unit tests (GPU engine) | rc=$unit_rc $unit_line |"
echo "| CUDA tests (engine=gpu, fallback=raise; part of the above) | $cuda_line passed; failed: ${cuda_fail:-none} |"
echo "| differential vs DuckDB | $diff_line |"
echo "| memcheck | $mem_line |"
echo "| racecheck | $race_line |"
echo "| benchmarks | $bench_rc |"
echo
cat "$OUT/gpu_bench.md"
