#!/usr/bin/env bash
# session 8: after coalescing + late materialization through joins: CUDA tests, then seeds (A/B coalescing and late materialization) and the operator suite
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_python
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench tug_difftest || { tail -30 "$OUT/build.log"; exit 1; }
./build-gpu/tug_tests --gtest_filter='Cuda*:LateMat*:Lazy*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head -20
TUG_BUILD_DIR=$PWD/build-gpu timeout 120 python3 -m pytest -q -p no:cacheprovider tests/differential > "$OUT/differential.log" 2>&1
echo "differential: $(tail -1 "$OUT/differential.log")"
TUG_TEST_SANITIZER=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/tug_tests --gtest_filter='CudaCopy.ScanCoalesces*:LateMaterialization.Gpu*' > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log")"
for v in "1 1" "8 0" ; do set -- $v
  TUG_GPU_BENCH_COALESCE=$1 TUG_GPU_BENCH_LATE_MAT=$2 timeout 60 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_.*_from_memory/gpu' > "$OUT/ab-$1-$2.log" 2>&1
  echo "coalesce=$1 late=$2: $(grep median "$OUT/ab-$1-$2.log" | awk '{printf "%s %s %s; ", $1, $2, $3}')"
done
TUG_GPU_BENCH_PROFILE=1 timeout 300 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/' --benchmark_out="$OUT/gpu_bench.json" --benchmark_out_format=json > "$OUT/gpu_bench.log" 2>&1
echo "bench rc=$?"
python3 bench/gpu_report.py "$OUT/gpu_bench.json" --md "$OUT/gpu_bench.md" --png "$OUT/gpu_bench.png" >/dev/null 2>>"$OUT/gpu_bench.log"
cat "$OUT/gpu_bench.md"
