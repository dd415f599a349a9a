#!/usr/bin/env python3
"""GPU time per kernel from an ncu CSV (`ncu --metrics gpu__time_duration.sum --csv ... > ncu.csv`, plain
or gzipped): total, calls and time per call of each kernel, largest first.
    scripts/ncu_summary.py ncu.csv[.gz] [--top N]
ncu runs kernels one at a time at base clocks: the times are longer than in a normal run, and their sum
ignores the overlap of streams (bench/results/2026-11-21-gpu-session9, run 9)."""
import argparse
import collections
import csv
import gzip
import sys

UNITS = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    opener = gzip.open if a.csv.endswith(".gz") else open
    with opener(a.csv, "rt") as f:
        rows = [r for r in csv.reader(f) if len(r) > 10]
    if not rows:
        sys.exit(f"{a.csv}: no ncu rows")
    hdr, rows = rows[0], rows[1:]
    ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
    total = collections.defaultdict(float)
    calls = collections.Counter()
    for r in rows:
        name = r[ki].split("(")[0][:70]
        total[name] += float(r[vi].replace(",", "")) * UNITS.get(r[ui], 1)
        calls[name] += 1
    print("kernels:", sum(calls.values()), "total ms:", round(sum(total.values()) / 1e6, 3))
    for name, ns in sorted(total.items(), key=lambda x: -x[1])[: a.top]:
        print(f"{ns / 1e6:9.3f} ms {calls[name]:6d} x {ns / calls[name] / 1e3:8.1f} us  {name}")


if __name__ == "__main__":
    main()
