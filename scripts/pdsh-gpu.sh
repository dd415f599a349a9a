#!/usr/bin/env bash
# PDS-H on a GPU machine, from a fresh copy of the repository: tug's GPU engine against tug's CPU engine,
# DuckDB and Polars on all the machine's cores, in one run (bench/pdsh.py). Steps: the device, snappy
# and the peers bundle (scripts/lib/gpu-env.sh), configure and build tug_pdsh and tug_gen with CUDA in
# build-gpu (the directory gpu-check.sh uses), generate PDS-H at --sf into /tmp with tug_gen on every
# core, run the benchmark under a deadline so that the whole script ends within --budget seconds.
# Writes to $OUT (default /tmp/pdsh-gpu): steps.log, build.log, gen.log, bench.log and
# pdsh/results.{json,md} (no chart there: no matplotlib; make it later, see the last lines printed).
#
#   scripts/pdsh-gpu.sh [--sf 10] [--reps 3] [--queries all] [--engines tug-gpu,tug-cpu,duckdb,polars]
#                       [--budget 540] [--data DIR] [--no-gpu [--build DIR]]
#
# --budget S: the whole script's time limit (the device tool allows 600 s a call); the benchmark gets
#   what the build and the generator leave, less 15 s, shared by the engines (bench/pdsh.py --deadline).
# --no-gpu: a rehearsal without a GPU (no nvidia-smi, tug built without CUDA in --build, default build);
#   the engines default to tug-cpu,duckdb,polars.
# Carry (device tool): .deb (libsnappy*.deb, when the machine has no snappy) and .peers (scripts/pack-peers.sh);
# .nvcomp (scripts/pack-nvcomp.sh) for the GPU Parquet reader's device decompression does not fit beside .peers
# (64 MiB a call): carry it in a call just before (scripts/gpu-scan-bench.sh unpacks it into build-nvcomp/,
# which stays while the machine is warm; the device tool gives a machine back after 30 s idle).
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
OUT=${OUT:-/tmp/pdsh-gpu}
SF=10 REPS=3 QUERIES=all ENGINES="" BUDGET=540 DATA="" GPU=1 BUILD=""
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --sf) SF=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --queries) QUERIES=$2; shift 2 ;;
    --engines) ENGINES=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --no-gpu) GPU=0; shift ;;
    *) usage ;;
  esac
done
if [ $GPU = 1 ]; then
  ENGINES=${ENGINES:-tug-gpu,tug-cpu,duckdb,polars} BUILD=${BUILD:-build-gpu} CUDA=ON
else
  ENGINES=${ENGINES:-tug-cpu,duckdb,polars} BUILD=${BUILD:-build} CUDA=OFF
fi
DATA=${DATA:-/tmp/pdsh-sf$SF}
mkdir -p "$OUT/pdsh"
: >"$OUT/steps.log"
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0

step "device"
if [ $GPU = 1 ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/steps.log" || exit 1
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  # e.g. "NVIDIA H100 80GB HBM3" -> h100
  MACHINE=$(echo "$gpu" | tr 'A-Z' 'a-z' | grep -oE '\b[a-z][0-9]{2,4}[a-z]?\b' | head -1)
  MACHINE=${MACHINE:-gpu}
else
  MACHINE="$(nproc)cores"
fi
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB" |
  tee -a "$OUT/steps.log"

gpu_env_snappy
gpu_env_nvcomp
gpu_env_python
versions="python $(python3 -c 'import sys; print(sys.version.split()[0])')"
for m in duckdb polars pyarrow; do
  versions+=", $(python3 -c "import $m; print('$m', $m.__version__)" 2>/dev/null || echo "$m missing")"
done
step "$versions"

step "configure and build tug_pdsh tug_gen in $BUILD (CUDA $CUDA, $(nproc) jobs)"
gpu_env_build "$BUILD" "$OUT/build.log" "$CUDA" tug_pdsh tug_gen || exit 1
step "built in $((SECONDS - T0)) s since the start"

if [ -e "$DATA/lineitem" ]; then
  step "PDS-H SF $SF: $DATA exists"
else
  step "generating PDS-H SF $SF into $DATA ($(nproc) threads)"
  t=$SECONDS
  # progress lines every 2 s on stderr, the summary on stdout: both to the log and the screen
  "$BUILD/tug_gen" pdsh --sf "$SF" --out "$DATA" 2>&1 | tee "$OUT/gen.log" | grep --line-buffered -E "^pdsh:|^total" || exit 1
  step "generated in $((SECONDS - t)) s, $(du -sh "$DATA" | cut -f1)"
fi

left=$((BUDGET - (SECONDS - T0) - 15))
if [ $left -le 30 ]; then
  step "only $left s left of the $BUDGET s budget: no benchmark"
  exit 1
fi
step "bench/pdsh.py: $ENGINES, queries $QUERIES, reps $REPS, deadline $left s"
# --threads: every engine on the same core count (nproc: the CPUs this process may use)
PYTHONUNBUFFERED=1 python3 bench/pdsh.py --data "$DATA" --sf "$SF" --reps "$REPS" --queries "$QUERIES" \
  --threads "$(nproc)" --engines "$ENGINES" --build "$BUILD" --machine "$MACHINE" --deadline "$left" --out "$OUT/pdsh" 2>&1 |
  tee "$OUT/bench.log" | grep --line-buffered -vE '^\| Q'
rc=${PIPESTATUS[0]}
step "done in $((SECONDS - T0)) s (benchmark rc=$rc)"
dir="bench/results/$(date +%F)-pdsh-sf$SF-$MACHINE"
echo "To keep it (here, in the repository): mkdir -p $dir && cp <files_at>/pdsh/results.* $dir/ &&"
echo "  .venv/bin/python bench/pdsh.py --replot $dir"
exit "$rc"
