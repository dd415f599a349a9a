#!/usr/bin/env bash
# PDS-H on 1, 2, ... GPUs of one host (multi-rank execution: one process per GPU under mpirun,
# docs/architecture.md): builds tug_pdsh and tug_gen with CUDA and MPI in build-gpu, generates PDS-H at
# --sf, runs every query on 1 GPU and on each count in --gpus with the GPU engine (the host's cores
# shared among the ranks), checks that every answer equals the 1-GPU answer, and prints a table of
# medians and speed-ups. Writes to $OUT (default /tmp/pdsh-ranks): steps.log, build.log, gen.log,
# g<N>.json (tug_pdsh's timings), g<N>.log, and results.md.
#
#   scripts/pdsh-ranks-gpu.sh [--sf 10] [--reps 3] [--gpus "2"] [--queries all] [--budget 540] [--data DIR]
#                             (a count with "host" after it, e.g. --gpus "2 2host", runs with TUG_NCCL=0:
#                              device tables between ranks through host memory instead of NCCL)
#                             [--args "TUG_PDSH ARGS"]   (e.g. --args --profile: per-operator times in g<N>.log)
#                             [--forked]   (the ranks forked by the engine option gpus, TUG_GPUS=N, instead of
#                                           tug_pdsh --gpus N under mpirun)
#
# Carry (device tool): .deb (libsnappy*.deb, when the machine has no snappy). Needs mpirun (OpenMPI).
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
OUT=${OUT:-/tmp/pdsh-ranks}
SF=10 REPS=3 GPUS="2" QUERIES=all BUDGET=540 DATA="" BUILD=build-gpu ARGS="" FORKED=0
while [ $# -gt 0 ]; do
  case $1 in
    --sf) SF=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --gpus) GPUS=$2; shift 2 ;;
    --queries) QUERIES=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --args) ARGS=$2; shift 2 ;;
    --forked) FORKED=1; shift ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
DATA=${DATA:-/tmp/pdsh-sf$SF}
mkdir -p "$OUT"
: >"$OUT/steps.log"
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0

step "device"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$OUT/steps.log" || exit 1
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores" | tee -a "$OUT/steps.log"
command -v mpirun >/dev/null || { step "no mpirun on this machine"; exit 1; }
gpu_env_snappy
step "configure and build tug_pdsh tug_gen in $BUILD (CUDA, MPI, $(nproc) jobs)"
gpu_env_build "$BUILD" "$OUT/build.log" ON tug_pdsh tug_gen || exit 1
grep -q "TUG_WITH_MPI): ON" "$OUT/build.log" || { step "CMake did not find MPI"; grep -i mpi "$OUT/build.log" | head; exit 1; }
step "built in $((SECONDS - T0)) s"
if [ ! -e "$DATA/lineitem" ]; then
  step "generating PDS-H SF $SF into $DATA"
  "$BUILD/tug_gen" pdsh --sf "$SF" --out "$DATA" >"$OUT/gen.log" 2>&1 || { tail "$OUT/gen.log"; exit 1; }
fi
step "data ready at $((SECONDS - T0)) s"
cores=$(nproc)
for g in 1 $GPUS; do
  left=$((BUDGET - (SECONDS - T0) - 10))
  [ $left -lt 20 ] && { step "no time left for $g GPUs"; break; }
  n=${g%host} nccl=1
  [ "$n" != "$g" ] && nccl=0
  threads=$((cores / n))
  step "$g GPU(s), $threads threads each, TUG_NCCL=$nccl, time limit $left s"
  mkdir -p "$OUT/g$g"
  launch=() forked=0
  if [ "$n" -gt 1 ]; then
    if [ $FORKED = 1 ]; then forked=$n; else launch=(--gpus "$n"); fi
  fi
  TUG_NCCL=$nccl TUG_GPUS=$forked timeout $((left + 5)) "$BUILD/tug_pdsh" --data "$DATA" --query "$QUERIES" --engine gpu --reps "$REPS" \
    --threads "$threads" --time-limit "$left" --json "$OUT/g$g.json" --out "$OUT/g$g/q{q}.csv" "${launch[@]}" $ARGS \
    >"$OUT/g$g.log" 2>&1
  step "$g GPU(s): status $?, $(grep -c ' rows=' "$OUT/g$g.log") queries ran, $(grep -c ' error' "$OUT/g$g.log") errors"
  grep ' error' "$OUT/g$g.log" | head -5
done
python3 - "$OUT" "$GPUS" <<'PY' | tee "$OUT/results.md"
import json, os, subprocess, sys
out, counts = sys.argv[1], ["1"] + sys.argv[2].split()
runs = {}
for g in counts:
    p = os.path.join(out, f"g{g}.json")
    if os.path.exists(p):
        runs[g] = {q["query"]: q for q in json.load(open(p))["queries"]}
print("| query | " + " | ".join(f"{g} GPU median s" for g in runs) + " | " +
      " | ".join(f"speed-up {g}" for g in runs if g != "1") + " | answers |")
print("|" + " --- |" * (2 * len(runs)))
for q in sorted(runs.get("1", {})):
    cells, ups, same = [], [], []
    base = runs["1"][q].get("median_s")
    for g, r in runs.items():
        m = r.get(q, {}).get("median_s")
        cells.append(f"{m:.3f}" if m else r.get(q, {}).get("error", "-")[:60])
        if g != "1":
            ups.append(f"{base / m:.2f}x" if m and base else "-")
            a, b = os.path.join(out, "g1", f"q{q:02d}.csv"), os.path.join(out, f"g{g}", f"q{q:02d}.csv")
            ok = os.path.exists(b) and subprocess.run([sys.executable, "bench/same_answer.py", a, b]).returncode == 0
            same.append(f"{g}: {'equal' if ok else 'DIFFERENT'}")
    print(f"| Q{q} | " + " | ".join(cells) + " | " + " | ".join(ups) + " | " + ", ".join(same) + " |")
tot = {g: sum(r[q]["median_s"] for q in r if "median_s" in r[q] and all("median_s" in runs[h].get(q, {}) for h in runs)) for g, r in runs.items()}
print("\ntotal of the queries every count ran: " + ", ".join(f"{g} GPU(s) {t:.2f} s" for g, t in tot.items()))
PY
step "done in $((SECONDS - T0)) s"
