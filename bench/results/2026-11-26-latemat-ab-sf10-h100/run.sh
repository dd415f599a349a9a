#!/usr/bin/env bash
# Late materialization A/B (issue 16): the working tree built with CUDA; the late-materialization and thread-pool
# unit tests; then PDS-H SF10, all queries, the GPU and the CPU engine each with the pass on and off
# (tug_pdsh --reps 2), one after another on one machine. $OUT/ab.txt has a table of the medians.
set -uo pipefail
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0
: >"$OUT/steps.log"
gpu_env_snappy
step "build"
gpu_env_build build-gpu "$OUT/build.log" ON tug_pdsh tug_gen tug_tests || exit 1
step "unit tests"
build-gpu/tug_tests --gtest_filter='LateMaterialization.*:ThreadPool.*:ScanParquet.*:ParquetFiles.*' >"$OUT/unit.log" 2>&1
grep -E '^\[  (PASSED|FAILED)  \]|Failure' "$OUT/unit.log"
D=/tmp/pdsh-sf10
[ -e $D/lineitem ] || build-gpu/tug_gen pdsh --sf 10 --out $D > "$OUT/gen.log" 2>&1
build-gpu/tug_pdsh --engine gpu --data $D --query all --explain > /tmp/explain.txt 2>&1
python3 - /tmp/explain.txt <<'PY' | tee "$OUT/takes.txt"
import sys, re
text = open(sys.argv[1]).read()
for block in re.split(r"(?m)^-- q", text)[1:]:
    q = block.split("\n", 1)[0]
    takes = [l.strip() for l in block.splitlines() if l.strip().startswith("take")]
    if takes:
        print(f"q{q}:"); [print("   ", t[:200]) for t in takes]
PY
step "PDS-H"
for cfg in gpu-on gpu-off cpu-on cpu-off; do
  e=${cfg%-*}; extra=""; [ ${cfg#*-} = off ] && extra=--no-late-materialization
  build-gpu/tug_pdsh --engine $e $extra --data $D --query all --reps 2 --json "$OUT/$cfg.json" > "$OUT/$cfg.txt" 2>&1
done
python3 - "$OUT" <<'PY' | tee "$OUT/ab.txt"
import json, sys, os
out = sys.argv[1]
names = ["gpu-on", "gpu-off", "cpu-on", "cpu-off"]
d = {n: {q["query"]: q for q in json.load(open(os.path.join(out, n + ".json")))["queries"]} for n in names}
print("| query | " + " | ".join(names) + " | gpu on/off | cpu on/off |")
print("| --- " * 7 + "|")
tot = {n: 0.0 for n in names}
for q in sorted(d["gpu-on"]):
    m = {n: d[n].get(q, {}).get("median_s", float("nan")) for n in names}
    for n in names: tot[n] += m[n]
    print(f"| Q{q} | " + " | ".join(f"{m[n]:.3f}" for n in names) + f" | {m['gpu-on']/m['gpu-off']:.2f} | {m['cpu-on']/m['cpu-off']:.2f} |")
print("| total | " + " | ".join(f"{tot[n]:.3f}" for n in names) + f" | {tot['gpu-on']/tot['gpu-off']:.2f} | {tot['cpu-on']/tot['cpu-off']:.2f} |")
PY
