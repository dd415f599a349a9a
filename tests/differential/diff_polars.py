"""A Polars interpreter of tug_difftest's JSON plans: a second reference used to check the harness itself
(the SQL translation) independently of tug. `diff_harness.py --oracle polars` runs the random cases through
Polars instead of tug and compares with DuckDB on values only (Polars' result types differ from tug's in
documented places, e.g. str.len_chars is u32 in Polars and i64 in tug).
"""
from __future__ import annotations

import datetime as dt
import decimal

import polars as pl

PL = {"bool": pl.Boolean, "i8": pl.Int8, "i16": pl.Int16, "i32": pl.Int32, "i64": pl.Int64, "u8": pl.UInt8,
      "u16": pl.UInt16, "u32": pl.UInt32, "u64": pl.UInt64, "f32": pl.Float32, "f64": pl.Float64,
      "date": pl.Date, "datetime[us]": pl.Datetime("us"), "str": pl.Utf8}


def pl_type(t):
    if t.startswith("decimal["):
        p, s = (int(x) for x in t[8:-1].split(","))
        return pl.Decimal(p, s)
    if t.startswith("duration["):
        return pl.Duration(t[9:-1])
    return PL[t]


from diff_tables import EPOCH_DATE, EPOCH_TS, days_of, ticks_of  # noqa: E402


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


BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
       "eq": lambda a, b: a == b, "neq": lambda a, b: a != b, "lt": lambda a, b: a < b,
       "lt_eq": lambda a, b: a <= b, "gt": lambda a, b: a > b, "gt_eq": lambda a, b: a >= b,
       "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}


def expr(j):
    if "col" in j:
        return pl.col(j["col"])
    if "lit" in j:
        if "type" in j:
            return pl.lit(py_value(j["lit"], j["type"]), dtype=pl_type(j["type"]))
        return pl.lit(j["lit"])
    if "alias" in j:
        return expr(j["alias"]).alias(j["name"])
    if "cast" in j:
        return expr(j["cast"]).cast(pl_type(j["to"]), strict=j.get("strict", True))
    if "over" in j:
        return expr(j["over"]).over([expr(k) for k in j["by"]])
    if "when" in j:
        (c, t), = j["when"]
        w = pl.when(expr(c)).then(expr(t))
        return w.otherwise(expr(j["otherwise"])) if "otherwise" in j else w
    if "agg" in j:
        op = j["agg"]
        if op == "len":
            return pl.len()
        a = expr(j["arg"])
        if op == "std":
            return a.std(ddof=j.get("ddof", 1))
        if op == "var":
            return a.var(ddof=j.get("ddof", 1))
        if op == "quantile":
            return a.quantile(j["q"], interpolation=j.get("interpolation", "nearest"))
        return getattr(a, op)()
    f = j["fn"]
    args = [expr(a) for a in j.get("args", [])]
    if f in BIN:
        return BIN[f](args[0], args[1])
    a = args[0] if args else None
    simple = {"not": lambda: ~a, "is_null": lambda: a.is_null(), "is_not_null": lambda: a.is_not_null(),
              "fill_null": lambda: a.fill_null(args[1]), "coalesce": lambda: pl.coalesce(args),
              "neg": lambda: -a, "abs": lambda: a.abs(), "floor": lambda: a.floor(), "ceil": lambda: a.ceil(),
              "sqrt": lambda: a.sqrt(), "round": lambda: a.round(j.get("i0", 0)),
              "str.len_chars": lambda: a.str.len_chars().cast(pl.Int64),
              "str.len_bytes": lambda: a.str.len_bytes().cast(pl.Int64),
              "str.to_uppercase": lambda: a.str.to_uppercase(), "str.to_lowercase": lambda: a.str.to_lowercase(),
              "str.strip_chars": lambda: a.str.strip_chars(j.get("s0") or None),
              "str.starts_with": lambda: a.str.starts_with(args[1]), "str.ends_with": lambda: a.str.ends_with(args[1]),
              "str.contains": lambda: a.str.contains(args[1], literal=j.get("flag", False)),
              "str.slice": lambda: a.str.slice(j.get("i0", 0), None if j.get("i1", -1) < 0 else j["i1"]),
              "concat_str": lambda: pl.concat_str(args, separator=j.get("s0", "")),
              "is_in": lambda: a.is_in([py_value(v, j["list_type"]) for v in j["list"]]),
              "is_between": lambda: a.is_between(args[1], args[2], closed=j.get("s0", "both")),
              "dt.truncate": lambda: a.dt.truncate(j["s0"]), "dt.date": lambda: a.dt.date(),
              "dt.total_days": lambda: a.dt.total_days(),
              }
    if f in simple:
        return simple[f]()
    if f.startswith("dt."):
        return getattr(a.dt, f[3:])().cast(pl.Int32)
    raise ValueError(f"no Polars translation for {f}")


def plan(j, tables):
    op = j["op"]
    if op == "scan":
        return tables[j["table"]].lazy()
    if op == "concat":
        return pl.concat([plan(p, tables) for p in j["inputs"]])
    if op == "join":
        left, right = plan(j["left"], tables), plan(j["right"], tables)
        if j["how"] == "cross":
            return left.join(right, how="cross", suffix=j.get("suffix", "_right"))
        return left.join(right, left_on=[expr(e) for e in j["left_on"]], right_on=[expr(e) for e in j["right_on"]],
                         how=j["how"], suffix=j.get("suffix", "_right"), coalesce=j["how"] != "full",
                         maintain_order="left" if j["how"] in ("inner", "left", "semi", "anti") else "none")
    p = plan(j["input"], tables)
    if op == "filter":
        return p.filter(expr(j["predicate"]))
    if op == "select":
        return p.select([expr(e) for e in j["exprs"]])
    if op == "with_columns":
        return p.with_columns([expr(e) for e in j["exprs"]])
    if op == "group_by":
        return p.group_by([expr(k) for k in j["keys"]], maintain_order=j.get("maintain_order", False)).agg(
            [expr(e) for e in j["aggs"]])
    if op == "sort":
        return p.sort([expr(e) for e in j["by"]], descending=j["descending"], nulls_last=j["nulls_last"],
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
        return p.with_row_index(j.get("name", "index"), offset=j.get("offset", 0)).with_columns(
            pl.col(j.get("name", "index")).cast(pl.Int64))
    if op == "rename":
        return p.rename(j["mapping"])
    if op == "drop":
        return p.drop(j["columns"])
    raise ValueError(op)


def out_value(v):
    if isinstance(v, dt.datetime):
        return ticks_of(v)
    if isinstance(v, dt.date):
        return days_of(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, float) and v != v:
        return "NaN"
    return v


def run_case(case):
    """The case's result in tug_difftest's output form, with the expected (tug) types as schema."""
    try:
        tables = {name: frame(t) for name, t in case["tables"].items()}
        df = plan(case["plan"], tables).collect()
        return {"id": case["id"], "schema": [{"name": n, "type": t} for n, t in case["expected_types"]],
                "names": df.columns, "rows": [[out_value(v) for v in r] for r in df.rows()]}
    except Exception as e:  # noqa: BLE001 (reported per case like tug_difftest does)
        return {"id": case["id"], "error": type(e).__name__, "message": str(e)}
