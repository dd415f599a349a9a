"""Errors come back as tug's typed exceptions with the C++ message, and bad input never crashes the
interpreter."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import tug

FRAME = tug.DataFrame({"a": list(range(50_000)), "s": [str(i) for i in range(50_000)]})


def test_exception_hierarchy():
    assert issubclass(tug.OutOfMemoryError, MemoryError)
    assert issubclass(tug.IOError, OSError)
    assert issubclass(tug.InvalidArgumentError, ValueError)
    assert issubclass(tug.NotSupportedError, NotImplementedError)
    for cls in (tug.ColumnNotFoundError, tug.SchemaError, tug.ComputeError, tug.IOError, tug.OutOfMemoryError,
                tug.InvalidArgumentError, tug.NotSupportedError, tug.InternalError, tug.ResourceError):
        assert issubclass(cls, tug.TugError)


def test_wrong_column():
    with pytest.raises(tug.ColumnNotFoundError, match=r'column "zz" not found; available columns: \[a, s\]'):
        FRAME.lazy().select(tug.col("zz"))
    with pytest.raises(tug.ColumnNotFoundError, match='"nope"'):
        FRAME.lazy().group_by("nope").agg(tug.len())
    with pytest.raises(tug.ColumnNotFoundError):
        FRAME.lazy().drop("nope")


def test_type_errors_are_schema_errors():
    with pytest.raises(tug.SchemaError, match="str"):
        FRAME.lazy().select(tug.col("s") + 1)
    with pytest.raises(tug.SchemaError):
        FRAME.lazy().select(tug.col("a").str.len_chars())


def test_failing_strict_cast_is_a_compute_error():
    with pytest.raises(tug.ComputeError, match='"128"'):
        FRAME.lazy().select(tug.col("s").cast(tug.Int8)).collect()
    # non-strict: null instead
    out = FRAME.lazy().select(tug.col("s").cast(tug.Int8, strict=False)).collect()
    assert out.to_dict()["s"][127:129] == [127, None]


def test_bad_files_are_io_errors(tmp_path):
    with pytest.raises(tug.IOError, match="/nonexistent/x.parquet"):
        tug.scan_parquet("/nonexistent/x.parquet").collect()
    with pytest.raises(OSError):  # tug.IOError is an OSError too
        tug.scan_csv("/nonexistent/x.csv").collect()
    bad = tmp_path / "corrupt.parquet"
    bad.write_bytes(b"PAR1" + b"\x00" * 100 + b"garbage" + b"PAR1")
    with pytest.raises(tug.IOError, match="corrupt.parquet"):
        tug.scan_parquet(bad).collect()
    with pytest.raises(tug.IOError):
        FRAME.write_parquet(tmp_path / "no" / "such" / "dir" / "x.parquet")


def test_too_little_memory_is_out_of_memory():
    with pytest.raises(tug.OutOfMemoryError, match="memory_limit") as e:
        FRAME.lazy().sort("s").collect(memory_limit=100_000)
    assert isinstance(e.value, MemoryError)
    # and the interpreter goes on: the same query without the limit works
    assert FRAME.lazy().sort("s").head(1).collect().item(0, "s") == "0"


def test_bad_options_and_arguments():
    with pytest.raises(tug.InvalidArgumentError, match="num_threads"):
        FRAME.lazy().collect(num_threads=-3)
    with pytest.raises(tug.InvalidArgumentError, match="unknown engine option 'foo'"):
        FRAME.lazy().collect(foo=1)
    with pytest.raises(tug.InvalidArgumentError, match="tpu"):
        FRAME.lazy().collect(engine="tpu")
    with pytest.raises(tug.InvalidArgumentError, match="weird"):
        FRAME.lazy().join(FRAME, on="a", how="weird")
    with pytest.raises(tug.InvalidArgumentError, match="'xx'"):
        tug.col("a").cast("xx")
    with pytest.raises(tug.InvalidArgumentError):
        tug.lit(object())
    with pytest.raises(tug.InvalidArgumentError):
        tug.col(3)
    with pytest.raises(TypeError, match="ambiguous"):
        bool(tug.col("a") > 1)
    with pytest.raises(tug.InvalidArgumentError, match="separator"):
        tug.scan_csv("x.csv", separator=";;")
    with pytest.raises(tug.InvalidArgumentError, match="duplicate column name"):
        FRAME.lazy().select(tug.col("a"), tug.col("a")).collect()
    with pytest.raises(tug.InvalidArgumentError, match="descending"):
        FRAME.lazy().sort("a", "s", descending=[True])
    with pytest.raises(tug.InvalidArgumentError, match="dt.truncate"):
        FRAME.lazy().select(tug.col("a").cast(tug.Date).dt.truncate("xx")).collect()


def test_bad_input_never_crashes_the_interpreter():
    """Many bad calls in a fresh interpreter: each raises, and the process ends normally."""
    script = textwrap.dedent("""
        import sys
        sys.path[:0] = %r
        import pyarrow as pa
        import tug
        df = tug.DataFrame({"a": [1, 2, None], "s": ["x", None, "z"]})
        calls = [
            lambda: df.lazy().select(tug.col("zz")).collect(),
            lambda: df.lazy().select(tug.col("s") * tug.col("a")).collect(),
            lambda: tug.from_arrow(None),
            lambda: tug.from_arrow(pa.array([1])),
            lambda: tug.from_arrow(pa.table({"l": pa.array([[1]])})),
            lambda: tug._tug.DataFrame.from_arrow_stream(object()),
            lambda: tug._tug.DataFrame.from_arrow_array(object(), object()),
            lambda: df.lazy().slice(5, -7).collect(),
            lambda: df.lazy().head(-1).collect(),
            lambda: df.lazy().select(tug.col("a").quantile(2.0)).collect(),
            lambda: df.lazy().with_row_index("a").collect(),
            lambda: df.lazy().rename({"zz": "y"}).collect(),
            lambda: df.lazy().join(df.lazy(), left_on="a", right_on=["a", "s"]).collect(),
            lambda: df.lazy().select(tug.lit(2**70)).collect(),
            lambda: df.lazy().collect(target_partition_rows=-1),
            lambda: df.lazy().collect(spill_directory="/nonexistent"),
            lambda: tug.scan_parquet("").collect(),
            lambda: tug.scan_csv("/nonexistent/dir/").collect(),
            lambda: tug.lit(3, dtype=tug.Int8).cast("i64") + tug.lit("x", dtype=tug.Int64),
        ]
        raised = 0
        for c in calls:
            try:
                c()
            except Exception as e:
                raised += 1
                assert not isinstance(e, SystemError), e
        print("raised", raised, "of", len(calls))
        assert raised == len(calls)
    """) % (sys.path,)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "raised" in r.stdout
