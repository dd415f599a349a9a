"""Arrow interchange through the C Data / C Stream PyCapsules: pyarrow, Polars, pandas and DuckDB read
tug's results and tug reads theirs; fixed-width buffers cross without a copy (checked by address)."""
import datetime as dt
import gc

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import tug

from api_data import SIZES, all_types


def values_address(arr: pa.Array) -> int:
    """Address of value 0 of a fixed-width pyarrow array (its offset applied)."""
    return arr.buffers()[1].address + arr.offset * arr.type.bit_width // 8


@pytest.mark.parametrize("n", SIZES)
def test_round_trip_all_types(n):
    t = all_types(n)
    df = tug.from_arrow(t)
    assert df.shape == (n, t.num_columns)
    back = df.to_arrow()
    # tug's strings are large strings; everything else keeps its Arrow type
    assert back.equals(t), (back.schema, t.schema)


@pytest.mark.parametrize("n", [1, 33, 1024])
def test_zero_copy_pyarrow_to_tug_and_back(n):
    t = all_types(n)
    df = tug.from_arrow(t)
    addr = df._buffer_addresses()
    back = df.to_arrow()
    for name in ["k", "i8", "i32", "i64", "u64", "f32", "f64", "d", "ts", "dur", "dec"]:
        src = t.column(name).chunks[0]
        assert addr[name][0] == values_address(src), name
        out = back.column(name).chunks[0]
        assert values_address(out) == values_address(src), name
        if src.null_count:
            assert addr[name][1] == src.buffers()[0].address, name
            assert out.buffers()[0].address == src.buffers()[0].address, name
    # large strings: offsets and chars shared as well
    s_src, s_out = t.column("s").chunks[0], back.column("s").chunks[0]
    assert s_out.buffers()[1].address == s_src.buffers()[1].address
    assert s_out.buffers()[2].address == s_src.buffers()[2].address


def test_query_results_export_without_copy():
    t = all_types(1024, seed=9)
    res = tug.from_arrow(t).lazy().filter(tug.col("k") > 2).with_columns(x=tug.col("i64") * 2).collect()
    addr = res._buffer_addresses()
    out = res.to_arrow()
    assert res.n_partitions == 1
    assert values_address(out.column("x").chunks[0]) == addr["x"][0]
    assert out.column("x").to_pylist() == [None if v is None else v * 2 for v, k in
                                            zip(t.column("i64").to_pylist(), t.column("k").to_pylist())
                                            if k is not None and k > 2]


def test_zero_copy_polars_both_ways():
    p = pl.DataFrame({"a": pl.Series(range(1000), dtype=pl.Int64), "f": [i * 0.5 for i in range(1000)]})
    p_addr = values_address(p.to_arrow().column("a").chunks[0])
    df = tug.from_polars(p)
    assert df._buffer_addresses()["a"][0] == p_addr
    back = df.to_polars()
    assert values_address(back.to_arrow().column("a").chunks[0]) == p_addr
    assert_frame_equal(back, p)
    # a query result into Polars: the buffer Polars holds is tug's
    res = df.lazy().select(b=tug.col("a") + 1).collect()
    pb = res.to_polars()
    assert values_address(pb.to_arrow().column("b").chunks[0]) == res._buffer_addresses()["b"][0]
    assert pb["b"].to_list() == list(range(1, 1001))


def test_polars_reads_tug_directly_and_strings_views_dictionaries():
    p = pl.DataFrame({"s": ["short", None, "a string longer than twelve bytes", ""],
                      "c": pl.Series(["u", "v", None, "u"], dtype=pl.Categorical),
                      "b": [True, None, False, True]})
    df = tug.from_arrow(p)  # Polars exports string views and dictionaries: decoded into tug strings
    assert df.schema == {"s": tug.String, "c": tug.String, "b": tug.Boolean}
    assert df.to_dict() == {"s": ["short", None, "a string longer than twelve bytes", ""],
                            "c": ["u", "v", None, "u"], "b": [True, None, False, True]}
    assert_frame_equal(pl.DataFrame(df), p.with_columns(pl.col("c").cast(pl.String)))


def test_pandas_both_ways():
    p = pd.DataFrame({"a": [1, 2, 3], "f": [1.5, None, 2.5], "s": ["x", None, "z"]})
    df = tug.from_pandas(p)
    assert df.to_dict() == {"a": [1, 2, 3], "f": [1.5, None, 2.5], "s": ["x", None, "z"]}
    out = df.lazy().with_columns(g=tug.col("a") * 10).collect().to_pandas()
    assert list(out["g"]) == [10, 20, 30]
    assert out["s"].tolist()[0] == "x"


