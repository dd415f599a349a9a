"""Files (scan/sink Parquet and CSV) through the Python API, checked with Polars reading the same files;
EngineOptions mirrors engine_options; explain and profile."""
import json
import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tug

from api_data import all_types

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("n", [0, 1, 1024])
def test_sink_parquet_read_by_polars_and_scanned_back(tmp_path, n):
    # durations go to Parquet as plain INT64 and read back as int64 (docs/parquet.md)
    t = all_types(n, seed=11).drop_columns(["dur"])
    path = tmp_path / "out.parquet"
    tug.from_arrow(t).lazy().filter(tug.col("k").is_not_null()).sink_parquet(path, compression="zstd")
    want = pl.from_arrow(t).filter(pl.col("k").is_not_null())
    assert_frame_equal(pl.read_parquet(path), want)
    back = tug.scan_parquet(path).select("g", "i64", "s").collect()
    assert_frame_equal(back.to_polars(), want.select("g", "i64", "s"))


def test_scan_parquet_written_by_polars_with_pushdown(tmp_path):
    t = all_types(3000, seed=12)
    path = tmp_path / "in.parquet"
    pl.from_arrow(t).write_parquet(path, row_group_size=500)
    q = lambda m, lf: lf.filter(m.col("i32") > 0).group_by("g").agg(m.col("f64").sum(), m.len()).sort("g")
    got = q(tug, tug.scan_parquet(path)).collect().to_polars()
    want = q(pl, pl.scan_parquet(path)).collect()
    assert_frame_equal(got, want.cast({"len": pl.Int64}))


