"""Parquet files of other writers read by the `tug` program, against what DuckDB, Polars and pyarrow read
from the same files: DuckDB's data page v2 files (DELTA_BINARY_PACKED INT32 columns with 33-bit
miniblocks, DELTA_LENGTH_BYTE_ARRAY, BYTE_STREAM_SPLIT), pyarrow and Polars with data page v2 and every
DELTA_* encoding. Columns tug cannot represent (nested, decimal256) are refused by name or skipped on
request, never dropped silently; invalid UTF-8 never reaches a Parquet STRING column.

tug reads a file by rewriting it (`tug convert IN OUT.parquet`); Polars and DuckDB read tug's file back,
so every value and type is compared exactly."""
import decimal
import json
import subprocess

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

TIMEOUT = 300


def run(tug, *args, ok=True):
    p = subprocess.run([tug, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def read_by_tug(tug, path, tmp_path, *flags):
    """What tug reads from `path`, as Polars reads tug's rewrite of it; and tug's stderr."""
    out = tmp_path / (path.stem + ".tug.parquet")
    p = run(tug, "convert", path, out, *flags)
    return pl.read_parquet(out), p.stderr


# Whole int32 and int64 ranges (extremes next to each other: the widest deltas), strings of both
# DELTA_* kinds and a dictionary, floats, dates, timestamps, decimals of each physical type, nulls.
DUCKDB_QUERY = """
SELECT
  CASE WHEN i % 97 = 0 THEN NULL WHEN i % 4 = 0 THEN -2147483648 WHEN i % 4 = 1 THEN 2147483647
       WHEN i % 4 = 2 THEN 0 ELSE (hash(i) % 4294967296)::BIGINT - 2147483648 END::INTEGER AS i32,
  CASE WHEN i % 89 = 0 THEN NULL WHEN i % 4 = 0 THEN -9223372036854775808 WHEN i % 4 = 1 THEN 9223372036854775807
       WHEN i % 4 = 2 THEN 0 ELSE hash(i)::HUGEINT - 9223372036854775808 END::BIGINT AS i64,
  (i % 65536 - 32768)::SMALLINT AS i16,
  (i % 256 - 128)::TINYINT AS i8,
  (hash(i) % 4294967296)::UINTEGER AS u32,
  hash(i)::UBIGINT AS u64,
  CASE WHEN i % 7 = 0 THEN NULL ELSE 'row-' || i || repeat('x', (i % 13)::INT) END AS s,
  CASE WHEN i % 11 = 0 THEN NULL ELSE ['alpha', 'beta', 'ünïcødé', '', ' sp '][(i % 5 + 1)::INT] END AS s_dict,
  CASE WHEN i % 13 = 0 THEN NULL ELSE (hash(i) % 1000000)::DOUBLE / 7 - 50000 END AS f64,
  CASE WHEN i % 17 = 0 THEN NULL ELSE (hash(i) % 100000)::FLOAT / 3 END AS f32,
  CASE WHEN i % 19 = 0 THEN NULL ELSE DATE '1970-01-01' + ((hash(i) % 200000)::INT - 100000) END AS d,
  CASE WHEN i % 23 = 0 THEN NULL
       ELSE TIMESTAMP '2000-01-01' + to_microseconds((hash(i) % 10000000000000)::BIGINT) END AS ts,
  CASE WHEN i % 29 = 0 THEN NULL
       ELSE (((hash(i) % 1999999999)::BIGINT - 999999999)::DECIMAL(18, 0) / 100)::DECIMAL(9, 2) END AS dec9,
  ((((hash(i) % 1000000000000000000)::BIGINT - 500000000000000000)::DECIMAL(18, 0)) / 10000)::DECIMAL(18, 4) AS dec18,
  ((CASE WHEN i % 2 = 0 THEN '-' ELSE '' END) || (hash(i) % 10000000000000000000)::VARCHAR
     || lpad((hash(i + 1) % 1000000000)::VARCHAR, 9, '0') || '.'
     || lpad((hash(i + 2) % 10000000000)::VARCHAR, 10, '0'))::DECIMAL(38, 10) AS dec38,
  CASE WHEN i % 31 = 0 THEN NULL ELSE i % 3 = 0 END AS b
FROM range({n}) t(i)
"""


def duckdb_v2_file(path, n, row_group_size=100_000):
    duckdb.execute(f"COPY ({DUCKDB_QUERY.format(n=n)}) TO '{path}' "
                   f"(FORMAT parquet, PARQUET_VERSION v2, ROW_GROUP_SIZE {row_group_size})")
    return path


@pytest.mark.parametrize("n", [0, 1, 33, 1024, 250_000])
def test_duckdb_data_page_v2_reads_as_duckdb_and_polars_read_it(tug, tmp_path, n):
    path = duckdb_v2_file(tmp_path / f"duck_v2_{n}.parquet", n)
    meta = pq.ParquetFile(path).metadata
    if n:
        assert "DELTA_BINARY_PACKED" in meta.row_group(0).column(0).encodings
    if n == 250_000:
        assert meta.num_row_groups == 3
    got, err = read_by_tug(tug, path, tmp_path)
    assert err == ""
    polars = pl.read_parquet(path)
    assert_frame_equal(got, polars)
    assert_frame_equal(got, duckdb.sql(f"SELECT * FROM '{path}'").pl(), check_dtypes=False)
    assert got.height == n
    # tug's own file reads the same in DuckDB
    assert duckdb.sql(f"SELECT * FROM '{path}' EXCEPT ALL SELECT * FROM '{tmp_path / path.stem}.tug.parquet'"
                      ).fetchall() == []


def test_duckdb_data_page_v2_head(tug, tmp_path):
    path = duckdb_v2_file(tmp_path / "duck_v2.parquet", 250_000)
    rows = json.loads(run(tug, "head", path, "-n", 5, "--format", "json").stdout)
    want = pl.read_parquet(path).head(5)
    assert [r["i32"] for r in rows] == want["i32"].to_list()
    assert [r["i64"] for r in rows] == want["i64"].to_list()
    assert [r["s"] for r in rows] == want["s"].to_list()


def source_frame(tmp_path, n=20_000):
    return pl.read_parquet(duckdb_v2_file(tmp_path / "source.parquet", n))


# Every column in a non-default encoding (dictionary off): pyarrow's column_encoding by column.
DELTA_ENCODINGS = {
    "i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED", "i16": "DELTA_BINARY_PACKED",
    "i8": "DELTA_BINARY_PACKED", "u32": "DELTA_BINARY_PACKED", "u64": "DELTA_BINARY_PACKED",
    "s": "DELTA_BYTE_ARRAY", "s_dict": "DELTA_LENGTH_BYTE_ARRAY", "f64": "BYTE_STREAM_SPLIT",
    "f32": "BYTE_STREAM_SPLIT", "d": "DELTA_BINARY_PACKED", "ts": "DELTA_BINARY_PACKED",
    "dec9": "DELTA_BINARY_PACKED", "dec18": "DELTA_BINARY_PACKED", "dec38": "DELTA_BYTE_ARRAY", "b": "RLE",
}
PYARROW_V2 = dict(data_page_version="2.0", use_dictionary=False, column_encoding=DELTA_ENCODINGS,
                  store_decimal_as_integer=True, row_group_size=7000, data_page_size=4096)


@pytest.mark.parametrize("writer", ["pyarrow_v2_delta", "polars", "polars_pyarrow_v2_delta", "duckdb_v1"])
def test_other_writers_read_identically(tug, tmp_path, writer):
    df = source_frame(tmp_path)
    path = tmp_path / f"{writer}.parquet"
    if writer == "pyarrow_v2_delta":
        pq.write_table(df.to_arrow(), path, **PYARROW_V2)
    elif writer == "polars":  # Polars' own writer has no data page v2 or DELTA_* option
        df.write_parquet(path, row_group_size=7000)
    elif writer == "polars_pyarrow_v2_delta":
        df.write_parquet(path, use_pyarrow=True, row_group_size=7000, pyarrow_options=PYARROW_V2)
    else:
        duckdb.sql("SELECT * FROM df").write_parquet(str(path))
    if "delta" in writer:
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups == 3
        encodings = {meta.schema.column(c).name: meta.row_group(0).column(c).encodings for c in range(meta.num_columns)}
        for column, enc in DELTA_ENCODINGS.items():
            assert enc in encodings[column], (column, encodings[column])
    got, err = read_by_tug(tug, path, tmp_path)
    assert err == ""
    assert_frame_equal(got, df)
    assert_frame_equal(got, pl.from_arrow(pq.read_table(path)))
    if "delta" not in writer:  # Polars 2.1 cannot decode DELTA_BYTE_ARRAY FIXED_LEN_BYTE_ARRAY pages (dec38)
        assert_frame_equal(got, pl.read_parquet(path))


@pytest.mark.parametrize("codec", ["snappy", "zstd", "none"])
def test_tug_page_checksums_verify_in_pyarrow(tug, tmp_path, codec):
    """tug writes the CRC-32 of every page in its header (the GPU reader decompresses a page on the device
    only once it has checked it); pyarrow's verification accepts them, and rejects a page with a flipped
    byte."""
    df = source_frame(tmp_path, 5000).drop("dec38")
    src = tmp_path / "src.parquet"
    df.write_parquet(src)
    out = tmp_path / f"tug_{codec}.parquet"
    run(tug, "convert", src, out, "--codec", codec)
    assert_frame_equal(pl.from_arrow(pq.read_table(out, page_checksum_verification=True)), df)
    data = bytearray(out.read_bytes())
    data[len(data) // 4] ^= 0x5A  # inside the first column chunks' pages, not the footer
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(OSError, match="(?i)crc|checksum"):
        pq.read_table(bad, page_checksum_verification=True)


def unsupported_file(path, flat=True):
    cols = {}
    if flat:
        cols["a"] = pa.array([1, None, 3], pa.int32())
    cols["l"] = pa.array([[1.5], [], None], pa.list_(pa.float64()))
    cols["st"] = pa.array([{"x": 1, "y": "p"}, None, {"x": None, "y": "q"}])
    cols["m"] = pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64()))
    cols["d256"] = pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("-2.25")], pa.decimal256(50, 2))
    if flat:
        cols["z"] = pa.array(["p", "q", None])
    pq.write_table(pa.table(cols), path)
    return path


