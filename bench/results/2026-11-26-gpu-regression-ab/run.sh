#!/usr/bin/env bash
# GPU regression A/B (issue 16): PDS-H SF10 Q14, Q15, Q19 (and Q1, Q4, Q17, Q20) on the GPU engine, built from
# HEAD and from 2a3e82c (the commit of the published 2026-11-21 SF10 figures), on the same machine, same data.
# Carry: .deb (snappy), .ab (git archive of the base commit). Writes $OUT/ab.log and JSON timings.
set -uo pipefail
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0
: >"$OUT/steps.log"
step "device: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); $(nproc) cores"
gpu_env_snappy
mkdir -p /tmp/base && tar xzf .ab/base-*.tar.gz -C /tmp/base
step "building HEAD and base in parallel"
(gpu_env_build build-gpu "$OUT/build-head.log" ON tug_pdsh tug_gen) & h=$!
(cd /tmp/base && gpu_env_build build-gpu "$OUT/build-base.log" ON tug_pdsh) & b=$!
wait $h || { step "HEAD build failed"; exit 1; }
wait $b || { step "base build failed"; exit 1; }
step "built"
D=/tmp/pdsh-sf${SF:-10}
build-gpu/tug_gen pdsh --sf ${SF:-10} --out $D > "$OUT/gen.log" 2>&1 || { tail "$OUT/gen.log"; exit 1; }
step "generated"
Q=${Q:-14,15,19,1,4,17,20}
run() { local name=$1; shift; step "$name"; "$@" --data $D --query $Q --reps 3 --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1; grep -E 'median|q[0-9]+' "$OUT/$name.txt" | head -20; }
run base-gpu /tmp/base/build-gpu/tug_pdsh --engine gpu
run head-gpu-nolm build-gpu/tug_pdsh --engine gpu --no-late-materialization
run head-gpu build-gpu/tug_pdsh --engine gpu
run head-cpu-nolm build-gpu/tug_pdsh --engine cpu --no-late-materialization
step "profiles (one run each, GPU engine, Q14,15,19)"
/tmp/base/build-gpu/tug_pdsh --engine gpu --data $D --query 14,15,19 --reps 0 --profile > "$OUT/profile-base.txt" 2>&1
build-gpu/tug_pdsh --engine gpu --no-late-materialization --data $D --query 14,15,19 --reps 0 --profile > "$OUT/profile-head.txt" 2>&1
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
names = ["base-gpu", "head-gpu-nolm", "head-gpu", "head-cpu-nolm"]
docs = {n: {q["query"]: q for q in json.load(open(os.path.join(out, n + ".json")))["queries"]} for n in names if os.path.exists(os.path.join(out, n + ".json"))}
qs = sorted({q for d in docs.values() for q in d})
print("query " + " ".join(f"{n:>14}" for n in docs))
for q in qs:
    print(f"Q{q:<5}" + " ".join(f"{docs[n].get(q, {}).get('median_s', float('nan')):14.3f}" for n in docs))
PY
