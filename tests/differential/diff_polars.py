"""An interpreter of tug_difftest's JSON plans in a Polars-style Python API: Polars itself, or tug's Python
package (its names follow Polars'), chosen by the module passed as `m`.

- `diff_harness.py --oracle polars` runs the random cases through Polars instead of tug and compares with
  DuckDB on values only: a second reference that checks the harness itself (the SQL translation)
  independently of tug. Polars' result types differ from tug's in documented places (str.len_chars is u32
  in Polars and i64 in tug), so Polars' results get casts to tug's types and the expected types as schema.
- `diff_harness.py --oracle python` runs them through tug's Python API (`import tug`): the very same plans
  that tools/tug_difftest runs through the C++ API, built with tug.col, LazyFrame.filter, ... over
  tug.from_arrow tables and collected with the case's options. Nothing is cast: the result's own types are
  compared with the expected ones, as for tug_difftest.
"""
from __future__ import annotations

import datetime as dt
import decimal
import os
import sys
from pathlib import Path

import polars as pl

from diff_tables import EPOCH_DATE, EPOCH_TS, days_of, ticks_of

SIMPLE = {"bool": "Boolean", "i8": "Int8", "i16": "Int16", "i32": "Int32", "i64": "Int64", "u8": "UInt8",
          "u16": "UInt16", "u32": "UInt32", "u64": "UInt64", "f32": "Float32", "f64": "Float64", "date": "Date",
          "str": "String"}


def pl_type(t, m=pl):
    """The data type of m (polars or tug) for tug_difftest's type name t."""
    if t.startswith("decimal["):
        p, s = (int(x) for x in t[8:-1].split(","))
        return m.Decimal(p, s)
    if t.startswith("duration["):
        return m.Duration(t[9:-1])
    if t.startswith("datetime["):
        return m.Datetime(t[9:-1])
    return getattr(m, SIMPLE[t])


def py_value(v, t):
    if v is None:
        return None
    if t == "date":
        return EPOCH_DATE + dt.timedelta(days=int(v))
    if t == "datetime[us]":
        return EPOCH_TS + dt.timedelta(microseconds=int(v))
    if t.startswith("duration["):
        return dt.timedelta(milliseconds=int(v))
    if t.startswith("decimal["):
        return decimal.Decimal(v)
    if t in ("f32", "f64"):
        return float(v)
    if t == "bool" or t == "str":
        return v
    return int(v)


def frame(t):
    data = {}
    for f, col in zip(t["schema"], t["columns"]):
        data[f["name"]] = pl.Series(f["name"], [py_value(v, f["type"]) for v in col], dtype=pl_type(f["type"]))
    return pl.DataFrame(data)


def import_tug():
    """The `tug` package of the build tree ($TUG_BUILD_DIR/python, default build/python) as the Python tests
    take it, else an installed one."""
    pkg = Path(os.environ.get("TUG_BUILD_DIR", Path(__file__).resolve().parents[2] / "build")) / "python"
    if (pkg / "tug").is_dir() and str(pkg) not in sys.path:
        sys.path.insert(0, str(pkg))
    import tug

    return tug


def tug_frame(t):
    """The table as a tug DataFrame, through Arrow (the columns DuckDB gets too)."""
    import pyarrow as pa
    from diff_harness import arrow_column

    arrays = [arrow_column(f["type"], col) for f, col in zip(t["schema"], t["columns"])]
    return import_tug().from_arrow(pa.Table.from_arrays(arrays, names=[f["name"] for f in t["schema"]]))


BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
       "eq": lambda a, b: a == b, "neq": lambda a, b: a != b, "lt": lambda a, b: a < b,
       "lt_eq": lambda a, b: a <= b, "gt": lambda a, b: a > b, "gt_eq": lambda a, b: a >= b,
       "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}


def as_tug_type(e, t, m):
    """`e` cast to tug's result type t where Polars' differs (Polars only: tug's must already be t)."""
    return e.cast(pl_type(t, m)) if m is pl else e


