"""Random queries for the differential tests: each one as a tug JSON plan (see tools/tug_difftest.cpp) AND
the equivalent DuckDB SQL, with the semantic differences between tug (Polars semantics) and DuckDB
translated explicitly:

* row order: every ordered frame carries a hidden "__ord" column in SQL that reproduces tug's row order
  (scan order, kept by filter/select/with_columns/concat, set by stable or total sorts, group_by and unique
  with maintain_order). Order-dependent operators (slice/head/tail, with_row_index, first/last, unique
  keep=first/last) are generated only on ordered frames; results of ordered frames are compared in order.
* nulls sort first by default in tug, last in DuckDB: NULLS FIRST/LAST is always explicit.
* sum of no values = 0 (COALESCE), count = non-null count, n_unique counts null as a value, std/var are
  sample statistics, quantile interpolations are spelled out, any/all ignore nulls.
* integer floor division and modulo follow Python (floor, sign of the divisor); division by zero is null.
* join keys: null never matches; full joins keep both key columns (suffix), inner/left/right coalesce.
* arithmetic is generated only where it cannot overflow (tug wraps as Polars, DuckDB raises).
* numerically hard columns (diff_tables.add_special: constants at the type extremes, NaN and infinities,
  decimals of up to 38 digits) are read through aggregations, comparisons with their own window
  aggregates (x < x.quantile(q).over(k), x.std().over(k) == 0) and decimal round / floor / ceil; min /
  max skip NaN as in Polars; a "probe" query (one select over the scan) rounds high-precision decimals,
  where a 39th digit must raise on both sides.
"""
from __future__ import annotations

import copy

import numpy as np

from diff_tables import BOUNDS, DEC, FLOATS, INTS, SIGNED, TS, UNSIGNED, Col

DUCK = {"bool": "BOOLEAN", "i8": "TINYINT", "i16": "SMALLINT", "i32": "INTEGER", "i64": "BIGINT",
        "u8": "UTINYINT", "u16": "USMALLINT", "u32": "UINTEGER", "u64": "UBIGINT", "f32": "FLOAT",
        "f64": "DOUBLE", "date": "DATE", "datetime[us]": "TIMESTAMP", "str": "VARCHAR"}


def duck_type(t):
    if t.startswith("decimal["):
        p, s = t[8:-1].split(",")
        return f"DECIMAL({p},{s})"
    return DUCK[t]


def q(name):
    return '"' + name.replace('"', '""') + '"'


def is_dec(t):
    return t.startswith("decimal[")


def dec_scale(t):
    return int(t[8:-1].split(",")[1])


def is_numeric(t):
    return t in INTS or t in FLOATS or is_dec(t)


WIDTH = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8}


def common_type(a, b):
    """tug's common_type (src/expr/resolve.cpp)."""
    if a == b:
        return a
    if a == "bool" and is_numeric(b):
        return b
    if b == "bool" and is_numeric(a):
        return a
    if a in INTS and b in INTS:
        sa, sb = a in SIGNED, b in SIGNED
        wa, wb = WIDTH[a], WIDTH[b]
        if sa == sb:
            return ("i" if sa else "u") + str(8 * max(wa, wb))
        ws, wu = (wa, wb) if sa else (wb, wa)
        if ws > wu:
            return "i" + str(8 * ws)
        if wu < 8:
            return "i" + str(16 * wu)
        return "f64"
    if (a in INTS and b in FLOATS) or (a in FLOATS and b in INTS):
        f, i = (a, b) if a in FLOATS else (b, a)
        return "f32" if f == "f32" and WIDTH[i] <= 2 else "f64"
    if a in FLOATS and b in FLOATS:
        return "f64"
    if is_dec(a) and is_dec(b):
        return f"decimal[38,{max(dec_scale(a), dec_scale(b))}]"
    if is_dec(a) and b in INTS:
        return f"decimal[38,{dec_scale(a)}]"
    if is_dec(b) and a in INTS:
        return f"decimal[38,{dec_scale(b)}]"
    if (is_dec(a) and b in FLOATS) or (is_dec(b) and a in FLOATS):
        return "f64"
    if {a, b} == {"date", TS}:
        return TS
    return None


def agg_result_type(op, t):
    if op in ("count", "len", "n_unique"):
        return "i64"
    if op in ("min", "max", "first", "last"):
        return t
    if op == "sum":
        if t in SIGNED or t == "bool":
            return "i64"
        if t in UNSIGNED:
            return "u64"
        if t in FLOATS:
            return "f64"
        return f"decimal[38,{dec_scale(t)}]"
    if op in ("mean", "std", "var", "median", "quantile"):
        return "f64"
    return "bool"


ORD = ', "__ord"'


class Ex:
    """An expression in both languages, with tug's type of its result."""

    def __init__(self, j, sql, t, bounded=True, agg=False):
        self.j, self.sql, self.t, self.bounded, self.agg = j, sql, t, bounded, agg
        self.nan = False  # may hold NaN (aggregations translate min / max for DuckDB)


def cast_sql(sql, t):
    return f"CAST({sql} AS {duck_type(t)})"


def lit_sql(v, t):
    if v is None:
        return f"CAST(NULL AS {duck_type(t)})"
    if t == "bool":
        return "TRUE" if v else "FALSE"
    if t == "str":
        return "'" + v.replace("'", "''") + "'"
    if t == "date":
        return f"CAST(DATE '1970-01-01' + INTERVAL ({int(v)}) DAY AS DATE)"
    if t == TS:
        return f"make_timestamp({int(v)})"
    if is_dec(t):
        return f"CAST('{v}' AS {duck_type(t)})"
    return f"CAST({v!r} AS {duck_type(t)})"


class Frame:
    """A query under construction: its plan, the CTE holding its rows in SQL, and its columns."""

    def __init__(self, plan, cte, cols, ordered):
        self.plan, self.cte, self.cols, self.ordered = plan, cte, cols, ordered

    def names(self):
        return [c.name for c in self.cols]

    def col(self, name):
        return next(c for c in self.cols if c.name == name)


