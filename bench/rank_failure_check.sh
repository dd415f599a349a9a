#!/usr/bin/env bash
# Failures on several ranks (ctest dist.rank_failures): PDS-H on 3 ranks under mpirun, CPU engine.
#  1. an error on one rank only (its spill_directory does not exist): every rank stops that query, the
#     others with an error naming the failed rank and its message;
#  2. a rank that hangs (SIGSTOP) mid-query: the others fail within collective_timeout (5 s here), naming it;
#  3. a rank that dies (SIGKILL) mid-query: the job ends with an error within the timeout.
# No case may hang: each runs under `timeout`. usage: bash bench/rank_failure_check.sh BUILD DATA
set -u
build=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpi=(${MPIRUN:-mpirun} --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
pdsh=("$build/tug_pdsh" --data "$data" --engine cpu --threads 1)
status=0
fail() { echo "FAIL: $*"; status=1; }

# 1. one rank's options are bad: MPMD, rank 1 gets a spill_directory that does not exist
timeout 120 "${mpi[@]}" -np 1 "${pdsh[@]}" --query 9 --reps 0 : \
  -np 1 -x TUG_SPILL_DIRECTORY=/nonexistent-tug-dir "${pdsh[@]}" --query 9 --reps 0 : \
  -np 1 "${pdsh[@]}" --query 9 --reps 0 > "$tmp/1.log" 2>&1
rc=$?
[ $rc = 124 ] && fail "case 1 hung"
grep -q "error (rank 1 of 3): spill_directory" "$tmp/1.log" || fail "case 1: rank 1 did not report its own error"
grep -q "error (rank 0 of 3): rank 1 of 3 failed, so this query stops on rank 0: spill_directory" "$tmp/1.log" ||
  fail "case 1: rank 0 did not stop with rank 1's error"
grep -q "error (rank 2 of 3): rank 1 of 3 failed" "$tmp/1.log" || fail "case 1: rank 2 did not stop with rank 1's error"
[ $status = 0 ] && echo "ok: an error on one rank stops every rank with it"

# 2. and 3.: a rank stopped or killed while the query runs (many repetitions keep it running)
for sig in STOP KILL; do
  start=$(date +%s)
  timeout 120 "${mpi[@]}" -np 3 -x TUG_COLLECTIVE_TIMEOUT=5 "${pdsh[@]}" --query 9 --reps 1000 > "$tmp/$sig.log" 2>&1 &
  job=$!
  sleep 4
  # the ranks are the launcher's children (never signal another session's processes by name)
  launcher=$(pgrep -P $job | head -1)
  victim=$([ -n "$launcher" ] && pgrep -P "$launcher" -x tug_pdsh | sort -n | sed -n 2p)
  if [ -z "$victim" ]; then
    fail "SIG$sig: no rank found to signal"
    kill $job 2>/dev/null
    continue
  fi
  kill -$sig "$victim"
  wait $job
  rc=$?
  took=$(( $(date +%s) - start ))
  kill -KILL "$victim" 2>/dev/null  # a stopped rank that the launcher left behind
  if [ $rc = 124 ]; then fail "SIG$sig: the job hung"; continue; fi
  [ $rc = 0 ] && fail "SIG$sig: the job reported success"
  if [ $sig = STOP ]; then
    grep -q "collective_timeout" "$tmp/$sig.log" || fail "SIGSTOP: no rank reported the timeout"
  fi
  echo "ok: a rank given SIG$sig: the job ended with status $rc after $took s ($(grep -m1 -o 'error (rank [0-9] of 3)[^;]*' "$tmp/$sig.log" | cut -c1-160))"
done
[ $status != 0 ] && for f in "$tmp"/*.log; do echo "--- $f"; tail -15 "$f"; done
exit $status
