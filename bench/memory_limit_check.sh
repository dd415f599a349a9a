#!/usr/bin/env bash
# Which PDS-H SF1 queries finish under a memory_limit on the CPU engine (2 threads), the peak of the
# query's host budget, and the answer against the unlimited run's (numbers within a relative 1e-9).
# usage: bash bench/memory_limit_check.sh BUILD DATA "64 128 256" > results.md
# Exits 1 when a query fails or differs under any of the limits (ctest pdsh.memory_limit). QUERIES (a
# space-separated list, default 1..22) picks the queries; PYTHON the interpreter that compares answers.
set -u
build=$1 data=$2 limits=$3
tmp=$(mktemp -d)
status=0
echo "| query | unlimited peak MiB | $(for m in $limits; do echo -n "$m MiB: result, peak MiB | "; done)"
echo "| --- | --- | $(for m in $limits; do echo -n "--- | "; done)"
# equal answers (bench/same_answer.py)
same() { "${PYTHON:-.venv/bin/python}" "$(dirname "$0")/same_answer.py" "$1" "$2"; }
for q in ${QUERIES:-$(seq 1 22)}; do
  "$build/tug_pdsh" --data "$data" --query "$q" --threads 2 --reps 1 --profile --out "$tmp/u.csv" > "$tmp/u.log" 2>&1
  row="| Q$q | $(grep -o 'peak memory [0-9.]* MiB' "$tmp/u.log" | head -1 | awk '{print $3}') |"
  for m in $limits; do
    if "$build/tug_pdsh" --data "$data" --query "$q" --threads 2 --reps 1 --profile --memory-limit "${m}MiB" \
         --out "$tmp/l.csv" > "$tmp/l.log" 2>&1 && ! grep -q " error: " "$tmp/l.log"; then
      peak=$(grep -o 'peak memory [0-9.]* MiB' "$tmp/l.log" | head -1 | awk '{print $3}')
      if same "$tmp/u.csv" "$tmp/l.csv"; then row="$row ok, $peak |"; else row="$row DIFFERENT, $peak |"; status=1; fi
    else
      op=$(grep -o 'operator [a-z_]*\(\[[a-z]*\]\)\?' "$tmp/l.log" | head -1 | cut -d' ' -f2)
      row="$row memory_error in $op |"
      status=1
    fi
    rm -f "$tmp/l.csv"
  done
  echo "$row"
done
rm -rf "$tmp"
exit $status
