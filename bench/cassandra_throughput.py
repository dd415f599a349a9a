"""Read and write throughput of tug's Cassandra client against the DataStax Python driver (issue 21,
docs/cassandra.md), in one run on one local node: rows/s of
- writes: tug's sink_cassandra (tug_bench, bench/cassandra_throughput.cpp: unlogged batches per partition key,
  and one row per request) and the driver's execute_concurrent_with_args of a prepared INSERT, with the same
  requests in flight (5, the Spark connector's default, and 64);
- reads: tug's scan_cassandra (64 token-range splits, 1 or 8 read at once; its session made in each timed scan,
  or once before them as the driver's is) and the driver's execute_concurrent_with_args of the same
  token-range SELECT over 64 ranges with as many in flight, every page fetched and every row materialized
  (tuple_factory, its fastest row form). For each read, the CPU seconds the node's JVM used
  (/proc/PID/stat) and the client's (tug_bench's rusage, the driver's process_time), per scan.
The rows (int k, int c, double v, text s; 10,007 partition keys) and the page size are the same for both.
Medians of --repeat runs, each run all four measurements in turn.

    .venv/bin/python bench/cassandra_throughput.py --build build --out bench/results/DATE-cassandra-throughput

starts a node (scripts/cassandra.sh start, 512 MB heap) unless --port names a running one, and writes
results.json, README.md (the command, the machine, the table) and throughput.png into --out. --only scan
measures the reads alone (tug writes the table once first)."""
import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = 10007
SPLITS = 64


def rows_of(n):
    return [(i % KEYS, i // KEYS, i * 0.5, "s%d" % (i % 1000)) for i in range(n)]


def session_of(port):
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
    from cassandra.policies import RoundRobinPolicy
    from cassandra.query import tuple_factory
    from cassandra import ConsistencyLevel

    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), row_factory=tuple_factory,
                               consistency_level=ConsistencyLevel.ONE, request_timeout=60)
    cluster = Cluster(["127.0.0.1"], port=port, auth_provider=PlainTextAuthProvider("cassandra", "cassandra"),
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, protocol_version=4)
    return cluster, cluster.connect()


