#!/usr/bin/env bash
# The working tree (HEAD + the thread_pool fix) on the GPU engine: PDS-H SF10 $Q with late materialization off
# and on, and the CPU engine, 3 warm runs each; plus one profile of Q1 and Q19 (pass off).
set -uo pipefail
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0
: >"$OUT/steps.log"
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_pdsh tug_gen || exit 1
D=/tmp/pdsh-sf10
[ -e $D/lineitem ] || build-gpu/tug_gen pdsh --sf 10 --out $D > "$OUT/gen.log" 2>&1
Q=${Q:-1,4,14,15,17,19,20}
for cfg in "gpu --no-late-materialization" "gpu" "cpu --no-late-materialization"; do
  echo "== $cfg"; build-gpu/tug_pdsh --engine $cfg --data $D --query $Q --reps 3 2>&1 | grep -E '^q[0-9]+ rows'
done | tee "$OUT/fix.txt"
build-gpu/tug_pdsh --engine gpu --no-late-materialization --data $D --query 1,19 --reps 0 --profile 2>&1 |
  grep -E '^scan |^total' | tee -a "$OUT/fix.txt"
