"""tug.scan_cassandra, LazyFrame.sink_cassandra and tug.cassandra_execute against a real Apache Cassandra node:
the one tests/cassandra uses (scripts/cassandra.sh in TUG_BUILD_DIR/cassandra-test), started here when it is not
running and stopped at the end when this module started it. Round trips of every size against the frame
written, pushed-down filters against Polars, and the documented errors."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tug

pl = pytest.importorskip("polars")

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "cassandra.sh"
KS = "tug_py"


@pytest.fixture(scope="module")
def server():
    d = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build")) / "cassandra-test"
    running = subprocess.run(["bash", str(SCRIPT), "status", str(d)], capture_output=True).returncode == 0
    try:
        if not running:
            r = subprocess.run(["bash", str(SCRIPT), "start", str(d), "auto"], capture_output=True, text=True,
                               timeout=400)
            assert r.returncode == 0, ("could not start Cassandra (scripts/cassandra.sh; Java 17, Maven):\n"
                                       + r.stderr[-3000:])
        opts = dict(port=int((d / "port").read_text()), username="cassandra", password="cassandra",
                    request_timeout_ms=20000)
        # the node answers before it has made its superuser role: until then logins fail (Bad_credentials)
        deadline = time.monotonic() + 180
        while True:
            try:
                tug.cassandra_execute("SELECT release_version FROM system.local", **opts)
                break
            except tug.IOError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        tug.cassandra_execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
                              "{'class': 'SimpleStrategy', 'replication_factor': 1}", **opts)
        yield opts
    finally:
        if not running:
            subprocess.run(["bash", str(SCRIPT), "stop", str(d)], capture_output=True, timeout=120)


def fresh_table(server, name, body):
    tug.cassandra_execute(f"DROP TABLE IF EXISTS {KS}.{name}", **server)
    tug.cassandra_execute(f"CREATE TABLE {KS}.{name} {body}", **server)


def frame(n):
    return pl.DataFrame({
        "k": pl.Series([i % 7 for i in range(n)], dtype=pl.Int32),
        "c": pl.Series([i * 1_000_003 - 5 for i in range(n)], dtype=pl.Int64),
        "s": [None if i % 5 == 2 else f"row {i} ü" for i in range(n)],
        "d": [None if i % 3 == 1 else i / 8 for i in range(n)],
        "b": [None if i % 4 == 3 else i % 2 == 0 for i in range(n)],
    })


def test_round_trip_of_every_size(server):
    fresh_table(server, "rt", "(k int, c bigint, s text, d double, b boolean, PRIMARY KEY (k, c))")
    for n in (1, 31, 33, 1024):
        tug.cassandra_execute(f"TRUNCATE {KS}.rt", **server)
        want = frame(n)
        r = tug.from_polars(want).lazy().sink_cassandra(KS, "rt", consistency="ONE", **server)
        assert r["rows_written"] == n and r["requests"] >= 1 and r["metrics"]["failures"] == 0, r
        # the engine's statistics of the streaming write, with the sink's line
        assert f"CASSANDRA SINK {KS}.rt: rows written {n}, batches {r['batches']}" in r["statistics"], r
        assert "sink (fused)" in r["statistics"] and r["peak_memory"] >= 0, r
        scanned = tug.scan_cassandra(KS, "rt", consistency="ONE", **server)
        assert scanned.schema == {"k": tug.Int32, "c": tug.Int64, "s": tug.String, "d": tug.Float64,
                                  "b": tug.Boolean}
        got = scanned.sort("c").collect().to_polars().select(want.columns)
        assert got.equals(want), (n, got, want)
        # filters on the partition key (pushed into the WHERE clause) and on other columns, against Polars
        q = scanned.filter((tug.col("k") == 3) & (tug.col("c") > 0)).select("c", "s").sort("c")
        expect = want.filter((pl.col("k") == 3) & (pl.col("c") > 0)).select("c", "s").sort("c")
        assert q.collect().to_polars().equals(expect)
        assert "k" in q.explain()


def test_an_empty_query_writes_nothing(server):
    fresh_table(server, "empty_t", "(k int, c bigint, PRIMARY KEY (k, c))")
    empty = tug.from_polars(frame(4).select("k", "c")).lazy().filter(tug.col("k") > 100)
    assert empty.sink_cassandra(KS, "empty_t", consistency="ONE", **server)["rows_written"] == 0
    assert tug.scan_cassandra(KS, "empty_t", **server).collect().height == 0


def test_if_not_exists_counts_the_rows_not_applied(server):
    fresh_table(server, "ine_t", "(k int, c bigint, PRIMARY KEY (k, c))")
    first = tug.from_polars(frame(20).select("k", "c")).lazy()
    assert first.sink_cassandra(KS, "ine_t", consistency="ONE", **server)["rows_written"] == 20
    # rows 10..29: 10 exist (left as they were), 10 are new; each row alone, none lost to a batch
    again = tug.from_polars(frame(30).select("k", "c").slice(10)).lazy()
    r = again.sink_cassandra(KS, "ine_t", consistency="ONE", if_not_exists=True, **server)
    assert (r["rows_written"], r["rows_not_applied"], r["batches"]) == (10, 10, 0), r
    assert tug.scan_cassandra(KS, "ine_t", **server).collect().height == 30


# every rank runs the same queries (a query on one rank alone waits for the others): to_polars, not a query
RANK_SCRIPT = """
import json, os, sys
import tug
opts = json.loads(sys.argv[1])
df, st = tug.scan_cassandra(opts.pop("ks"), "ranks_t", splits=5, **opts).select("k", "c").profile()
print("RESULT " + json.dumps({"rank": int(os.environ["OMPI_COMM_WORLD_RANK"]), "height": df.height,
                              "keys": sorted(set(df.to_polars()["k"].to_list())) if df.height else [],
                              "stats": [l for l in str(st).splitlines() if "CASSANDRA SCAN" in l]}), flush=True)
