"""Test tables with every type tug has, nulls in every column, at the edge sizes."""
import datetime as dt
import decimal
import random

import pyarrow as pa

SIZES = [0, 1, 31, 32, 33, 1024]


def all_types(n: int, seed: int = 0, nulls: bool = True) -> pa.Table:
    """`n` rows of every tug type; every fifth-ish value null where `nulls`; a low-cardinality key `g`."""
    rnd = random.Random(seed)

    def maybe(v):
        return None if nulls and rnd.random() < 0.2 else v

    words = ["apple", "Banana", "cherry pie", "  date ", "", "éclair", "fig", "grape-fruit long string value"]
    cols = {
        "g": pa.array([maybe(rnd.choice(["a", "b", "c"])) for _ in range(n)], pa.large_string()),
        "k": pa.array([maybe(rnd.randint(0, 5)) for _ in range(n)], pa.int64()),
        "i8": pa.array([maybe(rnd.randint(-100, 100)) for _ in range(n)], pa.int8()),
        "i16": pa.array([maybe(rnd.randint(-30000, 30000)) for _ in range(n)], pa.int16()),
        "i32": pa.array([maybe(rnd.randint(-10**9, 10**9)) for _ in range(n)], pa.int32()),
        "i64": pa.array([maybe(rnd.randint(-10**12, 10**12)) for _ in range(n)], pa.int64()),
        "u8": pa.array([maybe(rnd.randint(0, 255)) for _ in range(n)], pa.uint8()),
        "u16": pa.array([maybe(rnd.randint(0, 65535)) for _ in range(n)], pa.uint16()),
        "u32": pa.array([maybe(rnd.randint(0, 2**32 - 1)) for _ in range(n)], pa.uint32()),
        "u64": pa.array([maybe(rnd.randint(0, 2**40)) for _ in range(n)], pa.uint64()),
        "f32": pa.array([maybe(rnd.uniform(-100, 100)) for _ in range(n)], pa.float32()),
        "f64": pa.array([maybe(rnd.uniform(-1e6, 1e6)) for _ in range(n)], pa.float64()),
        "b": pa.array([maybe(rnd.random() < 0.5) for _ in range(n)], pa.bool_()),
        "s": pa.array([maybe(rnd.choice(words)) for _ in range(n)], pa.large_string()),
        "d": pa.array([maybe(dt.date(2000, 1, 1) + dt.timedelta(days=rnd.randint(-5000, 5000))) for _ in range(n)],
                      pa.date32()),
        "ts": pa.array([maybe(dt.datetime(2020, 1, 1) + dt.timedelta(seconds=rnd.randint(-10**8, 10**8)))
                        for _ in range(n)], pa.timestamp("us")),
        "dur": pa.array([maybe(dt.timedelta(seconds=rnd.randint(-10**6, 10**6))) for _ in range(n)],
                        pa.duration("us")),
        "dec": pa.array([maybe(decimal.Decimal(rnd.randint(-10**9, 10**9)).scaleb(-2)) for _ in range(n)],
                        pa.decimal128(12, 2)),
    }
    return pa.table(cols)


def keyed(n: int, seed: int, key_range: int = 8) -> pa.Table:
    """A join side: nullable int key `k`, a string key `s` and a value `v`."""
    rnd = random.Random(seed)
    return pa.table({
        "k": pa.array([None if rnd.random() < 0.1 else rnd.randint(0, key_range) for _ in range(n)], pa.int64()),
        "s": pa.array([rnd.choice(["x", "y", "z", None]) for _ in range(n)], pa.large_string()),
        "v": pa.array([rnd.uniform(0, 100) for _ in range(n)], pa.float64()),
    })


def _family(t):
    return "int" if t.is_integer() else "float" if t.is_float() else t


def align_widths(got, want):
    """tug's documented integer widths differ from Polars' (counts and lengths are i64, not u32; date parts
    i32, not i8; docs/types.md): the columns must agree in kind (integer, float, or the exact type), and
    integer and float widths are then aligned to Polars' before the values are compared."""
    assert got.columns == want.columns
    casts = {}
    for c in got.columns:
        g, w = got.schema[c], want.schema[c]
        assert _family(g) == _family(w), f"column {c}: tug {g}, Polars {w}"
        if g != w:
            casts[c] = w
    return got.cast(casts) if casts else got
