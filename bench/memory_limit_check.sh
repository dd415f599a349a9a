#!/usr/bin/env bash
# Which PDS-H SF1 queries finish under a memory_limit on the CPU engine (2 threads), the peak of the
# query's host budget, the process's peak RSS, and the answer against the unlimited run's (numbers within
# a relative 1e-9).
# usage: bash bench/memory_limit_check.sh BUILD DATA "64 128 256" > results.md
# Exits 1 when a query fails or differs under any of the limits, or when a limited run's peak RSS is
# above its RSS before the first query + the limit x RSS_FACTOR (default 1.5: what the budget does not
# see, i.e. the allocator's free lists and small temporaries) + RSS_OVERHEAD_MIB (default 48: thread
# stacks, the Parquet footers, the plan) (ctest pdsh.memory_limit). QUERIES (a space-separated list,
# default 1..22) picks the queries; PYTHON the interpreter that compares answers. The last figure of each
# limited run is what it moved from host memory to disk (MiB, the profile's host->disk line); DISK_QUERIES
# (a space-separated list) are queries that must move some under every limit (exit 1 otherwise), so that
# a limit alone, with no debug option, is seen to spill to disk (ctest pdsh.memory_limit_sf1).
set -u
build=$1 data=$2 limits=$3
tmp=$(mktemp -d)
status=0
factor=${RSS_FACTOR:-1.5} overhead=${RSS_OVERHEAD_MIB:-48}
echo "| query | unlimited peak MiB | $(for m in $limits; do echo -n "$m MiB: result, peak MiB, peak RSS MiB, MiB to disk | "; done)"
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
      # "process: peak RSS X MiB, Y MiB before the first query"
      read -r rss start < <(sed -n 's/^process: peak RSS \([0-9.]*\) MiB, \([0-9.]*\) MiB before.*/\1 \2/p' "$tmp/l.log")
      bound=$(awk -v s="${start:-0}" -v m="$m" -v f="$factor" -v o="$overhead" 'BEGIN { printf "%.1f", s + m * f + o }')
      rss_ok=$(awk -v r="${rss:-inf}" -v b="$bound" 'BEGIN { print (r <= b) ? 1 : 0 }')
      # "host->disk  <count> <MiB> ..." (no line: nothing moved)
      disk=$(awk '$1 == "host->disk" { print $3; exit }' "$tmp/l.log")
      disk=${disk:-0}
      must_spill=0
      for d in ${DISK_QUERIES:-}; do [ "$d" = "$q" ] && must_spill=1; done
      if ! same "$tmp/u.csv" "$tmp/l.csv"; then row="$row DIFFERENT, $peak, $rss, $disk |"; status=1
      elif [ "$rss_ok" != 1 ]; then row="$row RSS ABOVE $bound, $peak, $rss, $disk |"; status=1
      elif [ $must_spill = 1 ] && awk -v d="$disk" 'BEGIN { exit !(d <= 0) }'; then
        row="$row NOTHING TO DISK, $peak, $rss, $disk |"; status=1
      else row="$row ok, $peak, $rss, $disk |"; fi
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
