"""The Python API's overhead over the C++ API, in one run: small queries on 10k rows, and the 22 PDS-H
queries of bench/pdsh/polars_queries.py (unchanged, `pl` swapped for `tug`) at the scale factor of --data.

Each query's plan runs both ways, interleaved run by run:
- Python: `LazyFrame.collect()` as a user calls it, timed in Python: the query runs on its own thread
  while the calling thread watches for Ctrl-C and progress (docs/python.md), and the result is wrapped.
  For the small queries the time includes building the plan in Python ("build" column, apart too).
- C++: `lazy_frame::collect` on the same plan, timed in C++ with no Python in between
  (`_tug.LazyFrame._collect_seconds`).
- CLI (PDS-H only, with --cli): the C++ PDS-H runner (tug_pdsh, tools/tug_pdsh.cpp) on the same data and
  query, run in the same loop: one process per run, its warm run's time as it reports it (scan, plan and
  execute, no process start). It runs tug's C++ plans of the queries (bench/pdsh/q*.cpp), written to
  match the Polars forms but not built from them: the ratio to it includes any difference of plan.
Medians of --reps runs (--small-reps for the small queries) after a warm one; the ways take turns at
going first. Writes results.md (the
command, the machine, the tables), results.json and chart.png to --out (default
bench/results/<date>-python-overhead/).

    .venv/bin/python bench/python_overhead.py --data bench/data/pdsh-sf1 [--build build] [--reps 3]
                                              [--cli build/tug_pdsh]
"""
import argparse
import datetime
import importlib.util
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


def small_queries(tug):
    """Five queries over 10k rows (in memory), as functions that build the plan."""
    import pyarrow as pa

    n = 10_000
    fact = tug.DataFrame(pa.table({
        "k": pa.array([i % 97 for i in range(n)], pa.int64()),
        "g": pa.array([f"g{i % 13}" for i in range(n)], pa.large_string()),
        "x": pa.array([(i * 7919) % 1000 / 10 for i in range(n)], pa.float64()),
        "y": pa.array([None if i % 11 == 0 else i for i in range(n)], pa.int64()),
    })).lazy()
    dim = tug.DataFrame(pa.table({"k": pa.array(list(range(97)), pa.int64()),
                                  "w": pa.array([i * 0.5 for i in range(97)], pa.float64())})).lazy()
    c = tug.col
    return {
        "filter_group_sort": lambda: fact.filter(c("x") > 20.0).group_by("g").agg(
            c("x").sum().alias("sx"), c("y").mean().alias("my"), tug.len().alias("n")).sort("g"),
        "with_columns_select": lambda: fact.with_columns((c("x") * 2 + c("y")).alias("z")).select("k", "z"),
        "join_group": lambda: fact.join(dim, on="k").group_by("k").agg((c("x") * c("w")).sum()),
        "sort_head": lambda: fact.sort("g", "x", descending=[False, True]).head(10),
        "unique": lambda: fact.select("k", "g").unique(),
    }


def time_python(build, o_kwargs):
    t0 = time.perf_counter()
    q = build()
    t1 = time.perf_counter()
    q.collect(**o_kwargs)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t0


def time_cpp(q, tug, o_kwargs):
    opts = tug.options.resolve(o_kwargs.get("engine", "auto"), None,
                               {k: v for k, v in o_kwargs.items() if k != "engine"})
    opts.statistics = False
    return q._lf._collect_seconds(opts, 1)[0]