def test_dataframe_constructor_takes_dicts_arrow_polars_and_pandas():
    import numpy as np

    want = {"a": [1, 2, None], "s": ["x", None, "z"]}
    assert tug.DataFrame(want).to_dict() == want
    assert tug.DataFrame(want, schema={"a": tug.Int8, "s": tug.String}).schema == {"a": tug.Int8, "s": tug.String}
    t = pa.table({"a": pa.array([1, 2, None], pa.int64()), "s": ["x", None, "z"]})
    df = tug.DataFrame(t)  # no copy of the fixed-width values
    assert df.to_dict() == want and df._buffer_addresses()["a"][0] == values_address(t.column("a").chunks[0])
    p = pl.DataFrame(want)
    df = tug.DataFrame(p)
    assert df.to_dict() == want
    assert df._buffer_addresses()["a"][0] == values_address(p.to_arrow().column("a").chunks[0])
    pdf = pd.DataFrame({"a": np.arange(3, dtype=np.int64), "f": [0.5, 1.5, 2.5]})
    df = tug.DataFrame(pdf)  # pandas' __arrow_c_stream__
    assert df.to_dict() == {"a": [0, 1, 2], "f": [0.5, 1.5, 2.5]}
    assert df._buffer_addresses()["a"][0] == pdf["a"].to_numpy(copy=False).__array_interface__["data"][0]
    with pytest.raises(tug.InvalidArgumentError, match="schema="):
        tug.DataFrame(t, schema={"a": tug.Int64})


def numpy_address(series: pd.Series) -> int:
    """Address of value 0 of a numpy-backed pandas Series (no copy made to get it)."""
    return series.to_numpy(copy=False).__array_interface__["data"][0]


@pytest.mark.parametrize("n", [1, 33, 1024])
def test_zero_copy_pandas_both_ways(n):
    import numpy as np

    p = pd.DataFrame({"a": np.arange(n, dtype=np.int64), "f": np.arange(n) * 0.5,
                      "i": np.arange(n, dtype=np.int32), "ts": np.arange(n).astype("datetime64[us]")})
    df = tug.from_pandas(p)  # numpy's memory, not a copy of it
    addr = df._buffer_addresses()
    for c in p.columns:
        assert addr[c][0] == numpy_address(p[c]), c
    # a query result into pandas: where the layouts agree (fixed width, no nulls, one partition), pandas'
    # numpy arrays are tug's buffers
    res = df.lazy().with_columns(x=tug.col("a") * 3, y=tug.col("f") + 1.0).collect()
    out = res.to_pandas()
    raddr = res._buffer_addresses()
    for c in ["a", "f", "i", "ts", "x", "y"]:
        assert numpy_address(out[c]) == raddr[c][0], c
    assert out["x"].tolist() == [3 * i for i in range(n)]
    s = res["x"].to_pandas()  # a Series too
    assert numpy_address(s) == raddr["x"][0] and s.name == "x"
    # shared columns are read-only: a write through pandas never reaches tug's memory; a copy is writable
    with pytest.raises(ValueError, match="read-only"):
        out.loc[0, "x"] = -5
    writable = res.to_pandas(split_blocks=False)
    writable.loc[0, "x"] = -5
    assert writable["x"].tolist()[0] == -5 and res["x"].to_list()[0] == 0
    # with nulls numpy needs another layout (NaN or objects): pandas' Arrow-backed columns share it all
    t = tug.from_arrow(pa.table({"v": pa.array([None if i % 3 == 0 else i for i in range(n)], pa.int64())}))
    arrow_backed = t.to_pandas(types_mapper=pd.ArrowDtype)
    chunk = arrow_backed["v"].array._pa_array.chunks[0]
    assert values_address(chunk) == t._buffer_addresses()["v"][0]
    assert chunk.buffers()[0].address == t._buffer_addresses()["v"][1]


def test_zero_copy_duckdb_both_ways():
    """DuckDB -> tug: the buffers of DuckDB's Arrow result (imported by pyarrow without a copy, to see their
    addresses) are the ones tug holds. tug -> DuckDB: the Arrow C stream DuckDB's scan consumes hands out
    tug's buffers (what DuckDB's scan does with them inside is not visible from Python: its Arrow scan
    references fixed-width buffers rather than copying them)."""
    rel = duckdb.sql("select range::BIGINT as x, range * 0.5 as f, (range % 7)::INTEGER as k from range(5000)")
    from_duck = rel.arrow()  # a RecordBatchReader in DuckDB 2, a Table in older versions
    if isinstance(from_duck, pa.RecordBatchReader):
        from_duck = from_duck.read_all()
    df = tug.from_arrow(from_duck)
    assert df.n_partitions == from_duck.column("x").num_chunks
    addr = df._buffer_addresses()
    for c in ["x", "f", "k"]:
        assert addr[c][0] == values_address(from_duck.column(c).chunks[0]), c

    class Spy:  # DuckDB's replacement scan reads anything with __arrow_c_stream__
        calls = 0

        def __arrow_c_stream__(self, requested_schema=None):
            Spy.calls += 1
            return df.__arrow_c_stream__(requested_schema)

    spy = Spy()  # noqa: F841 - read by DuckDB's replacement scan
    got = duckdb.sql("select sum(x), sum(f), count(*) from spy where k = 3").fetchall()
    assert Spy.calls >= 1
    assert got == duckdb.sql("select sum(x), sum(f), count(*) from from_duck where k = 3").fetchall()
    # the stream hands out tug's buffers: the same export, imported by pyarrow
    exported = pa.RecordBatchReader.from_stream(Spy()).read_next_batch()
    for c in ["x", "f", "k"]:
        assert values_address(exported.column(c)) == addr[c][0], c


