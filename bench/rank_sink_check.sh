#!/usr/bin/env bash
# Directory sinks on several ranks (ctest dist.rank_sinks): PDS-H results written with sink_parquet to a
# directory (tug_pdsh --out DIR/) by one process and under mpirun, where every rank writes its own share's
# part files (part-r<rank>-<index>.parquet) without gathering; the files, read back in name order, must
# hold the one-process rows in order (numbers within a relative 1e-9), and a result of 100 rows or more
# (the default queries' are sorted: range-partitioned) must come from more than one rank.
# usage: bash bench/rank_sink_check.sh BUILD DATA "2 3" [QUERIES]   (MPIRUN the launcher, PYTHON the reader)
set -u
build=$1 data=$2 counts=$3 queries=${4:-"1 3 9 18"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpi_flags=(--oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
qlist=$(echo "$queries" | tr ' ' ',')
pdsh=("$build/tug_pdsh" --data "$data" --query "$qlist" --engine cpu --threads 1 --reps 0)
timeout 600 "${pdsh[@]}" --out "$tmp/one/q{q}/" > "$tmp/one.log" 2>&1 || { echo "the one-process run failed:"; cat "$tmp/one.log"; exit 1; }
status=0
for n in $counts; do
  timeout 600 "${MPIRUN:-mpirun}" "${mpi_flags[@]}" -np "$n" -x TUG_COLLECTIVE_TIMEOUT=120 "${pdsh[@]}" \
    --out "$tmp/np$n/q{q}/" > "$tmp/np$n.log" 2>&1 || { echo "$n ranks failed:"; tail -20 "$tmp/np$n.log"; status=1; continue; }
  for q in $queries; do
    qq=$(printf %02d "$q")
    "${PYTHON:-.venv/bin/python}" - "$tmp/one/q$qq" "$tmp/np$n/q$qq" "$n" <<'PY' || status=1
import math, os, sys
import pyarrow as pa, pyarrow.parquet as pq
one, many, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def read(d):
    files = sorted(f for f in os.listdir(d) if f.endswith(".parquet"))
    return files, pa.concat_tables([pq.read_table(os.path.join(d, f)) for f in files])
_, a = read(one)
files, b = read(many)
ranks = {f.split("-")[1] for f in files if f.startswith("part-r")}
ok = a.schema == b.schema and a.num_rows == b.num_rows
for x, y in zip(a.columns, b.columns) if ok else []:
    for u, v in zip(x.to_pylist(), y.to_pylist()):
        if u != v and not (isinstance(u, float) and isinstance(v, float) and math.isclose(u, v, rel_tol=1e-9)):
            ok = False
            break
print(f"{os.path.basename(many)} on {n} ranks: {'ok' if ok else 'DIFFERENT'} ({b.num_rows} rows in {len(files)} files from {len(ranks)} ranks)")
# a sorted result of 100 rows or more is split among the ranks (range-partitioned), not gathered
spread = b.num_rows < 100 or len(ranks) > 1
if not spread:
    print(f"  {b.num_rows} rows were written by one rank: the result was gathered")
sys.exit(0 if ok and spread and files and all(f.startswith("part-r") for f in files) else 1)
PY
  done
done
exit $status
