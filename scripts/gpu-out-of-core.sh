#!/usr/bin/env bash
# The GPU engine out of core, on a CUDA machine from a fresh copy of the repository (issue 17): builds
# tug_tests and example_four_way_join with CUDA in build-gpu, runs the out-of-core unit tests on the GPU
# (Streaming.*, MemoryManager.*, the CUDA join's and aggregate's suites), then seed 002's 4-way join at
# --rows lineitem rows written with sink_parquet by the GPU engine under each --limits spill_device_limit
# ("default" = the default 80%) and by the CPU engine, and compares the files (row count, and per column
# the sum of a hash of every value, with pyarrow). Prints a short table last; logs go to $OUT
# (default /tmp/gpu-out-of-core).
#
#   scripts/gpu-out-of-core.sh [--rows 95000000] [--limits "default 16GiB"] [--filter GTEST_FILTER] [--budget 560]
#                              [--profile-rows N [--profile-limit 80%]]   (first the join collected at N rows
#                              under that spill_device_limit, its statistics printed)
#
# Carry (device tool): .deb (libsnappy*.deb) when the machine has no snappy.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
OUT=${OUT:-/tmp/gpu-out-of-core}
ROWS=95000000 LIMITS="default 16GiB" BUDGET=560 PROFILE_ROWS=0 PROFILE_LIMIT=80%
FILTER='Streaming.*:MemoryManager.*:CudaJoin*:CudaAgg*:GpuParquet*'
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --rows) ROWS=$2; shift 2 ;;
    --limits) LIMITS=$2; shift 2 ;;
    --filter) FILTER=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --profile-rows) PROFILE_ROWS=$2; shift 2 ;;
    --profile-limit) PROFILE_LIMIT=$2; shift 2 ;;
    *) usage ;;
  esac
done
mkdir -p "$OUT"
: >"$OUT/steps.log"
source scripts/lib/gpu-env.sh
export NCCL_NVLS_ENABLE=0
left() { echo $((BUDGET - (SECONDS - T0))); }

step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt" || exit 1
gpu_env_snappy
TUG_CMAKE_EXTRA+=(-DTUG_BUILD_EXAMPLES=ON)
step "configure and build ($(nproc) jobs)"
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests example_four_way_join || exit 1

step "unit tests on the GPU: $FILTER"
timeout $(($(left) / 2)) ./build-gpu/tug_tests --gtest_filter="$FILTER" >"$OUT/unit.log" 2>&1
unit_rc=$?
unit_line=$(grep -E "^\[  (PASSED|FAILED)  \]|tests? ran" "$OUT/unit.log" | head -3 | tr '\n' ' ')
grep -E -B1 -A4 "Failure|^\[  FAILED  \]" "$OUT/unit.log" | cut -c1-400 | head -40

# the 4-way join: each run writes a directory of Parquet files (one a partition) and counts it back
declare -A secs rc
runs=()
join_run() {  # name engine [limit]
  local name=$1 engine=$2 limit=${3:-} dir=/tmp/four-way-$1
  rm -rf "$dir"
  if [ "$(left)" -lt 60 ]; then rc[$name]="not run (time)"; secs[$name]=-; runs+=("$name"); return; fi
  step "4-way join, $ROWS lineitem rows: $name"
  local t=$SECONDS
  if [ -n "$limit" ] && [ "$limit" != default ]; then
    TUG_SPILL_DEVICE_LIMIT=$limit timeout $(($(left) - 30)) ./build-gpu/example_four_way_join --rows "$ROWS" \
      --engine "$engine" --sink "$dir/" >"$OUT/join-$name.log" 2>&1
  else
    timeout $(($(left) - 30)) ./build-gpu/example_four_way_join --rows "$ROWS" --engine "$engine" --sink "$dir/" \
      >"$OUT/join-$name.log" 2>&1
  fi
  rc[$name]=$?
  secs[$name]=$((SECONDS - t))
  tail -3 "$OUT/join-$name.log"
  runs+=("$name")
}
if [ "$PROFILE_ROWS" -gt 0 ]; then
  step "4-way join, $PROFILE_ROWS lineitem rows, collected, GPU engine: statistics"
  t=$SECONDS
  TUG_SPILL_DEVICE_LIMIT=$PROFILE_LIMIT timeout 120 ./build-gpu/example_four_way_join --rows "$PROFILE_ROWS" --engine gpu \
    >"$OUT/join-profile.log" 2>&1
  echo "rc=$? $((SECONDS - t)) s" | tee -a "$OUT/join-profile.log"
  sed -n '/^statistics/,$p' "$OUT/join-profile.log" | head -30
  grep -E "^error" "$OUT/join-profile.log"
fi
for l in $LIMITS; do join_run "gpu-$l" gpu "$l"; done
join_run cpu cpu

step "compare the written files with the CPU engine's"
python3 - "$OUT/compare.txt" "${runs[@]}" <<'EOF' 2>&1 | tee -a "$OUT/steps.log"
# per column: its null count and the sum of its values (strings: of their lengths; dates: of their days;
# floats to 9 digits, since the order of addition differs)
import sys, os, pyarrow as pa, pyarrow.compute as pc, pyarrow.dataset as ds
out, names = sys.argv[1], sys.argv[2:]
def value_sum(c):
    t = c.type
    if pa.types.is_string(t) or pa.types.is_large_string(t): c = pc.utf8_length(c)
    elif pa.types.is_date32(t): c = pc.cast(c, pa.int32())
    elif pa.types.is_temporal(t): c = pc.cast(c, pa.int64())
    return pc.sum(c).as_py() or 0
def digest(d):
    if not os.path.isdir(d) or not os.listdir(d): return None
    rows, sums = 0, {}
    for b in ds.dataset(d, format="parquet").to_batches():
        rows += b.num_rows
        for name in b.schema.names:
            c = b.column(name)
            n, s = sums.get(name, (0, 0))
            sums[name] = (n + c.null_count, s + value_sum(c))
    return rows, {k: (n, f"{s:.9g}" if isinstance(s, float) else s) for k, (n, s) in sums.items()}
ref = digest("/tmp/four-way-cpu")
with open(out, "w") as f:
    for n in names:
        d = digest(f"/tmp/four-way-{n}")
        same = "no files" if d is None else "reference" if n == "cpu" else \
            "equal to cpu" if ref is not None and d == ref else "DIFFERS from cpu"
        line = f"{n}: rows {d[0] if d else '-'}; {same}"
        print(line); f.write(line + "\n")
EOF

echo
echo "## gpu-out-of-core $(date -u +%F) on $(cat "$OUT/device.txt"), 4-way join at $ROWS lineitem rows"
echo "| step | result |"
echo "|---|---|"
echo "| unit tests (GPU): $FILTER | rc=$unit_rc $unit_line |"
for n in "${runs[@]}"; do
  echo "| 4-way join $n (sink_parquet) | rc=${rc[$n]} ${secs[$n]} s; $(grep "^$n:" "$OUT/compare.txt" 2>/dev/null | cut -d';' -f2) |"
done