def expr(j, m=pl):
    def x(sub):
        return expr(sub, m)

    if "col" in j:
        return m.col(j["col"])
    if "lit" in j:
        if "type" in j:
            return m.lit(py_value(j["lit"], j["type"]), dtype=pl_type(j["type"], m))
        return m.lit(j["lit"])
    if "alias" in j:
        return x(j["alias"]).alias(j["name"])
    if "cast" in j:
        return x(j["cast"]).cast(pl_type(j["to"], m), strict=j.get("strict", True))
    if "over" in j:
        return x(j["over"]).over([x(k) for k in j["by"]])
    if "when" in j:
        (c, t), = j["when"]
        w = m.when(x(c)).then(x(t))
        return w.otherwise(x(j["otherwise"])) if "otherwise" in j else w
    if "agg" in j:
        op = j["agg"]
        if op == "len":
            return m.len()
        a = x(j["arg"])
        if op == "std":
            return a.std(ddof=j.get("ddof", 1))
        if op == "var":
            return a.var(ddof=j.get("ddof", 1))
        if op == "quantile":
            return a.quantile(j["q"], interpolation=j.get("interpolation", "nearest"))
        return getattr(a, op)()
    f = j["fn"]
    args = [x(a) for a in j.get("args", [])]
    if f in BIN:
        return BIN[f](args[0], args[1])
    a = args[0] if args else None
    simple = {"not": lambda: ~a, "is_null": lambda: a.is_null(), "is_not_null": lambda: a.is_not_null(),
              "fill_null": lambda: a.fill_null(args[1]), "coalesce": lambda: m.coalesce(args),
              "neg": lambda: -a, "abs": lambda: a.abs(), "floor": lambda: a.floor(), "ceil": lambda: a.ceil(),
              "sqrt": lambda: a.sqrt(), "round": lambda: a.round(j.get("i0", 0)),
              "str.len_chars": lambda: as_tug_type(a.str.len_chars(), "i64", m),
              "str.len_bytes": lambda: as_tug_type(a.str.len_bytes(), "i64", m),
              "str.to_uppercase": lambda: a.str.to_uppercase(), "str.to_lowercase": lambda: a.str.to_lowercase(),
              "str.strip_chars": lambda: a.str.strip_chars(j.get("s0") or None),
              "str.starts_with": lambda: a.str.starts_with(args[1]), "str.ends_with": lambda: a.str.ends_with(args[1]),
              "str.contains": lambda: a.str.contains(args[1], literal=j.get("flag", False)),
              "str.slice": lambda: a.str.slice(j.get("i0", 0), None if j.get("i1", -1) < 0 else j["i1"]),
              "concat_str": lambda: m.concat_str(args, separator=j.get("s0", "")),
              "is_in": lambda: a.is_in([py_value(v, j["list_type"]) for v in j["list"]]),
              "is_between": lambda: a.is_between(args[1], args[2], closed=j.get("s0", "both")),
              "dt.truncate": lambda: a.dt.truncate(j["s0"]), "dt.date": lambda: a.dt.date(),
              "dt.total_days": lambda: a.dt.total_days(),
              }
    if f in simple:
        return simple[f]()
    if f.startswith("dt."):
        return as_tug_type(getattr(a.dt, f[3:])(), "i32", m)
    raise ValueError(f"no translation for {f}")


