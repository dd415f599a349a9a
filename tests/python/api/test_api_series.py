"""tug.Series against polars.Series: construction, conversion, element-wise operators, reductions, shape
methods, and DataFrame's column access (docs/python.md)."""
import math

import pytest

import tug

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

SIZES = [0, 1, 31, 32, 33, 1024]


def values(n, nulls=True):
    return [None if nulls and i % 5 == 3 else (i * 7919) % 101 - 50 for i in range(n)]


def same(a: tug.Series, b: "pl.Series"):
    assert a.name == b.name
    assert a.len() == b.len()
    got, want = a.to_list(), b.to_list()
    for x, y in zip(got, want):
        if isinstance(y, float) and x is not None:
            assert x == pytest.approx(y, nan_ok=True), (got, want)
        else:
            assert x == y, (got, want)


@pytest.mark.parametrize("n", SIZES)
def test_construction_and_conversion(n):
    v = values(n)
    s = tug.Series("a", v, dtype=tug.Int64)
    p = pl.Series("a", v, dtype=pl.Int64)
    assert s.dtype == tug.Int64 and s.shape == (n,) and len(s) == n
    same(s, p)
    assert s.to_polars().equals(p)
    assert s.to_arrow().equals(pa.array(v, pa.int64()))
    assert s.to_pandas().name == "a" and len(s.to_pandas()) == n
    assert list(s) == v
    # from pyarrow, Polars and pandas, and from another Series
    for src in (pa.array(v, pa.int64()), p, p.to_pandas(), s):
        assert tug.Series("a", src).to_list() == v
    assert tug.Series(p).name == "a"  # the name comes along
    assert tug.Series(v, dtype=tug.Int64).name == ""
    assert s.null_count() == p.null_count() and s.count() == p.count()


def test_empty_and_untyped():
    assert tug.Series("e", []).dtype == tug.Float64  # tug has no Null type
    assert tug.Series("e", [None, None]).to_list() == [None, None]
    assert tug.Series("s", ["x", None, "zz"]).dtype == tug.String


@pytest.mark.parametrize("n", SIZES)
def test_elementwise_operators_match_polars(n):
    a, b = values(n), [i % 9 - 4 for i in range(n)]
    s, t = tug.Series("a", a, dtype=tug.Int64), tug.Series("b", b, dtype=tug.Int64)
    p, q = pl.Series("a", a, dtype=pl.Int64), pl.Series("b", b, dtype=pl.Int64)
    same(s + t, p + q)
    same(s - 3, p - 3)
    same(3 - s, 3 - p)
    same(s * t, p * q)
    same(s * 2.5, p * 2.5)
    same(-s, -p)
    same(s == t, p == q)
    same(s != 1, p != 1)
    same(s < t, p < q)
    same(s >= 0, p >= 0)
    same((s > 0) & (t > 0), (p > 0) & (q > 0))
    same((s > 0) | (t > 0), (p > 0) | (q > 0))
    same(~(s > 0), ~(p > 0))
    same(s.abs(), p.abs())
    same(s.is_null(), p.is_null())
    same(s.fill_null(0), p.fill_null(0))
    same(s.is_in([1, 2, -50]), p.is_in([1, 2, -50]))
    same(s.cast(tug.Float64), p.cast(pl.Float64))
    same(s.alias("z"), p.alias("z"))
    nonzero = t.fill_null(1)
    same(s.cast(tug.Float64) / nonzero, p.cast(pl.Float64) / q.fill_null(1))


@pytest.mark.parametrize("n", SIZES)
def test_reductions_match_polars(n):
    v = values(n)
    s, p = tug.Series("a", v, dtype=tug.Int64), pl.Series("a", v, dtype=pl.Int64)
    assert s.sum() == p.sum()
    assert s.min() == p.min() and s.max() == p.max()
    for got, want in ((s.mean(), p.mean()), (s.std(), p.std()), (s.var(), p.var()), (s.median(), p.median())):
        assert (got is None and (want is None or math.isnan(want))) or got == pytest.approx(want)
    assert s.n_unique() == p.n_unique()
    assert s.first() == (p[0] if n else None) and s.last() == (p[-1] if n else None)
    b = s > 0
    assert b.any() == (p > 0).any() and b.all() == (p > 0).all()


@pytest.mark.parametrize("n", SIZES)
def test_shape_methods_match_polars(n):
    v = values(n)
    s, p = tug.Series("a", v, dtype=tug.Int64), pl.Series("a", v, dtype=pl.Int64)
    same(s.head(3), p.head(3))
    same(s.tail(3), p.tail(3))
    same(s.slice(2, 5), p.slice(2, 5))
    same(s[1:4], p[1:4])
    same(s.sort(), p.sort())
    same(s.sort(descending=True, nulls_last=True), p.sort(descending=True, nulls_last=True))
    same(s.unique(maintain_order=True), p.unique(maintain_order=True))
    same(s.filter(s > 0), p.filter(p > 0))
    if n:
        assert s[0] == p[0] and s[-1] == p[-1]
    with pytest.raises(IndexError):
        s[n]


def test_dataframe_columns_are_series():
    df = tug.DataFrame({"a": [1, 2, 3], "s": ["x", None, "z"]})
    a = df["a"]
    assert isinstance(a, tug.Series) and a.to_list() == [1, 2, 3]
    assert df.get_column("s").to_list() == ["x", None, "z"]
    assert [c.name for c in df.get_columns()] == ["a", "s"] == [c.name for c in df.iter_columns()]
    assert df.to_series(1).name == "s"
    assert df[["s"]].columns == ["s"]
    assert df[1:3].height == 2
    assert df.to_dict(as_series=True)["a"].equals(a)
    # no copy: the Series shares the frame's buffer
    assert a.to_frame()._buffer_addresses()["a"] == df._buffer_addresses()["a"]
    # back into frames
    assert tug.DataFrame([a, df["s"]]).equals(df)
    assert tug.DataFrame({"b": a * 2}).to_dict() == {"b": [2, 4, 6]}
    with pytest.raises(tug.ColumnNotFoundError, match="nope"):
        df["nope"]
    with pytest.raises(tug.InvalidArgumentError):
        df[1.5]