def create_tables(s):
    s.execute("CREATE KEYSPACE IF NOT EXISTS tug_bench WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    for t in ("w_tug", "w_py"):
        s.execute(f"DROP TABLE IF EXISTS tug_bench.{t}")
        s.execute(f"CREATE TABLE tug_bench.{t} (k int, c int, v double, s text, PRIMARY KEY (k, c))")


def py_write(s, rows, in_flight):
    from cassandra.concurrent import execute_concurrent_with_args

    stmt = s.prepare("INSERT INTO tug_bench.w_py (k, c, v, s) VALUES (?, ?, ?, ?)")
    t = time.perf_counter()
    results = execute_concurrent_with_args(s, stmt, rows, concurrency=in_flight, raise_on_first_error=True)
    elapsed = time.perf_counter() - t
    assert all(ok for ok, _ in results)
    return elapsed


def token_ranges(n):
    lo, hi = -(2 ** 63), 2 ** 63 - 1
    step = (hi - lo) // n
    bounds = [lo + i * step for i in range(n)] + [hi]
    return [(bounds[i], bounds[i + 1]) for i in range(n)]


def node_cpu(pid):
    """CPU seconds the node's process has used so far (0 without a pid)."""
    if not pid:
        return 0.0
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def py_scan(s, in_flight, fetch, expect):
    from cassandra.concurrent import execute_concurrent_with_args

    stmt = s.prepare("SELECT k, c, v, s FROM tug_bench.w_tug WHERE token(k) > ? AND token(k) <= ?")
    stmt.fetch_size = fetch
    ranges = token_ranges(SPLITS)
    ranges[0] = (-(2 ** 63), ranges[0][1])  # token > min excludes nothing: min is no token of a key
    t, cpu = time.perf_counter(), time.process_time()
    results = execute_concurrent_with_args(s, stmt, ranges, concurrency=in_flight, raise_on_first_error=True)
    rows = 0
    for ok, rs in results:
        assert ok
        for _ in rs:  # the later pages are fetched while iterating
            rows += 1
    elapsed = time.perf_counter() - t
    if rows != expect:
        sys.exit(f"the driver read {rows} rows of {expect}")
    return elapsed, time.process_time() - cpu


def tug_benchmarks(build, port, n, fetch, name_filter):
    exe = build / "tug_bench"
    if not exe.exists():
        sys.exit(f"{exe} is missing: ninja -C {build} tug_bench")
    env = dict(os.environ, TUG_BENCH_CASSANDRA_PORT=str(port), TUG_BENCH_CASSANDRA_ROWS=str(n),
               TUG_BENCH_CASSANDRA_FETCH=str(fetch))
    p = subprocess.run([str(exe), f"--benchmark_filter={name_filter}", "--benchmark_format=json"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"tug_bench failed:\n{p.stderr[-3000:]}")
    out = {}
    for b in json.loads(p.stdout)["benchmarks"]:
        if b.get("error_occurred"):
            sys.exit(f"{b['name']}: {b.get('error_message')}")
        out[b["run_name"].removesuffix("/real_time")] = (b["real_time"] / 1e3, b["iterations"])  # ms -> s
    return out


def tug_scan(build, port, n, fetch, name, pid):
    """One scan benchmark alone: seconds per scan, and the node's and tug_bench's CPU seconds per scan."""
    node0, cpu0 = node_cpu(pid), children_cpu()
    (secs, iterations), = tug_benchmarks(build, port, n, fetch, f"^{name}/").values()
    return secs, (node_cpu(pid) - node0) / iterations, (children_cpu() - cpu0) / iterations


def chart(table, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["case"].replace(", ", "\n") for r in table]
    tug = [r["tug_rows_s"] / 1e3 for r in table]
    py = [r["driver_rows_s"] / 1e3 for r in table]
    x = range(len(labels))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.bar([i - 0.2 for i in x], tug, 0.4, label="tug (C++ CQL client)")
    ax.bar([i + 0.2 for i in x], py, 0.4, label="DataStax Python driver")
    for i, r in enumerate(table):
        ax.text(i - 0.2, tug[i], f"{r['speedup']:.1f}x", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("thousand rows / s")
    ax.set_title("Cassandra 5.0.4, one local node: tug vs the Python driver (median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--port", type=int, default=0, help="a running node's native port (default: start one)")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--fetch", type=int, default=5000, help="rows per page, both clients")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["all", "scan"], default="all",
                    help="scan: the reads alone (the table is written once by tug first)")
    ap.add_argument("--node-pid", type=int, default=0,
                    help="the node's process id, for its CPU time (default: the started node's)")
    args = ap.parse_args()
    import cassandra

    node_dir = None
    port = args.port
    if not port:
        node_dir = tempfile.mkdtemp(prefix="tug-cassandra-bench-")
        subprocess.run(["bash", str(ROOT / "scripts/cassandra.sh"), "start", node_dir, "auto"], check=True)
        port = int(Path(node_dir, "port").read_text())
    pid = args.node_pid or (int(Path(node_dir, "pid").read_text()) if node_dir else 0)
    cpu = {}  # name -> [(node CPU s, client CPU s) per run]
    try:
        cluster, s = session_of(port)
        create_tables(s)
        rows = rows_of(args.rows)
        runs = {}
        if args.only == "scan":  # the table the scans read, written once
            tug_benchmarks(args.build, port, args.rows, args.fetch, "BM_cassandra_write/64/1")
        for rep in range(args.repeat):
            if args.only == "all":
                for name, (secs, _) in tug_benchmarks(args.build, port, args.rows, args.fetch, "BM_cassandra_write").items():
                    runs.setdefault(name, []).append(secs)
                for w in (5, 64):
                    runs.setdefault(f"py_write/{w}", []).append(py_write(s, rows, w))
            for r in (1, 8):
                for connect in (1, 0):
                    name = f"BM_cassandra_scan/{r}/{connect}"
                    secs, node_s, client_s = tug_scan(args.build, port, args.rows, args.fetch, name, pid)
                    runs.setdefault(name, []).append(secs)
                    cpu.setdefault(name, []).append((node_s, client_s))
                node0 = node_cpu(pid)
                secs, client_s = py_scan(s, r, args.fetch, args.rows)
                runs.setdefault(f"py_scan/{r}", []).append(secs)
                cpu.setdefault(f"py_scan/{r}", []).append((node_cpu(pid) - node0, client_s))
            print(f"run {rep + 1} of {args.repeat} done", file=sys.stderr)
        cluster.shutdown()
    finally:
        if node_dir:
            subprocess.run(["bash", str(ROOT / "scripts/cassandra.sh"), "stop", node_dir])
    med = {k: statistics.median(v) for k, v in runs.items()}
    cases = [("write, 5 in flight, batched", "BM_cassandra_write/5/1", "py_write/5"),
             ("write, 5 in flight, row per request", "BM_cassandra_write/5/0", "py_write/5"),
             ("write, 64 in flight, batched", "BM_cassandra_write/64/1", "py_write/64"),
             ("write, 64 in flight, row per request", "BM_cassandra_write/64/0", "py_write/64"),
             ("scan, 1 split at once, tug connects in the timed scan", "BM_cassandra_scan/1/1", "py_scan/1"),
             ("scan, 8 splits at once, tug connects in the timed scan", "BM_cassandra_scan/8/1", "py_scan/8"),
             ("scan, 1 split at once, both connected before", "BM_cassandra_scan/1/0", "py_scan/1"),
             ("scan, 8 splits at once, both connected before", "BM_cassandra_scan/8/0", "py_scan/8")]
    table = []
    for label, t, p in cases:
        if t not in med:
            continue
        row = {"case": label, "tug_s": med[t], "driver_s": med[p], "tug_rows_s": args.rows / med[t],
               "driver_rows_s": args.rows / med[p], "speedup": med[p] / med[t]}
        if t in cpu and pid:  # medians of the CPU seconds per scan
            row["node_cpu_s"] = [statistics.median(c[0] for c in cpu[k]) for k in (t, p)]
            row["client_cpu_s"] = [statistics.median(c[1] for c in cpu[k]) for k in (t, p)]
        table.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["| case | tug rows/s | driver rows/s | tug / driver | node CPU s per scan, tug / driver "
             "| client CPU s per scan, tug / driver |", "| --- | --- | --- | --- | --- | --- |"]
    for r in table:
        n, c = r.get("node_cpu_s"), r.get("client_cpu_s")
        lines.append(f"| {r['case']} | {r['tug_rows_s']:,.0f} | {r['driver_rows_s']:,.0f} | {r['speedup']:.2f}x | "
                     + (f"{n[0]:.2f} / {n[1]:.2f} | {c[0]:.3f} / {c[1]:.3f} |" if n else "| |"))
    print("\n".join(lines))
    command = ".venv/bin/python bench/cassandra_throughput.py " + " ".join(sys.argv[1:])
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": platform.node(),
            "cpus": os.cpu_count(), "rows": args.rows, "fetch_size": args.fetch, "repeat": args.repeat,
            "cassandra": "5.0.4, one node on 127.0.0.1, 512 MB heap, same cores as the clients",
            "driver": f"cassandra-driver {cassandra.__version__} (Cython: the wheel's compiled modules), protocol v4",
            "command": command}
    (args.out / "results.json").write_text(json.dumps({"meta": meta, "runs": runs, "cpu": cpu, "table": table},
                                                      indent=1))
    chart(table, args.out / "throughput.png")
    readme = [f"# Cassandra throughput: tug vs the DataStax Python driver ({meta['date'][:10]})", "",
              "```", command, "```", "",
              f"Machine: {meta['machine']}, {meta['cpus']} CPUs; {meta['cassandra']}; {meta['driver']}.",
              f"{args.rows:,} rows (int k, int c, double v, text s; {KEYS:,} partition keys), page size {args.fetch}, "
              f"medians of {args.repeat} runs. Writes at consistency ONE; the driver writes one row per request "
              "(execute_concurrent_with_args), tug in unlogged batches per partition key (sink_cassandra's default) "
              "or one row per request. Reads: 64 token ranges, every row materialized (the driver as tuples, tug "
              "as columns). CPU columns: seconds of CPU per scan of the node's JVM and of the client "
              "(tug_bench's process, its start included; the driver's process_time), medians.", "", *lines, "", "![throughput](throughput.png)", ""]
    (args.out / "README.md").write_text("\n".join(readme))


if __name__ == "__main__":
    main()