def test_duckdb_both_ways():
    t = all_types(200, seed=4)
    df = tug.from_arrow(t)  # noqa: F841 - read by DuckDB's replacement scan
    q = "select count(*), sum(i64), count(s), sum(case when b then 1 else 0 end), max(d), min(dec) from {}"
    assert duckdb.sql(q.format("df")).fetchall() == duckdb.sql(q.format("t")).fetchall()
    rel = duckdb.sql("select i64 * 2 as x, s from t where k = 1 order by x nulls last")
    back = tug.from_arrow(rel)
    want = duckdb.sql("select i64 * 2 as x, s from t where k = 1 order by x nulls last").fetchall()
    assert back.height == len(want) > 0
    assert back.rows() == want


def test_booleans_pack_to_bits_with_offsets():
    vals = [True, False, None, True, True, False, None, False, True] * 5
    a = pa.array(vals, pa.bool_())
    for off in range(0, 10):
        t = pa.table({"b": a.slice(off)})
        df = tug.from_arrow(t)
        assert df.to_dict()["b"] == vals[off:]
        out = df.to_arrow().column("b").chunks[0]
        assert out.type == pa.bool_() and out.to_pylist() == vals[off:]


def test_sliced_inputs_of_every_type():
    t = all_types(100, seed=2)
    for off, length in [(0, 0), (3, 10), (31, 33), (64, 36), (99, 1)]:
        s = t.slice(off, length)
        df = tug.from_arrow(s)
        assert df.to_arrow().equals(s), (off, length)
        # through a query too (the sliced buffers are read by the engine)
        got = df.lazy().select(tug.col("s").str.len_bytes(), tug.col("i64").sum().over("g")).collect()
        want = pl.from_arrow(s).select(pl.col("s").str.len_bytes(), pl.col("i64").sum().over("g"))
        assert got.to_polars().cast(want.schema).equals(want)


def test_string_offsets_int32_and_chunked_input_partitions():
    t = pa.concat_tables([pa.table({"s": pa.array(["a", None, "ccc"], pa.string()), "i": [1, 2, 3]}),
                          pa.table({"s": pa.array(["dd", "e"], pa.string()), "i": [4, 5]})])
    df = tug.from_arrow(t)
    assert df.n_partitions == 2
    assert df.to_dict() == {"s": ["a", None, "ccc", "dd", "e"], "i": [1, 2, 3, 4, 5]}
    assert df.lazy().select(tug.col("s").str.len_chars().sum()).collect().item() == 7


def test_imported_memory_outlives_the_producer():
    t = pa.table({"a": pa.array(range(10_000), pa.int64()), "s": pa.array([str(i) for i in range(10_000)])})
    df = tug.from_arrow(t)
    del t
    gc.collect()
    assert df.lazy().select(tug.col("a").sum(), tug.col("s").str.len_bytes().sum()).collect().rows() == [
        (sum(range(10_000)), sum(len(str(i)) for i in range(10_000)))]
    out = df.to_arrow()
    del df
    gc.collect()
    assert out.column("a").to_pylist()[-1] == 9999


def test_record_batch_and_arrow_c_array():
    rb = pa.record_batch({"a": [1, 2, None], "d": pa.array([dt.date(2020, 1, 2)] * 3)})
    df = tug.from_arrow(rb)  # __arrow_c_stream__ or __arrow_c_array__
    assert df.to_dict() == rb.to_pydict()
    schema_cap, array_cap = rb.__arrow_c_array__()
    df2 = tug.DataFrame._from(tug._tug.DataFrame.from_arrow_array(schema_cap, array_cap))
    assert df2.to_dict() == rb.to_pydict()


def test_empty_frames():
    t = all_types(0)
    df = tug.from_arrow(t)
    assert df.shape == (0, t.num_columns) and df.n_partitions == 0
    assert df.to_arrow().schema == t.schema
    assert pl.DataFrame(df).shape == (0, t.num_columns)
    assert df.lazy().filter(tug.col("k") > 1).collect().to_arrow().num_rows == 0
    empty = tug.DataFrame()
    assert empty.shape == (0, 0)


def test_unsupported_arrow_types_raise_naming_the_column():
    t = pa.table({"ok": [1], "nested": pa.array([[1, 2]], pa.list_(pa.int64()))})
    with pytest.raises(tug.NotSupportedError, match='"nested"'):
        tug.from_arrow(t)
    with pytest.raises(tug.NotSupportedError, match='"n"'):
        tug.from_arrow(pa.table({"n": pa.array([None, None], pa.null())}))
    with pytest.raises(tug.InvalidArgumentError, match="__arrow_c_stream__"):
        tug.from_arrow(42)
    with pytest.raises(tug.InvalidArgumentError, match="struct"):
        tug.from_arrow(pa.array([1, 2, 3]))