class QueryGen:
    def __init__(self, rng, tables):
        """`tables`: name -> list of Col (with attrs["sample"] holding some of the column's values)."""
        self.rng = rng
        self.tables = tables
        self.ctes = []
        self.n_names = 0

    # ---------------------------------------------------------------- helpers
    def chance(self, p):
        return self.rng.random() < p

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def fresh(self, prefix="e"):
        self.n_names += 1
        return f"{prefix}{self.n_names}"

    def cte(self, sql):
        name = f"q{len(self.ctes)}"
        self.ctes.append((name, sql))
        return name

    def sel_cols(self, f, extra=""):
        cols = ", ".join(q(c.name) for c in f.cols)
        return cols + (", " + extra if extra else "")

    def ord_col(self, f):
        return ', "__ord"' if f.ordered else ""

    # ---------------------------------------------------------------- literals
    def sample(self, c):
        s = c.attrs.get("sample") or []
        return s[int(self.rng.integers(0, len(s)))] if s else None

    def literal(self, t, near=None):
        """A typed literal of type t (a value of column `near` when it has samples)."""
        v = self.sample(near) if near is not None else None
        if v is None or self.chance(0.2):
            r = self.rng
            if t in INTS:
                lo, hi = BOUNDS[t]
                v = int(r.integers(max(lo, -100), min(hi, 100) + 1))
            elif t in FLOATS:
                v = float(r.integers(-400, 400)) / 4
            elif is_dec(t):
                x, s = int(r.integers(-10000, 10000)), min(2, dec_scale(t))
                v = f"{'-' if x < 0 else ''}{abs(x) // 10 ** s}" + (f".{abs(x) % 10 ** s:0{s}d}" if s else "")
            elif t == "bool":
                v = bool(r.integers(0, 2))
            elif t == "date":
                v = int(r.integers(-1000, 20000))
            elif t == TS:
                v = 1577836800 * 1000000 + int(r.integers(0, 86400 * 1000)) * 1000000
            else:
                v = self.choice(["a", "ab", "b", "", "zz", "é", "x"])
        if isinstance(v, str) and t in INTS:
            v = int(v)
        return Ex({"lit": v, "type": t}, lit_sql(v, t), t)

    def dyn_int(self, lo, hi):
        v = int(self.rng.integers(lo, hi + 1))
        return v

    # ---------------------------------------------------------------- row-wise expressions
    def colx(self, c):
        return Ex({"col": c.name}, q(c.name), c.type, c.bounded)

    def pick(self, f, pred):
        cands = [c for c in f.cols if pred(c)]
        return self.choice(cands) if cands else None

    def num_expr(self, f, depth=0):
        """A numeric expression (None if the frame has no usable column)."""
        c = self.pick(f, lambda c: is_numeric(c.type) and c.bounded)
        if c is None:
            return None
        a = self.colx(c)
        kind = self.choice(["col", "arith", "arith", "arith", "unary", "cast", "fill", "when", "strlen", "dt"])
        if kind == "col" or depth > 0:
            return a
        if kind == "arith":
            return self.arith(f, a)
        if kind == "unary":
            return self.unary(a)
        if kind == "cast":
            return self.cast_num(a)
        if kind == "fill":
            return self.fill(f, a)
        if kind == "when":
            cond = self.pred(f, 1)
            b = self.num_expr(f, 1)
            t = common_type(a.t, b.t)
            if cond is None or t is None or t == "bool":
                return a
            return self.when(cond, a, b, t)
        if kind == "strlen":
            s = self.pick(f, lambda c: c.type == "str")
            if s is None:
                return a
            if self.chance(0.5):
                return Ex({"fn": "str.len_chars", "args": [{"col": s.name}]}, f"CAST(length({q(s.name)}) AS BIGINT)", "i64")
            return Ex({"fn": "str.len_bytes", "args": [{"col": s.name}]}, f"CAST(strlen({q(s.name)}) AS BIGINT)", "i64")
        if kind == "dt":
            return self.dt_part(f) or a
        return a

    def when(self, cond, a, b, t):
        j = {"when": [[cond.j, a.j]], "otherwise": b.j}
        return Ex(j, f"(CASE WHEN {cond.sql} THEN {cast_sql(a.sql, t)} ELSE {cast_sql(b.sql, t)} END)", t)

    def arith(self, f, a):
        t0 = a.t
        ops = ["add", "mul", "truediv", "floordiv", "mod"]
        if t0 not in UNSIGNED:
            ops.append("sub")
        op = self.choice(ops)
        other = self.pick(f, lambda c: is_numeric(c.type) and c.bounded)
        use_col = other is not None and self.chance(0.5)
        if op in ("floordiv", "mod") and (t0 not in INTS or (use_col and other.type not in INTS)):
            op = "add"
        if use_col:
            b = self.colx(other)
            t = common_type(t0, b.t)
            if t is None or (op == "sub" and t in UNSIGNED) or (op == "truediv"):
                use_col = False
            elif op == "mul" and t not in ("i64", "u64", "f64", "f32") and not is_dec(t):
                use_col = False
        if not use_col:
            # a dynamic literal takes the column's type: keep it small and non-negative for unsigned
            if t0 in FLOATS:
                v = float(self.rng.integers(-8, 9)) / 2 or 1.5
            elif is_dec(t0):
                v = self.dyn_int(-3, 3)
            else:
                lo = 0 if t0 in UNSIGNED else -2
                v = self.dyn_int(lo, 2 if op == "mul" else 5)
            if op in ("truediv", "floordiv", "mod") and v == 0:
                v = 3 if not isinstance(v, float) else 2.5
            if isinstance(v, float) and t0 in INTS:
                lt = "f64"
            else:
                lt = t0
            b = Ex({"lit": v}, lit_sql(v if not is_dec(lt) else str(v), lt) if not is_dec(lt) else f"CAST({v} AS {duck_type(lt)})", lt)
            t = common_type(t0, lt)
        if op == "mul" and is_dec(a.t) and is_dec(b.t):
            t = f"decimal[38,{min(38, dec_scale(a.t) + dec_scale(b.t))}]"
            sql = f"CAST({cast_sql(a.sql, 'decimal[38,' + str(dec_scale(a.t)) + ']')} * {cast_sql(b.sql, 'decimal[38,' + str(dec_scale(b.t)) + ']')} AS {duck_type(t)})"
        elif op == "mul" and is_dec(t):
            da = a.t if is_dec(a.t) else "decimal[38,0]"
            db = b.t if is_dec(b.t) else "decimal[38,0]"
            sql = f"CAST({cast_sql(a.sql, 'decimal[38,' + str(dec_scale(da)) + ']')} * {cast_sql(b.sql, 'decimal[38,' + str(dec_scale(db)) + ']')} AS {duck_type(t)})"
        elif op == "truediv":
            t = "f32" if a.t == "f32" and b.t == "f32" else "f64"
            sql = f"({cast_sql(a.sql, t)} / {cast_sql(b.sql, t)})"
        elif op in ("floordiv", "mod"):
            x, y = cast_sql(a.sql, t), cast_sql(b.sql, t)
            if op == "floordiv" and t in FLOATS:
                # DuckDB's // on DOUBLE is true division; tug (like Polars) floors, and x // 0.0 is +-inf
                sql = f"CAST(floor({x} / {y}) AS {duck_type(t)})"
            elif op == "floordiv":
                sql = (f"(CASE WHEN {y} = 0 THEN NULL ELSE CAST(({x} // {y}) - (CASE WHEN ({x} % {y} <> 0) AND "
                       f"(({x} < 0) <> ({y} < 0)) THEN 1 ELSE 0 END) AS {duck_type(t)}) END)")
            else:
                sql = f"(CASE WHEN {y} = 0 THEN NULL ELSE CAST((({x} % {y}) + {y}) % {y} AS {duck_type(t)}) END)"
        else:
            sym = {"add": "+", "sub": "-", "mul": "*"}[op]
            sql = f"CAST({cast_sql(a.sql, t)} {sym} {cast_sql(b.sql, t)} AS {duck_type(t)})"
        fname = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "floordiv": "floordiv", "mod": "mod"}[op]
        return Ex({"fn": fname, "args": [a.j, b.j]}, sql, t)

    def unary(self, a):
        t = a.t
        opts = []
        if t in SIGNED or t in FLOATS or is_dec(t):
            opts += ["abs", "neg"]
        if t == "f64":
            opts += ["round", "floor", "ceil", "sqrt"]
        if t in INTS:
            opts += ["floor", "ceil"]
        if is_dec(t):
            opts += ["dec_round"]
        if not opts:
            return a
        op = self.choice(opts)
        if op == "dec_round":
            return self.dec_round(a)
        if op == "abs":
            return Ex({"fn": "abs", "args": [a.j]}, cast_sql(f"abs({a.sql})", t), t)
        if op == "neg":
            return Ex({"fn": "neg", "args": [a.j]}, cast_sql(f"(-{a.sql})", t), t)
        if op == "round":
            d = int(self.rng.integers(0, 3))
            return Ex({"fn": "round", "args": [a.j], "i0": d}, f"round({a.sql}, {d})", t)
        if op in ("floor", "ceil"):
            return Ex({"fn": op, "args": [a.j]}, cast_sql(f"{op}({a.sql})", t), t)
        return Ex({"fn": "sqrt", "args": [{"fn": "abs", "args": [a.j]}]}, f"sqrt(abs({a.sql}))", "f64")

    def dec_round(self, a):
        """round(d) / floor / ceil of a decimal: tug's type grows a digit (as Polars) while rounding
        drops fraction digits; DuckDB's scale changes, so its result is cast back to tug's type."""
        p, s = (int(x) for x in a.t[8:-1].split(","))
        op = self.choice(["round", "floor", "ceil"])
        d = int(self.rng.integers(0, s + 2)) if op == "round" else 0
        t = f"decimal[{min(p + 1, 38)},{s}]" if d < s else a.t
        j = {"fn": op, "args": [a.j]}
        if op == "round":
            j["i0"] = d
            sql = f"round({a.sql}, {d})"
        else:
            sql = f"{op}({a.sql})"
        return Ex(j, cast_sql(sql, t), t, bounded=a.bounded)

    def window_compare(self, f):
        """A numeric column against its own window aggregate: x < x.quantile(q).over(k), x ==
        x.median().over(k), x.std().over(k) == 0 ... Exact on both sides only when the values read as
        float64 alike (decimals correctly rounded), identical values have a variance of exactly 0 and a
        one-row group's quantile is its value."""
        keys = self.window_keys(f)
        # not an aggregation's float (its last bits differ between engines, so may its order)
        c = self.pick(f, lambda c: is_numeric(c.type) and not c.attrs.get("inf") and not c.attrs.get("inexact"))
        if not keys or c is None:
            return None
        over = " OVER (PARTITION BY " + ", ".join(q(k) for k in keys) + ")"
        by = [{"col": k} for k in keys]
        x = f"CAST({q(c.name)} AS DOUBLE)"
        kind = self.choice(["quantile", "median", "std", "var"])
        if kind in ("std", "var"):
            win = {"over": {"agg": kind, "arg": {"col": c.name}, "ddof": 1}, "by": by}
            fn = "stddev_samp" if kind == "std" else "var_samp"
            return Ex({"fn": "eq", "args": [win, {"lit": 0.0, "type": "f64"}]},
                      f"({fn}({x}){over} = CAST(0.0 AS DOUBLE))", "bool")
        qv = 0.5 if kind == "median" else float(self.choice([0.0, 0.25, 0.5, 0.75, 1.0]))
        agg = {"agg": "median", "arg": {"col": c.name}} if kind == "median" else \
            {"agg": "quantile", "arg": {"col": c.name}, "q": qv, "interpolation": "linear"}
        op = self.choice(["lt", "lt_eq", "eq", "gt"])
        sym = {"lt": "<", "lt_eq": "<=", "eq": "=", "gt": ">"}[op]
        return Ex({"fn": op, "args": [{"col": c.name}, {"over": agg, "by": by}]},
                  f"({x} {sym} quantile_cont({x}, {qv!r}){over})", "bool")

    def cast_num(self, a):
        t = a.t
        if t in INTS or t == "bool":
            to = self.choice(["f64", "i64", "str", "decimal[12,2]"]) if t != "u64" else self.choice(["f64", "str"])
        elif t in FLOATS:
            to = self.choice(["i64", "f64"])
        else:
            to = "f64"
        if to == "i64" and t in FLOATS:
            sql = f"CAST(trunc({a.sql}) AS BIGINT)"
        else:
            sql = cast_sql(a.sql, to)
        return Ex({"cast": a.j, "to": to, "strict": True}, sql, to)

    def fill(self, f, a):
        others = [c for c in f.cols if c.type == a.t and c.name != a.j.get("col")]
        if others and self.chance(0.5):
            b = self.colx(self.choice(others))
            lit = self.literal(a.t)
            return Ex({"fn": "coalesce", "args": [a.j, b.j, lit.j]}, f"COALESCE({a.sql}, {b.sql}, {lit.sql})", a.t)
        lit = self.literal(a.t)
        return Ex({"fn": "fill_null", "args": [a.j, lit.j]}, f"COALESCE({a.sql}, {lit.sql})", a.t)

    def dt_part(self, f):
        c = self.pick(f, lambda c: c.type in ("date", TS))
        if c is None:
            return None
        a = self.colx(c)
        parts = ["year", "month", "day", "weekday"] + (["hour", "minute", "second"] if c.type == TS else [])
        p = self.choice(parts)
        fn_sql = {"weekday": "isodow"}.get(p, p)
        return Ex({"fn": f"dt.{p}", "args": [a.j]}, f"CAST({fn_sql}({a.sql}) AS INTEGER)", "i32")

    def other_expr(self, f):
        """A non-numeric expression: strings, temporal, booleans."""
        kind = self.choice(["str", "str", "temporal", "pred", "fillany"])
        if kind == "str":
            c = self.pick(f, lambda c: c.type == "str")
            if c is not None:
                a = self.colx(c)
                op = self.choice(["upper", "lower", "slice", "strip", "concat", "when"])
                if op == "upper":
                    return Ex({"fn": "str.to_uppercase", "args": [a.j]}, f"upper({a.sql})", "str")
                if op == "lower":
                    return Ex({"fn": "str.to_lowercase", "args": [a.j]}, f"lower({a.sql})", "str")
                if op == "slice":
                    off = int(self.rng.integers(0, 4))
                    ln = int(self.rng.integers(-1, 4))
                    sql = f"substring({a.sql}, {off + 1}" + (f", {ln})" if ln >= 0 else ")")
                    return Ex({"fn": "str.slice", "args": [a.j], "i0": off, "i1": ln}, sql, "str")
                if op == "strip":
                    return Ex({"fn": "str.strip_chars", "args": [a.j], "s0": ""}, f"trim({a.sql})", "str")
                if op == "concat":
                    b = self.colx(self.pick(f, lambda c: c.type == "str"))
                    sep = self.choice(["", "-", "|"])
                    return Ex({"fn": "concat_str", "args": [a.j, b.j], "s0": sep},
                              f"({a.sql} || {lit_sql(sep, 'str')} || {b.sql})", "str")
                cond = self.pred(f, 1)
                if cond is not None:
                    return self.when(cond, a, self.literal("str"), "str")
                return a
        if kind == "temporal":
            c = self.pick(f, lambda c: c.type in ("date", TS))
            if c is not None:
                a = self.colx(c)
                op = self.choice(["truncate", "date", "diff", "add_days"])
                if op == "truncate":
                    every = self.choice(["1d", "1mo", "1y", "1w"] + (["1h", "15m"] if c.type == TS else []))
                    unit = {"1d": "day", "1mo": "month", "1y": "year", "1w": "week", "1h": "hour"}.get(every)
                    inner = f"date_trunc('{unit}', {a.sql})" if unit else f"time_bucket(INTERVAL 15 MINUTE, {a.sql})"
                    return Ex({"fn": "dt.truncate", "args": [a.j], "s0": every}, cast_sql(inner, c.type), c.type)
                if op == "date" and c.type == TS:
                    return Ex({"fn": "dt.date", "args": [a.j]}, f"CAST({a.sql} AS DATE)", "date")
                if op == "diff" and c.type == "date":
                    other = self.pick(f, lambda c: c.type == "date")
                    b = self.colx(other) if self.chance(0.5) else self.literal("date")
                    return Ex({"fn": "dt.total_days", "args": [{"fn": "sub", "args": [a.j, b.j]}]},
                              f"CAST(({a.sql} - {b.sql}) AS BIGINT)", "i64")
                if op == "add_days" and c.type == "date":
                    k = int(self.rng.integers(-40, 40))
                    return Ex({"fn": "add", "args": [a.j, {"lit": k * 86400000, "type": "duration[ms]"}]},
                              f"CAST({a.sql} + INTERVAL ({k}) DAY AS DATE)", "date")
                return a
        if kind == "pred":
            p = self.pred(f, 0)
            if p is not None:
                return p
        c = self.pick(f, lambda c: c.bounded)
        if c is None:
            return None
        return self.fill(f, self.colx(c))

    def any_expr(self, f):
        e = self.num_expr(f) if self.chance(0.55) else self.other_expr(f)
        if e is None:
            e = self.other_expr(f) or self.num_expr(f)
        return e

    # ---------------------------------------------------------------- predicates
    def pred(self, f, depth=0):
        kinds = ["cmp", "cmp", "cmp_col", "null", "is_in", "between", "str", "bool"]
        if depth < 2:
            kinds += ["and", "or", "not", "xor"]
        kind = self.choice(kinds)
        if kind in ("and", "or", "xor"):
            a, b = self.pred(f, depth + 1), self.pred(f, depth + 1)
            if a is None or b is None:
                return a or b
            sql = {"and": f"({a.sql} AND {b.sql})", "or": f"({a.sql} OR {b.sql})", "xor": f"({a.sql} <> {b.sql})"}[kind]
            return Ex({"fn": kind, "args": [a.j, b.j]}, sql, "bool")
        if kind == "not":
            a = self.pred(f, depth + 1)
            return None if a is None else Ex({"fn": "not", "args": [a.j]}, f"(NOT {a.sql})", "bool")
        if kind == "null":
            c = self.choice(f.cols)
            neg = self.chance(0.5)
            return Ex({"fn": "is_not_null" if neg else "is_null", "args": [{"col": c.name}]},
                      f"({q(c.name)} IS {'NOT ' if neg else ''}NULL)", "bool")
        if kind == "bool":
            c = self.pick(f, lambda c: c.type == "bool")
            if c is not None:
                return self.colx(c)
            kind = "cmp"
        if kind == "str":
            c = self.pick(f, lambda c: c.type == "str")
            if c is not None:
                p = self.choice(["a", "b", "", "é", "ab", " ", "z"])
                op = self.choice(["starts_with", "ends_with", "contains"])
                j = {"fn": f"str.{op}", "args": [{"col": c.name}, {"lit": p}]}
                if op == "contains":
                    j["flag"] = True
                return Ex(j, f"{op}({q(c.name)}, {lit_sql(p, 'str')})", "bool")
            kind = "cmp"
        if kind == "is_in":
            c = self.pick(f, lambda c: c.type in INTS or c.type == "str" or c.type == "date")
            if c is not None:
                vals = []
                for _ in range(int(self.rng.integers(1, 5))):
                    v = self.literal(c.type, c).j["lit"]
                    if v not in vals:
                        vals.append(v)
                return Ex({"fn": "is_in", "args": [{"col": c.name}], "list": vals, "list_type": c.type},
                          f"({q(c.name)} IN ({', '.join(lit_sql(v, c.type) for v in vals)}))", "bool")
            kind = "cmp"
        if kind == "between":
            c = self.pick(f, lambda c: (is_numeric(c.type) and c.bounded) or c.type in ("date", "str"))
            if c is not None:
                lo, hi = self.literal(c.type, c), self.literal(c.type, c)
                closed = self.choice(["both", "left", "right", "none"])
                x = q(c.name)
                lo_op = ">=" if closed in ("both", "left") else ">"
                hi_op = "<=" if closed in ("both", "right") else "<"
                return Ex({"fn": "is_between", "args": [{"col": c.name}, lo.j, hi.j], "s0": closed},
                          f"(({x} {lo_op} {lo.sql}) AND ({x} {hi_op} {hi.sql}))", "bool")
            kind = "cmp"
        op = self.choice(["eq", "neq", "lt", "lt_eq", "gt", "gt_eq"])
        sym = {"eq": "=", "neq": "<>", "lt": "<", "lt_eq": "<=", "gt": ">", "gt_eq": ">="}[op]
        if kind == "cmp_col":
            c = self.pick(f, lambda c: c.bounded and c.type != "bool")
            if c is not None:
                others = [d for d in f.cols if d.bounded and d is not c and
                          (d.type == c.type or (is_numeric(d.type) and is_numeric(c.type) and
                                                common_type(d.type, c.type) not in (None, "f64") or
                                                (d.type in FLOATS and c.type in FLOATS)))]
                if others:
                    d = self.choice(others)
                    t = common_type(c.type, d.type) if is_numeric(c.type) else c.type
                    return Ex({"fn": op, "args": [{"col": c.name}, {"col": d.name}]},
                              f"({cast_sql(q(c.name), t)} {sym} {cast_sql(q(d.name), t)})", "bool")
        c = self.pick(f, lambda c: c.type != "bool" or op in ("eq", "neq"))
        if c is None:
            return None
        if self.chance(0.25) and is_numeric(c.type) and c.bounded:
            e = self.num_expr(f)
            if e is not None and e.t in INTS + FLOATS:
                lit = self.literal(e.t if e.t in FLOATS or e.t in SIGNED else "i64")
                t = common_type(e.t, lit.t)
                if t is not None and not (e.t == "u64" and lit.t == "i64"):
                    return Ex({"fn": op, "args": [e.j, lit.j]}, f"({cast_sql(e.sql, t)} {sym} {cast_sql(lit.sql, t)})", "bool")
        lit = self.literal(c.type, c)
        return Ex({"fn": op, "args": [{"col": c.name}, lit.j]}, f"({q(c.name)} {sym} {lit.sql})", "bool")

    # ---------------------------------------------------------------- aggregations
    def agg_expr(self, f, window_keys=None):
        """An aggregation of a column of `f` (for group_by, select or .over(window_keys))."""
        ops = ["sum", "mean", "min", "max", "count", "len", "n_unique", "std", "var", "median", "quantile", "any",
               "all"]
        if f.ordered:
            ops += ["first", "last"]
        op = self.choice(ops)
        if op == "len":
            return self.agg_sql("len", None, window_keys, f)
        if op in ("sum", "mean", "std", "var", "median", "quantile"):
            pred = lambda c: (is_numeric(c.type) and (c.bounded or op not in ("sum",))) or (c.type == "bool" and op != "median" and op != "quantile")
        elif op in ("min", "max"):
            pred = lambda c: c.type != "bool" and (c.bounded or True)
        elif op in ("any", "all"):
            pred = lambda c: c.type == "bool"
        else:
            pred = lambda c: True
        c = self.pick(f, pred)
        if c is None:
            return self.agg_sql("count", self.colx(self.choice(f.cols)), window_keys, f)
        if op in ("median", "quantile") and c.attrs.get("inf"):
            op = "std"  # DuckDB interpolates between equal infinities to NaN, Polars does not
        a = self.colx(c)
        a.nan = bool(c.attrs.get("nan"))
        if op in ("sum", "mean") and self.chance(0.2) and is_numeric(c.type) and c.bounded:
            e = self.num_expr(f)
            if e is not None and is_numeric(e.t):
                a = e
        return self.agg_sql(op, a, window_keys, f)

    def agg_sql(self, op, a, keys, f):
        over = ""
        if keys is not None:
            over = " OVER (PARTITION BY " + ", ".join(q(k) for k in keys) + ")"
        t = agg_result_type(op, a.t if a is not None else "i64")
        j = {"agg": op} if a is None else {"agg": op, "arg": a.j}
        x = a.sql if a is not None else None
        if op == "len":
            sql = f"CAST(count(*){over} AS BIGINT)"
        elif op == "count":
            sql = f"CAST(count({x}){over} AS BIGINT)"
        elif op == "sum":
            inner = f"CAST({x} AS INTEGER)" if a.t == "bool" else x
            sql = f"CAST(COALESCE(sum({inner}){over}, 0) AS {duck_type(t)})"
        elif op == "mean":
            sql = f"avg(CAST({x} AS DOUBLE)){over}"
        elif op in ("min", "max") and a.nan:
            # Polars' min / max skip NaN unless every value is NaN; DuckDB's max is NaN
            sql = f"COALESCE({op}(CASE WHEN isnan({x}) THEN NULL ELSE {x} END){over}, {op}({x}){over})"
        elif op in ("min", "max"):
            sql = f"{op}({x}){over}"
        elif op == "n_unique":
            sql = (f"CAST(count(DISTINCT {x}){over} + COALESCE(max(CASE WHEN {x} IS NULL THEN 1 ELSE 0 END){over}, 0) "
                   "AS BIGINT)")
        elif op in ("std", "var"):
            j["ddof"] = 1
            sql = f"{'stddev_samp' if op == 'std' else 'var_samp'}(CAST({x} AS DOUBLE)){over}"
        elif op == "median":
            sql = f"quantile_cont(CAST({x} AS DOUBLE), 0.5){over}"
        elif op == "quantile":
            qv = float(self.choice([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 0.33]))
            interp = "linear" if keys is not None else self.choice(["linear", "nearest", "lower", "higher", "midpoint"])
            j["q"] = qv
            j["interpolation"] = interp
            if interp == "linear":
                sql = f"quantile_cont(CAST({x} AS DOUBLE), {qv!r}){over}"
            else:
                lst = f"list_sort(list(CAST({x} AS DOUBLE)) FILTER (WHERE {x} IS NOT NULL))"
                pos = f"({qv!r} * CAST(count({x}) - 1 AS DOUBLE))"
                lo_i, hi_i = f"CAST(floor({pos}) AS BIGINT)", f"CAST(ceil({pos}) AS BIGINT)"
                if interp == "nearest":
                    val = f"list_extract({lst}, CAST(round({pos}) AS BIGINT) + 1)"
                elif interp == "lower":
                    val = f"list_extract({lst}, {lo_i} + 1)"
                elif interp == "higher":
                    val = f"list_extract({lst}, {hi_i} + 1)"
                else:
                    val = f"((list_extract({lst}, {lo_i} + 1) + list_extract({lst}, {hi_i} + 1)) / 2.0)"
                sql = f"(CASE WHEN count({x}) = 0 THEN NULL ELSE {val} END)"
        elif op in ("any", "all"):
            fn = "bool_or" if op == "any" else "bool_and"
            sql = f"COALESCE({fn}({x}){over}, {'FALSE' if op == 'any' else 'TRUE'})"
        elif op in ("first", "last"):
            if keys is not None:
                fn = "first_value" if op == "first" else "last_value"
                sql = (f"{fn}({x}) OVER (PARTITION BY {', '.join(q(k) for k in keys)} ORDER BY \"__ord\" "
                       "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)")
            else:
                sql = f"{op}({x} ORDER BY \"__ord\")"
        else:
            raise ValueError(op)
        if keys is not None:
            j = {"over": j, "by": [{"col": k} for k in keys]}
        # the value of an unbounded column (an extreme, a NaN) stays out of arithmetic and casts
        keeps = op in ("sum", "mean", "min", "max", "first", "last", "std", "var", "median", "quantile")
        return Ex(j, sql, t, bounded=a.bounded if keeps and a is not None else True, agg=True)

    # ---------------------------------------------------------------- plan operators
    def scan(self, name):
        cols = [copy.deepcopy(c) for c in self.tables[name]]
        cte = self.cte(f"SELECT {', '.join(q(c.name) for c in cols)}, \"__ord\" FROM {q(name)}")
        return Frame({"op": "scan", "table": name}, cte, cols, True)

    def derive(self, f, plan, sql, cols, ordered):
        return Frame(plan, self.cte(sql), cols, ordered)

    def op_filter(self, f):
        p = self.pred(f)
        if p is None:
            return f
        return self.derive(f, {"op": "filter", "input": f.plan, "predicate": p.j},
                           f"SELECT * FROM {f.cte} WHERE {p.sql}", f.cols, f.ordered)

    @staticmethod
    def col_of(name, e, f=None):
        """The column an expression makes. A float computed by an aggregation, or from such a column, is
        marked inexact: its last bits depend on the summation order, which differs between engines and
        between plans that partition the rows differently (a filter pushed below a group_by)."""
        inexact = e.t in FLOATS and (e.agg or (f is not None and any(c.attrs.get("inexact") for c in f.cols)))
        attrs = {"inexact": True} if inexact else {}
        if e.t in FLOATS and f is not None:  # a float from a frame with NaN / inf may hold them too
            for flag in ("nan", "inf"):
                if any(c.attrs.get(flag) for c in f.cols):
                    attrs[flag] = True
        return Col(name, e.t, bounded=e.bounded, attrs=attrs)

    def new_cols(self, f, n):
        out = []
        for _ in range(n):
            e = self.any_expr(f)
            if e is None:
                continue
            out.append((self.fresh(), e))
        return out

    def op_select(self, f):
        if self.chance(0.2):
            # global aggregation: one row
            aggs = [(self.fresh("a"), self.agg_expr(f)) for _ in range(int(self.rng.integers(1, 4)))]
            plan = {"op": "select", "input": f.plan, "exprs": [{"alias": e.j, "name": n} for n, e in aggs]}
            sql = f"SELECT {', '.join(f'{e.sql} AS {q(n)}' for n, e in aggs)}, 0 AS \"__ord\" FROM {f.cte}"
            return self.derive(f, plan, sql, [self.col_of(n, e, f) for n, e in aggs], True)
        keep = [c for c in f.cols if self.chance(0.6)] or [f.cols[0]]
        new = self.new_cols(f, int(self.rng.integers(0, 3)))
        if self.chance(0.25):
            keys = self.window_keys(f)
            if keys:
                new.append((self.fresh("w"), self.agg_expr(f, keys)))
        exprs = [{"col": c.name} for c in keep] + [{"alias": e.j, "name": n} for n, e in new]
        sql_items = [q(c.name) for c in keep] + [f"{e.sql} AS {q(n)}" for n, e in new]
        cols = [copy.deepcopy(c) for c in keep] + [self.col_of(n, e, f) for n, e in new]
        sql = f"SELECT {', '.join(sql_items)}{self.ord_col(f)} FROM {f.cte}"
        return self.derive(f, {"op": "select", "input": f.plan, "exprs": exprs}, sql, cols, f.ordered)

    def window_keys(self, f):
        cands = [c.name for c in f.cols if c.small or c.type in ("bool", "str")]
        if not cands:
            return None
        n = 1 if len(cands) == 1 or self.chance(0.7) else 2
        return [str(x) for x in self.rng.choice(cands, size=n, replace=False)]

    def op_with_columns(self, f):
        new = self.new_cols(f, int(self.rng.integers(1, 3)))
        if self.chance(0.4):
            keys = self.window_keys(f)
            if keys:
                new.append((self.fresh("w"), self.agg_expr(f, keys)))
        if self.chance(0.25):
            e = self.window_compare(f)
            if e is not None:
                new.append((self.fresh("c"), e))
        # sometimes replace an existing column in place
        if new and self.chance(0.3):
            victim = self.choice(f.cols).name
            if victim not in [n for n, _ in new]:
                new[0] = (victim, new[0][1])
        exprs = [{"alias": e.j, "name": n} for n, e in new]
        by_name = dict(new)
        items, cols = [], []
        for c in f.cols:
            if c.name in by_name:
                e = by_name.pop(c.name)
                items.append(f"{e.sql} AS {q(c.name)}")
                cols.append(self.col_of(c.name, e, f))
            else:
                items.append(q(c.name))
                cols.append(copy.deepcopy(c))
        for n, e in new:
            if n in by_name:
                items.append(f"{e.sql} AS {q(n)}")
                cols.append(self.col_of(n, e, f))
        sql = f"SELECT {', '.join(items)}{self.ord_col(f)} FROM {f.cte}"
        return self.derive(f, {"op": "with_columns", "input": f.plan, "exprs": exprs}, sql, cols, f.ordered)

    def op_group_by(self, f):
        keys = self.window_keys(f)
        if not keys:
            keys = [self.choice(f.cols).name]
        aggs = [(self.fresh("a"), self.agg_expr(f)) for _ in range(int(self.rng.integers(1, 5)))]
        maintain = self.chance(0.5)
        plan = {"op": "group_by", "input": f.plan, "keys": [{"col": k} for k in keys],
                "aggs": [{"alias": e.j, "name": n} for n, e in aggs], "maintain_order": maintain}
        ordered = maintain and f.ordered
        items = [q(k) for k in keys] + [f"{e.sql} AS {q(n)}" for n, e in aggs]
        if ordered:
            items.append('min("__ord") AS "__ord"')
        sql = f"SELECT {', '.join(items)} FROM {f.cte} GROUP BY {', '.join(q(k) for k in keys)}"
        cols = [Col(k, f.col(k).type, bounded=f.col(k).bounded, unique=True, small=f.col(k).small,
                    attrs=f.col(k).attrs) for k in keys] + [self.col_of(n, e, f) for n, e in aggs]
        for c in cols[:len(keys)]:
            c.unique = False  # unique values, but the sort generator needs a non-null total key
        return self.derive(f, plan, sql, cols, ordered)

    def op_join(self, f, right_table):
        r = self.scan(right_table)
        if self.chance(0.3):
            r = self.op_filter(r)
        how = self.choice(["inner", "inner", "left", "left", "right", "full", "semi", "anti", "cross"])
        if how == "cross" and (len(f.cols) > 12):
            how = "inner"
        pairs = []
        if how != "cross":
            lk = [c for c in f.cols if c.type in INTS + ["str", "date", "bool"]]
            for rc in r.cols:
                for lc in lk:
                    if (lc.type == rc.type or (lc.type in INTS and rc.type in INTS and
                                               common_type(lc.type, rc.type) != "f64")) and \
                            (lc.name == rc.name or self.chance(0.1)):
                        pairs.append((lc.name, rc.name))
            if not pairs:
                return f
            self.rng.shuffle(pairs)
            # one or two pairs with distinct columns on each side
            chosen, used_l, used_r = [], set(), set()
            for lname, rname in pairs:
                if lname not in used_l and rname not in used_r:
                    chosen.append((lname, rname))
                    used_l.add(lname)
                    used_r.add(rname)
                if len(chosen) == (2 if self.chance(0.3) else 1):
                    break
            pairs = chosen
        suffix = self.choice(["_right", "_r"])
        lkeys, rkeys = [p[0] for p in pairs], [p[1] for p in pairs]
        coalesce = how in ("inner", "left", "right")
        names, items, cols = [], [], []

        def add(name, item_sql, col):
            if name in names:
                name = name + suffix
            if name in names:
                raise _Skip()
            names.append(name)
            items.append(f"{item_sql} AS {q(name)}")
            c = copy.deepcopy(col)
            c.name = name
            c.unique = False
            cols.append(c)

        try:
            if how in ("semi", "anti"):
                for c in f.cols:
                    add(c.name, f"l.{q(c.name)}", c)
            elif how == "right":
                for c in f.cols:
                    if not (coalesce and c.name in lkeys):
                        add(c.name, f"l.{q(c.name)}", c)
                for c in r.cols:
                    add(c.name, f"r.{q(c.name)}", c)
            else:
                for c in f.cols:
                    add(c.name, f"l.{q(c.name)}", c)
                for c in r.cols:
                    if not (coalesce and c.name in rkeys):
                        add(c.name, f"r.{q(c.name)}", c)
        except _Skip:
            return f
        on = " AND ".join(f"l.{q(a)} = r.{q(b)}" for a, b in pairs)
        if how == "semi" or how == "anti":
            sql = (f"SELECT {', '.join(items)} FROM {f.cte} l WHERE {'NOT ' if how == 'anti' else ''}EXISTS "
                   f"(SELECT 1 FROM {r.cte} r WHERE {on})")
        elif how == "cross":
            sql = f"SELECT {', '.join(items)} FROM {f.cte} l CROSS JOIN {r.cte} r"
        else:
            kw = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL OUTER JOIN"}[how]
            sql = f"SELECT {', '.join(items)} FROM {f.cte} l {kw} {r.cte} r ON {on}"
        plan = {"op": "join", "left": f.plan, "right": r.plan, "how": how, "suffix": suffix}
        if how != "cross":
            plan["left_on"] = [{"col": k} for k in lkeys]
            plan["right_on"] = [{"col": k} for k in rkeys]
        return self.derive(f, plan, sql, cols, False)

    def op_sort(self, f):
        keys = [str(x) for x in self.rng.choice(f.names(), size=min(len(f.cols), int(self.rng.integers(1, 4))),
                                                replace=False)]
        uniq = [c.name for c in f.cols if c.unique]
        if uniq and self.chance(0.6) and uniq[0] not in keys:
            keys.append(uniq[0])
        desc = [self.chance(0.4) for _ in keys]
        nl = [self.chance(0.4) for _ in keys]
        stable = self.chance(0.5)
        total = any(f.col(k).unique for k in keys)
        ordered = total or (stable and f.ordered)
        order = ", ".join(f"{q(k)} {'DESC' if d else 'ASC'} NULLS {'LAST' if n else 'FIRST'}"
                          for k, d, n in zip(keys, desc, nl))
        if ordered:
            tie = ', "__ord"' if f.ordered else ""
            sql = f"SELECT {self.sel_cols(f)}, row_number() OVER (ORDER BY {order}{tie}) AS \"__ord\" FROM {f.cte}"
        else:
            sql = f"SELECT {self.sel_cols(f)} FROM {f.cte}"
        plan = {"op": "sort", "input": f.plan, "by": [{"col": k} for k in keys], "descending": desc,
                "nulls_last": nl, "stable": stable}
        return self.derive(f, plan, sql, f.cols, ordered)

    def op_slice(self, f):
        kind = self.choice(["slice", "head", "tail"])
        n = int(self.rng.choice([0, 1, 2, 5, 31, 32, 33, 100, 1000]))
        if kind == "head":
            off, ln, plan = 0, n, {"op": "head", "input": f.plan, "n": n}
        elif kind == "tail":
            off, ln, plan = -n, n, {"op": "tail", "input": f.plan, "n": n}
        else:
            off = int(self.rng.integers(-40, 40))
            ln = int(self.rng.choice([-1, 0, 1, 3, 10, 50]))
            plan = {"op": "slice", "input": f.plan, "offset": off, "length": ln}
        start = f"{off}" if off >= 0 else f"(__n + ({off}))"
        cond = f"__rn >= {start}" + (f" AND __rn < {start} + {ln}" if ln >= 0 else "")
        sql = (f"SELECT {self.sel_cols(f)}, \"__ord\" FROM (SELECT *, row_number() OVER (ORDER BY \"__ord\") - 1 AS __rn, "
               f"count(*) OVER () AS __n FROM {f.cte}) WHERE {cond}")
        return self.derive(f, plan, sql, f.cols, True)

    def op_unique(self, f):
        keeps = ["any", "none"] + (["first", "last"] if f.ordered else [])
        keep = self.choice(keeps)
        # rows are told apart by exact columns only (col_of: inexact floats)
        exact = [c.name for c in f.cols if not c.attrs.get("inexact")]
        if not exact:
            return self.op_filter(f)
        subset = []
        if (keep != "any" and self.chance(0.7)) or len(exact) < len(f.cols):
            subset = [str(x) for x in self.rng.choice(exact, size=min(len(exact), int(self.rng.integers(1, 3))),
                                                      replace=False)]
            if keep == "any":  # the kept row of a duplicate set is any one: its other columns may differ
                keep = "first" if f.ordered else "none"
        maintain = self.chance(0.5)
        ordered = maintain and f.ordered
        part = ", ".join(q(c) for c in (subset or f.names()))
        if keep == "any":
            if ordered:
                sql = f"SELECT {self.sel_cols(f)}, min(\"__ord\") AS \"__ord\" FROM {f.cte} GROUP BY {part}"
            else:
                sql = f"SELECT DISTINCT {self.sel_cols(f)} FROM {f.cte}"
        elif keep == "none":
            sql = (f"SELECT {self.sel_cols(f)}{ORD if ordered else ''} FROM (SELECT *, count(*) OVER "
                   f"(PARTITION BY {part}) AS __cnt FROM {f.cte}) WHERE __cnt = 1")
        else:
            d = "DESC" if keep == "last" else "ASC"
            sql = (f"SELECT {self.sel_cols(f)}{ORD if ordered else ''} FROM (SELECT *, row_number() OVER "
                   f"(PARTITION BY {part} ORDER BY \"__ord\" {d}) AS __r FROM {f.cte}) WHERE __r = 1")
        plan = {"op": "unique", "input": f.plan, "subset": subset, "keep": keep, "maintain_order": maintain}
        return self.derive(f, plan, sql, f.cols, ordered)

    def op_concat(self, f):
        g = self.op_filter(f) if self.chance(0.7) else f
        if f.ordered and g.ordered:
            sql = (f"SELECT {self.sel_cols(f)}, \"__ord\" FROM {f.cte} UNION ALL SELECT {self.sel_cols(g)}, "
                   f"\"__ord\" + (SELECT COALESCE(max(\"__ord\"), 0) + 1 FROM {f.cte}) FROM {g.cte}")
        else:
            sql = f"SELECT {self.sel_cols(f)} FROM {f.cte} UNION ALL SELECT {self.sel_cols(g)} FROM {g.cte}"
        cols = [copy.deepcopy(c) for c in f.cols]
        for c in cols:
            c.unique = False
        return self.derive(f, {"op": "concat", "inputs": [f.plan, g.plan]}, sql, cols, f.ordered and g.ordered)

    def op_row_index(self, f):
        name = self.fresh("idx")
        off = int(self.rng.choice([0, 0, 1, 100]))
        sql = (f"SELECT CAST(row_number() OVER (ORDER BY \"__ord\") - 1 + {off} AS BIGINT) AS {q(name)}, "
               f"{self.sel_cols(f)}, \"__ord\" FROM {f.cte}")
        cols = [Col(name, "i64", unique=True)] + f.cols
        return self.derive(f, {"op": "with_row_index", "input": f.plan, "name": name, "offset": off}, sql, cols, True)

    def op_rename(self, f):
        c = self.choice(f.cols)
        new = self.fresh("r")
        items = [f"{q(x.name)} AS {q(new if x.name == c.name else x.name)}" for x in f.cols]
        cols = []
        for x in f.cols:
            y = copy.deepcopy(x)
            if x.name == c.name:
                y.name = new
            cols.append(y)
        sql = f"SELECT {', '.join(items)}{self.ord_col(f)} FROM {f.cte}"
        return self.derive(f, {"op": "rename", "input": f.plan, "mapping": {c.name: new}}, sql, cols, f.ordered)

    def op_drop(self, f):
        if len(f.cols) < 2:
            return f
        c = self.choice(f.cols)
        cols = [x for x in f.cols if x.name != c.name]
        sql = f"SELECT {', '.join(q(x.name) for x in cols)}{self.ord_col(f)} FROM {f.cte}"
        return self.derive(f, {"op": "drop", "input": f.plan, "columns": [c.name]}, sql, cols, f.ordered)

    # ---------------------------------------------------------------- whole queries
    def probe(self, f):
        """One select over the scan of numerically hard expressions: round / floor / ceil of decimals
        (high-precision ones too, whose 39th digit raises on both sides: every row is evaluated by both
        engines, which no filter, join, slice or dropped column of a longer query could change), the
        columns against their window aggregates, and std / var / median of every numeric column."""
        exprs = []
        for c in f.cols:
            if is_dec(c.type) and self.chance(0.7):
                exprs.append((self.fresh("d"), self.dec_round(self.colx(c))))
            keys = self.window_keys(f)
            if is_numeric(c.type) and keys and self.chance(0.5):
                op = self.choice(["std", "var", "median", "quantile"])
                if op in ("median", "quantile") and c.attrs.get("inf"):
                    op = "var"
                a = self.colx(c)
                a.nan = bool(c.attrs.get("nan"))
                exprs.append((self.fresh("a"), self.agg_sql(op, a, keys, f)))
        for _ in range(int(self.rng.integers(0, 3))):
            e = self.window_compare(f)
            if e is not None:
                exprs.append((self.fresh("c"), e))
        if not exprs:
            return None
        keep = [c for c in f.cols if self.chance(0.3)]
        items = [q(c.name) for c in keep] + [f"{e.sql} AS {q(n)}" for n, e in exprs]
        plan = {"op": "select", "input": f.plan,
                "exprs": [{"col": c.name} for c in keep] + [{"alias": e.j, "name": n} for n, e in exprs]}
        cols = [copy.deepcopy(c) for c in keep] + [self.col_of(n, e, f) for n, e in exprs]
        return self.derive(f, plan, f"SELECT {', '.join(items)}{self.ord_col(f)} FROM {f.cte}", cols, f.ordered)

    def query(self):
        """Returns (plan, sql, expected_types, ordered)."""
        names = list(self.tables)
        f = self.scan(names[0])
        probed = self.probe(f) if self.chance(0.12) else None
        if probed is not None:
            return self.finish(probed)
        ops = ["filter", "select", "with_columns", "group_by", "sort", "slice", "unique", "concat", "row_index",
               "rename", "drop", "join"]
        weights = np.array([3, 2, 3, 3, 2, 2, 1.5, 1, 1.5, 0.5, 0.5, 2.5])
        n_ops = int(self.rng.integers(1, 5))
        joined = False
        for _ in range(n_ops):
            op = str(self.rng.choice(ops, p=weights / weights.sum()))
            if op == "join" and (joined or len(names) < 2):
                op = "filter"
            if op in ("slice", "row_index") and not f.ordered:
                op = "sort"
            if op == "join":
                joined = True
                f = self.op_join(f, names[1])
            else:
                f = getattr(self, f"op_{op}")(f)
        return self.finish(f)

    def finish(self, f):
        """(plan, sql, expected_types, ordered) of frame `f`."""
        final = f"SELECT {', '.join(q(c.name) for c in f.cols)} FROM {f.cte}"
        if f.ordered:
            final += ' ORDER BY "__ord"'
        sql = "WITH " + ",\n".join(f"{n} AS ({s})" for n, s in self.ctes) + "\n" + final
        return f.plan, sql, [(c.name, c.type) for c in f.cols], f.ordered


class _Skip(Exception):
    pass
