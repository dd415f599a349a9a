#!/usr/bin/env python3
"""Writes Parquet test files with pyarrow into a directory, plus expected.json holding, for each file,
its row and row-group counts and each column's tug type name and values in a canonical text form:
integers (and date days, timestamp ticks, decimal unscaled values) in decimal, floats as '%.17g',
booleans as true/false, strings and binaries as the hex of their bytes; null as JSON null.

Usage: make_parquet.py OUT_DIR
"""
import datetime
import decimal
import json
import os
import random
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

N = 1000


def canon(v, kind):
    if v is None:
        return None
    if kind == "bool":
        return "true" if v else "false"
    if kind == "float":
        return "%.17g" % v
    if kind == "bytes":
        return (v.encode() if isinstance(v, str) else bytes(v)).hex()
    if kind == "uuid":
        return str(uuid.UUID(bytes=bytes(v))).encode().hex()
    if kind == "decimal":
        sign, digits, exp = v.as_tuple()
        n = int("".join(map(str, digits)) or "0")
        return str(-n if sign else n)
    return str(int(v))


def column_kind(t):
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        return "bytes"
    if pa.types.is_decimal(t):
        return "decimal"
    return "int"


def tug_type(t, int96=False):
    if int96:
        return "datetime[ns]"
    names = {pa.bool_(): "bool", pa.int8(): "i8", pa.int16(): "i16", pa.int32(): "i32", pa.int64(): "i64",
             pa.uint8(): "u8", pa.uint16(): "u16", pa.uint32(): "u32", pa.uint64(): "u64", pa.float16(): "f32",
             pa.float32(): "f32", pa.float64(): "f64", pa.string(): "str", pa.binary(): "str", pa.date32(): "date",
             pa.time32("ms"): "i64", pa.time64("us"): "i64", pa.time64("ns"): "i64"}
    if t in names:
        return names[t]
    if pa.types.is_decimal(t):
        return "decimal[%d,%d]" % (t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return "datetime[%s%s]" % (t.unit, ", UTC" if t.tz else "")
    if isinstance(t, pa.ExtensionType) or str(t).startswith("extension<arrow.uuid"):
        return "str"
    raise ValueError(t)


def raw_values(col):
    t = col.type
    if pa.types.is_timestamp(t) or pa.types.is_date32(t) or pa.types.is_time(t):
        narrow = pa.types.is_date32(t) or pa.types.is_time32(t)
        return col.cast(pa.int32() if narrow else pa.int64()).to_pylist()
    if str(t).startswith("extension<arrow.uuid"):
        return col.storage.to_pylist() if hasattr(col, "storage") else [None if x is None else x.bytes for x in col.to_pylist()]
    return col.to_pylist()


def expected_of(table, int96_cols=()):
    cols = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        t = col.type
        kind = "uuid" if str(t).startswith("extension<arrow.uuid") else column_kind(t)
        if pa.types.is_timestamp(t) or pa.types.is_date32(t) or pa.types.is_time(t):
            kind = "int"
        if name in int96_cols:
            col = col.cast(pa.timestamp("ns"))
        vals = raw_values(col)
        cols[name] = {"type": tug_type(t, name in int96_cols), "values": [canon(v, kind) for v in vals]}
    return cols


def with_nulls(values, rng, p=0.15):
    return [None if rng.random() < p else v for v in values]


def base_table(n=N, seed=1):
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "ζeta", "", "a longer string value here"]
    d = {}
    d["b"] = pa.array(with_nulls([rng.random() < 0.5 for _ in range(n)], rng), pa.bool_())
    d["b_req"] = pa.array([i % 3 == 0 for i in range(n)], pa.bool_())
    for name, t, lo, hi in [("i8", pa.int8(), -128, 127), ("i16", pa.int16(), -32768, 32767),
                            ("i32", pa.int32(), -2**31, 2**31 - 1), ("i64", pa.int64(), -2**63, 2**63 - 1),
                            ("u8", pa.uint8(), 0, 255), ("u16", pa.uint16(), 0, 65535),
                            ("u32", pa.uint32(), 0, 2**32 - 1), ("u64", pa.uint64(), 0, 2**64 - 1)]:
        d[name] = pa.array(with_nulls([rng.randint(lo, hi) if i % 7 else rng.randint(-3, 3) % (hi + 1) for i in range(n)], rng), t)
    d["i64_req"] = pa.array([i * 1000003 - 500 for i in range(n)], pa.int64())
    d["i32_small"] = pa.array(with_nulls([rng.randint(0, 20) for _ in range(n)], rng), pa.int32())
    d["f32"] = pa.array(with_nulls([rng.uniform(-1e6, 1e6) for _ in range(n)], rng), pa.float32())
    d["f64"] = pa.array(with_nulls([rng.uniform(-1e12, 1e12) for _ in range(n)], rng), pa.float64())
    d["s"] = pa.array(with_nulls([rng.choice(words) for _ in range(n)], rng), pa.string())
    d["s_unique"] = pa.array(with_nulls(["row-%06d-%s" % (i, "x" * (i % 13)) for i in range(n)], rng), pa.string())
    d["bin"] = pa.array(with_nulls([bytes(rng.randrange(256) for _ in range(rng.randint(0, 9))) for _ in range(n)], rng), pa.binary())
    d["dec9"] = pa.array(with_nulls([decimal.Decimal(rng.randint(-10**9 + 1, 10**9 - 1)).scaleb(-2) for _ in range(n)], rng), pa.decimal128(9, 2))
    d["dec18"] = pa.array(with_nulls([decimal.Decimal(rng.randint(-10**18 + 1, 10**18 - 1)).scaleb(-4) for _ in range(n)], rng), pa.decimal128(18, 4))
    d["dec30"] = pa.array(with_nulls([decimal.Decimal(rng.randint(-10**30 + 1, 10**30 - 1)).scaleb(-5) for _ in range(n)], rng), pa.decimal128(30, 5))
    d["date"] = pa.array(with_nulls([rng.randint(-30000, 30000) for _ in range(n)], rng), pa.int32()).cast(pa.date32())
    base = 1_600_000_000
    d["ts_ms"] = pa.array(with_nulls([(base + rng.randint(-10**8, 10**8)) * 1000 + rng.randint(0, 999) for _ in range(n)], rng), pa.int64()).cast(pa.timestamp("ms"))
    d["ts_us"] = pa.array(with_nulls([(base + rng.randint(-10**8, 10**8)) * 10**6 + rng.randint(0, 10**6) for _ in range(n)], rng), pa.int64()).cast(pa.timestamp("us"))
    d["ts_ns"] = pa.array(with_nulls([(base + rng.randint(-10**8, 10**8)) * 10**9 + rng.randint(0, 10**9) for _ in range(n)], rng), pa.int64()).cast(pa.timestamp("ns"))
    d["ts_utc"] = pa.array(with_nulls([(base + rng.randint(-10**8, 10**8)) * 10**6 for _ in range(n)], rng), pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    d["t_ms"] = pa.array(with_nulls([rng.randint(0, 86400 * 1000 - 1) for _ in range(n)], rng), pa.int32()).cast(pa.time32("ms"))
    d["t_us"] = pa.array(with_nulls([rng.randint(0, 86400 * 10**6 - 1) for _ in range(n)], rng), pa.int64()).cast(pa.time64("us"))
    d["all_null"] = pa.array([None] * n, pa.int64())
    return pa.table(d)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    expected = {}

    def write(name, table, int96_cols=(), flat=None, **kw):
        path = os.path.join(out, name)
        pq.write_table(table, path, **kw)
        md = pq.ParquetFile(path).metadata
        expected[name] = {"rows": table.num_rows, "row_groups": md.num_row_groups,
                          "columns": expected_of(flat if flat is not None else table, int96_cols)}

    t = base_table()
    small_pages = dict(data_page_size=2048, row_group_size=300, write_batch_size=128)
    for version in ["1.0", "2.0"]:
        for codec in ["none", "snappy", "gzip", "zstd", "lz4"]:
            for dictionary in [True, False]:
                write("base_v%s_%s_%s.parquet" % (version[0], codec, "dict" if dictionary else "plain"), t,
                      data_page_version=version, compression=codec, use_dictionary=dictionary, **small_pages)
    # Page checksums (CRC-32 in every page header): the GPU reader sends only checked pages to nvCOMP.
    for codec in ["snappy", "lz4"]:
        write("base_v1_%s_dict_crc.parquet" % codec, t, data_page_version="1.0", compression=codec,
              use_dictionary=True, write_page_checksum=True, **small_pages)
    # Decimals stored as INT32/INT64.
    write("decimal_int.parquet", t.select(["dec9", "dec18", "dec30"]), store_decimal_as_integer=True, **small_pages)

    # Encodings (dictionary off).
    ints = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "i64_req", "i32_small", "date", "ts_ms", "ts_ns", "t_ms", "t_us", "all_null"]
    strs = ["s", "s_unique", "bin"]
    for version in ["1.0", "2.0"]:
        v = version[0]
        write("delta_bp_v%s.parquet" % v, t.select(ints), use_dictionary=False, data_page_version=version,
              column_encoding={c: "DELTA_BINARY_PACKED" for c in ints}, **small_pages)
        write("delta_len_v%s.parquet" % v, t.select(strs), use_dictionary=False, data_page_version=version,
              column_encoding={c: "DELTA_LENGTH_BYTE_ARRAY" for c in strs}, **small_pages)
        write("delta_ba_v%s.parquet" % v, t.select(strs + ["dec30"]), use_dictionary=False, data_page_version=version,
              column_encoding={c: "DELTA_BYTE_ARRAY" for c in strs + ["dec30"]}, **small_pages)
        bss = ["f32", "f64", "i32", "i64", "dec30", "dec18"]
        write("bss_v%s.parquet" % v, t.select(bss), use_dictionary=False, data_page_version=version,
              column_encoding={c: "BYTE_STREAM_SPLIT" for c in bss}, **small_pages)

    # Dictionary falling back to PLAIN in the middle of a chunk.
    rng = random.Random(7)
    big = pa.table({"s": pa.array(["v%d-%s" % (rng.randint(0, 10**9), "y" * rng.randint(0, 30)) for _ in range(20000)]),
                    "i": pa.array([rng.randint(-2**62, 2**62) for _ in range(20000)], pa.int64())})
    write("dict_fallback.parquet", big, dictionary_pagesize_limit=4096, data_page_size=4096)

    # Legacy INT96 timestamps.
    write("int96.parquet", t.select(["ts_ns", "ts_us", "i32"]), int96_cols=("ts_ns", "ts_us"),
          use_deprecated_int96_timestamps=True, **small_pages)
    # UUID and FLOAT16.
    rng = random.Random(3)
    u = pa.array(with_nulls([uuid.UUID(int=rng.getrandbits(128)).bytes for _ in range(100)], rng), pa.binary(16))
    extra = pa.table({"uuid": pa.ExtensionArray.from_storage(pa.uuid(), u),
                      "f16": pa.array(with_nulls([float(x) for x in [0.5, -2.0, 65504.0, 1e-5, 3.140625] * 20], rng), pa.float64()).cast(pa.float16())})
    write("extra_types.parquet", extra)
    expected["extra_types.parquet"]["columns"]["uuid"]["values"] = [canon(None if x is None else x, "uuid") for x in u.to_pylist()]

    # Nested columns are skipped; the flat ones around them read.
    nested = pa.table({"a": pa.array([1, 2, 3], pa.int64()),
                       "l": pa.array([[1, 2], None, [3]], pa.list_(pa.int32())),
                       "st": pa.array([{"x": 1, "y": "p"}, None, {"x": 3, "y": None}]),
                       "z": pa.array(["p", None, "r"])})
    write("nested.parquet", nested, flat=nested.select(["a", "z"]))
    expected["nested.parquet"]["unsupported"] = [["l", "nested list"], ["st", "nested struct"]]

    # Every kind of column tug cannot represent, between flat ones; and a file of only such columns.
    unsupported = pa.table({"a": pa.array([1, None, 3], pa.int32()),
                            "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
                            "d256": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("-2.25")],
                                             pa.decimal256(50, 2)),
                            "l": pa.array([[1.5], [], None], pa.list_(pa.float64())),
                            "st": pa.array([{"x": 1}, {"x": None}, None]),
                            "z": pa.array(["p", "q", None])})
    write("unsupported.parquet", unsupported, flat=unsupported.select(["a", "z"]))
    expected["unsupported.parquet"]["unsupported"] = [
        ["m", "nested map"], ["d256", "decimal(50, 2): precision above 38, beyond decimal128"], ["l", "nested list"],
        ["st", "nested struct"]]
    write("nested_only.parquet", nested.select(["l", "st"]), flat=pa.table({}))

    # A repeated column name: the second one is not read.
    dup = pa.table([pa.array([1, 2], pa.int64()), pa.array(["x", "y"]), pa.array([3.5, None])], names=["a", "a", "b"])
    write("duplicate_names.parquet", dup, flat=pa.table({"a": dup.column(0), "b": dup.column(2)}))
    expected["duplicate_names.parquet"]["unsupported"] = [["a", "a second column of that name"]]

    # Empty file and a one-row file.
    write("empty.parquet", t.slice(0, 0))
    write("one_row.parquet", t.slice(5, 1))

    # Statistics with known min / max.
    stats = pa.table({"i": pa.array([5, None, -7, 12], pa.int64()), "s": pa.array(["pear", "apple", None, "zoo"]),
                      "d": pa.array([1.5, -2.25, None, None], pa.float64()),
                      "dec": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50"), None, None], pa.decimal128(7, 2)),
                      "u": pa.array([1, 2**64 - 1, None, 3], pa.uint64())})
    write("stats.parquet", stats)

    other_writers(out, t, expected)

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


