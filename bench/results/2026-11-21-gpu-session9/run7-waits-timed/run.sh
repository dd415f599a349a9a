#!/usr/bin/env bash
# session 9, run 7: device waits with the read-backs timed (one helper), in the seeds' profiles
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
./build-gpu/tug_tests --gtest_filter='CudaCopy*:CudaExpr*:CudaSort*:CudaJoin*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head; grep -B2 -A10 Failure "$OUT/unit.log" | head -30
TUG_GPU_BENCH_PROFILE=1 timeout 200 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_anomaly.*_from_memory/gpu' > "$OUT/seeds.log" 2>&1
echo "seeds rc=$?"; grep median "$OUT/seeds.log" | awk '{printf "%s %s %s\n", $1, $2, $3}'
for s in seed_anomaly_over_from_memory seed_anomaly_group_by_join_from_memory; do
  grep -A18 "profile $s/gpu" "$OUT/seeds.log" | grep -B30 -m1 "^total"
done