def plan(j, tables, m=pl):
    def p_(sub):
        return plan(sub, tables, m)

    def x(sub):
        return expr(sub, m)

    op = j["op"]
    if op == "scan":
        return tables[j["table"]].lazy()
    if op == "concat":
        return m.concat([p_(p) for p in j["inputs"]])
    if op == "join":
        left, right = p_(j["left"]), p_(j["right"])
        if j["how"] == "cross":
            return left.join(right, how="cross", suffix=j.get("suffix", "_right"))
        # tug's joins keep both key columns of a full join and the left side's order (Polars: arguments)
        polars_only = {} if m is not pl else {
            "coalesce": j["how"] != "full",
            "maintain_order": "left" if j["how"] in ("inner", "left", "semi", "anti") else "none"}
        return left.join(right, left_on=[x(e) for e in j["left_on"]], right_on=[x(e) for e in j["right_on"]],
                         how=j["how"], suffix=j.get("suffix", "_right"), **polars_only)
    p = p_(j["input"])
    if op == "filter":
        return p.filter(x(j["predicate"]))
    if op == "select":
        return p.select([x(e) for e in j["exprs"]])
    if op == "with_columns":
        return p.with_columns([x(e) for e in j["exprs"]])
    if op == "group_by":
        return p.group_by([x(k) for k in j["keys"]], maintain_order=j.get("maintain_order", False)).agg(
            [x(e) for e in j["aggs"]])
    if op == "sort":
        return p.sort([x(e) for e in j["by"]], descending=j["descending"], nulls_last=j["nulls_last"],
                      maintain_order=j.get("stable", False))
    if op == "slice":
        return p.slice(j["offset"], None if j.get("length", -1) < 0 else j["length"])
    if op == "head":
        return p.head(j["n"])
    if op == "tail":
        return p.tail(j["n"])
    if op == "unique":
        return p.unique(subset=j.get("subset") or None, keep=j.get("keep", "any"),
                        maintain_order=j.get("maintain_order", False))
    if op == "with_row_index":
        name = j.get("name", "index")
        return p.with_row_index(name, offset=j.get("offset", 0)).with_columns(as_tug_type(m.col(name), "i64", m))
    if op == "rename":
        return p.rename(j["mapping"])
    if op == "drop":
        return p.drop(j["columns"])
    raise ValueError(op)


UNIT = {"s": dt.timedelta(seconds=1), "ms": dt.timedelta(milliseconds=1), "us": dt.timedelta(microseconds=1)}


def out_value(v, t=None):
    """A Python value in tug_difftest's output form (t: its type, which durations need for their unit)."""
    if isinstance(v, dt.datetime):
        return ticks_of(v)
    if isinstance(v, dt.date):
        return days_of(v)
    if isinstance(v, dt.timedelta):
        return v // UNIT[t[9:-1]]
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, float) and v != v:
        return "NaN"
    return v


def run_case(case):
    """The case's result through Polars, in tug_difftest's output form, with the expected (tug) types as schema."""
    try:
        tables = {name: frame(t) for name, t in case["tables"].items()}
        df = plan(case["plan"], tables).collect()
        return {"id": case["id"], "schema": [{"name": n, "type": t} for n, t in case["expected_types"]],
                "names": df.columns,
                "rows": [[out_value(v, t) for v, (_, t) in zip(r, case["expected_types"])] for r in df.rows()]}
    except Exception as e:  # noqa: BLE001 (reported per case like tug_difftest does)
        return {"id": case["id"], "error": type(e).__name__, "message": str(e)}


# tug's Python exceptions -> the C++ error names tug_difftest reports (include/tug/core/error.hpp)
def _error_name(e):
    tug = import_tug()
    names = {tug.ColumnNotFoundError: "column_not_found_error", tug.SchemaError: "type_error",
             tug.ComputeError: "compute_error", tug.InvalidArgumentError: "invalid_argument_error",
             tug.IOError: "io_error", tug.OutOfMemoryError: "memory_error",
             tug.NotSupportedError: "not_implemented_error", tug.ResourceError: "resource_error",
             tug.InternalError: "internal_error"}
    return next((n for cls, n in names.items() if type(e) is cls), type(e).__name__)


def run_case_python(case):
    """The case's result through tug's Python API, in tug_difftest's output form: the result's own types
    (tug's short names, as tug_difftest writes them) and values."""
    import tug

    try:
        tables = {name: tug_frame(t) for name, t in case["tables"].items()}
        df = plan(case["plan"], tables, tug).collect(engine="cpu", **case["options"])
        types = [str(t._to_tug()) for t in df.schema.values()]
        return {"id": case["id"], "schema": [{"name": n, "type": t} for n, t in zip(df.columns, types)],
                "rows": [[out_value(v, t) for v, t in zip(r, types)] for r in df.rows()]}
    except tug.TugError as e:  # reported per case as tug_difftest does; any other exception is a bug
        return {"id": case["id"], "error": _error_name(e), "message": str(e)}
