"""The `tug` command-line program against Polars and DuckDB: CSV written by Polars read by tug, CSV written by
tug read by Polars and DuckDB, output formats a script can parse, and errors (message, non-zero exit)."""
import datetime as dt
import io
import json
import os
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

REPO = Path(__file__).resolve().parents[2]


def run(tug, *args, ok=True, env=None):
    # a timeout: a hang fails the test instead of stalling the run
    p = subprocess.run([tug, *map(str, args)], capture_output=True, text=True, timeout=120,
                       env=None if env is None else {**os.environ, **env})
    if ok:
        assert p.returncode == 0, p.stderr
    return p


SCHEMA = {"i": pl.Int64, "f": pl.Float64, "s": pl.String, "b": pl.Boolean, "d": pl.Date, "t": pl.Datetime("us")}


def sample_frame(n=2500):
    texts = ["plain", "with,comma", 'with "quotes"', "multi\nline", "  spaces ", "ünïcødé", "x"]
    return pl.DataFrame(
        {
            "i": [None if k % 7 == 0 else k * 1_000_003 - 10**9 for k in range(n)],
            "f": [None if k % 11 == 0 else (k - 1000) / 8 for k in range(n)],
            "s": [None if k % 5 == 0 else texts[k % len(texts)] for k in range(n)],
            "b": [None if k % 13 == 0 else k % 2 == 0 for k in range(n)],
            "d": [None if k % 17 == 0 else dt.date(1990, 1, 1) + dt.timedelta(days=k * 3) for k in range(n)],
            "t": [None if k % 19 == 0 else dt.datetime(2020, 5, 1, 12) + dt.timedelta(seconds=k * 3601, microseconds=k * 7)
                  for k in range(n)],
        },
        schema=SCHEMA,
    )


def test_polars_csv_read_by_tug(tug, tmp_path):
    df = sample_frame()
    path = tmp_path / "polars.csv"
    df.write_csv(path)
    out = run(tug, "head", path, "-n", len(df), "--format", "csv").stdout
    assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), df)
    schema = json.loads(run(tug, "schema", path, "--format", "json").stdout)
    assert [(c["name"], c["type"]) for c in schema] == [
        ("i", "i64"), ("f", "f64"), ("s", "str"), ("b", "bool"), ("d", "date"), ("t", "datetime[us]")]


def test_count_matches_polars_and_duckdb(tug, tmp_path):
    paths = []
    for n in (0, 1, 33, 1024):
        p = tmp_path / f"n{n}.csv"
        sample_frame(n).write_csv(p)
        paths.append(p)
    out = json.loads(run(tug, "count", *paths, "--format", "json").stdout)
    assert [r["file"] for r in out] == [str(p) for p in paths]
    for row, p in zip(out, paths):
        assert row["rows"] == pl.read_csv(p, schema=SCHEMA).height
        assert row["rows"] == duckdb.sql(f"select count(*) from read_csv('{p}', header=true)").fetchall()[0][0]
    csv_out = pl.read_csv(io.StringIO(run(tug, "count", *paths, "--format", "csv").stdout))
    assert csv_out["rows"].to_list() == [0, 1, 33, 1024]


def test_tug_csv_read_by_polars_and_duckdb(tug, tmp_path):
    df = sample_frame()
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    df.write_csv(src)
    run(tug, "convert", src, dst)
    assert_frame_equal(pl.read_csv(dst, schema=SCHEMA), df)
    rel = duckdb.sql(
        f"select * from read_csv('{dst}', header=true, columns={{'i': 'BIGINT', 'f': 'DOUBLE', 's': 'VARCHAR', "
        f"'b': 'BOOLEAN', 'd': 'DATE', 't': 'TIMESTAMP'}})")
    assert_frame_equal(rel.pl(), df, check_dtypes=False)


def test_json_and_table_output(tug, tmp_path):
    df = sample_frame(40)
    path = tmp_path / "j.csv"
    df.write_csv(path)
    rows = json.loads(run(tug, "head", path, "-n", 5, "--format", "json").stdout)
    assert len(rows) == 5
    for got, want in zip(rows, df.head(5).iter_rows(named=True)):
        assert got["i"] == want["i"] and got["f"] == want["f"] and got["s"] == want["s"] and got["b"] == want["b"]
        assert got["d"] == (want["d"].isoformat() if want["d"] else None)
    table = run(tug, "head", path, "-n", 3).stdout
    assert "shape: (3, 6)" in table and "datetime[us]" in table