"""


def test_scan_on_three_ranks_reads_a_share_each(server):
    # mpirun -np 3: each rank reads its third of the ring (cassandra_source::rank_share), rank 0 gets all rows
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.skip("mpirun is missing (scripts/setup.sh installs openmpi-bin)")
    fresh_table(server, "ranks_t", "(k int, c bigint, PRIMARY KEY (k, c))")
    want = pl.DataFrame({"k": pl.Series([i % 101 for i in range(3030)], dtype=pl.Int32),
                         "c": pl.Series(list(range(3030)), dtype=pl.Int64)})
    tug.from_polars(want).lazy().sink_cassandra(KS, "ranks_t", consistency="ONE", **server)
    pkg = Path(tug.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(pkg), os.environ.get("PYTHONPATH")) if p))
    args = [mpirun, "--oversubscribe", "-np", "3"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    p = subprocess.run(args + [sys.executable, "-c", RANK_SCRIPT, json.dumps(dict(server, ks=KS))],
                       capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    ranks = sorted((json.loads(l[len("RESULT "):]) for l in p.stdout.splitlines() if l.startswith("RESULT ")),
                   key=lambda r: r["rank"])
    assert [r["rank"] for r in ranks] == [0, 1, 2], p.stdout
    assert [r["height"] for r in ranks] == [3030, 0, 0]
    assert ranks[0]["keys"] == list(range(101))
    # each rank's statistics line: the rows of its own share, together every row once
    read = [int(re.search(r"rows (\d+), pages", r["stats"][0]).group(1)) for r in ranks]
    assert sum(read) == 3030 and all(0 < n < 3030 for n in read), ranks


def test_errors_name_their_cause(server):
    with pytest.raises(tug.IOError, match="keyspace 'no_such_keyspace' does not exist"):
        tug.scan_cassandra("no_such_keyspace", "t", **server)
    with pytest.raises(tug.IOError, match="no_such_table"):
        tug.scan_cassandra(KS, "no_such_table", **server)
    with pytest.raises(tug.InvalidArgumentError, match="unknown option fetchsize"):
        tug.scan_cassandra(KS, "rt", fetchsize=10, **server)
    with pytest.raises(tug.InvalidArgumentError, match="port"):
        tug.scan_cassandra(KS, "rt", **{**server, "port": "not a number"})
    with pytest.raises(tug.IOError):
        tug.cassandra_execute("SELECT * FROM system.local", **{**server, "password": "wrong"})
    with pytest.raises(tug.IOError, match="(?i)syntax|line 1"):
        tug.cassandra_execute("CREATE TABLEX oops", **server)
    fresh_table(server, "err_t", "(k int PRIMARY KEY, v bigint)")
    df = tug.from_polars(pl.DataFrame({"k": pl.Series([1, 2], dtype=pl.Int32), "nope": [1, 2]}))
    with pytest.raises(tug.ColumnNotFoundError, match="'nope' does not exist"):
        df.lazy().sink_cassandra(KS, "err_t", **server)
    df = tug.from_polars(pl.DataFrame({"k": pl.Series([1, 2], dtype=pl.Int32), "v": ["a", "b"]}))
    with pytest.raises(tug.SchemaError, match="'v'"):
        df.lazy().sink_cassandra(KS, "err_t", **server)
    df = tug.DataFrame({"v": [1, 2]})
    with pytest.raises(tug.InvalidArgumentError):  # the partition key is missing
        df.lazy().sink_cassandra(KS, "err_t", **server)
    assert tug.scan_cassandra(KS, "err_t", **server).collect().height == 0  # nothing was written
