#!/usr/bin/env bash
# session 8: the late-materialization fixes' tests, the GPU suite, then the seeds on the GPU without late materialization (A/B)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_python
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench || exit 1
./build-gpu/tug_tests --gtest_filter='LateMat*:CudaAggregate.Explain*' 2>&1 | grep -E "^\[  (PASSED|FAILED) " 
timeout 330 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/' --benchmark_out="$OUT/gpu_bench.json" --benchmark_out_format=json > "$OUT/gpu_bench.log" 2>&1
echo "bench rc=$?"
python3 bench/gpu_report.py "$OUT/gpu_bench.json" --md "$OUT/gpu_bench.md" --png "$OUT/gpu_bench.png" >/dev/null 2>>"$OUT/gpu_bench.log"
TUG_GPU_BENCH_LATE_MAT=0 timeout 150 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_.*/gpu' --benchmark_out="$OUT/seeds_late0.json" --benchmark_out_format=json > "$OUT/seeds_late0.log" 2>&1
echo "late0 rc=$?"
grep -E "median" "$OUT/seeds_late0.log" | awk '{print $1, $2, $3}'
cat "$OUT/gpu_bench.md"