def test_tsv_and_delimiter(tug, tmp_path):
    df = sample_frame(50)
    tsv = tmp_path / "a.tsv"
    df.write_csv(tsv, separator="\t")
    assert_frame_equal(pl.read_csv(io.StringIO(run(tug, "head", tsv, "-n", 100, "--format", "csv").stdout),
                                   schema=SCHEMA), df)
    semi = tmp_path / "semi.csv"
    df.write_csv(semi, separator=";")
    out = run(tug, "head", semi, "--delimiter", ";", "-n", 100, "--format", "csv").stdout
    assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), df)


def test_errors_exit_nonzero_with_a_message(tug, tmp_path):
    p = run(tug, "head", tmp_path / "missing.csv", ok=False)
    assert p.returncode == 1 and "missing.csv" in p.stderr and p.stdout == ""
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    p = run(tug, "head", bad, ok=False)
    assert p.returncode == 1 and "line 3" in p.stderr
    good = tmp_path / "good.csv"
    good.write_text("a\n1\n")
    p = run(tug, "convert", good, tmp_path / "out.xlsx", ok=False)
    assert p.returncode == 1 and "unknown file format" in p.stderr
    assert not (tmp_path / "out.xlsx").exists()
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1" + b"\0" * 64)
    p = run(tug, "head", corrupt, ok=False)
    assert p.returncode == 1 and "corrupt.parquet" in p.stderr
    p = run(tug, "head", good, "--format", "xml", ok=False)
    assert p.returncode == 2 and "--format" in p.stderr
    p = run(tug, "frobnicate", good, ok=False)
    assert p.returncode == 2 and "unknown command" in p.stderr
    p = run(tug, "head", good, "-n", "many", ok=False)
    assert p.returncode == 2


PARQUET_SCHEMA = {k: v for k, v in SCHEMA.items()}


@pytest.mark.parametrize("codec", ["snappy", "zstd", "lz4_raw", "gzip", "none"])
def test_parquet_written_by_tug_reads_in_pyarrow_polars_duckdb(tug, tmp_path, codec):
    df = sample_frame()
    src = tmp_path / "in.csv"
    df.write_csv(src)
    out = tmp_path / "out.parquet"
    run(tug, "convert", src, out, "--codec", codec)
    import pyarrow.parquet as pq

    assert_frame_equal(pl.from_arrow(pq.read_table(out)).cast(SCHEMA), df)
    assert_frame_equal(pl.read_parquet(out).cast(SCHEMA), df)
    assert_frame_equal(duckdb.sql(f"SELECT * FROM '{out}'").pl().cast(SCHEMA), df)


@pytest.mark.parametrize("writer", ["polars", "duckdb", "pyarrow"])
def test_parquet_written_by_others_reads_in_tug(tug, tmp_path, writer):
    df = sample_frame()
    path = tmp_path / f"{writer}.parquet"
    if writer == "polars":
        df.write_parquet(path)
    elif writer == "duckdb":
        duckdb.sql("SELECT * FROM df").write_parquet(str(path))
    else:
        import pyarrow.parquet as pq

        pq.write_table(df.to_arrow(), path, data_page_version="2.0", compression="zstd")
    assert int(run(tug, "count", path, "--format", "csv").stdout.splitlines()[1].split(",")[1]) == len(df)
    out = run(tug, "head", path, "-n", len(df), "--format", "csv").stdout
    assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), df)


def clobber(path, start, end):
    """Overwrites the bytes [start, end) of a file with 0xFF."""
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(b"\xff" * (end - start))


def footer_start(path):
    data = Path(path).read_bytes()
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