def other_writers(out, t, expected):
    """Files written by DuckDB and Polars, where they can be imported (the .venv has both; a GPU machine
    may not), with what pyarrow reads from them as the expected values: their own encodings (DuckDB's data
    page v2 with DELTA_* and BYTE_STREAM_SPLIT, Polars' writer) for both tug readers. The expected values
    are the table they were given (pyarrow 2x cannot read DuckDB 2.0's v2 INT32 columns: "InitBlock EOF")."""
    cols = ["b", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "i32_small", "f32", "f64", "s", "s_unique",
            "dec9", "dec18", "date"]
    src = t.select(cols)

    want = expected_of(src)

    def note(name):
        path = os.path.join(out, name)
        expected[name] = {"rows": src.num_rows, "row_groups": pq.ParquetFile(path).metadata.num_row_groups,
                          "columns": want}

    try:
        import duckdb
    except ImportError:
        duckdb = None
    if duckdb is not None:
        con = duckdb.connect()
        con.register("src", src)
        for version in ["V1", "V2"]:
            for codec in ["snappy", "zstd", "uncompressed"]:
                name = "duckdb_%s_%s.parquet" % (version.lower(), codec)
                con.execute("COPY (SELECT * FROM src) TO '%s' (FORMAT parquet, COMPRESSION %s, ROW_GROUP_SIZE 300, "
                            "PARQUET_VERSION %s)" % (os.path.join(out, name), codec, version))
                note(name)
    try:
        import polars
    except ImportError:
        polars = None
    if polars is not None:
        df = polars.from_arrow(src)
        for codec in ["snappy", "zstd", "lz4", "uncompressed"]:
            name = "polars_%s.parquet" % codec
            df.write_parquet(os.path.join(out, name), compression=codec, row_group_size=300, data_page_size=2048)
            note(name)


if __name__ == "__main__":
    main()
