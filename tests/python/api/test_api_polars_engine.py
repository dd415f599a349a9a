"""tug as an engine for Polars queries (tug.polars_engine): Polars' optimized plan is translated into a tug
plan through Polars' post-optimization callback; the answers must equal Polars' own, and what tug cannot
run falls back to Polars with the reason listed."""
import importlib.util
import os
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tug

from api_data import all_types, keyed

REPO = Path(__file__).resolve().parents[3]
PDSH = REPO / "bench" / "pdsh"
BUILD = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build"))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def on_tug(lf: pl.LazyFrame, **options):
    """Runs `lf` through the tug engine (fallback="raise": it must run on tug) and checks it against Polars."""
    eng = tug.polars_engine(fallback="raise", engine="cpu", **options)
    got = lf.collect(engine=eng)
    assert eng.ran_on_tug and eng.fallbacks == []
    assert_frame_equal(got, lf.collect(), check_row_order=False, rel_tol=1e-9, abs_tol=1e-9)
    return got


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_queries_over_every_type(n):
    t = all_types(n, seed=21)
    lf = pl.from_arrow(t).lazy()
    on_tug(lf)
    on_tug(lf.filter((pl.col("i64") > 0) | pl.col("b")).select("g", "i32", "s", "d"))
    on_tug(lf.with_columns(x=pl.col("f64") * 2 + pl.col("i32"), y=pl.col("s").str.len_chars(),
                           z=pl.col("d").dt.year(), w=pl.when(pl.col("b")).then(pl.col("s")).otherwise(pl.lit("-"))))
    on_tug(lf.group_by("g").agg(pl.col("i64").sum(), pl.col("f64").mean(), pl.col("s").min(), pl.len(),
                                pl.col("k").n_unique(), pl.col("f32").std(), pl.col("dec").sum()))
    on_tug(lf.select(pl.col("s").str.to_uppercase().alias("u"), pl.col("s").str.to_lowercase().alias("l"),
                     pl.col("s").str.to_titlecase().alias("t")))
    on_tug(lf.select(pl.col("i64").sum().over("g"), pl.col("s").str.starts_with("a"),
                     pl.col("k").is_in([1, 2]), pl.col("u8").is_between(10, 20), pl.col("i16").fill_null(0)))
    on_tug(lf.sort("k", "i64", descending=[True, False], nulls_last=True, maintain_order=True).head(10))
    on_tug(lf.select("g", "k").unique(maintain_order=True))
    on_tug(lf.slice(3, 7))
    on_tug(lf.with_row_index("idx", offset=5).filter(pl.col("idx") % 3 == 0))


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti", "cross"])
def test_joins(how):
    a, b = pl.from_arrow(keyed(60, 1)).lazy(), pl.from_arrow(keyed(30, 2)).lazy()
    on_tug(a.join(b, how=how) if how == "cross" else a.join(b, on="k", how=how))


def test_parquet_scan_with_pushdown(tmp_path):
    path = tmp_path / "t.parquet"
    pl.from_arrow(all_types(500, seed=22)).write_parquet(path, row_group_size=100)
    on_tug(pl.scan_parquet(path).filter(pl.col("i32") > 0).select("g", "i32", "s").head(40))
    on_tug(pl.scan_parquet(path).group_by("g").agg(pl.col("f64").max()).sort("g"))
    on_tug(pl.concat([pl.scan_parquet(path), pl.scan_parquet(path)]).select(pl.col("i64").sum()))


def test_fallback_modes():
    lf = pl.LazyFrame({"a": [1, 2, 3]}).with_columns(pl.col("a").cum_sum().alias("c"))  # no translation for cum_sum
    # Polars wraps the callback's tug.NotSupportedError in its ComputeError, with tug's message
    with pytest.raises(pl.exceptions.ComputeError, match="tug cannot run this Polars query: function cum_sum"):
        lf.collect(engine=tug.polars_engine(fallback="raise"))
    eng = tug.polars_engine(fallback="warn")
    with pytest.warns(UserWarning, match="running this query on Polars"):
        got = lf.collect(engine=eng)
    assert_frame_equal(got, lf.collect())
    assert not eng.ran_on_tug and len(eng.fallbacks) == 1
    eng = tug.polars_engine(fallback="silent")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_frame_equal(lf.collect(engine=eng), lf.collect())
    with pytest.raises(tug.NotSupportedError, match="fallback"):
        tug.polars_engine(fallback="never")


