#!/usr/bin/env python3
"""PDS-H benchmark: the same queries on the same Parquet files with tug (each available engine, through
tug_pdsh), DuckDB (bench/pdsh/sql) and Polars (bench/pdsh/polars_queries.py), in one run.

Per engine and query: "cold" is the first run in a fresh process / connection, "warm" the median (and
min/max) of --reps further runs. Every run reads the Parquet files (scan included; they are in the OS
cache after the first). Writes results.md (tables), results.json and chart.png under
bench/results/<date>-pdsh-sf<SF>-<machine>/ (or --out).

usage: bench/pdsh.py [--data DIR | --sf SF] [--queries 1,2,..|all] [--reps 3] [--threads N]
                     [--engines tug-cpu,tug-gpu,duckdb,polars] [--build build] [--baseline BUILD]
                     [--machine NAME] [--out DIR]

--baseline BUILD also runs the CPU engine of another build (engine "tug-cpu-baseline", right after
tug-cpu), for before/after timings in one run. --interleave runs query by query, every engine on a
query before the next query (a fresh tug_pdsh process per query and engine), so that load that comes
and goes on a shared machine hits the engines alike.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PDSH = REPO / "bench" / "pdsh"
sys.path.insert(0, str(PDSH))
import data as pdsh_data  # noqa: E402

ALL_ENGINES = ["tug-cpu", "tug-gpu", "duckdb", "polars"]


def summarize(times, rows):
    """cold = times[0]; warm = the rest (the cold run when there is no other)."""
    warm = times[1:] or times[:1]
    return {"rows": rows, "cold_s": times[0], "times_s": warm, "median_s": statistics.median(warm),
            "min_s": min(warm), "max_s": max(warm)}


def tug_registered(build):
    out = subprocess.run([str(build / "tug_pdsh"), "--list"], capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def run_tug(engine, build, data, queries, reps, threads):
    """{query: summary} from one tug_pdsh process; None when the engine is not available."""
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "t.json"
        cmd = [str(build / "tug_pdsh"), "--data", str(data), "--query", ",".join(map(str, queries)),
               "--engine", engine, "--reps", str(reps), "--json", str(js)]
        if threads:
            cmd += ["--threads", str(threads)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        print(p.stdout, end="", flush=True)
        if not js.exists():
            print(f"tug-{engine} unavailable: {p.stderr.strip()}", flush=True)
            return None
        doc = json.loads(js.read_text())
    out = {}
    for rec in doc["queries"]:
        if "error" in rec:
            out[rec["query"]] = {"error": rec["error"]}
        else:
            out[rec["query"]] = summarize([rec["cold_s"]] + rec["times_s"] if reps else [rec["cold_s"]], rec["rows"])
    return out


def time_runs(fn, reps):
    times, rows = [], None
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - t0)
    return summarize(times, rows)


def run_duckdb(data, queries, reps, threads):
    import duckdb

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {threads}")
    for t in pdsh_data.TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data}/{t}/*.parquet')")
    out = {}
    for q in queries:
        sql = (PDSH / "sql" / f"q{q:02d}.sql").read_text()
        out[q] = time_runs(lambda: con.sql(sql).to_arrow_table().num_rows, reps)  # materialized
        print(f"duckdb q{q:02d} median={out[q]['median_s']:.4f}s", flush=True)
    return out


def run_polars(data, queries, reps):
    import polars_queries  # after POLARS_MAX_THREADS is set

    out = {}
    for q in queries:
        fn = polars_queries.QUERIES.get(q)
        if fn is None:
            out[q] = {"error": "not written"}
            continue
        out[q] = time_runs(lambda: fn(polars_queries.scan_tables(data)).collect().height, reps)
        print(f"polars q{q:02d} median={out[q]['median_s']:.4f}s", flush=True)
    return out


def fmt(s):
    return f"{s:.3f}" if s is not None else "n/a"


def markdown(results, queries, meta):
    engines = list(results)
    peers = [e for e in engines if not e.startswith("tug")]
    tugs = [e for e in engines if e.startswith("tug")]

    def med(e, q, key="median_s"):
        return results[e].get(q, {}).get(key)

    def best_peer(q, key):
        vals = [med(p, q, key) for p in peers if med(p, q, key) is not None]
        return min(vals) if vals else None

    lines = [f"# PDS-H, scale factor {meta['sf']}", "",
             f"Machine: {meta['machine_desc']}; threads per engine: {meta['threads'] or 'all'}; date {meta['date']}. "
             f"Warm: median of {meta['reps']} runs after the cold one (min-max in brackets), seconds. Every run "
             "reads the Parquet files. Ratio: tug / fastest peer (below 1: tug faster).", ""]
    for title, key in (("Warm", "median_s"), ("Cold (first run)", "cold_s")):
        head = ["query"] + engines + [f"{t} / fastest peer" for t in tugs]
        lines += [f"## {title}", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        totals = {e: 0.0 for e in engines}
        complete = {e: True for e in engines}
        for q in queries:
            row = [f"Q{q}"]
            for e in engines:
                v = med(e, q, key)
                if v is None:
                    complete[e] = False
                    row.append(results[e].get(q, {}).get("error", "n/a")[:40])
                    continue
                totals[e] += v
                cell = fmt(v)
                if key == "median_s":
                    cell += f" ({fmt(med(e, q, 'min_s'))}-{fmt(med(e, q, 'max_s'))})"
                row.append(cell)
            for t in tugs:
                b, v = best_peer(q, key), med(t, q, key)
                row.append(f"{v / b:.2f}" if b and v is not None else "")
            lines.append("| " + " | ".join(row) + " |")
        peer_total = min((totals[p] for p in peers if complete[p]), default=None)
        total = ["**total**"] + [fmt(totals[e]) + ("" if complete[e] else " (incomplete)") for e in engines]
        total += [f"{totals[t] / peer_total:.2f}" if peer_total and complete[t] else "" for t in tugs]
        lines += ["| " + " | ".join(total) + " |", ""]
    mismatch = [(q, {e: results[e][q]["rows"] for e in engines if "rows" in results[e].get(q, {})}) for q in queries]
    mismatch = [(q, r) for q, r in mismatch if len(set(r.values())) > 1]
    if mismatch:
        lines += ["Row counts that differ between engines: " + "; ".join(f"Q{q} {r}" for q, r in mismatch), ""]
    lines += [f"Command: `{meta['command']}`", ""]
    return "\n".join(lines)


def chart(results, queries, meta, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    engines = list(results)
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(queries) + 2), 4.5))
    width = 0.8 / len(engines)
    xs = np.arange(len(queries))
    for i, e in enumerate(engines):
        vals = [results[e].get(q, {}).get("median_s") or 0 for q in queries]
        ax.bar(xs + (i - (len(engines) - 1) / 2) * width, vals, width, label=e)
    ax.set_xticks(xs, [f"Q{q}" for q in queries])
    ax.set_yscale("log")
    ax.set_ylabel("seconds, warm median (log scale, lower is better)")
    ax.set_title(f"PDS-H SF {meta['sf']}: {meta['machine_desc']}, {meta['threads'] or 'all'} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="PDS-H Parquet directory (default bench/data/pdsh-sf<SF>, generated if missing)")
    ap.add_argument("--sf", default="1", help="scale factor (default 1)")
    ap.add_argument("--queries", default="all", help="1,2,.. or all (the queries tug_pdsh has)")
    ap.add_argument("--reps", type=int, default=3, help="warm runs after the cold one (default 3)")
    ap.add_argument("--threads", type=int, default=0, help="threads per engine (0 = all)")
    ap.add_argument("--engines", default=",".join(ALL_ENGINES))
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--baseline", help="another build directory whose CPU engine runs too (tug-cpu-baseline)")
    ap.add_argument("--interleave", action="store_true", help="every engine on a query before the next query")
    ap.add_argument("--machine", default=f"{os.cpu_count()}cores", help="machine name in the output directory")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.threads:
        os.environ["POLARS_MAX_THREADS"] = str(args.threads)  # read when polars is first imported
    build = Path(args.build)
    data = Path(args.data or REPO / "bench" / "data" / f"pdsh-sf{args.sf}")
    pdsh_data.ensure_data(data, args.sf, build)
    registered = tug_registered(build)
    queries = registered if args.queries == "all" else [int(q) for q in args.queries.split(",")]
    engines = args.engines.split(",")
    unknown = set(engines) - set(ALL_ENGINES)
    if unknown:
        ap.error(f"unknown engines {sorted(unknown)}; known: {ALL_ENGINES}")

    if args.baseline:
        at = engines.index("tug-cpu") + 1 if "tug-cpu" in engines else 0
        engines.insert(at, "tug-cpu-baseline")

    def run_engine(e, qs):
        """{query: summary} of engine `e` on queries `qs`; None when the engine is not available."""
        if e.startswith("tug-"):
            where, kind = (Path(args.baseline), "cpu") if e == "tug-cpu-baseline" else (build, e[4:])
            have = registered if where == build else tug_registered(where)
            r = run_tug(kind, where, data, [q for q in qs if q in have], args.reps, args.threads)
            if r is not None:
                for q in qs:
                    r.setdefault(q, {"error": "not registered"})
            return r
        if e == "duckdb":
            return run_duckdb(data, qs, args.reps, args.threads)
        return run_polars(data, qs, args.reps)

    results = {}
    if args.interleave:
        unavailable = set()
        for q in queries:
            print(f"== Q{q}", flush=True)
            for e in engines:
                if e in unavailable:
                    continue
                r = run_engine(e, [q])
                if r is None:
                    unavailable.add(e)
                else:
                    results.setdefault(e, {}).update(r)
    else:
        for e in engines:
            print(f"== {e}", flush=True)
            r = run_engine(e, queries)
            if r is not None:
                results[e] = r

    date = datetime.date.today().isoformat()
    meta = {"sf": args.sf, "date": date, "reps": args.reps, "threads": args.threads, "queries": queries,
            "machine_desc": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                            f"{platform.system()}",
            "command": "bench/pdsh.py " + " ".join(sys.argv[1:])}
    out = Path(args.out or REPO / "bench" / "results" / f"{date}-pdsh-sf{args.sf}-{args.machine}")
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(results, queries, meta)
    (out / "results.md").write_text(md)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    chart(results, queries, meta, out / "chart.png")
    print(md)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
