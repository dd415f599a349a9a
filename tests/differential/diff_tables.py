"""Random tables for the differential tests: every tug type, nulls at various rates, duplicates, skew, and
numerically hard columns (constant ones at the type extremes, NaN and infinities, all NaN, decimals of up
to 38 digits).

A table is a dict {"schema": [{"name", "type"}], "columns": [[value, ...], ...]} in tug_difftest's JSON
form (64-bit integers beyond 2^53 as strings, decimals as strings, dates as day numbers, timestamps as
microsecond ticks). Each column also carries properties the query generator needs (`Col`).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

SIGNED = ["i8", "i16", "i32", "i64"]
UNSIGNED = ["u8", "u16", "u32", "u64"]
INTS = SIGNED + UNSIGNED
FLOATS = ["f32", "f64"]
DEC = "decimal[10,2]"
TS = "datetime[us]"

# Ranges of "bounded" columns: sums and products of two values (or one value and a small literal) stay
# far from overflow, so tug (wrapping, as Polars) and DuckDB (raising) agree.
BOUNDS = {
    "i8": (-60, 60), "i16": (-1000, 1000), "i32": (-100000, 100000), "i64": (-1000000, 1000000),
    "u8": (0, 120), "u16": (0, 1000), "u32": (0, 1000000), "u64": (0, 1000000),
}
EXTREMES = {
    "i64": [-(2**63), 2**63 - 1, 2**53 + 1, -(2**53) - 1, 0],
    "u64": [2**64 - 1, 2**63, 2**53 + 1, 0],
}
# Values of constant columns (std / var of identical values must be exactly 0; their mean rounds away
# from them in float64), by type.
CONSTANTS = {
    "i64": [-5435833015522271204, -(2**63), 2**63 - 1, 2**53 + 1, 7],
    "u64": [15000000000000000001, 2**64 - 1, 2**63 + 3],
    "f64": [0.1, 1.5e19, -1e300, 3.3333333333333335, 1e-300],  # not subnormal: DuckDB's quantile halves them
    "f32": [0.1, -7.25, 3e38],
}
# High-precision decimals: values of up to p - s integer digits and s fraction digits, sometimes the
# largest one (its ceil has 39 digits: decimal overflow).
HIGH_PRECISION = ["decimal[38,30]", "decimal[38,10]", "decimal[20,18]", "decimal[38,0]"]
# Strings with duplicates, case pairs, multi-byte characters, spaces (strip) and the empty string.
WORDS = ["a", "ab", "abc", "b", "B", "ba", "", " pad ", "x y", "é", "ñandú", "zz", "A", "abcabc", "Ünï",
         "hello world", "Z", "aa", "a b", "0", "10", "9"]
EPOCH_2020_US = 1577836800 * 1000000
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_TS = dt.datetime(1970, 1, 1)


def days_of(d):
    """Days since 1970-01-01 of a datetime.date."""
    return (d - EPOCH_DATE).days


def ticks_of(ts):
    """Microseconds since the epoch of a naive datetime.datetime."""
    d = ts - EPOCH_TS
    return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds


@dataclass
class Col:
    """A column of a frame as the query generator sees it."""
    name: str
    type: str
    bounded: bool = True      # values small enough for arithmetic without overflow
    unique: bool = False      # no duplicates and no nulls (a row index)
    small: bool = False       # few distinct values (a good group/join key)
    attrs: dict = field(default_factory=dict)


def _null_rate(rng):
    return float(rng.choice([0.0, 0.0, 0.0, 0.05, 0.2, 0.5, 0.9, 1.0]))


def _skewed_index(rng, n, pool):
    """Indices into a pool of `pool` values, Zipf-like skewed."""
    if pool <= 1:
        return np.zeros(n, dtype=np.int64)
    w = 1.0 / np.arange(1, pool + 1) ** float(rng.choice([0.0, 1.0, 2.0]))
    w /= w.sum()
    return rng.choice(pool, size=n, p=w)


def _int_values(rng, t, n, small, extreme):
    lo, hi = BOUNDS[t]
    if small:
        pool = rng.integers(lo, hi + 1, size=int(rng.integers(1, 8)))
        vals = [int(pool[i]) for i in _skewed_index(rng, n, len(pool))]
    else:
        vals = [int(v) for v in rng.integers(lo, hi + 1, size=n)]
    if extreme and n:
        ex = EXTREMES[t]
        for i in rng.choice(n, size=min(n, int(rng.integers(1, 4))), replace=False):
            vals[int(i)] = int(ex[int(rng.integers(0, len(ex)))])
    return [str(v) if abs(v) > 2**53 else v for v in vals]


def _values(rng, t, n, small, extreme):
    if t in INTS:
        return _int_values(rng, t, n, small, extreme)
    if t == "bool":
        return [bool(v) for v in rng.integers(0, 2, size=n)]
    if t in FLOATS:
        # multiples of 1/4 are exact in f32 and f64; some duplicates; never NaN or -0.0
        scale = 4000 if t == "f32" else 100000
        raw = rng.integers(-scale, scale, size=n) / 4.0 if t == "f32" else np.round(rng.uniform(-1000, 1000, size=n), 3)
        if small:
            raw = raw[:5][_skewed_index(rng, n, min(5, n))] if n else raw
        return [float(v) + 0.0 for v in raw]
    if t == DEC:
        raw = rng.integers(-100000, 100000, size=n)
        if small:
            raw = raw[:5][_skewed_index(rng, n, min(5, n))] if n else raw
        return [f"{'-' if v < 0 else ''}{abs(int(v)) // 100}.{abs(int(v)) % 100:02d}" for v in raw]
    if t == "date":
        pool = rng.integers(-1000, 20000, size=8 if small else max(n, 1))
        return [int(pool[i]) for i in (_skewed_index(rng, n, len(pool)) if small else range(n))]
    if t == TS:
        return [int(EPOCH_2020_US + v) for v in rng.integers(0, 86400 * 1000 * 1000000, size=n) // 1000 * 1000]
    if t == "str":
        idx = _skewed_index(rng, n, len(WORDS) if not small else 5)
        perm = rng.permutation(len(WORDS))
        return [WORDS[int(perm[i])] for i in idx]
    raise ValueError(t)


def _dec_text(u, scale):
    """The text of unscaled decimal u at `scale` ("-0.05")."""
    sign, a = ("-" if u < 0 else ""), abs(int(u))
    if scale == 0:
        return f"{sign}{a}"
    return f"{sign}{a // 10 ** scale}.{a % 10 ** scale:0{scale}d}"


def _special_values(rng, kind, t, n):
    """Values of a special column: constant (one value), nan (floats with some NaN, maybe +-inf),
    all_nan, or a high-precision decimal (random digits at every magnitude, sometimes the extremes)."""
    if kind == "constant":
        v = CONSTANTS[t][int(rng.integers(0, len(CONSTANTS[t])))]
        if t in INTS:
            return [str(v) if abs(v) > 2**53 else v for _ in range(n)]
        if t == "f32":
            v = float(np.float32(v))
        return [v] * n
    if kind == "all_nan":
        return ["NaN"] * n
    if kind == "nan":
        raw = [float(x) for x in np.round(rng.uniform(-1000, 1000, size=n), 3)]
        with_inf = rng.random() < 0.5
        for i in range(n):
            r = rng.random()
            if r < 0.25:
                raw[i] = "NaN"
            elif with_inf and r < 0.4:
                raw[i] = "inf" if rng.random() < 0.5 else "-inf"
        return raw
    p, s = (int(x) for x in t[8:-1].split(","))
    out = []
    pool = None
    if rng.random() < 0.3:  # few distinct values: groups of identical decimals
        pool = [int(rng.integers(-10**15, 10**15)) * 10 ** int(rng.integers(0, p - 15)) for _ in range(3)]
    for _ in range(n):
        if pool is not None:
            u = pool[int(rng.integers(0, len(pool)))]
        elif rng.random() < 0.05:
            u = (10 ** p - 1) * (1 if rng.random() < 0.5 else -1)
        else:
            digits = int(rng.integers(1, p + 1))
            u = int(rng.integers(0, 10 ** min(digits, 18))) * 10 ** max(0, digits - 18)
            u += int(rng.integers(0, 10 ** min(digits, 18)))
            u = min(u, 10 ** p - 1) * (1 if rng.random() < 0.5 else -1)
        out.append(_dec_text(u, s))
    return out


def _with_nulls(rng, vals, rate):
    if rate <= 0:
        return vals
    mask = rng.random(len(vals)) < rate
    return [None if m else v for v, m in zip(vals, mask)]


SIZES = [0, 1, 2, 3, 7, 31, 32, 33, 50, 64, 100, 200, 300]


def make_table(rng, name_prefix_shared, n=None):
    """A random table. Key columns k1 (integer) and k2 (string) always exist; value columns are a random
    subset of all types; some value column names are shared between tables (`v_*`) to exercise suffixes."""
    if n is None:
        n = int(rng.choice(SIZES))
    cols = []
    data = []

    def add(name, t, small=False, extreme=False, rate=None):
        vals = _values(rng, t, n, small, extreme)
        vals = _with_nulls(rng, vals, _null_rate(rng) if rate is None else rate)
        sample = [v for v in vals if v is not None][:20]
        cols.append(Col(name, t, bounded=not extreme, small=small, attrs={"sample": sample}))
        data.append(vals)

    add("k1", str(rng.choice(["i32", "i64", "i16", "u8"])), small=True)
    add("k2", "str", small=True)
    all_types = INTS + FLOATS + ["bool", DEC, "date", TS, "str"]
    chosen = rng.choice(all_types, size=int(rng.integers(3, 8)), replace=False)
    for i, t in enumerate(chosen):
        t = str(t)
        shared = rng.random() < 0.3
        cname = f"v_{t.split('[')[0]}" if shared else f"{name_prefix_shared}{t.split('[')[0]}_{i}"
        add(cname, t, small=rng.random() < 0.3)
    if rng.random() < 0.3:
        t = str(rng.choice(["i64", "u64"]))
        add(f"{name_prefix_shared}big_{t}", t, extreme=True)
    if rng.random() < 0.4:
        add_special(rng, n, name_prefix_shared, cols, data)
    return {"schema": [{"name": c.name, "type": c.type} for c in cols], "columns": data}, cols, n


def add_special(rng, n, prefix, cols, data):
    """Adds one numerically hard column: constant (at the type extremes too), NaN and inf, all NaN, or a
    high-precision decimal. Such columns are `bounded=False` (no arithmetic on them): the queries read
    them through aggregations (std / var / mean / median / quantile / min / max), comparisons with
    their window aggregations, filters and decimal round / floor / ceil. attrs: "nan" / "inf" when they
    may hold NaN / infinities (the query generator translates min / max, and avoids quantiles of
    infinities, where DuckDB's semantics differ from Polars')."""
    kind = str(rng.choice(["constant", "constant", "nan", "all_nan", "decimal", "decimal"]))
    if kind == "constant":
        t = str(rng.choice(list(CONSTANTS)))
    elif kind == "decimal":
        t = str(rng.choice(HIGH_PRECISION))
    else:
        t = str(rng.choice(FLOATS))
    vals = _with_nulls(rng, _special_values(rng, kind, t, n), float(rng.choice([0.0, 0.0, 0.1, 0.5])))
    attrs = {"sample": [v for v in vals if v is not None and v not in ("NaN", "inf", "-inf")][:20]}
    if kind in ("nan", "all_nan"):
        attrs["nan"] = True
        attrs["inf"] = any(v in ("inf", "-inf") for v in vals)
    name = f"{prefix}{kind}_{t.split('[')[0]}"
    cols.append(Col(name, t, bounded=False, small=kind == "constant", attrs=attrs))
    data.append(vals)
