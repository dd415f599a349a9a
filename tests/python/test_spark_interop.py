"""Parquet interop with Apache Spark (pip `pyspark`, local mode): directories of part files written by Spark
(codecs, INT96 and TIMESTAMP_MICROS/MILLIS timestamps, INT32/INT64/FIXED_LEN_BYTE_ARRAY decimals) are read by
tug and compared with pyarrow's reading of the same directory; files written by tug (every codec) are read
by Spark and compared with the source data. One Spark session (the `spark` fixture of conftest.py) serves
every Spark test."""
import datetime as dt
import decimal
import io
import subprocess
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import pyarrow.parquet as pq
import pyspark  # noqa: F401  (installed by scripts/setup.sh; a missing one fails the run)

REPO = Path(__file__).resolve().parents[2]
N = 1500


def run(tug, *args):
    p = subprocess.run([tug, *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


TEXTS = ["plain", "with,comma", 'with "quotes"', "multi\nline", "  spaces ", "ünïcødé", "日本語 🚀", ""]


def spark_rows(n=N):
    """Rows (in a shuffled id order) covering every Spark primitive type tug reads, with nulls in each column."""
    rows = []
    for k in range(n):
        rows.append((
            k,
            None if k % 7 == 0 else (k * 37 % 2001) - 1000,
            None if k % 11 == 0 else k * 1_000_000_007 - 2**40,
            None if k % 13 == 0 else (k - 700) / 3 if k % 2 else (k - 700) * 0.1,
            None if k % 5 == 0 else TEXTS[k % len(TEXTS)] + ("" if k % 3 else str(k)),
            None if k % 17 == 0 else k % 3 == 0,
            None if k % 19 == 0 else dt.date(1970, 1, 1) + dt.timedelta(days=k * 29 - 20000),
            None if k % 23 == 0 else dt.datetime(1950, 3, 1, tzinfo=dt.timezone.utc)
            + dt.timedelta(seconds=k * 1_234_567, microseconds=k * 1013 % 1_000_000),
            None if k % 29 == 0 else decimal.Decimal(k * 12345 - 9_000_000).scaleb(-2),
            None if k % 31 == 0 else decimal.Decimal((k * 98_765_432_101 - 10**14) * (-1) ** k).scaleb(-4),
            None if k % 37 == 0 else decimal.Decimal(k * 7 - 5000).scaleb(-3),
        ))
    order = sorted(range(n), key=lambda k: (k * 7919) % n)
    return [rows[k] for k in order]


SPARK_SCHEMA = ("id int, i int, l bigint, f double, s string, b boolean, d date, t timestamp, "
                "dec10 decimal(10,2), dec20 decimal(20,4), dec7 decimal(7,3)")


SPARK_POLARS_SCHEMA = {"id": pl.Int32, "i": pl.Int32, "l": pl.Int64, "f": pl.Float64, "s": pl.String,
                       "b": pl.Boolean, "d": pl.Date, "t": pl.Datetime("us", "UTC"), "dec10": pl.Decimal(10, 2),
                       "dec20": pl.Decimal(20, 4), "dec7": pl.Decimal(7, 3)}


def tug_frame(tug, path, schema):
    out = run(tug, "head", path, "-n", N * 10, "--format", "csv")
    return pl.read_csv(io.StringIO(out), schema=schema)


# (codec, timestamp type, legacy format): Spark stores decimals of precision <= 9 as INT32 and <= 18 as INT64,
# or all as FIXED_LEN_BYTE_ARRAY in the legacy format; timestamps as INT96 (Spark's default) or INT64.
SPARK_CASES = [
    ("snappy", "INT96", False),
    ("zstd", "TIMESTAMP_MICROS", False),
    ("gzip", "TIMESTAMP_MILLIS", True),
    ("lz4_raw", "INT96", True),
    ("none", "TIMESTAMP_MICROS", False),
]


@pytest.mark.parametrize("codec,ts_type,legacy", SPARK_CASES, ids=[f"{c}-{t}-{'legacy' if g else 'std'}"
                                                                    for c, t, g in SPARK_CASES])
def test_parquet_written_by_spark_reads_in_tug(tug, spark, tmp_path, codec, ts_type, legacy):
    spark.conf.set("spark.sql.parquet.outputTimestampType", ts_type)
    spark.conf.set("spark.sql.parquet.writeLegacyFormat", str(legacy).lower())
    out = tmp_path / "spark_out"
    (spark.createDataFrame(spark_rows(), SPARK_SCHEMA).repartition(3)
     .write.option("compression", codec).parquet(str(out)))
    names = sorted(p.name for p in out.iterdir())
    assert "_SUCCESS" in names and any(n.startswith(".") for n in names)  # tug must skip these
    assert sum(n.endswith(".parquet") for n in names) == 3

    # The physical types this case is meant to cover.
    part = pq.ParquetFile(next(out.glob("*.parquet")))
    physical = {part.schema.column(j).name: part.schema.column(j).physical_type for j in range(len(part.schema))}
    assert physical["t"] == ("INT96" if ts_type == "INT96" else "INT64")
    assert (physical["dec7"], physical["dec10"], physical["dec20"]) == (
        ("FIXED_LEN_BYTE_ARRAY",) * 3 if legacy else ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"))
    # pyarrow names LZ4_RAW "LZ4" (and the deprecated Hadoop LZ4 "LZ4_HADOOP").
    codec_name = {"none": "UNCOMPRESSED", "lz4_raw": "LZ4"}.get(codec, codec.upper())
    assert part.metadata.row_group(0).column(0).compression == codec_name

    expected = pl.from_arrow(pq.read_table(out)).sort("id")
    assert len(expected) == N
    t_type = expected.schema["t"]
    assert t_type == (pl.Datetime("ns") if ts_type == "INT96" else
                      pl.Datetime("us" if ts_type == "TIMESTAMP_MICROS" else "ms", "UTC"))
    # tug prints timestamps without a zone: compare in UTC wall-clock time.
    expected = expected.with_columns(pl.col("t").dt.replace_time_zone(None))

    count = run(tug, "count", out, "--format", "csv").splitlines()
    assert count[0] == "file,rows" and int(count[-1].split(",")[1]) == N, count
    got = tug_frame(tug, out, expected.schema).sort("id")
    assert_frame_equal(got, expected)
    # pyarrow's reading equals the source too, so that a misreading shared by pyarrow and tug cannot pass.
    source = pl.DataFrame(spark_rows(), schema=SPARK_POLARS_SCHEMA, orient="row").sort("id").with_columns(
        pl.col("t").dt.replace_time_zone(None))
    if ts_type == "TIMESTAMP_MILLIS":
        source = source.with_columns(pl.col("t").dt.truncate("1ms"))
    assert_frame_equal(expected.cast(SPARK_POLARS_SCHEMA | {"t": pl.Datetime("us")}), source)


SOURCE_SCHEMA = {"id": pl.Int64, "i": pl.Int64, "f": pl.Float64, "s": pl.String, "b": pl.Boolean, "d": pl.Date,
                 "t": pl.Datetime("us")}


def source_frame(n=N):
    return pl.DataFrame(
        {
            "id": list(range(n)),
            "i": [None if k % 7 == 0 else k * 1_000_003 - 10**9 for k in range(n)],
            "f": [None if k % 11 == 0 else (k - 700) / 3 for k in range(n)],
            "s": [None if k % 5 == 0 else TEXTS[k % len(TEXTS)] for k in range(n)],
            "b": [None if k % 13 == 0 else k % 2 == 0 for k in range(n)],
            "d": [None if k % 17 == 0 else dt.date(1990, 1, 1) + dt.timedelta(days=k * 3) for k in range(n)],
            "t": [None if k % 19 == 0 else dt.datetime(1965, 5, 1, 12) + dt.timedelta(seconds=k * 36011,
                                                                                       microseconds=k * 7)
                  for k in range(n)],
        },
        schema=SOURCE_SCHEMA,
    )


def spark_read(spark, path, schema):
    # collect() converts each value to Python (dates, naive datetimes for TIMESTAMP_NTZ, Decimal).
    sdf = spark.read.parquet(str(path))
    rows = sdf.collect()
    return sdf, pl.DataFrame([tuple(r) for r in rows], schema=schema, orient="row").sort("id")


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip", "none"])
def test_parquet_written_by_tug_reads_in_spark(tug, spark, tmp_path, codec):
    df = source_frame()
    src = tmp_path / "in.csv"
    df.write_csv(src)
    out = tmp_path / "out.parquet"
    run(tug, "convert", src, out, "--codec", codec)
    sdf, got = spark_read(spark, out, SOURCE_SCHEMA)
    types = dict(sdf.dtypes)
    assert types["i"] == "bigint" and types["f"] == "double" and types["s"] == "string"
    assert types["b"] == "boolean" and types["d"] == "date" and types["t"] in ("timestamp_ntz", "timestamp")
    assert_frame_equal(got, df)
    # Spark's own engine (not only its row conversion) sees the same values: filters and aggregates.
    agg = sdf.selectExpr("count(i)", "sum(i)", "count(s)", "count_if(b)", "max(d)", "min(t)").collect()[0]
    assert tuple(agg) == (df["i"].count(), df["i"].sum(), df["s"].count(), df["b"].sum(), df["d"].max(),
                          df["t"].min())


def test_parquet_decimals_written_by_tug_read_in_spark(tug, spark, tmp_path):
    # Decimals do not come from CSV inference: convert a Parquet source written by pyarrow.
    schema = {"id": pl.Int64, "dec10": pl.Decimal(10, 2), "dec20": pl.Decimal(20, 4), "dec7": pl.Decimal(7, 3)}
    rows = [(r[0], r[8], r[9], r[10]) for r in spark_rows()]
    df = pl.DataFrame(rows, schema=schema, orient="row").sort("id")
    src = tmp_path / "dec_in.parquet"
    pq.write_table(df.to_arrow(), src)
    out = tmp_path / "dec_out.parquet"
    run(tug, "convert", src, out, "--codec", "zstd")
    sdf, got = spark_read(spark, out, schema)
    assert dict(sdf.dtypes) == {"id": "bigint", "dec10": "decimal(10,2)", "dec20": "decimal(20,4)",
                                "dec7": "decimal(7,3)"}
    assert_frame_equal(got, df)


def test_directory_without_parquet_files_is_an_error(tug, tmp_path):
    # What a failed Spark job leaves: only markers and checksums, which the directory scan skips.
    out = tmp_path / "empty_job"
    out.mkdir()
    (out / "_SUCCESS").write_bytes(b"")
    (out / ".part-0.parquet.crc").write_bytes(b"crc")
    (out / "_temporary").mkdir()
    p = subprocess.run([tug, "count", out], capture_output=True, text=True)
    assert p.returncode == 1 and "no .parquet or .csv files under directory" in p.stderr and str(out) in p.stderr
