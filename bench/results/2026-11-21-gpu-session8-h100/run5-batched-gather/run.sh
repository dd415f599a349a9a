#!/usr/bin/env bash
# session 8: batched gathers + column-picking projections: CUDA tests, two sanitizer runs, then the seed and operator benchmarks
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
./build-gpu/tug_tests --gtest_filter='Cuda*:LateMat*:Lazy*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head -20
for t in CudaStrings.FiltersMatchCpu CudaJoin.SlicedInputs; do
  TUG_TEST_SANITIZER=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/tug_tests --gtest_filter=$t > "$OUT/memcheck-$t.log" 2>&1
  echo "memcheck $t rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck-$t.log")"
done
TUG_GPU_BENCH_PROFILE=1 timeout 240 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/(seed_.*|filter_sum_i64|group_by_100_groups|d2d_copy)/' --benchmark_out="$OUT/bench.json" --benchmark_out_format=json > "$OUT/bench.log" 2>&1
echo "bench rc=$?"
grep -E "median" "$OUT/bench.log" | awk '{print $1, $2, $3}'
