#!/usr/bin/env bash
# session 9, run 3: selective Parquet take (487f1be+): Parquet/late-materialization/copy tests on the GPU, then the seeds (profiles), A/B late materialization off and 16 partitions in flight
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_python
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
./build-gpu/tug_tests --gtest_filter='LateMat*:ParquetFiles*:CudaCopy*:ScanParquet*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head -20; grep -B2 -A10 Failure "$OUT/unit.log" | head -30
TUG_GPU_BENCH_PROFILE=1 timeout 200 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_' > "$OUT/seeds.log" 2>&1
echo "seeds rc=$?"; grep median "$OUT/seeds.log" | awk '{printf "%s %s %s\n", $1, $2, $3}'
grep -A12 "profile seed_anomaly_over_from_parquet/gpu" "$OUT/seeds.log"
for v in "0 4" "1 16"; do set -- $v
  TUG_GPU_BENCH_LATE_MAT=$1 TUG_GPU_BENCH_STREAMS=$2 timeout 120 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_anomaly.*/gpu' > "$OUT/ab-$1-$2.log" 2>&1
  echo "late=$1 streams=$2 rc=$?"; grep median "$OUT/ab-$1-$2.log" | awk '{printf "  %s %s %s\n", $1, $2, $3}'
done
