#!/usr/bin/env bash
# Per-operator profiles (tug_pdsh --profile) of the base (2a3e82c) and HEAD, GPU engine, late materialization
# off, SF10, queries $Q (default 1,4,19), into one file $OUT/profiles.txt. Builds as run.sh does.
set -uo pipefail
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0
: >"$OUT/steps.log"
gpu_env_snappy
mkdir -p /tmp/base && tar xzf .ab/base-*.tar.gz -C /tmp/base
(gpu_env_build build-gpu "$OUT/build-head.log" ON tug_pdsh tug_gen) & h=$!
(cd /tmp/base && gpu_env_build build-gpu "$OUT/build-base.log" ON tug_pdsh) & b=$!
wait $h && wait $b || { step "build failed"; exit 1; }
D=/tmp/pdsh-sf10
[ -e $D/lineitem ] || build-gpu/tug_gen pdsh --sf 10 --out $D > "$OUT/gen.log" 2>&1
Q=${Q:-1,4,19}
{
  echo "######## base 2a3e82c"; /tmp/base/build-gpu/tug_pdsh --engine gpu --data $D --query $Q --reps 1 --profile
  echo "######## HEAD, late materialization off"; build-gpu/tug_pdsh --engine gpu --no-late-materialization --data $D --query $Q --reps 1 --profile
} > "$OUT/profiles.txt" 2>&1
grep -E '^(########|-- q)' "$OUT/profiles.txt"
