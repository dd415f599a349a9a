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
    lf = pl.LazyFrame({"a": [1, 2, 3]}).unpivot()  # no translation for unpivot's node
    # Polars wraps the callback's tug.NotSupportedError in its ComputeError, with tug's message
    with pytest.raises(pl.exceptions.ComputeError, match="tug cannot run this Polars query: plan node"):
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


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_fallback_per_node(n):
    # unpivot (a MapFunction node) has no translation: it runs on Polars, the join and group_by below it on
    # tug (Polars' plan gets a function in their place), the filter above it on Polars
    a, b = pl.from_arrow(keyed(n, 1)).lazy(), pl.from_arrow(keyed(max(n // 2, 1), 2)).lazy()
    below = a.join(b, on="k").group_by("k").agg(pl.len(), pl.col("k").sum().alias("ks")).sort("k")
    lf = below.unpivot(index="k").filter(pl.col("value") % 2 == 0)
    eng = tug.polars_engine(fallback="warn", engine="cpu")
    with pytest.warns(UserWarning, match=r"running 1 part\(s\) of this query on tug, the rest on Polars: MapFunction"):
        got = lf.collect(engine=eng)
    assert_frame_equal(got, lf.collect(), check_row_order=False)  # Polars unpivots chunk by chunk
    assert not eng.ran_on_tug and eng.plan is None
    assert eng.fallbacks == ["MapFunction: plan node MapFunction(unpivot)"]
    assert len(eng.tug_parts) == 1 and "join" in eng.tug_parts[0].explain(engine="cpu").lower()
    # two unsupported nodes, with tug parts between and below them
    twice = lf.unpivot(index="k", on=["value"], variable_name="v2", value_name="w2").join(b, on="k").select(pl.col("k").sum())
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


def test_errors_of_the_tug_run_reach_the_caller():
    lf = pl.LazyFrame({"s": [str(i) for i in range(50_000)]}).sort("s")
    with pytest.raises(Exception, match="memory_limit"):
        lf.collect(engine=tug.polars_engine(fallback="raise", engine="cpu", memory_limit=10_000))


# Queries whose plans have a node tug cannot run: the inequality joins Polars' optimizer makes of Q11 and
# Q22's cross join + filter, and Q15's filter on a global aggregate.
PDSH_FALLBACKS = {11: "IEJoin", 15: "aggregation", 22: "IEJoin"}


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
