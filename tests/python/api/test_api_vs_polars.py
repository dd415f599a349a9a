"""The Python API against Polars: the same query text runs on both (tug follows Polars' names), and the
results must be equal, over every type, nulls, the edge sizes and several partitions."""
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tug

from api_data import SIZES, align_widths, all_types, keyed

# many partitions: in-memory sources cut their input into partitions of this many rows
SMALL_PARTS = {"target_partition_rows": 7}


def run_both(query, *tables, sort_by=None, options=None, check_order=True):
    got = query(tug, *[tug.from_arrow(t).lazy() for t in tables]).collect(engine="cpu", **(options or {}))
    want = query(pl, *[pl.from_arrow(t).lazy() for t in tables]).collect()
    got = align_widths(got.to_polars(), want)
    if sort_by is not None:
        got = got.sort(sort_by, nulls_last=True)
        want = want.sort(sort_by, nulls_last=True)
    assert_frame_equal(got, want, check_row_order=check_order, rel_tol=1e-6, abs_tol=1e-9)
    return got


NUMERIC = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("options", [None, SMALL_PARTS], ids=["one-part", "many-parts"])
def test_identity_all_types(n, options):
    run_both(lambda m, lf: lf, all_types(n), options=options)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("options", [None, SMALL_PARTS], ids=["one-part", "many-parts"])
