#!/usr/bin/env bash
# session 8: per-operator profiles of the seed queries, GPU and CPU engines (TUG_GPU_BENCH_PROFILE=1)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_bench || exit 1
TUG_GPU_BENCH_PROFILE=1 timeout 300 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_' > "$OUT/seed_profile.log" 2>&1
echo "rc=$?"
grep -E "median" "$OUT/seed_profile.log" | awk '{print $1, $2, $3}'