REASONS = ['"l" (nested list)', '"st" (nested struct)', '"m" (nested map)',
           '"d256" (decimal(50, 2): precision above 38, beyond decimal128)']


def test_unsupported_columns_are_named_not_dropped(tug, tmp_path):
    path = unsupported_file(tmp_path / "nested.parquet")
    for command in (["head", path], ["schema", path], ["convert", path, tmp_path / "out.csv"]):
        p = run(tug, *command, ok=False)
        assert p.returncode == 1 and p.stdout == "", p
        assert str(path) in p.stderr and "--skip-unsupported-columns" in p.stderr, p.stderr
        for reason in REASONS:
            assert reason in p.stderr, p.stderr
    assert not (tmp_path / "out.csv").exists()
    # skipped on request, with a warning naming them and the file
    p = run(tug, "head", path, "--skip-unsupported-columns", "--format", "json")
    assert json.loads(p.stdout) == [{"a": 1, "z": "p"}, {"a": None, "z": "q"}, {"a": 3, "z": None}]
    assert p.stderr.startswith("tug warning: scan_parquet skipped unsupported columns") and str(path) in p.stderr
    for reason in REASONS:
        assert reason in p.stderr
    schema = json.loads(run(tug, "schema", path, "--skip-unsupported-columns", "--format", "json").stdout)
    assert schema == [{"name": "a", "type": "i32"}, {"name": "z", "type": "str"}]