def test_filter_comparisons(n, options):
    run_both(lambda m, lf: lf.filter((m.col("i64") > 0) & (m.col("f64") <= 5e5) | m.col("b")), all_types(n),
             options=options)
    run_both(lambda m, lf: lf.filter(m.col("s") == "fig"), all_types(n), options=options)
    run_both(lambda m, lf: lf.filter(m.col("d") < m.lit(__import__("datetime").date(2001, 1, 1))), all_types(n),
             options=options)
    run_both(lambda m, lf: lf.filter(m.col("i32").is_null() | m.col("u8").is_between(10, 100)), all_types(n),
             options=options)

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("options", [None, SMALL_PARTS], ids=["one-part", "many-parts"])
def test_filter_on_global_aggregates(n, options):
    # aggregates of the whole input (over every partition) in the predicate, as Polars takes them
    run_both(lambda m, lf: lf.filter(m.col("i64") == m.col("i64").max()), all_types(n), options=options)
    run_both(lambda m, lf: lf.filter((m.col("f64") > m.col("f64").mean()) & (m.col("k") < m.col("k").n_unique())),
             all_types(n), options=options)
    run_both(lambda m, lf: lf.filter(m.col("s") == "fig", m.col("u8") >= m.col("u8").median()), all_types(n),
             options=options)


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_arithmetic(n):
    run_both(lambda m, lf: lf.select(
        (m.col("i64") + m.col("i32")).alias("add"),
        (m.col("i64") - 7).alias("sub"),
        (m.col("i16") * m.col("i8")).alias("mul"),
        (m.col("f64") / m.col("i32")).alias("div"),
        (m.col("i64") // 7).alias("floordiv"),
        (m.col("i64") % 7).alias("mod"),
        (-m.col("i32")).alias("neg"),
        m.col("f64").abs().alias("abs"),
        m.col("f64").round(1).alias("round"),
        m.col("f64").floor().alias("floor"),
        m.col("f64").ceil().alias("ceil"),
        m.col("u32").sqrt().alias("sqrt"),
        (m.col("u8") + 1).alias("u8p1"),
        (m.col("dur") * 2).alias("dur2"),
    ), all_types(n))


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_power_and_xor(n):
    # integer powers are int64 in tug and wrap in Polars' narrower type (docs/types.md): small bases here
    run_both(lambda m, lf: lf.select(
        (m.col("f64") ** 2).alias("sq"),
        (m.col("k") ** 3).alias("int_pow"),
        (m.col("f32") ** m.lit(0.5)).alias("root"),
        (2.0 ** m.col("i8")).alias("rpow"),
        m.col("f64").pow(m.col("u8")).alias("pow_col"),
        (m.col("b") ^ m.col("i64").is_null()).alias("xor"),
        (m.col("b") ^ True).alias("xor_lit"),
    ), all_types(n))


@pytest.mark.parametrize("n", [0, 1, 33])
def test_operator_methods(n):
    # the named forms of the operators (Polars' names)
    c = "i64"
    run_both(lambda m, lf: lf.select(
        m.col(c).add(3).alias("add"), m.col(c).sub(m.col("i32")).alias("sub"), m.col(c).mul(2).alias("mul"),
        m.col("f64").truediv(4).alias("truediv"), m.col(c).floordiv(5).alias("floordiv"), m.col(c).mod(5).alias("mod"),
        m.col("f64").pow(2).alias("pow"), m.col(c).neg().alias("neg"),
        m.col(c).eq(0).alias("eq"), m.col(c).ne(0).alias("ne"), m.col(c).lt(0).alias("lt"), m.col(c).le(0).alias("le"),
        m.col(c).gt(0).alias("gt"), m.col(c).ge(0).alias("ge"),
        m.col("b").and_(m.col(c).gt(0), m.col("i32").is_null()).alias("and"),
        m.col("b").or_(m.col(c).gt(0)).alias("or"), m.col("b").xor(m.col(c).gt(0)).alias("xor"),
        m.col("b").not_().alias("not"),
    ), all_types(n))
    e = tug.col("a") + 1
    assert e.meta_eq(tug.col("a") + 1) and not e.meta_eq(tug.col("a") + 2)
    assert e.alias("z").meta_output_name() == "z" and e.meta_output_name() == "a"


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_null_handling_and_membership(n):
    run_both(lambda m, lf: lf.select(
        m.col("i64").fill_null(0).alias("fill"),
        m.col("s").fill_null("none").alias("sfill"),
        m.col("i64").is_null().alias("isnull"),
        m.col("f64").is_not_null().alias("notnull"),
        m.coalesce(m.col("i32"), m.col("i16"), m.lit(-1)).alias("coalesce"),
        m.col("k").is_in([1, 3, 5]).alias("isin"),
        m.col("s").is_in(["fig", "apple"]).alias("sisin"),
        (m.col("b") & m.col("i64").is_null()).alias("kleene_and"),
        (m.col("b") | m.col("i64").is_null()).alias("kleene_or"),
        (~m.col("b")).alias("not"),
    ), all_types(n))


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_when_then_otherwise(n):
    run_both(lambda m, lf: lf.select(
        m.when(m.col("i64") > 0).then(m.lit("pos")).when(m.col("i64") < 0).then(m.lit("neg"))
        .otherwise(m.lit("zero-or-null")).alias("sign"),
        m.when(m.col("b")).then(m.col("f64")).alias("no_otherwise"),
    ), all_types(n))


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_casts(n):
    run_both(lambda m, lf: lf.select(
        m.col("i32").cast(m.Int64).alias("i64"),
        m.col("i8").cast(m.Float64).alias("f64"),
        m.col("f64").cast(m.Int64, strict=False).alias("trunc"),
        m.col("i64").cast(m.String).alias("str"),
        m.col("u8").cast(m.Int16).alias("i16"),
        m.col("ts").cast(m.Date).alias("date"),
        m.col("d").cast(m.Datetime("us")).alias("ts"),
    ), all_types(n))


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_strings(n):
    run_both(lambda m, lf: lf.select(
        m.col("s").str.len_chars().alias("len_chars"),
        m.col("s").str.len_bytes().alias("len_bytes"),
        m.col("s").str.starts_with("gr").alias("starts"),
        m.col("s").str.ends_with("e").alias("ends"),
        m.col("s").str.contains("an", literal=True).alias("contains"),
        m.col("s").str.contains("^[a-c]").alias("regex"),
        m.col("s").str.to_uppercase().alias("upper"),
        m.col("s").str.to_lowercase().alias("lower"),
        m.col("s").str.to_titlecase().alias("title"),
        m.col("s").str.slice(1, 3).alias("slice"),
        m.col("s").str.strip_chars().alias("strip"),
        m.concat_str(m.col("g"), m.col("s"), separator="-").alias("concat"),
    ), all_types(n))



def test_case_mapping_of_every_code_point():
    # Polars' full case mappings: one character may become several ("ß" -> "SS", "ΐ" -> 3 code points);
    # titlecase: each alone, before a letter (which it does or does not start a word for) and after one
    import pyarrow as pa

    cps = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    run_both(lambda m, lf: lf.select(m.col("s").str.to_uppercase().alias("upper"),
                                     m.col("s").str.to_lowercase().alias("lower"),
                                     m.col("s").str.to_titlecase().alias("title"),
                                     m.concat_str(m.col("s"), m.lit("x")).str.to_titlecase().alias("title_before"),
                                     m.concat_str(m.lit("x"), m.col("s")).str.to_titlecase().alias("title_after")),
             pa.table({"s": pa.array(cps, pa.large_string())}), options={"target_partition_rows": 4096})


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1024])
def test_case_mapping_in_context(n):
    # rows of pieces that grow when mapped, and Σ in every Final_Sigma context: after or before cased letters,
    # case-ignorable ones (a combining accent, an apostrophe, a soft hyphen) and others (spaces, digits)
    import random

    import pyarrow as pa

    pieces = ["\u03a3", "\u03a3", "\u0391", "\u03c3", "a", "\u0301", "'", "\u00ad", " ", "1", "\u00df", "\u0390",
              "\u0130", "\ufb03", "\u0149", "\u1f88", "\u02b0", "\U00010400", "\u2126", ".", "\u1e9e",
              "\u01c6", "\u01c5", "B", "-", "\u65e5", "\u00aa", "\u2167", "\xff"]
    rng = random.Random(n)
    rows = [None if i % 13 == 5 else "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 8))) for i in range(n)]
    run_both(lambda m, lf: lf.select(m.col("s").str.to_uppercase().alias("upper"),
                                     m.col("s").str.to_lowercase().alias("lower"),
                                     m.col("s").str.to_lowercase().str.len_bytes().alias("bytes"),
                                     m.col("s").str.to_titlecase().alias("title"),
                                     m.col("s").str.to_titlecase().str.len_bytes().alias("title_bytes")),
             pa.table({"s": pa.array(rows, pa.large_string())}), options=SMALL_PARTS)

@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_temporal(n):
    run_both(lambda m, lf: lf.select(
        m.col("d").dt.year().alias("year"),
        m.col("d").dt.month().alias("month"),
        m.col("d").dt.day().alias("day"),
        m.col("d").dt.weekday().alias("weekday"),
        m.col("ts").dt.hour().alias("hour"),
        m.col("ts").dt.minute().alias("minute"),
        m.col("ts").dt.second().alias("second"),
        m.col("ts").dt.date().alias("date"),
        m.col("ts").dt.truncate("1d").alias("trunc"),
        m.col("dur").dt.total_seconds().alias("secs"),
        m.col("dur").dt.total_days().alias("days"),
    ), all_types(n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("options", [None, SMALL_PARTS], ids=["one-part", "many-parts"])
def test_group_by_aggregations(n, options):
    run_both(lambda m, lf: lf.group_by("g").agg(
        m.col("i64").sum().alias("sum"),
        m.col("f64").mean().alias("mean"),
        m.col("i32").min().alias("min"),
        m.col("s").max().alias("smax"),
        m.col("d").min().alias("dmin"),
        m.col("i16").count().alias("count"),
        m.col("k").n_unique().alias("n_unique"),
        m.col("f64").std().alias("std"),
        m.col("f64").var().alias("var"),
        m.col("i32").median().alias("median"),
        m.col("b").any().alias("any"),
        m.col("b").all().alias("all"),
        m.len().alias("len"),
        m.col("dec").sum().alias("dec_sum"),
    ), all_types(n), sort_by="g", options=options)


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_global_aggregations(n):
    run_both(lambda m, lf: lf.select(
        m.col("i64").sum().alias("sum"), m.col("f64").mean().alias("mean"), m.col("u16").max().alias("max"),
        m.col("s").min().alias("smin"), m.len().alias("len"), m.col("f32").quantile(0.3).alias("q"),
    ), all_types(n))


@pytest.mark.parametrize("n", [0, 1, 33, 1024])
def test_window_over(n):
    run_both(lambda m, lf: lf.select(
        m.col("g"), m.col("i64"),
        m.col("i64").sum().over("g").alias("sum_g"),
        m.col("f64").max().over("g", "k").alias("max_gk"),
    ), all_types(n))


@pytest.mark.parametrize("how", ["inner", "left", "full", "semi", "anti"])
@pytest.mark.parametrize("n", [0, 1, 33, 200])
def test_joins(how, n):
    left, right = keyed(n, 1), keyed(max(n // 2, 1), 2)
    cols = ["k", "s", "v"] if how in ("semi", "anti") else None
    got = run_both(lambda m, a, b: a.join(b, on="k", how=how), left, right,
                   sort_by=cols or ["k", "s", "v", "k_right", "s_right", "v_right"] if how == "full" else
                   (cols or ["k", "s", "v", "s_right", "v_right"]), options=SMALL_PARTS)
    assert got.height >= 0
    run_both(lambda m, a, b: a.join(b, left_on=["k", "s"], right_on=["k", "s"], how="inner"), left, right,
             sort_by=["k", "s", "v", "v_right"])


def test_cross_join():
    run_both(lambda m, a, b: a.join(b, how="cross"), keyed(5, 1), keyed(4, 2), sort_by=["k", "s", "v", "v_right"])


@pytest.mark.parametrize("n", SIZES)
def test_sort(n):
    run_both(lambda m, lf: lf.sort("k", "i64", descending=[True, False], nulls_last=True, maintain_order=True),
             all_types(n),
             options=SMALL_PARTS)
    run_both(lambda m, lf: lf.sort("s", nulls_last=False, maintain_order=True).select("s"), all_types(n))
    run_both(lambda m, lf: lf.sort(m.col("f64") * -1, maintain_order=True), all_types(n))


@pytest.mark.parametrize("n", SIZES)
def test_unique(n):
    run_both(lambda m, lf: lf.select("g", "k").unique(), all_types(n), sort_by=["g", "k"])
    run_both(lambda m, lf: lf.unique(subset=["g"], keep="first", maintain_order=True).select("g", "i64"),
             all_types(n), options=SMALL_PARTS)


@pytest.mark.parametrize("n", SIZES)
def test_slices_and_row_index(n):
    for q in (lambda m, lf: lf.head(3), lambda m, lf: lf.limit(40), lambda m, lf: lf.tail(2),
              lambda m, lf: lf.slice(5, 10), lambda m, lf: lf.slice(-4), lambda m, lf: lf.with_row_index(),
              lambda m, lf: lf.with_row_index("rid", offset=10).filter(m.col("b"))):
        got = run_both(q, all_types(n), options=SMALL_PARTS)
        assert got.height <= n + 1


@pytest.mark.parametrize("n", [0, 33])
def test_rename_drop_with_columns(n):
    run_both(lambda m, lf: lf.rename({"i64": "x", "s": "y"}).drop("d", "ts").with_columns(
        (m.col("x") * 2).alias("x2"), z=m.col("y").str.len_bytes()), all_types(n))


def test_eager_dataframe_methods_match_polars():
    t = all_types(100, seed=3)
    a, b = tug.from_arrow(t), pl.from_arrow(t)
    assert a.shape == b.shape and a.columns == b.columns
    assert_frame_equal(a.filter(tug.col("k") == 2).select("g", "i64").to_polars(),
                       b.filter(pl.col("k") == 2).select("g", "i64"))
    assert_frame_equal(a.group_by("g").agg(tug.col("i64").sum()).sort("g").to_polars(),
                       b.group_by("g").agg(pl.col("i64").sum()).sort("g"))
    assert_frame_equal(a.head(7).to_polars(), b.head(7))
    assert a.select(tug.len()).item() == 100
    assert a.to_dict()["i64"] == b["i64"].to_list()


def test_concat_frames():
    t = all_types(40, seed=5)
    got = tug.concat([tug.from_arrow(t), tug.from_arrow(t)])
    assert_frame_equal(got.to_polars(), pl.concat([pl.from_arrow(t), pl.from_arrow(t)]))
