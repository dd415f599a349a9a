#!/usr/bin/env bash
# session 9, run 9: per-kernel GPU time of the anomaly seed from memory (ncu, first 1500 kernels: about one query)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
source scripts/lib/gpu-env.sh
gpu_env_snappy
gpu_env_build build-gpu "$OUT/build.log" ON tug_bench || { tail -30 "$OUT/build.log"; exit 1; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
TUG_GPU_BENCH_SCALE=1 timeout 400 "$NCU" --metrics gpu__time_duration.sum --launch-count 1500 --csv \
  ./build-gpu/tug_bench --benchmark_filter='^tug_gpu/seed_anomaly_over_from_memory/gpu' --benchmark_repetitions=1 > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu rc=$?"; tail -3 "$OUT/ncu.err"
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
for name, ns in sorted(tot.items(), key=lambda x: -x[1])[:25]:
    print(f"{ns/1e6:9.3f} ms {cnt[name]:6d} x {ns/cnt[name]/1e3:8.1f} us  {name}")
PY