def test_file_of_unsupported_columns_only_is_an_error_even_when_skipping(tug, tmp_path):
    path = unsupported_file(tmp_path / "only_nested.parquet", flat=False)
    out = tmp_path / "out.csv"
    for flags in ([], ["--skip-unsupported-columns"]):
        p = run(tug, "convert", path, out, *flags, ok=False)
        assert p.returncode == 1 and str(path) in p.stderr, p.stderr
        assert not out.exists()
    assert "every column is one tug cannot read" in p.stderr
    # counting rows needs no column
    assert run(tug, "count", path, "--format", "json").stdout.count('"rows": 3') == 1


def test_invalid_utf8_in_csv_is_refused_with_its_line_and_column(tug, tmp_path):
    src = tmp_path / "latin1.csv"
    src.write_bytes("id,name\n1,plain\n2,café\n".encode("latin-1"))
    with pytest.raises(Exception):  # Polars refuses it too without encoding="utf8-lossy"
        pl.read_csv(src)
    out = tmp_path / "out.parquet"
    p = run(tug, "convert", src, out, ok=False)
    assert p.returncode == 1 and "line 3, column 2 ('name'): invalid UTF-8" in p.stderr, p.stderr
    assert not out.exists()


def test_binary_parquet_column_is_not_written_as_an_invalid_string(tug, tmp_path):
    src = tmp_path / "binary.parquet"
    pq.write_table(pa.table({"i": [1, 2, 3], "bin": pa.array([b"ok", b"\xff\xfe", None], pa.binary())}), src)
    out = tmp_path / "out.parquet"
    p = run(tug, "convert", src, out, ok=False)
    assert p.returncode == 1 and "column 'bin' row 1 is not valid UTF-8" in p.stderr, p.stderr
    assert not out.exists()
    # binary values that are UTF-8 rewrite as strings every reader takes
    pq.write_table(pa.table({"bin": pa.array([b"ok", "é".encode(), None], pa.binary())}), src)
    run(tug, "convert", src, out)
    assert pl.read_parquet(out)["bin"].to_list() == ["ok", "é", None]
