#!/usr/bin/env python3
"""Runs the core benchmarks on tug (Google Benchmark), DuckDB and Polars on identical data in the same
run, and writes results.json, results.md and chart.png under bench/results/<date>-<machine>/.

Usage: bench/run.py [--build build] [--rows 10000000] [--reps 5] [--out DIR]
"""
import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

QUERIES = ["filter_sum", "groupby_low", "groupby_high", "join", "sort", "over"]


def load(dirname):
    cols = {}
    for name in ["k_low", "k_high", "k2", "v", "x", "key", "w"]:
        dtype = np.float64 if name in ("v", "x", "w") else np.int64
        cols[name] = np.fromfile(os.path.join(dirname, name + ".bin"), dtype=dtype)
    return cols


def time_it(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def polars_queries(c):
    import polars as pl

    facts = pl.DataFrame({k: c[k] for k in ["k_low", "k_high", "k2", "v", "x"]})
    dim = pl.DataFrame({"key": c["key"], "w": c["w"]})
    lf, ld = facts.lazy(), dim.lazy()
    return {
        "filter_sum": lambda: lf.filter(pl.col("x") > 0.5).select(pl.col("v").sum()).collect(),
        "groupby_low": lambda: lf.group_by("k_low").agg(pl.col("v").sum()).collect(),
        "groupby_high": lambda: lf.group_by("k_high").agg(pl.col("v").sum()).collect(),
        "join": lambda: lf.select("k_high", "v").join(ld, left_on="k_high", right_on="key").collect(),
        "sort": lambda: lf.select("k_high", "v").sort("v").collect(),
        "over": lambda: lf.select("k_low", "k2", "v")
        .with_columns(pl.col("v").mean().over(["k_low", "k2"]).alias("m"))
        .collect(),
    }


def duckdb_queries(c):
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    facts = pa.table({k: c[k] for k in ["k_low", "k_high", "k2", "v", "x"]})
    dim = pa.table({"key": c["key"], "w": c["w"]})
    con.register("facts_arrow", facts)
    con.register("dim_arrow", dim)
    con.execute("CREATE TABLE facts AS SELECT * FROM facts_arrow")
    con.execute("CREATE TABLE dim AS SELECT * FROM dim_arrow")
    q = {
        "filter_sum": "SELECT sum(v) FROM facts WHERE x > 0.5",
        "groupby_low": "SELECT k_low, sum(v) FROM facts GROUP BY k_low",
        "groupby_high": "SELECT k_high, sum(v) FROM facts GROUP BY k_high",
        "join": "SELECT f.k_high, f.v, d.w FROM facts f JOIN dim d ON f.k_high = d.key",
        "sort": "SELECT k_high, v FROM facts ORDER BY v",
        "over": "SELECT k_low, k2, v, avg(v) OVER (PARTITION BY k_low, k2) AS m FROM facts",
    }
    # fetch into Arrow so every engine materializes its result (the method's name varies by version)
    def fetch(sql):
        res = con.execute(sql)
        for m in ("to_arrow_table", "fetch_arrow_table", "arrow"):
            if hasattr(res, m):
                return getattr(res, m)()
        raise RuntimeError("this duckdb has no Arrow fetch method")

    return {name: (lambda s=sql: fetch(s)) for name, sql in q.items()}


def tug_results(build, reps, env):
    out = subprocess.run(
        [os.path.join(build, "tug_bench"), "--benchmark_format=json", f"--benchmark_repetitions={reps}",
         "--benchmark_report_aggregates_only=false", "--benchmark_filter=^BM_"],  # not the GPU suite
        check=True, capture_output=True, text=True, env=env)
    data = json.loads(out.stdout)
    res = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"].split("/")[0].removeprefix("BM_")
        res.setdefault(name, []).append(b["real_time"] / 1000.0)  # ms -> s
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    env = dict(os.environ, TUG_BENCH_ROWS=str(args.rows))
    machine = f"{socket.gethostname()}-{os.cpu_count()}cpu"
    date = datetime.date.today().isoformat()
    out = args.out or os.path.join("bench", "results", f"{date}-core-cpu-{os.cpu_count()}cores")
    os.makedirs(out, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([os.path.join(args.build, "tug_bench"), "--dump", tmp], check=True, env=env)
        cols = load(tmp)
    print(f"data: {args.rows} rows; running tug ...", flush=True)
    results = {"tug": tug_results(args.build, args.reps, env)}
    for engine, make in (("polars", polars_queries), ("duckdb", duckdb_queries)):
        qs = make(cols)
        results[engine] = {}
        for name in QUERIES:
            print(f"{engine} {name} ...", flush=True)
            results[engine][name] = time_it(qs[name], args.reps)

    med = {e: {q: statistics.median(t) for q, t in r.items()} for e, r in results.items()}
    lines = [
        f"# Core CPU benchmarks, {args.rows:,} rows",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()}; "
        f"date {date}. Median of {args.reps} runs (s); ratio = tug / Polars (below 1: tug faster).",
        "",
        "| query | tug | Polars | DuckDB | tug/Polars | tug/DuckDB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for q in QUERIES:
        t, p, d = med["tug"].get(q), med["polars"][q], med["duckdb"][q]
        if t is None:
            lines.append(f"| {q} | n/a | {p:.3f} | {d:.3f} | | |")
            continue
        lines.append(f"| {q} | {t:.3f} | {p:.3f} | {d:.3f} | {t / p:.2f} | {t / d:.2f} |")
    cmd = "python3 bench/run.py " + " ".join(sys.argv[1:])
    lines += ["", f"Command: `{cmd}`", ""]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"rows": args.rows, "reps": args.reps, "command": cmd, "machine": machine, "seconds": results,
                   "median": med}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.27
        xs = np.arange(len(QUERIES))
        for i, e in enumerate(["tug", "polars", "duckdb"]):
            ax.bar(xs + (i - 1) * width, [med[e].get(q, 0) for q in QUERIES], width, label=e)
        ax.set_xticks(xs, QUERIES)
        ax.set_ylabel("seconds (median, lower is better)")
        ax.set_title(f"tug CPU vs Polars vs DuckDB, {args.rows:,} rows, {os.cpu_count()} cores")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "chart.png"), dpi=110)
    except ImportError:
        print("matplotlib missing: no chart", file=sys.stderr)
    print("\n".join(lines))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