def test_the_pinned_polars_ir_version():
    """tug translates one Polars IR version: the one of the Polars that pyproject.toml's polars-engine extra
    and requirements-dev.txt pin. A plan of another version runs wholly on Polars, naming both versions."""
    from tug import polars_ir

    lf = pl.LazyFrame({"a": [1, 2, 3], "b": ["x", "y", "x"]}).group_by("b").agg(pl.col("a").sum()).sort("b")
    eng = tug.polars_engine(fallback="raise", engine="cpu")
    assert_frame_equal(lf.collect(engine=eng), lf.collect())
    assert eng.ran_on_tug  # the .venv's Polars hands out the version tug translates
    pinned = polars_ir.SUPPORTED_IR_VERSION
    try:
        polars_ir.SUPPORTED_IR_VERSION = pinned + 1  # as if Polars were another version
        eng = tug.polars_engine(fallback="warn", engine="cpu")
        with pytest.warns(UserWarning, match=rf"Polars IR version \({pinned}, \d+\) \(tug translates version "
                                             rf"{pinned + 1}\)"):
            got = lf.collect(engine=eng)
        assert_frame_equal(got, lf.collect())
        assert not eng.ran_on_tug and not eng.tug_parts and len(eng.fallbacks) == 1
        with pytest.raises(pl.exceptions.ComputeError, match="tug cannot run this Polars query: Polars IR version"):
            lf.collect(engine=tug.polars_engine(fallback="raise"))
    finally:
        polars_ir.SUPPORTED_IR_VERSION = pinned


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_fallback_per_node(n):
    # the with_columns of a cum_sum (an HStack node) has no translation: it runs on Polars, the join and
    # group_by below it on tug (Polars' plan gets a function in their place), the filter above it on Polars
    a, b = pl.from_arrow(keyed(n, 1)).lazy(), pl.from_arrow(keyed(max(n // 2, 1), 2)).lazy()
    below = a.join(b, on="k").group_by("k").agg(pl.len(), pl.col("k").sum().alias("ks")).sort("k")
    lf = below.with_columns(pl.col("ks").cum_sum().alias("value")).filter(pl.col("value") % 2 == 0)
    eng = tug.polars_engine(fallback="warn", engine="cpu")
    with pytest.warns(UserWarning, match=r"running 1 part\(s\) of this query on tug, the rest on Polars: HStack"):
        got = lf.collect(engine=eng)
    assert_frame_equal(got, lf.collect(), check_row_order=False)
    assert not eng.ran_on_tug and eng.plan is None
    assert eng.fallbacks == ["HStack: function cum_sum"]
    assert len(eng.tug_parts) == 1 and "join" in eng.tug_parts[0].explain(engine="cpu").lower()
    # two unsupported nodes, with tug parts between and below them
    twice = (lf.join(b, on="k").with_columns(pl.col("value").cum_max().alias("w2"))
             .select(pl.col("k").sum(), pl.col("w2").max()))
    eng = tug.polars_engine(fallback="silent", engine="cpu")
    assert_frame_equal(twice.collect(engine=eng), twice.collect())
    assert len(eng.fallbacks) == 2 and eng.tug_parts
    # an opaque Python function (map_batches) is a node Polars cannot show: it runs on Polars too
    opaque = below.map_batches(lambda d: d).filter(pl.col("len") > 1)
    eng = tug.polars_engine(fallback="silent", engine="cpu")
    assert_frame_equal(opaque.collect(engine=eng), opaque.collect())
    assert len(eng.fallbacks) == 1 and "opaque" in eng.fallbacks[0] and eng.tug_parts
    # "raise" runs nothing
    with pytest.raises(pl.exceptions.ComputeError, match="tug cannot run this Polars query"):
        lf.collect(engine=tug.polars_engine(fallback="raise"))


def _write_csv(path, n, seed):
    """A CSV of every type Polars writes as CSV (not durations) with nulls: dates and datetimes become text
    that Polars reads back as strings and tug, left alone, would read as dates."""
    pl.from_arrow(all_types(n, seed=seed)).drop("dur").write_csv(path)


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_csv_scans(tmp_path, n):
    path = tmp_path / "t.csv"
    _write_csv(path, n, 30 + n)
    if n == 0:  # Polars writes the header only; it reads no types from it (all strings)
        on_tug(pl.scan_csv(path))
        return
    on_tug(pl.scan_csv(path))  # Polars' types, not tug's inference: "d" and "ts" stay strings
    on_tug(pl.scan_csv(path).filter(pl.col("i32") > 0).select("g", "s", "d", "f64"))  # pushed-down predicate
    on_tug(pl.scan_csv(path).group_by("g").agg(pl.col("i64").sum(), pl.len()))
    on_tug(pl.scan_csv(path, n_rows=7, row_index_name="ri", row_index_offset=3).select("ri", "k", "s"))
    on_tug(pl.scan_csv(path, schema_overrides={"k": pl.Int32, "f64": pl.Float32, "d": pl.Date}).select("k", "f64", "d"))
    on_tug(pl.scan_csv([path, path]).with_row_index("r").filter(pl.col("r") % 3 == 1))
    on_tug(pl.scan_csv(path).head(5))
    # parse options: separator, no header, null values, comments, skipped rows, no quoting
    alt = tmp_path / "alt.csv"
    rows = [f"{i};{'NA' if i % 3 == 0 else i * 1.5};w{i % 4}" for i in range(n)]
    alt.write_text("\n".join(["skip me", "skip;me;too"] + rows) + "\n")
    on_tug(pl.scan_csv(alt, separator=";", has_header=False, skip_rows=2, null_values="NA"))
    commented = tmp_path / "commented.csv"
    commented.write_text("\n".join(["# a comment"] + rows[: n // 2] + ["# another"] + rows[n // 2:]) + "\n")
    on_tug(pl.scan_csv(commented, separator=";", has_header=False, comment_prefix="#", null_values=["NA", "w1"],
                       quote_char=None).filter(pl.col("column_1").is_not_null()).select("column_2", "column_0"))


def test_csv_scans_tug_cannot_read_stay_on_polars(tmp_path):
    path = tmp_path / "t.csv"
    _write_csv(path, 40, 31)
    for lf, why in [(pl.scan_csv(path, null_values={"s": "fig"}), "null_values per column"),
                    (pl.scan_csv(path, try_parse_dates=True), "try_parse_dates"),
                    (pl.scan_csv(path, comment_prefix="//"), "comment_prefix"),
                    (pl.scan_csv(path, skip_rows_after_header=2), "skip_rows_after_header")]:
        eng = tug.polars_engine(fallback="silent", engine="cpu")
        assert_frame_equal(lf.collect(engine=eng), lf.collect())
        assert len(eng.fallbacks) == 1 and eng.fallbacks[0].startswith("Scan: CSV scan with") and why in eng.fallbacks[0], eng.fallbacks


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_inequality_joins(n):
    a = pl.from_arrow(keyed(n, 3)).lazy()
    small = pl.from_arrow(keyed(min(n, 5) + 1, 4)).lazy()
    # the cross join and filter Polars' optimizer makes an inequality join of (Q11, Q22): one side is one row
    threshold = a.select((pl.col("v").mean() * 0.5).alias("t"))
    on_tug(a.join(threshold, how="cross").filter(pl.col("v") > pl.col("t")))
    on_tug(a.join(a.select(pl.col("k").max().alias("mk")), how="cross").filter(pl.col("k") <= pl.col("mk")).sort("v").head(3))
    # join_where against a small frame: one and two comparisons, keys of the same names (suffixed), nulls in keys
    on_tug(a.join_where(small, pl.col("v") >= pl.col("v_right")))
    on_tug(a.join_where(small, pl.col("k") < pl.col("k_right"), pl.col("v") > pl.col("v_right")))
    on_tug(small.join_where(a, pl.col("k") > pl.col("k_x") + 2, suffix="_x").select("k", "k_x", "s_x"))


def test_inequality_joins_of_two_large_inputs_stay_on_polars(tmp_path):
    # tug has no inequality join: a cross join of two sides it cannot bound would be quadratic
    path = tmp_path / "k.parquet"
    pl.from_arrow(keyed(200, 5)).write_parquet(path)
    lf = pl.scan_parquet(path).join_where(pl.scan_parquet(path), pl.col("v") < pl.col("v_right") - 99)
    eng = tug.polars_engine(fallback="silent", engine="cpu")
    assert_frame_equal(lf.collect(engine=eng), lf.collect(), check_row_order=False)
    assert eng.fallbacks == ["Join: inequality join (IEJoin) of two inputs that may have more than 64 rows"]
    assert len(eng.tug_parts) == 2  # the two scans ran on tug


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_unpivot(n):
    lf = pl.from_arrow(all_types(n, seed=40)).lazy()
    # (rows compared as sets: Polars' streaming engine unpivots chunk by chunk, tug column by column)
    got = on_tug(lf.unpivot(index=["g", "k"], on=["i32", "i64", "u8"]))
    assert got.columns == ["g", "k", "variable", "value"]
    on_tug(lf.unpivot(index="s", on=["f32", "i16"], variable_name="which", value_name="x").filter(pl.col("x") > 0))
    on_tug(lf.unpivot(index="k", on=["s", "g"]))
    on_tug(lf.select("i8", "f64").unpivot())  # no index: every column
    on_tug(lf.unpivot(index="k", on=["d"]).group_by("variable").agg(pl.col("value").max()))


def test_explode_stays_on_polars():
    lf = pl.LazyFrame({"l": [[1, 2], [3], []], "k": [1, 2, 3]}).explode("l")
    eng = tug.polars_engine(fallback="silent", engine="cpu")
    assert_frame_equal(lf.collect(engine=eng), lf.collect())
    assert any("explode): tug has no list type" in f for f in eng.fallbacks), eng.fallbacks


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
@pytest.mark.parametrize("parts", [None, 7])
def test_filters_on_global_aggregates(n, parts):
    options = {"target_partition_rows": parts} if parts else {}
    lf = pl.from_arrow(all_types(n, seed=50)).lazy()
    on_tug(lf.filter(pl.col("i32") == pl.col("i32").max()), **options)  # Q15's form
    on_tug(lf.filter(pl.col("f64") > pl.col("f64").mean()).select("k", "f64"), **options)
    on_tug(lf.filter((pl.col("k") < pl.col("k").median()) | (pl.len() < 5)), **options)
    on_tug(lf.filter(pl.col("s") == pl.col("s").min()).select("s", pl.col("s").str.len_chars().alias("n")), **options)
    on_tug(lf.filter(pl.col("i64") > pl.col("i64").sum().over("g") / 4), **options)  # over(): a plain filter
    on_tug(lf.group_by("g").agg(pl.col("i64").sum()).filter(pl.col("i64") >= pl.col("i64").max()), **options)


def test_errors_of_the_tug_run_reach_the_caller():
    lf = pl.LazyFrame({"s": [str(i) for i in range(50_000)]}).sort("s")
    with pytest.raises(Exception, match="memory_limit"):
        lf.collect(engine=tug.polars_engine(fallback="raise", engine="cpu", memory_limit=10_000))


# Queries whose plans have a node tug cannot run (none since the inequality joins Polars' optimizer makes
# of Q11's and Q22's cross join + filter, whose one side is one row, and Q15's filter on a global aggregate
# translate).
PDSH_FALLBACKS = {}


@pytest.fixture(scope="module")
def sf001(tmp_path_factory):
    pdsh_data = _load("pdsh_data_engine", PDSH / "data.py")
    where = os.environ.get("TUG_PDSH_DATA") or tmp_path_factory.mktemp("pdsh-engine") / "sf0.01"
    return pdsh_data.ensure_data(where, 0.01, BUILD)


@pytest.mark.parametrize("q", range(1, 23))
def test_pdsh_through_the_polars_engine(sf001, q):
    pq = _load("pdsh_polars_queries_engine", PDSH / "polars_queries.py")
    lf = pq.QUERIES[q](pq.Tables(**{t: pl.scan_parquet(f"{sf001}/{t}/*.parquet") for t in pq.TABLE_NAMES}))
    eng = tug.polars_engine(fallback="silent", engine="cpu")
    got = lf.collect(engine=eng)
    assert_frame_equal(got, lf.collect(), check_row_order=False, rel_tol=1e-9, abs_tol=1e-9)
    if q in PDSH_FALLBACKS:
        # the node tug cannot run runs on Polars, the subtrees below it on tug
        assert not eng.ran_on_tug and any(PDSH_FALLBACKS[q] in f for f in eng.fallbacks), eng.fallbacks
        assert eng.tug_parts and eng.plan is None
    else:
        assert eng.ran_on_tug and eng.fallbacks == []
