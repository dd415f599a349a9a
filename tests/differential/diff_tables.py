"""Random tables for the differential tests: every tug type, nulls at various rates, duplicates, skew.

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
    return {"schema": [{"name": c.name, "type": c.type} for c in cols], "columns": data}, cols, n
