#!/usr/bin/env bash
# session 8: the CUDA, late-materialization and lazy tests after reverting the coalescing; failures in detail
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests || { tail -30 "$OUT/build.log"; exit 1; }
timeout 120 ./build-gpu/tug_tests --gtest_filter='Cuda*:LateMat*:Lazy*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head -20
grep -B3 -A12 "Failure" "$OUT/unit.log" | cut -c1-400 | head -120
