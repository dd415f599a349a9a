#!/usr/bin/env bash
# session 9, run 12: fewer blocks for small partitions in the shared-memory aggregation (rows per slot A/B: 0 = before, 32, 128)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
./build-gpu/tug_tests --gtest_filter='CudaAggregate*:CudaSanitized*:CudaSortAggregate*:LateMat*:Window*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head; grep -B2 -A10 Failure "$OUT/unit.log" | head -30
for r in 0 32 128 0 32; do
  TUG_CUDA_ROWS_PER_SLOT=$r timeout 150 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/(group_by_100_groups|over_mean_2_keys|seed_anomaly.*_from_memory)/gpu' > "$OUT/ab-$r.log" 2>&1
  echo "rows_per_slot=$r rc=$?"; grep median "$OUT/ab-$r.log" | awk '{printf "  %s %s %s\n", $1, $2, $3}'
done
