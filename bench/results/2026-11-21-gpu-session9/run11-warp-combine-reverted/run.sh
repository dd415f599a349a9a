#!/usr/bin/env bash
# session 9, run 11: warp-combined contributions in the fused shared-memory aggregation: tests, sanitizers, ncu, seeds, aggregation benchmarks
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_tests tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
./build-gpu/tug_tests --gtest_filter='Cuda*:LateMat*:Window*:Aggregate*' > "$OUT/unit.log" 2>&1
echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/unit.log" | head; grep -B2 -A10 Failure "$OUT/unit.log" | head -30
for tool in memcheck racecheck; do
  TUG_TEST_SANITIZER=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 ./build-gpu/tug_tests --gtest_filter='CudaSanitized.*' > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 "$NCU" --metrics gpu__time_duration.sum --launch-count 1500 --csv \
  ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_anomaly_over_from_memory/gpu' --benchmark_repetitions=1 > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu rc=$?"
python3 - "$OUT/ncu.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
ki = hdr.index("Kernel Name"); vi = hdr.index("Metric Value"); ui = hdr.index("Metric Unit")
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows:
    v = float(r[vi].replace(",", "")); u = r[ui]
    ns = v * {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(u, 1)
    name = r[ki].split("(")[0][:70]
    tot[name] += ns; cnt[name] += 1
print("kernels:", sum(cnt.values()), "total ms:", round(sum(tot.values()) / 1e6, 3))
for name, ns in sorted(tot.items(), key=lambda x: -x[1])[:6]:
    print(f"{ns/1e6:9.3f} ms {cnt[name]:6d} x {ns/cnt[name]/1e3:8.1f} us  {name}")
PY
gzip -f "$OUT/ncu.csv"
timeout 200 ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/(d2d_copy|group_by_100_groups|over_mean_2_keys|group_by_rows_div_10_groups|seed_anomaly.*_from_memory)/gpu' > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep median "$OUT/bench.log" | awk '{printf "%s %s %s\n", $1, $2, $3}'
