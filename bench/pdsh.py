#!/usr/bin/env python3
"""PDS-H benchmark: the same queries on the same Parquet files with tug (each available engine, through
tug_pdsh), DuckDB (bench/pdsh/sql) and Polars (bench/pdsh/polars_queries.py), in one run.

Per engine and query: "cold" is the first run in a fresh process / connection, "warm" the median (and
min/max) of --reps further runs. Every run reads the Parquet files (scan included; they are in the OS
cache after the first). Writes results.md (tables), results.json and chart.png (when matplotlib is
there) under bench/results/<date>-pdsh-sf<SF>-<machine>/ (or --out); results.json and results.md are
rewritten after each engine, so a run cut short keeps what it measured.

For tug engines the JSON also records, per query, the physical plan's nodes per backend and the nodes
that fell back from the GPU to the CPU (with the reason); results.md shows them.

--deadline S: a time budget in seconds for the whole run, shared equally by the engines in turn (time
one leaves unused goes to the next); once an engine's share has passed it starts no query (and no warm
run), and what was not run is recorded as skipped ("skipped" in results.json's meta).

usage: bench/pdsh.py [--data DIR | --sf SF] [--queries 1,2,..|all] [--reps 3] [--threads N]
                     [--engines tug-cpu,tug-gpu,duckdb,polars] [--build build] [--machine NAME]
                     [--machine-desc TEXT] [--deadline S] [--out DIR]
       bench/pdsh.py --replot DIR        (results.md and chart.png again from DIR/results.json)
"""
import argparse
import datetime
import json
import os
import platform
import shutil
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
SKIPPED = {"skipped": "time limit"}


class Deadline:
    """The --deadline budget: seconds left (None: no budget)."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds if seconds else None

    def share(self, n):
        """A deadline for the next of `n` engines left: an equal share of the time left (what an engine
        leaves unused goes to the next ones)."""
        d = Deadline(0)
        if self.end is not None:
            d.end = time.monotonic() + max(0.0, self.left()) / n
        return d

    def left(self):
        return None if self.end is None else self.end - time.monotonic()

    def passed(self):
        return self.end is not None and time.monotonic() >= self.end


def summarize(times, rows):
    """cold = times[0]; warm = the rest (the cold run when there is no other)."""
    warm = times[1:] or times[:1]
    return {"rows": rows, "cold_s": times[0], "times_s": warm, "reps": len(times) - 1,
            "median_s": statistics.median(warm), "min_s": min(warm), "max_s": max(warm)}


def tug_registered(build):
    out = subprocess.run([str(build / "tug_pdsh"), "--list"], capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def tug_process(engine, build, data, queries, reps, threads, deadline):
    """One tug_pdsh process over `queries` (its stdout and stderr pass through): (records by query or
    None when it wrote no JSON, its exit status, whether it was killed at the deadline). Under a
    deadline tug_pdsh gets the time left as --time-limit and is killed 60 s after it (a hung query)."""
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "t.json"
        cmd = [str(build / "tug_pdsh"), "--data", str(data), "--query", ",".join(map(str, queries)),
               "--engine", engine, "--reps", str(reps), "--json", str(js)]
        if threads:
            cmd += ["--threads", str(threads)]
        left = deadline.left()
        if left is not None:
            cmd += ["--time-limit", str(max(1, int(left)))]
        try:
            rc, killed = subprocess.run(cmd, timeout=None if left is None else max(1, left) + 60).returncode, False
        except subprocess.TimeoutExpired:
            rc, killed = None, True
            print(f"tug-{engine}: killed past the deadline", flush=True)
        if not js.exists():
            return None, rc, killed
        doc = json.loads(js.read_text())
    out = {}
    for rec in doc["queries"]:
        q = rec.pop("query")
        if "error" in rec or "skipped" in rec:
            out[q] = rec
        else:
            r = summarize([rec["cold_s"]] + (rec["times_s"] if rec["reps"] else []), rec["rows"])
            r["nodes"], r["fallbacks"] = rec["nodes"], rec["fallbacks"]
            out[q] = r
    return out, rc, killed


def run_tug(engine, build, data, queries, reps, threads, deadline):
    """{query: record} for a tug engine; None when the engine is not available. When tug_pdsh dies (a
    signal), the query it was in is recorded as the error and a new process runs the rest."""
    out, todo = {}, list(queries)
    while todo:
        recs, rc, killed = tug_process(engine, build, data, todo, reps, threads, deadline)
        if recs is None and not killed and rc is not None and rc >= 0 and not out:
            print(f"tug-{engine} unavailable (see its message above)", flush=True)
            return None
        out.update(recs or {})
        todo = [q for q in todo if q not in out]
        if not todo:
            break
        if killed:
            out.update({q: {"skipped": "killed past the deadline"} for q in todo})
            break
        if rc is not None and rc < 0:
            out[todo[0]] = {"error": f"tug_pdsh died (signal {-rc})"}
            print(f"tug-{engine} q{todo[0]:02d}: tug_pdsh died (signal {-rc}); going on with the next query",
                  flush=True)
            todo = todo[1:]
            continue
        out.update({q: {"error": f"no record (tug_pdsh status {rc})"} for q in todo})
        break
    return out


def time_runs(fn, reps, deadline):
    """Runs fn once (cold), then up to `reps` times while the deadline allows."""
    times, rows = [], None
    for i in range(reps + 1):
        if i and deadline.passed():
            break
        t0 = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - t0)
    return summarize(times, rows)


def run_python_engine(name, queries, reps, deadline, make_fn):
    """{query: record}; make_fn(q) is the query's run function, or a string saying why there is none."""
    out = {}
    for q in queries:
        if deadline.passed():
            out[q] = dict(SKIPPED)
            continue
        fn = make_fn(q)
        if isinstance(fn, str):
            out[q] = {"error": fn}
            continue
        try:
            out[q] = time_runs(fn, reps, deadline)
        except Exception as e:  # an engine's error is a result, not the end of the run
            out[q] = {"error": f"{type(e).__name__}: {e}"}
            print(f"{name} q{q:02d} error: {out[q]['error']}", flush=True)
            continue
        r = out[q]
        print(f"{name} q{q:02d} rows={r['rows']} cold={r['cold_s']:.4f}s median={r['median_s']:.4f}s", flush=True)
    return out


