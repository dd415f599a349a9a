#!/usr/bin/env bash
# Bisects the GPU scan regression (issue 16): each .ab/<commit>.tar.gz (git archive) is built (tug_pdsh, CUDA)
# in parallel, then PDS-H SF10 Q1 and Q19 run on the GPU engine for each, one after another, on one machine.
# The data and HEAD's build come from profile.sh / run.sh on the same warm machine (built here if missing).
set -uo pipefail
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0
: >"$OUT/steps.log"
gpu_env_snappy
pids=()
for a in .ab/*.tar.gz; do
  c=$(basename "$a" .tar.gz)
  mkdir -p /tmp/ab/$c && tar xzf "$a" -C /tmp/ab/$c
  (cd /tmp/ab/$c && cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUG_WITH_CUDA=ON -DTUG_BUILD_EXAMPLES=OFF \
     -DTUG_BUILD_BENCH=OFF "${TUG_CMAKE_EXTRA[@]}" >/tmp/ab/$c.log 2>&1 && ninja -C b -j4 tug_pdsh >>/tmp/ab/$c.log 2>&1 \
     || echo "build of $c failed") &
  pids+=($!)
done
[ -x build-gpu/tug_pdsh ] || gpu_env_build build-gpu "$OUT/build-head.log" ON tug_pdsh tug_gen
wait "${pids[@]}"
step "built"
D=/tmp/pdsh-sf10
[ -e $D/lineitem ] || build-gpu/tug_gen pdsh --sf 10 --out $D > "$OUT/gen.log" 2>&1
for c in 611a6a0 9dbef08 00636ee 224ecf4 091a6e3 b81a5c5 ee7f0d6 HEAD; do
  bin=/tmp/ab/$c/b/tug_pdsh; extra=""
  [ $c = HEAD ] && bin=build-gpu/tug_pdsh && extra=--no-late-materialization
  [ -x $bin ] || { echo "$c: no binary"; continue; }
  echo "== $c"; $bin --engine gpu $extra --data $D --query 1,19 --reps 3 --profile 2>&1 | grep -E '^q[0-9]+ rows|^scan |^total'
done | tee "$OUT/bisect.txt"