def test_head_reads_only_the_rows_it_shows(tug, tmp_path):
    """head pushes its limit into the scan: the bytes after the first row group (Parquet) or after the
    first rows (CSV) are unreadable, and head still shows its rows; reading more trips over them."""
    import pyarrow.parquet as pq

    df = sample_frame(10000)
    path = tmp_path / "big.parquet"
    pq.write_table(df.to_arrow(), path, row_group_size=1000)
    rg1 = min(min(c.dictionary_page_offset or c.data_page_offset, c.data_page_offset)
              for c in (pq.ParquetFile(path).metadata.row_group(1).column(i) for i in range(len(SCHEMA))))
    clobber(path, rg1, footer_start(path))
    for n in (5, 1000):
        out = run(tug, "head", path, "-n", n, "--format", "csv").stdout
        assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), df.head(n))
    p = run(tug, "head", path, "-n", 1001, ok=False)
    assert p.returncode == 1 and "big.parquet" in p.stderr

    big = sample_frame(40000)  # about 3 MB, more than the CSV reader's first 1 MiB prefix
    csv = tmp_path / "big.csv"
    big.write_csv(csv)
    with open(csv, "a") as f:
        f.write("1,2\n")
    out = run(tug, "head", csv, "-n", 5, "--format", "csv").stdout
    assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), big.head(5))
    p = run(tug, "head", csv, "-n", 40001, ok=False)
    assert p.returncode == 1 and "big.csv" in p.stderr


def test_missing_input_is_named_as_missing(tug, tmp_path):
    for args in (["head", f"{tmp_path}/nodir/"], ["schema", tmp_path / "nodir"], ["count", tmp_path / "nofile"],
                 ["convert", tmp_path / "nodir", tmp_path / "out.csv"]):
        p = run(tug, *args, ok=False)
        assert p.returncode == 1, args
        assert "no such file or directory" in p.stderr and str(args[1]) in p.stderr, p.stderr
        assert "unknown file format" not in p.stderr, p.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run(tug, "head", empty, ok=False)
    assert p.returncode == 1 and "no .parquet or .csv files under directory" in p.stderr and "empty" in p.stderr


def test_codec_is_refused_without_parquet_output(tug, tmp_path):
    src = tmp_path / "in.csv"
    sample_frame(10).write_csv(src)
    for out in ("out.csv", "out.tsv"):
        p = run(tug, "convert", src, tmp_path / out, "--codec", "zstd", ok=False)
        assert p.returncode == 2 and "--codec" in p.stderr and "Parquet output" in p.stderr, p.stderr
        assert not (tmp_path / out).exists()
    p = run(tug, "head", src, "--codec", "zstd", ok=False)
    assert p.returncode == 2 and "--codec" in p.stderr
    run(tug, "convert", src, tmp_path / "out.parquet", "--codec", "zstd")
    assert pl.read_parquet(tmp_path / "out.parquet").height == 10


@pytest.mark.parametrize("kind", ["glob", "directory"])
def test_csv_globs_and_directories(tug, tmp_path, kind):
    parts = tmp_path / "parts"
    parts.mkdir()
    # the schema comes from the first file (sorted by name): one with rows to infer it from
    frames = [sample_frame(n) for n in (33, 0, 1, 1024)]
    for i, f in enumerate(frames):
        f.write_csv(parts / f"part-{i}.csv")
    (parts / "_SUCCESS").write_text("")
    whole = pl.concat(frames)
    arg = parts / "*.csv" if kind == "glob" else parts
    counts = json.loads(run(tug, "count", arg, "--format", "json").stdout)
    assert counts == [{"file": str(arg), "rows": len(whole)}]
    schema = json.loads(run(tug, "schema", arg, "--format", "json").stdout)
    assert [c["name"] for c in schema] == list(SCHEMA)
    out = run(tug, "head", arg, "-n", 2000, "--format", "csv").stdout
    assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), whole)
    out = run(tug, "head", arg, "-n", 20, "--format", "csv").stdout
    assert_frame_equal(pl.read_csv(io.StringIO(out), schema=SCHEMA), whole.head(20))
    run(tug, "convert", arg, tmp_path / "all.parquet")
    assert_frame_equal(pl.read_parquet(tmp_path / "all.parquet").cast(SCHEMA), whole)


def test_bad_engine_environment_is_named(tug, tmp_path):
    src = tmp_path / "in.csv"
    sample_frame(10).write_csv(src)
    p = run(tug, "head", src, ok=False, env={"TUG_ENGINE": "banana"})
    assert p.returncode == 1 and "TUG_ENGINE" in p.stderr and "banana" in p.stderr
    run(tug, "head", src, env={"TUG_ENGINE": "cpu"})


def test_help_and_docs_are_current(tug):
    out = run(tug, "--help").stdout
    assert ".parquet" in out and "glob" in out and "--codec" in out
    for text in (out, (REPO / "docs" / "csv.md").read_text()):
        assert "arrives later" not in text and "not built yet" not in text and ".parquet` is refused" not in text