def run_duckdb(data, queries, reps, threads, deadline):
    import duckdb

    try:  # Arrow is how DuckDB hands a result to Python fastest; fetchall where pyarrow is missing
        import pyarrow  # noqa: F401

        def materialize(rel):
            return rel.to_arrow_table().num_rows
    except ImportError:
        def materialize(rel):
            return len(rel.fetchall())

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {threads}")
    for t in pdsh_data.TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data}/{t}/*.parquet')")

    def make_fn(q):
        sql = (PDSH / "sql" / f"q{q:02d}.sql").read_text()
        return lambda: materialize(con.sql(sql))

    return run_python_engine("duckdb", queries, reps, deadline, make_fn)


def run_polars(data, queries, reps, deadline):
    import polars_queries  # after POLARS_MAX_THREADS is set

    def make_fn(q):
        fn = polars_queries.QUERIES.get(q)
        if fn is None:
            return "not written"
        return lambda: fn(polars_queries.scan_tables(data)).collect().height

    return run_python_engine("polars", queries, reps, deadline, make_fn)


def fmt(s):
    return f"{s:.3f}" if s is not None else "n/a"


def cell_text(rec):
    """A table cell for a query that has no time: its error or why it was skipped."""
    if "skipped" in rec:
        return "skipped (" + rec["skipped"] + ")"
    return rec.get("error", "n/a")[:40].replace("|", "/").replace("\n", " ")


def plan_section(results, queries, engine):
    """Per query: the plan's nodes per backend and the fallbacks, for a tug engine that used the GPU."""
    recs = {q: results[engine].get(q, {}) for q in queries}
    if not any(r.get("nodes", {}).get("cuda") or r.get("fallbacks") for r in recs.values()):
        return []
    lines = [f"## Where {engine} ran", "",
             "Physical plan nodes per backend (the cold run's plan), and the nodes that fell back to the CPU.", "",
             "| query | nodes on GPU | nodes on CPU | fell back to the CPU |", "| --- | --- | --- | --- |"]
    for q, r in recs.items():
        if "nodes" not in r:
            continue
        fb = "; ".join(f.replace("|", "/") for f in r.get("fallbacks", [])) or "none"
        lines.append(f"| Q{q} | {r['nodes'].get('cuda', 0)} | {r['nodes'].get('cpu', 0)} | {fb} |")
    return lines + [""]


def markdown(results, queries, meta):
    engines = list(results)
    peers = [e for e in engines if not e.startswith("tug")]
    tugs = [e for e in engines if e.startswith("tug")]

    def med(e, q, key="median_s"):
        return results[e].get(q, {}).get(key)

    def best_peer(q, key):
        vals = [med(p, q, key) for p in peers if med(p, q, key) is not None]
        return min(vals) if vals else None

    threads = meta["threads"] or f"all ({meta.get('cores', '?')})"
    warm = (f"median of {meta['reps']} runs after the cold one (min-max in brackets)" if meta["reps"]
            else "the cold run (no further runs)")
    lines = [f"# PDS-H, scale factor {meta['sf']}", "",
             f"Machine: {meta['machine_desc']}; threads per engine: {threads}; date {meta['date']}. "
             f"Warm: {warm}, seconds. Every run reads the Parquet files. "
             "Ratio: tug / fastest peer (below 1: tug faster).", ""]
    if meta.get("versions"):
        lines += ["Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", ""]
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
                    row.append(cell_text(results[e].get(q, {})))
                    continue
                totals[e] += v
                cell = fmt(v)
                if key == "median_s":
                    cell += f" ({fmt(med(e, q, 'min_s'))}-{fmt(med(e, q, 'max_s'))})"
                if results[e][q].get("fallbacks"):
                    cell += " *"
                row.append(cell)
            for t in tugs:
                b, v = best_peer(q, key), med(t, q, key)
                row.append(f"{v / b:.2f}" if b and v is not None else "")
            lines.append("| " + " | ".join(row) + " |")
        peer_total = min((totals[p] for p in peers if complete[p]), default=None)
        total = ["**total**"] + [fmt(totals[e]) + ("" if complete[e] else " (incomplete)") for e in engines]
        total += [f"{totals[t] / peer_total:.2f}" if peer_total and complete[t] else "" for t in tugs]
        lines += ["| " + " | ".join(total) + " |", ""]
    if any(r.get("fallbacks") for e in tugs for r in results[e].values()):
        lines += ["\\* some plan nodes of this query fell back to the CPU (below).", ""]
    for t in tugs:
        lines += plan_section(results, queries, t)
    mismatch = [(q, {e: results[e][q]["rows"] for e in engines if "rows" in results[e].get(q, {})}) for q in queries]
    mismatch = [(q, r) for q, r in mismatch if len(set(r.values())) > 1]
    if mismatch:
        lines += ["Row counts that differ between engines: " + "; ".join(f"Q{q} {r}" for q, r in mismatch), ""]
    if meta.get("skipped"):
        lines += ["Skipped (past the deadline): " + "; ".join(f"{e} Q{','.join(map(str, qs))}"
                                                            for e, qs in meta["skipped"].items()) + ".", ""]
    lines += [f"Command: `{meta['command']}`", ""]
    return "\n".join(lines)


def chart(results, queries, meta, path):
    """chart.png: warm medians per query and engine (log scale). False when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = list(results)
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(queries) + 2), 4.8))
    width = 0.8 / len(engines)
    for i, e in enumerate(engines):
        vals = [results[e].get(q, {}).get("median_s") or 0 for q in queries]
        xs = [j + (i - (len(engines) - 1) / 2) * width for j in range(len(queries))]
        ax.bar(xs, vals, width, label=e)
    ax.set_xticks(range(len(queries)), [f"Q{q}" for q in queries])
    ax.set_yscale("log")
    ax.set_ylabel("seconds, warm median (log scale, lower is better)")
    threads = meta["threads"] or meta.get("cores", "all")
    ax.set_title(f"PDS-H SF {meta['sf']}: {meta['machine_desc']}, {threads} threads", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_outputs(out, results, meta, plot=True):
    """results.json and results.md (and chart.png when `plot` and matplotlib is there) under OUT."""
    out.mkdir(parents=True, exist_ok=True)
    queries = meta["queries"]
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    md = markdown(results, queries, meta)
    (out / "results.md").write_text(md)
    if plot and not chart(results, queries, meta, out / "chart.png"):
        print("no matplotlib here: make the chart later with bench/pdsh.py --replot DIR", flush=True)
    return md


def replot(directory):
    """results.md and chart.png again from DIR/results.json."""
    d = Path(directory)
    doc = json.loads((d / "results.json").read_text())
    # JSON object keys are strings: the query numbers back to int
    results = {e: {int(q): r for q, r in recs.items()} for e, recs in doc["results"].items()}
    print(write_outputs(d, results, doc["meta"]))
    print(f"written to {d}")


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_names():
    if not shutil.which("nvidia-smi"):
        return []
    p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    return [line.strip() for line in p.stdout.splitlines() if line.strip()] if p.returncode == 0 else []


def core_count():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def machine_desc(engines):
    desc = f"{cpu_model()}, {core_count()} cores"
    gpus = gpu_names() if "tug-gpu" in engines else []
    if gpus:
        desc += ", " + " + ".join(gpus)
    return desc + f", {platform.system()}"


def versions(engines):
    v = {"python": platform.python_version()}
    for name, module in (("duckdb", "duckdb"), ("polars", "polars")):
        if name in engines:
            try:
                v[name] = __import__(module).__version__
            except ImportError:
                pass
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="PDS-H Parquet directory (default bench/data/pdsh-sf<SF>, generated if missing)")
    ap.add_argument("--sf", default="1", help="scale factor (default 1)")
    ap.add_argument("--queries", default="all", help="1,2,.. or all (the queries tug_pdsh has)")
    ap.add_argument("--reps", type=int, default=3, help="warm runs after the cold one (default 3)")
    ap.add_argument("--threads", type=int, default=0, help="threads per engine (0 = all)")
    ap.add_argument("--engines", default=",".join(ALL_ENGINES))
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--machine", default=f"{core_count()}cores", help="machine name in the output directory")
    ap.add_argument("--machine-desc", help="the machine in words (default: CPU model, cores, GPUs, OS)")
    ap.add_argument("--deadline", type=float, default=0, help="time budget in seconds for the runs (0 = none)")
    ap.add_argument("--out")
    ap.add_argument("--replot", metavar="DIR", help="only rewrite DIR/results.md and DIR/chart.png from its JSON")
    args = ap.parse_args()
    if args.replot:
        return replot(args.replot)
    if args.threads:
        os.environ["POLARS_MAX_THREADS"] = str(args.threads)  # read when polars is first imported
    build = Path(args.build)
    engines = args.engines.split(",")
    unknown = set(engines) - set(ALL_ENGINES)
    if unknown:
        ap.error(f"unknown engines {sorted(unknown)}; known: {ALL_ENGINES}")
    data = Path(args.data or REPO / "bench" / "data" / f"pdsh-sf{args.sf}")
    pdsh_data.ensure_data(data, args.sf, build)
    registered = tug_registered(build)
    queries = registered if args.queries == "all" else [int(q) for q in args.queries.split(",")]

    date = datetime.date.today().isoformat()
    meta = {"sf": args.sf, "date": date, "reps": args.reps, "threads": args.threads, "cores": core_count(),
            "queries": queries, "machine_desc": args.machine_desc or machine_desc(engines),
            "versions": versions(engines), "command": "bench/pdsh.py " + " ".join(sys.argv[1:])}
    out = Path(args.out or REPO / "bench" / "results" / f"{date}-pdsh-sf{args.sf}-{args.machine}")
    deadline = Deadline(args.deadline)
    t_start = time.monotonic()
    results = {}
    for i, e in enumerate(engines):
        print(f"== {e}", flush=True)
        share = deadline.share(len(engines) - i)
        if e.startswith("tug-"):
            tq = [q for q in queries if q in registered]
            r = {q: dict(SKIPPED) for q in tq} if share.passed() else \
                run_tug(e[4:], build, data, tq, args.reps, args.threads, share)
            if r is None:
                continue
            for q in queries:
                r.setdefault(q, {"error": "not registered"})
        elif e == "duckdb":
            r = run_duckdb(data, queries, args.reps, args.threads, share)
        else:
            r = run_polars(data, queries, args.reps, share)
        results[e] = r
        skipped = [q for q in queries if "skipped" in r.get(q, {})]
        if skipped:
            meta.setdefault("skipped", {})[e] = skipped
        meta["wall_s"] = round(time.monotonic() - t_start, 1)
        write_outputs(out, results, meta, plot=False)
    md = write_outputs(out, results, meta)
    print(md)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
