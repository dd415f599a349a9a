#!/usr/bin/env bash
# session 9, run 2: benchmark suite on 38f4516 with per-operator profiles, then the seeds again with late materialization off
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_python
gpu_env_build build-gpu "$OUT/build.log" ON tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
TUG_GPU_BENCH_PROFILE=1 timeout 360 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/' --benchmark_out="$OUT/gpu_bench.json" --benchmark_out_format=json > "$OUT/gpu_bench.log" 2>&1
echo "bench rc=$?"
TUG_GPU_BENCH_LATE_MAT=0 timeout 150 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_' > "$OUT/seeds_late0.log" 2>&1
echo "late0 rc=$?"; grep median "$OUT/seeds_late0.log" | awk '{printf "%s %s %s\n", $1, $2, $3}'
python3 bench/gpu_report.py "$OUT/gpu_bench.json" --md "$OUT/gpu_bench.md" --png "$OUT/gpu_bench.png" >/dev/null 2>>"$OUT/gpu_bench.log"
cat "$OUT/gpu_bench.md"