def test_errors_and_repr():
    s = tug.Series("a", [1, 2, 3])
    with pytest.raises(tug.InvalidArgumentError, match="3 values"):
        s + tug.Series("b", [1, 2])
    with pytest.raises(tug.InvalidArgumentError, match="length 1"):
        s.item()
    assert tug.Series("x", [7]).item() == 7
    with pytest.raises(tug.SchemaError):
        tug.Series("s", ["a"]) + 1
    assert repr(s).startswith("shape: (3,)\nSeries: 'a' [") and "\t2\n" in repr(s)
    long = repr(tug.Series("a", list(range(100))))
    assert "\t…" in long and "\t99" in long
    with pytest.raises(TypeError):
        hash(s)


STRINGS = ["Hello", None, "  padded  ", "ÄÖü éà", "", "xyz", "abcabc", "b-c"]


@pytest.mark.parametrize("n", SIZES)
def test_str_namespace_matches_polars(n):
    v = [STRINGS[i % len(STRINGS)] for i in range(n)]
    s, p = tug.Series("s", v, dtype=tug.String), pl.Series("s", v, dtype=pl.String)
    assert s.dtype == tug.String
    same(s.str.len_chars(), p.str.len_chars())
    same(s.str.len_bytes(), p.str.len_bytes())
    same(s.str.to_uppercase(), p.str.to_uppercase())
    same(s.str.to_lowercase(), p.str.to_lowercase())
    same(s.str.to_titlecase(), p.str.to_titlecase())
    same(s.str.starts_with("ab"), p.str.starts_with("ab"))
    same(s.str.ends_with("c"), p.str.ends_with("c"))
    same(s.str.contains("b.c"), p.str.contains("b.c"))
    same(s.str.contains("b-c", literal=True), p.str.contains("b-c", literal=True))
    same(s.str.slice(1, 3), p.str.slice(1, 3))
    same(s.str.slice(-2), p.str.slice(-2))
    same(s.str.strip_chars(), p.str.strip_chars())
    same(s.str.strip_chars(" Hd"), p.str.strip_chars(" Hd"))


@pytest.mark.parametrize("n", SIZES)
def test_dt_namespace_matches_polars(n):
    import datetime as dt

    base = dt.datetime(2024, 2, 28, 22, 30, 15)
    v = [None if i % 5 == 3 else base + dt.timedelta(hours=37 * i, seconds=i) for i in range(n)]
    s, p = tug.Series("t", v, dtype=tug.Datetime("us")), pl.Series("t", v, dtype=pl.Datetime("us"))
    for name in ("year", "month", "day", "hour", "minute", "second", "weekday", "date"):
        same(getattr(s.dt, name)(), getattr(p.dt, name)())
    for every in ("1d", "1h", "15m", "1mo"):
        same(s.dt.truncate(every), p.dt.truncate(every))
    days = [None if x is None else x.date() for x in v]
    sd, pd_ = tug.Series("d", days, dtype=tug.Date), pl.Series("d", days, dtype=pl.Date)
    assert sd.dtype == tug.Date
    for name in ("year", "month", "day", "weekday"):
        same(getattr(sd.dt, name)(), getattr(pd_.dt, name)())
    spans = [None if x is None else x - base for x in v]
    sp, pp = tug.Series("span", spans, dtype=tug.Duration("us")), pl.Series("span", spans, dtype=pl.Duration("us"))
    for name in ("total_days", "total_seconds", "total_milliseconds"):
        same(getattr(sp.dt, name)(), getattr(pp.dt, name)())


def test_series_namespaces_mirror_the_expression_namespaces():
    # every string and temporal expression function is on Series too, with its signature
    import inspect

    from tug.expr import ExprDateTimeNameSpace, ExprStringNameSpace

    for attr, ns in (("str", ExprStringNameSpace), ("dt", ExprDateTimeNameSpace)):
        want = {k for k, f in vars(ns).items() if not k.startswith("_") and inspect.isfunction(f)}
        got = type(getattr(tug.Series("x", [1]), attr))
        assert want and want <= set(vars(got)), (attr, want - set(vars(got)))
        for k in want:
            assert inspect.signature(getattr(got, k)) == inspect.signature(getattr(ns, k))
    with pytest.raises(AttributeError):
        tug.Series("x", ["a"]).str.no_such_function()
    with pytest.raises(tug.SchemaError):
        tug.Series("x", [1, 2]).str.to_uppercase()  # not a string column: the C++ type error


@pytest.mark.parametrize("n", SIZES)
def test_more_elementwise_methods_match_polars(n):
    v = [None if i % 5 == 3 else (i * 37) % 23 / 4 - 2 for i in range(n)]
    s, p = tug.Series("a", v, dtype=tug.Float64), pl.Series("a", v, dtype=pl.Float64)
    same(s.floor(), p.floor())
    same(s.ceil(), p.ceil())
    same(s.exp(), p.exp())
    same(s.abs().log(), p.abs().log())
    same(s.abs().log(2), p.abs().log(2))
    same((s / 0).is_nan(), (p / 0).is_nan())
    same((s > 0).not_(), (p > 0).not_())
