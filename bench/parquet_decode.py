#!/usr/bin/env python3
"""Parquet decode throughput: tug vs pyarrow vs Polars reading the same lineitem-like file (snappy and
zstd), on one thread and on all cores, in one run. GB/s of uncompressed data (the row groups'
total_byte_size from the footer). Writes results.md, results.json and chart.png under
bench/results/<date>-parquet-decode-<cores>cores/ (-gpu with --gpu).

With --gpu (a machine with a GPU and a CUDA build), on all cores only, also tug's GPU Parquet reader
(`tug-gpu`: the file decoded into device columns, nothing copied back) and the GPU scan decoded on the
host and copied to the device (`tug-gpu-host`, gpu_parquet_reader = false). PDS-H SF10 lineitem is
about 60M rows: --rows 60000000.

Usage: bench/parquet_decode.py [--build build] [--rows 6000000] [--reps 5] [--gpu]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def lineitem(n, seed=1):
    rng = np.random.default_rng(seed)
    orderkey = np.repeat(np.arange(1, n // 4 + 2), 4)[:n]
    qty = rng.integers(1, 51, n)
    price = qty * rng.integers(90_000, 200_000, n) / 100.0
    base = np.datetime64("1992-01-01")
    ship = base + rng.integers(0, 2400, n).astype("timedelta64[D]")
    flags = np.array(["A", "N", "R"])[rng.integers(0, 3, n)]
    status = np.array(["F", "O"])[rng.integers(0, 2, n)]
    modes = np.array(["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"])[rng.integers(0, 7, n)]
    words = np.array(["carefully", "quickly", "final", "regular", "pending", "ironic", "bold", "express"])
    comment = [" ".join(words[rng.integers(0, 8, 4)]) for _ in range(min(n, 200_000))]
    comment = np.array(comment)[rng.integers(0, len(comment), n)]
    return pa.table({
        "l_orderkey": pa.array(orderkey, pa.int64()),
        "l_partkey": pa.array(rng.integers(1, 200_000, n), pa.int64()),
        "l_suppkey": pa.array(rng.integers(1, 10_000, n), pa.int64()),
        "l_linenumber": pa.array(rng.integers(1, 8, n), pa.int32()),
        "l_quantity": pa.array(qty.astype(np.float64)),
        "l_extendedprice": pa.array(price),
        "l_discount": pa.array(rng.integers(0, 11, n) / 100.0),
        "l_tax": pa.array(rng.integers(0, 9, n) / 100.0),
        "l_returnflag": pa.array(flags),
        "l_linestatus": pa.array(status),
        "l_shipdate": pa.array(ship),
        "l_shipmode": pa.array(modes),
        "l_comment": pa.array(comment),
    })


def time_it(fn, reps):
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def polars_seconds(path, threads, reps):
    code = ("import time,json,polars as pl\n"
            f"pl.read_parquet({path!r})\n"
            "t=[]\n"
            f"for _ in range({reps}):\n"
            f"  t0=time.perf_counter(); pl.read_parquet({path!r}); t.append(time.perf_counter()-t0)\n"
            "print(json.dumps(t))\n")
    env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
    return json.loads(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                     text=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--gpu", action="store_true", help="also tug's GPU reader (all cores only)")
    args = ap.parse_args()
    cores = os.cpu_count()
    date = datetime.date.today().isoformat()
    out = args.out or os.path.join("bench", "results",
                                   f"{date}-parquet-decode-{cores}cores" + ("-gpu" if args.gpu else ""))
    engines = ["tug", "pyarrow", "polars"] + (["tug-gpu", "tug-gpu-host"] if args.gpu else [])

    def tug_seconds(path, threads, mode):
        run = subprocess.run([os.path.join(args.build, "parquet_read_bench"), path, str(threads), str(args.reps),
                              mode], check=True, capture_output=True, text=True)
        t = json.loads(run.stdout)
        assert t["rows"] == args.rows, t
        return t["seconds"]

    os.makedirs(out, exist_ok=True)
    table = lineitem(args.rows)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for codec in ("snappy", "zstd"):
            path = os.path.join(tmp, f"lineitem-{codec}.parquet")
            pq.write_table(table, path, compression=codec, row_group_size=1 << 20)
            meta = pq.ParquetFile(path).metadata
            raw = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            for threads in ((cores,) if args.gpu else (1, cores)):
                key = f"{codec}/{threads}t"
                print(f"{key} ...", flush=True)
                r = {"bytes": raw, "tug": tug_seconds(path, threads, "cpu"),
                     "pyarrow": time_it(lambda: pq.read_table(path, use_threads=threads > 1), args.reps),
                     "polars": polars_seconds(path, threads, args.reps)}
                if args.gpu:
                    r["tug-gpu"] = tug_seconds(path, threads, "gpu")
                    r["tug-gpu-host"] = tug_seconds(path, threads, "gpu-host")
                results[key] = r
    lines = [f"# Parquet decode throughput, lineitem-like, {args.rows:,} rows",
             "",
             f"Machine: {platform.machine()}, {cores} cores; date {date}. GB/s of uncompressed data "
             f"(footer total_byte_size), median of {args.reps} reads; higher is better.",
             "",
             "| file / threads | MB | " + " | ".join(f"{e} GB/s" for e in engines) + " | tug / pyarrow |",
             "| --- | --- | " + " | ".join("---" for _ in engines) + " | --- |"]
    gbs = {}
    for key, r in results.items():
        g = {e: r["bytes"] / statistics.median(r[e]) / 1e9 for e in engines}
        gbs[key] = g
        lines.append(f"| {key} | {r['bytes'] / 1e6:.0f} | " + " | ".join(f"{g[e]:.2f}" for e in engines) +
                     f" | {g['tug'] / g['pyarrow']:.2f} |")
    cmd = "python3 bench/parquet_decode.py " + " ".join(sys.argv[1:])
    lines += ["", f"Command: `{cmd}`", ""]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"rows": args.rows, "command": cmd, "seconds": results, "gb_per_s": gbs}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = list(gbs)
        xs = np.arange(len(keys))
        fig, ax = plt.subplots(figsize=(8, 4))
        w = 0.8 / len(engines)
        for i, e in enumerate(engines):
            ax.bar(xs + (i - (len(engines) - 1) / 2) * w, [gbs[k][e] for k in keys], w, label=e)
        ax.set_xticks(xs, keys)
        ax.set_ylabel("GB/s uncompressed (higher is better)")
        ax.set_title(f"Parquet decode, {args.rows:,} lineitem-like rows, {cores} cores")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "chart.png"), dpi=110)
    except ImportError:
        pass
    print("\n".join(lines))


if __name__ == "__main__":
    main()