def test_csv_round_trip(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("id;name;score\n1;ann;1.5\n2;;2.5\n3;cy;NA\n")
    lf = tug.scan_csv(src, separator=";", null_values=["", "NA"], schema_overrides={"id": tug.Int32})
    assert lf.schema == {"id": tug.Int32, "name": tug.String, "score": tug.Float64}
    df = lf.collect()
    assert df.to_dict() == {"id": [1, 2, 3], "name": ["ann", None, "cy"], "score": [1.5, 2.5, None]}
    out = tmp_path / "out.csv"
    df.lazy().sink_csv(out)
    assert_frame_equal(pl.read_csv(out), pl.DataFrame({"id": [1, 2, 3], "name": ["ann", None, "cy"],
                                                       "score": [1.5, 2.5, None]}))
    assert tug.read_csv(out, n_rows=2).height == 2


def test_engine_options_mirror_the_documented_options():
    """Every option of docs/options.md is an EngineOptions field with the documented default, and back."""
    text = (REPO / "docs" / "options.md").read_text()
    documented = re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", text, re.M)
    o = tug.EngineOptions()
    fields = o.to_dict()
    assert [name for name, _ in documented] == list(fields)
    for name, default in documented:
        default = default.strip()
        value = fields[name]
        if name == "engine":
            assert default == "`automatic`" and value == "auto"
        elif name == "fallback":
            assert default == f"`{value}`"
        elif name == "optimizer":
            assert default == "all on" and all(value.values())
        elif isinstance(value, bool):
            assert default == str(value).lower(), name
        elif isinstance(value, str):
            assert default == f'"{value}"', name
        else:
            assert int(default) == value, name


def test_engine_options_set_and_checked():
    o = tug.EngineOptions(engine="cpu", num_threads=2, target_partition_rows=100,
                          optimizer={"predicate_pushdown": False}, fallback="raise")
    assert o.engine == "cpu" and o.num_threads == 2 and o.optimizer.predicate_pushdown is False
    assert o.optimizer.projection_pushdown is True
    lf = tug.DataFrame({"a": list(range(1000))}).lazy().filter(tug.col("a") % 7 == 0)
    assert lf.collect(options=o).height == 143
    assert lf.collect(engine=o).height == 143
    # keyword overrides on top of an options object; the object itself is not changed
    assert lf.collect(options=o, num_threads=1).height == 143 and o.num_threads == 2
    with pytest.raises(tug.InvalidArgumentError, match="unknown optimizer flag"):
        tug.EngineOptions(optimizer={"nope": True})
    with pytest.raises(tug.InvalidArgumentError, match="fallback"):
        tug.EngineOptions(fallback="sometimes")


def test_engines_agree():
    t = all_types(500, seed=13)
    lf = tug.from_arrow(t).lazy().group_by("g").agg(tug.col("i64").sum()).sort("g")
    cpu = lf.collect(engine="cpu")
    auto = lf.collect(engine="auto")
    assert cpu.equals(auto)
    if not tug.built_with_cuda:
        pytest.skip("no CUDA in this build: engine='gpu' falls back to the CPU (checked in test_gpu_fallback)")
    gpu = lf.collect(engine="gpu")
    assert cpu.equals(gpu)


def test_gpu_fallback_without_device_raises_when_asked():
    lf = tug.DataFrame({"a": [1, 2, 3]}).lazy().select(tug.col("a").sum())
    try:
        import subprocess
        has_gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except FileNotFoundError:
        has_gpu = False
    if has_gpu and tug.built_with_cuda:
        assert lf.collect(engine="gpu", fallback="raise").item() == 6
    else:
        with pytest.raises(tug.NotSupportedError):
            lf.collect(engine="gpu", fallback="raise")
        assert lf.collect(engine="gpu", fallback="silent").item() == 6


def test_explain_and_profile():
    lf = tug.DataFrame({"a": list(range(100)), "g": [i % 3 for i in range(100)]}).lazy()
    q = lf.filter(tug.col("a") > 10).group_by("g").agg(tug.col("a").sum()).sort("g")
    text = q.explain(engine="cpu")
    assert "optimized logical plan" in text and "physical plan" in text and "@cpu" in text
    df, stats = q.profile(engine="cpu")
    assert df.to_dict() == {"g": [0, 1, 2], "a": [sum(a for a in range(11, 100) if a % 3 == g) for g in range(3)]}
    d = stats.to_dict()
    names = [o["name"] for o in d["operators"]]
    assert "sort" in names and any(n.startswith("hash_aggregate") for n in names)
    assert d["operators"][names.index("sort")]["rows_out"] == 3
    assert d["total_seconds"] > 0 and d["fallbacks"] == []
    assert "operator" in str(stats) and "sort" in str(stats)


def test_profile_json_has_the_same_numbers(tmp_path):
    # force_external and spill_everything: the aggregate's buckets and the held inputs go to disk; the JSON
    # parses and has the numbers of to_dict(), the spills on the operators that made the spilled tables
    n = 200_000
    lf = tug.DataFrame({"k": [i % 5000 for i in range(n)], "v": list(range(n))}).lazy()
    q = lf.group_by("k").agg(tug.col("v").sum()).sort("k")
    df, stats = q.profile(engine="cpu", force_external=True, spill_everything=True, memory_limit=4 << 20,
                          spill_directory=str(tmp_path), num_threads=2)
    assert df.height == 5000
    j = json.loads(stats.to_json())
    d = stats.to_dict()
    assert [o["name"] for o in j["operators"]] == [o["name"] for o in d["operators"]]
    for a, b in zip(j["operators"], d["operators"]):
        for key in ("rows_in", "bytes_in", "rows_out", "bytes_out", "peak_host_memory", "peak_device_memory"):
            assert a[key] == b[key], key
        assert a["moved"]["host->disk"] == b["spilled_to_disk"]
    assert sum(o["spilled_to_disk"] for o in d["operators"]) == j["transfers"]["host->disk"]["bytes"] > 0
    assert j["peak_memory"] == d["peak_memory"]
    spilled = {o["name"] for o in d["operators"] if o["spilled_to_disk"] > 0}
    assert "hash_aggregate[final]" in spilled and "scan" not in spilled, spilled
    assert "disk_spill_MiB" in str(stats)


def test_display():
    df = tug.DataFrame({"a": list(range(30)), "s": [f"<{i}>" for i in range(30)]})
    assert repr(df).startswith("shape: (30, 2)")
    h = df._repr_html_()
    assert h.count("<tr>") == 2 + 11 and "&lt;0&gt;" in h and "&hellip;" in h
    assert "<tug.LazyFrame [a: i64, s: str]>" == repr(df.lazy())


def test_dtypes_and_literals():
    import datetime as dt
    import decimal

    df = tug.DataFrame({"x": [1]})
    out = df.select(
        tug.lit(dt.date(2024, 2, 29)).alias("d"),
        tug.lit(dt.datetime(2024, 2, 29, 12, 30)).alias("ts"),
        tug.lit(dt.timedelta(hours=2)).alias("dur"),
        tug.lit(decimal.Decimal("12.34")).alias("dec"),
        tug.lit(None).alias("null"),
        tug.lit(5, dtype=tug.Int8).alias("i8"),
        tug.lit(2**63).alias("u64"),
    )
    assert out.schema == {"d": tug.Date, "ts": tug.Datetime("us"), "dur": tug.Duration("us"),
                          "dec": tug.Decimal(38, 2), "null": tug.Int64, "i8": tug.Int8, "u64": tug.UInt64}
    assert out.rows() == [(dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 12, 30), dt.timedelta(hours=2),
                           decimal.Decimal("12.34"), None, 5, 2**63)]
    # Polars and pyarrow data types work in casts
    import pyarrow as pa
    assert df.select(tug.col("x").cast(pl.Int16)).schema == {"x": tug.Int16}
    assert df.select(tug.col("x").cast(pa.float32())).schema == {"x": tug.Float32}
    assert df.select(tug.col("x").cast("str")).schema == {"x": tug.String}
