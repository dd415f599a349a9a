#!/usr/bin/env bash
# Which PDS-H SF1 queries finish under a memory_limit on the CPU engine (2 threads), the peak of the
# query's host budget, and the answer against the unlimited run's (floats to 9 significant digits).
# usage: bash bench/results/2026-11-26-memory-limit-sf1-2cores/run.sh BUILD DATA "64 128 256" > results.md
set -u
build=$1 data=$2 limits=$3
tmp=$(mktemp -d)
echo "| query | unlimited peak MiB | $(for m in $limits; do echo -n "$m MiB: result, peak MiB | "; done)"
echo "| --- | --- | $(for m in $limits; do echo -n "--- | "; done)"
norm() { "${PYTHON:-.venv/bin/python}" -c 'import sys,re
for l in sys.stdin: print(re.sub(r"-?\d+\.\d+(e-?\d+)?", lambda m: "%.9g" % float(m.group()), l.rstrip()))' < "$1"; }
for q in $(seq 1 22); do
  "$build/tug_pdsh" --data "$data" --query "$q" --threads 2 --reps 1 --profile --out "$tmp/u.csv" > "$tmp/u.log" 2>&1
  row="| Q$q | $(grep -o 'peak memory [0-9.]* MiB' "$tmp/u.log" | head -1 | awk '{print $3}') |"
  for m in $limits; do
    if "$build/tug_pdsh" --data "$data" --query "$q" --threads 2 --reps 1 --profile --memory-limit "${m}MiB" \
         --out "$tmp/l.csv" > "$tmp/l.log" 2>&1 && ! grep -q " error: " "$tmp/l.log"; then
      peak=$(grep -o 'peak memory [0-9.]* MiB' "$tmp/l.log" | head -1 | awk '{print $3}')
      if [ "$(norm "$tmp/u.csv")" = "$(norm "$tmp/l.csv")" ]; then row="$row ok, $peak |"; else row="$row DIFFERENT, $peak |"; fi
    else
      op=$(grep -o 'operator [a-z_]*\(\[[a-z]*\]\)\?' "$tmp/l.log" | head -1 | cut -d' ' -f2)
      row="$row memory_error in $op |"
    fi
    rm -f "$tmp/l.csv"
  done
  echo "$row"
done
rm -rf "$tmp"
