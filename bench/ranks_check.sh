#!/usr/bin/env bash
# PDS-H on several ranks (mpirun, one process per rank, the CPU engine) against the one-process run:
# every query's answer must be equal (bench/same_answer.py). Prints a table, one line per query, with
# the wall time of each run of all queries; exits 1 when a query fails or differs on any rank count.
# usage: bash bench/ranks_check.sh BUILD DATA "1 2 4" [THREADS]   (ctest dist.pdsh_ranks)
# QUERIES (default: all) picks queries; PYTHON the interpreter that compares; MPIRUN the launcher.
set -u
build=$1 data=$2 counts=$3 threads=${4:-1}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=${MPIRUN:-mpirun}
mpi_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
queries=${QUERIES:-all}
qlist=$(echo "$queries" | tr ' ' ',')
status=0
run() {  # run NAME LAUNCHER...: all queries once, answers into $tmp/NAME
  mkdir -p "$tmp/$1"
  local name=$1
  shift
  local t0=$(date +%s%N)
  "$@" "$build/tug_pdsh" --data "$data" --query "$qlist" --engine cpu --threads "$threads" --reps 0 \
    --out "$tmp/$name/q{q}.csv" > "$tmp/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%d.%03d\n' $((ms / 1000)) $((ms % 1000)) > "$tmp/$name.time"
  return $rc
}
run one env || { echo "the one-process run failed:"; cat "$tmp/one.log"; exit 1; }
header="| query |"
sep="| --- |"
for n in $counts; do
  header="$header $n ranks |"
  sep="$sep --- |"
  run "np$n" "$mpirun" "${mpi_flags[@]}" -np "$n" -x TUG_COLLECTIVE_TIMEOUT=${TUG_COLLECTIVE_TIMEOUT:-300} || true
done
echo "$header"
echo "$sep"
[ "$queries" = all ] && queries=$("$build/tug_pdsh" --list)
for q in $queries; do
  qq=$(printf %02d "$q")
  row="| Q$q |"
  for n in $counts; do
    if [ ! -f "$tmp/np$n/q$qq.csv" ]; then
      row="$row failed: $(grep -m1 "q$qq error" "$tmp/np$n.log" | cut -c1-200) |"
      status=1
    elif "${PYTHON:-.venv/bin/python}" "$here/same_answer.py" "$tmp/one/q$qq.csv" "$tmp/np$n/q$qq.csv"; then
      row="$row ok |"
    else
      row="$row DIFFERENT |"
      status=1
    fi
  done
  echo "$row"
done
echo
echo "wall seconds for all queries (one run each, including start-up): one process $(cat "$tmp/one.time");$(for n in $counts; do echo -n " $n ranks $(cat "$tmp/np$n.time");"; done)"
if [ $status -ne 0 ]; then
  for n in $counts; do echo "--- log of $n ranks"; tail -20 "$tmp/np$n.log"; done
fi
exit $status