def time_cli(cli, data, query, engine):
    """The warm run of PDS-H `query` in a tug_pdsh process (its own timing: one cold run, then this one)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "t.json"
        subprocess.run([cli, "--data", data, "--query", str(query), "--engine", engine, "--reps", "1",
                        "--json", str(out)], check=True, capture_output=True, text=True)
        return json.loads(out.read_text())["queries"][0]["times_s"][0]


def measure(name, build, tug, o_kwargs, reps, cli=None):
    """Medians of `reps` interleaved runs; `cli`: (tug_pdsh, data, query) also timed in the loop. The ways
    take turns at going first: run by run the order rotates, so that none always follows another (the
    Python run always came right after the tug_pdsh process ended, whose memory the kernel was still
    freeing on the other core)."""
    build()
    q = build()
    q.collect(**o_kwargs)  # warm
    b, py, cpp, c = [], [], [], []

    def python():
        tb, tp = time_python(build, o_kwargs)
        b.append(tb)
        py.append(tp)

    ways = [python, lambda: cpp.append(time_cpp(q, tug, o_kwargs))]
    if cli:
        ways.append(lambda: c.append(time_cli(*cli, o_kwargs["engine"])))
    for rep in range(reps):
        for way in ways[rep % len(ways):] + ways[:rep % len(ways)]:
            way()
    r = {"query": name, "build_s": statistics.median(b), "python_s": statistics.median(py),
         "cpp_s": statistics.median(cpp), "reps": reps}
    if c:
        r["cli_s"] = statistics.median(c)
    return r


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model}), {platform.system()} {platform.release()}, Python {platform.python_version()}"


def chart(small, pdsh, path: Path, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [2, 3]})
    names = [r["query"] for r in small]
    xs = range(len(names))
    a.bar([x - 0.2 for x in xs], [r["cpp_s"] * 1e6 for r in small], 0.4, label="C++ collect")
    a.bar([x + 0.2 for x in xs], [r["python_s"] * 1e6 for r in small], 0.4, label="Python build + collect")
    a.set_xticks(list(xs), names, rotation=25, ha="right", fontsize="small")
    a.set_ylabel("microseconds (median)")
    a.set_title("10k rows")
    a.legend(fontsize="small")
    qs = [f"q{r['query']}" for r in pdsh]
    xq = range(len(qs))
    with_cli = all("cli_s" in r for r in pdsh) and pdsh
    w = 0.4 if with_cli else 0.8
    b.bar([x - (w / 2 if with_cli else 0) for x in xq], [r["python_s"] / r["cpp_s"] for r in pdsh], w,
          color="tab:orange", label="Python / C++ API (same plan)")
    if with_cli:
        b.bar([x + w / 2 for x in xq], [r["python_s"] / r["cli_s"] for r in pdsh], w, color="tab:blue",
              label="Python / CLI (tug_pdsh, C++ plans)")
    b.set_xticks(list(xq), qs)
    b.axhline(1.0, color="black", linewidth=0.8)
    b.axhline(1.05, color="tab:red", linestyle="--", linewidth=0.8, label="goal: 5%")
    b.set_ylabel("Python / C++ time")
    top = max([r["python_s"] / r["cpp_s"] for r in pdsh] + [r["python_s"] / r["cli_s"] for r in pdsh if "cli_s" in r],
              default=1.2)
    low = min([r["python_s"] / r["cpp_s"] for r in pdsh] + [r["python_s"] / r["cli_s"] for r in pdsh if "cli_s" in r],
              default=0.8)
    b.set_ylim(min(0.8, low - 0.05), max(1.2, top + 0.05))
    b.tick_params(axis="x", labelsize="small", rotation=90)
    b.set_title("PDS-H, per query")
    b.legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="PDS-H Parquet directory (bench/pdsh.py generates it)")
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--small-reps", type=int, default=200)
    ap.add_argument("--engine", default="cpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cli", default=None, help="tug_pdsh, to time the C++ PDS-H runner in the same loop")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(a.build) / "python"))
    import tug

    o_kwargs = {"engine": a.engine}
    small = []
    for name, build in small_queries(tug).items():
        r = measure(name, build, tug, o_kwargs, a.small_reps)
        small.append(r)
        print(f"{name:20s} build {r['build_s'] * 1e6:7.1f} us  Python {r['python_s'] * 1e6:8.1f} us  "
              f"C++ {r['cpp_s'] * 1e6:8.1f} us  +{(r['python_s'] - r['cpp_s']) * 1e6:6.1f} us", flush=True)

    spec = importlib.util.spec_from_file_location("pq", REPO / "bench" / "pdsh" / "polars_queries.py")
    pq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pq)
    pq.pl = tug
    tables = pq.Tables(**{n: tug.scan_parquet(f"{a.data}/{n}/*.parquet") for n in pq.TABLE_NAMES})
    pdsh, skipped = [], []
    for qn in sorted(pq.QUERIES):
        try:
            r = measure(qn, lambda: pq.QUERIES[qn](tables), tug, o_kwargs, a.reps,
                        (a.cli, a.data, qn) if a.cli else None)
        except tug.TugError as e:
            skipped.append((qn, str(e).split("\n")[0]))
            print(f"q{qn:02d} skipped: its Polars form does not run on tug ({e})", flush=True)
            continue
        pdsh.append(r)
        cli = f"  CLI {r['cli_s']:.3f} s  ratio {r['python_s'] / r['cli_s']:.3f}" if "cli_s" in r else ""
        print(f"q{qn:02d} Python {r['python_s']:.3f} s  C++ {r['cpp_s']:.3f} s  ratio {r['python_s'] / r['cpp_s']:.3f}"
              + cli, flush=True)
    tot_py, tot_cpp = sum(r["python_s"] for r in pdsh), sum(r["cpp_s"] for r in pdsh)
    tot_cli = sum(r["cli_s"] for r in pdsh) if a.cli else None
    print(f"PDS-H total: Python {tot_py:.2f} s  C++ {tot_cpp:.2f} s  ratio {tot_py / tot_cpp:.3f}"
          + (f"  CLI {tot_cli:.2f} s  ratio {tot_py / tot_cli:.3f}" if a.cli else ""))

    today = datetime.date.today().isoformat()
    out = Path(a.out or REPO / "bench" / "results" / f"{today}-python-overhead")
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    command = "python bench/python_overhead.py " + " ".join(sys.argv[1:])
    data = {"date": today, "commit": commit, "command": command, "machine": machine(), "engine": a.engine,
            "small": small, "pdsh": pdsh, "skipped": skipped,
            "pdsh_total": {"python_s": tot_py, "cpp_s": tot_cpp, "ratio": tot_py / tot_cpp}}
    if a.cli:
        data["pdsh_total"].update(cli_s=tot_cli, ratio_cli=tot_py / tot_cli)
    (out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# Python API overhead over the C++ API ({today})", "",
             f"Command: `{command}` (commit {commit}, engine {a.engine})  ", f"Machine: {machine()}", "",
             "Each query's plan runs through the Python API (`LazyFrame.collect`, timed in Python) and through "
             "the C++ API alone (`lazy_frame::collect` on the same plan, timed in C++), interleaved (the order "
             "rotating run by run); medians."
             + (" PDS-H also through the C++ PDS-H runner (`tug_pdsh`, its warm run as it times it, one process a "
                "run, in the same loop), which runs tug's C++ plans of the queries (bench/pdsh/q*.cpp): its "
                "ratio includes any difference between those plans and the Polars forms." if a.cli else ""), "",
             f"## 10k rows ({a.small_reps} runs each)", "",
             "| query | build plan in Python (us) | Python build + collect (us) | C++ collect (us) | overhead (us) |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in small:
        lines.append(f"| {r['query']} | {r['build_s'] * 1e6:.1f} | {r['python_s'] * 1e6:.1f} | {r['cpp_s'] * 1e6:.1f} | "
                     f"{(r['python_s'] - r['cpp_s']) * 1e6:.1f} |")
    lines += ["", f"## PDS-H ({a.data}, {a.reps} runs each)", ""]
    if a.cli:
        lines += ["| query | Python (s) | C++ API (s) | Python / C++ API | CLI (s) | Python / CLI |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in pdsh:
            lines.append(f"| q{r['query']} | {r['python_s']:.3f} | {r['cpp_s']:.3f} | {r['python_s'] / r['cpp_s']:.3f} | "
                         f"{r['cli_s']:.3f} | {r['python_s'] / r['cli_s']:.3f} |")
        lines.append(f"| total | {tot_py:.3f} | {tot_cpp:.3f} | {tot_py / tot_cpp:.3f} | {tot_cli:.3f} | "
                     f"{tot_py / tot_cli:.3f} |")
    else:
        lines += ["| query | Python (s) | C++ (s) | Python / C++ |", "| --- | ---: | ---: | ---: |"]
        for r in pdsh:
            lines.append(f"| q{r['query']} | {r['python_s']:.3f} | {r['cpp_s']:.3f} | {r['python_s'] / r['cpp_s']:.3f} |")
        lines.append(f"| total | {tot_py:.3f} | {tot_cpp:.3f} | {tot_py / tot_cpp:.3f} |")
    for qn, why in skipped:
        lines.append(f"\nq{qn} skipped: {why}")
    lines += ["", "![chart](chart.png)", ""]
    (out / "results.md").write_text("\n".join(lines))
    chart(small, pdsh, out / "chart.png",
          f"Python API over C++ API ({machine().split(' (')[0]}, {a.engine}): PDS-H total ratio {tot_py / tot_cpp:.3f}"
          + (f", over the CLI {tot_py / tot_cli:.3f}" if a.cli else ""))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
