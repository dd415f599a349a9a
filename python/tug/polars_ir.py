"""tug as an engine for Polars queries: ``lf.collect(engine=tug.polars_engine())`` (docs/python.md).

Polars (2.x) lets an engine (``polars.lazyframe.engine.Engine``, marked unstable by Polars) receive its
optimized plan through a post-optimization callback, the hook cudf-polars uses. This engine walks that
plan (Polars' IR, NodeTraverser version 16), translates it into a tug LazyFrame and hands Polars a
function that runs it on tug. When a node or expression has no translation, the whole query runs on
Polars instead, per ``fallback``: "warn" (a warning naming the reason), "raise" (tug.NotSupportedError)
or "silent". ``engine.fallbacks`` lists the reasons of the last query.

Supported (docs/python.md): DataFrame and Parquet scans (projection, row slice, predicate), Select,
HStack (with_columns), SimpleProjection, Filter, GroupBy, Join (inner, left, right, full, semi, anti,
cross), Sort (with its slice), Slice, Distinct, Union, Cache; expressions: columns, literals, binary
operators, casts, when/then/otherwise, len, the aggregations tug has, over(), and a set of functions
(is_in, is_null, is_not_null, not, str.starts_with/ends_with/contains/len_chars/len_bytes/
to_uppercase/to_lowercase, dt.year/month/day/hour/minute/second/weekday, quantile, fill_null, abs).
"""
from __future__ import annotations

import warnings

from . import expr as _expr_mod
from .datatypes import to_tug
from .exceptions import NotSupportedError, TugError
from .expr import Expr, col, lit, when
from .frame import LazyFrame, from_arrow, scan_parquet
from .options import EngineOptions

try:  # the hook exists from Polars 2.0 on
    from polars.lazyframe.engine import Engine as _PolarsEngine
except ImportError:  # pragma: no cover - older Polars
    _PolarsEngine = object

SUPPORTED_IR_VERSION = 16


class _Unsupported(Exception):
    pass


def _need(cond, what):
    if not cond:
        raise _Unsupported(what)


_BINARY = {
    "Eq": "__eq__", "NotEq": "__ne__", "Lt": "__lt__", "LtEq": "__le__", "Gt": "__gt__", "GtEq": "__ge__",
    "Plus": "__add__", "Minus": "__sub__", "Multiply": "__mul__", "TrueDivide": "__truediv__",
    "FloorDivide": "__floordiv__", "Modulus": "__mod__", "And": "__and__", "Or": "__or__", "Xor": "__xor__",
    "LogicalAnd": "__and__", "LogicalOr": "__or__",
}
_AGGS = {"sum", "mean", "min", "max", "median", "n_unique", "first", "last"}
_STR_UNARY = {"LenChars": "len_chars", "LenBytes": "len_bytes", "Uppercase": "to_uppercase",
              "Lowercase": "to_lowercase"}
_DT_UNARY = {"Year": "year", "Month": "month", "Day": "day", "Hour": "hour", "Minute": "minute",
             "Second": "second", "WeekDay": "weekday"}


class _Translator:
    """Polars IR (through its NodeTraverser) to a tug LazyFrame."""

    def __init__(self, nt):
        self.nt = nt

    # --- expressions
    def expr(self, node: int) -> Expr:
        e = self.nt.view_expression(node)
        kind = type(e).__name__
        if kind == "Column":
            return col(e.name)
        if kind == "Literal":
            return self.literal(e.value, e.dtype)
        if kind == "Len":
            return _expr_mod.len()
        if kind == "BinaryExpr":
            op = str(e.op).split(".")[-1]
            _need(op in _BINARY, f"binary operator {op}")
            return getattr(self.expr(e.left), _BINARY[op])(self.expr(e.right))
        if kind == "Cast":
            return self.expr(e.expr).cast(self.dtype(e.dtype), strict=e.options == 0)
        if kind == "Ternary":
            return when(self.expr(e.predicate)).then(self.expr(e.truthy)).otherwise(self.expr(e.falsy))
        if kind == "Agg":
            return self.agg(e)
        if kind == "Window":
            _need(e.order_by is None, "over() with order_by")
            fn = self.expr(e.function)
            return fn.over(*[self.expr(p) for p in e.partition_by])
        if kind == "Function":
            return self.function(e)
        raise _Unsupported(f"expression {kind}")

    def literal(self, value, dtype) -> Expr:
        name = type(dtype).__name__ if not isinstance(dtype, type) else dtype.__name__
        _need(name not in ("List", "Struct", "Array", "Object", "Binary", "Categorical", "Enum", "Time"),
              f"literal of type {dtype}")
        if value is None:
            return lit(None, dtype=self.dtype(dtype)) if name not in ("Null", "Unknown") else lit(None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and name in ("Int64", "Float64", "Unknown"):
            return lit(value)  # Python numbers: dynamic, as Polars made them
        return lit(value, dtype=self.dtype(dtype))

    def dtype(self, dtype):
        try:
            to_tug(dtype)
        except Exception as e:  # noqa: BLE001 - any type tug cannot name
            raise _Unsupported(f"data type {dtype}") from e
        return dtype

    def agg(self, e) -> Expr:
        name = e.name
        arg = self.expr(e.arguments[0])
        if name == "sum" and e.options is True:  # Polars' form of when(x.count() > 0).then(x.sum())
            return when(arg.count() > 0).then(arg.sum())
        if name in _AGGS:
            _need(not e.options, f"{name}() with option {e.options!r}")
            return getattr(arg, name)()
        if name == "count":
            _need(e.options is False, "count(include_nulls)")
            return arg.count()
        if name in ("std", "var"):
            return getattr(arg, name)(ddof=int(e.options))
        raise _Unsupported(f"aggregation {name}")

    def function(self, e) -> Expr:
        data = e.function_data
        head = data[0]
        args = e.input
        if isinstance(head, str):
            if head == "dynamic_pred":  # a top-k pruning predicate: dropping it keeps the answer
                return lit(True)
            if head == "fused":  # fused multiply-add forms Polars' optimizer makes
                a, b, c = (self.expr(i) for i in args)
                forms = {"fma": lambda: a + b * c, "fsm": lambda: a - b * c, "fms": lambda: a * b - c}
                _need(data[1] in forms, f"fused operator {data[1]}")
                return forms[data[1]]()
            if head == "fill_null":
                return self.expr(args[0]).fill_null(self.expr(args[1]))
            if head == "quantile":
                q = self.nt.view_expression(args[1])
                _need(type(q).__name__ == "Literal", "quantile with a computed q")
                return self.expr(args[0]).quantile(float(q.value), data[1])
            raise _Unsupported(f"function {head}")
        group, fname = type(head).__name__, str(head).split(".")[-1]
        x = self.expr(args[0])
        if group == "BooleanFunction":
            if fname == "IsNull":
                return x.is_null()
            if fname == "IsNotNull":
                return x.is_not_null()
            if fname == "Not":
                return ~x
            if fname == "IsIn":
                values = self.nt.view_expression(args[1])
                _need(type(values).__name__ == "Literal", "is_in of a computed list")
                return x.is_in(list(values.value))
            if fname == "IsBetween":
                closed = str(data[1]).split(".")[-1].lower()
                return x.is_between(self.expr(args[1]), self.expr(args[2]), closed=closed)
        if group == "StringFunction":
            if fname in _STR_UNARY:
                return getattr(x.str, _STR_UNARY[fname])()
            if fname == "StartsWith":
                return x.str.starts_with(self.expr(args[1]))
            if fname == "EndsWith":
                return x.str.ends_with(self.expr(args[1]))
            if fname == "Contains":
                return x.str.contains(self.expr(args[1]), literal=bool(data[1]))
        if group == "TemporalFunction" and fname in _DT_UNARY:
            return getattr(x.dt, _DT_UNARY[fname])()
        if fname == "FillNull":
            return x.fill_null(self.expr(args[1]))
        if fname == "Abs":
            return x.abs()
        raise _Unsupported(f"function {group}.{fname}")

    def named(self, exprs) -> list:
        return [self.expr(x.node).alias(x.output_name) for x in exprs]

    # --- plan nodes
    def node(self, index: int | None = None) -> LazyFrame:
        nt = self.nt
        here = nt.get_node()
        if index is not None:
            nt.set_node(index)
        try:
            return self._node(nt.view_current_node())
        finally:
            nt.set_node(here)

    def _node(self, n) -> LazyFrame:
        kind = type(n).__name__
        nt = self.nt
        if kind == "DataFrameScan":
            import polars as pl

            # columns outside the node's projection are placeholders (empty structs): export only the others
            df = pl.DataFrame._from_pydf(n.df).select(list(nt.get_schema()))
            lf = from_arrow(df).lazy()
            if n.selection is not None:
                lf = lf.filter(self.expr(n.selection.node))
            return lf
        if kind == "Scan":
            _need(n.scan_type[0] == "parquet", f"{n.scan_type[0]} scan")
            _need(n.hive_parts is None, "hive-partitioned scan")
            fo = n.file_options
            _need(fo.row_index is None and fo.include_file_paths is None and fo.deletion_files is None and
                  fo.column_mapping is None and fo.default_values is None, "scan options")
            lfs = [scan_parquet(p) for p in n.paths]
            lf = lfs[0] if len(lfs) == 1 else LazyFrame(_expr_mod._tug.concat([x._lf for x in lfs]))
            if fo.n_rows is not None:
                lf = lf.slice(fo.n_rows[0], fo.n_rows[1])
            if n.predicate is not None:
                lf = lf.filter(self.expr(n.predicate.node))
            if fo.with_columns is not None:
                lf = lf.select(list(fo.with_columns))
            return lf
        if kind == "Cache":
            return self.node(n.input)
        if kind == "SimpleProjection":
            return self.node(n.input).select(list(nt.get_schema()))
        if kind == "Select":
            return self.node(n.input).select(self.named(n.expr))
        if kind == "HStack":
            return self.node(n.input).with_columns(self.named(n.exprs))
        if kind == "Filter":
            return self.node(n.input).filter(self.expr(n.predicate.node))
        if kind == "Slice":
            return self.node(n.input).slice(n.offset, n.len)
        if kind == "GroupBy":
            _need(not n.apply, "group_by().map_groups()")
            lf = self.node(n.input)
            return lf.group_by(self.named(n.keys), maintain_order=n.maintain_order).agg(self.named(n.aggs))
        if kind == "Sort":
            maintain_order, nulls_last, descending = n.sort_options
            lf = self.node(n.input).sort(self.named(n.by_column), descending=list(descending),
                                         nulls_last=list(nulls_last), maintain_order=maintain_order)
            if n.slice is not None:
                lf = lf.slice(n.slice[0], n.slice[1])
            return lf
        if kind == "Distinct":
            keep, subset, maintain_order, slc = n.options
            _need(keep in ("any", "first", "last", "none"), f"unique(keep={keep})")
            lf = self.node(n.input).unique(subset=list(subset) if subset else None, keep=keep,
                                           maintain_order=maintain_order)
            if slc is not None:
                lf = lf.slice(slc[0], slc[1])
            return lf
        if kind == "Join":
            how, nulls_equal, slc, suffix = n.options[0], n.options[1], n.options[2], n.options[3]
            fused = None
            if isinstance(how, tuple) and len(how) == 2 and how[1] == "fused_predicate":
                how, fused = how[0], n.predicate  # an inner join with a filter Polars fused into it
            _need(isinstance(how, str), f"join how={how}")
            how = how.lower()
            _need(how in ("inner", "left", "right", "full", "semi", "anti", "cross"), f"join how={how}")
            _need(not nulls_equal, "join(nulls_equal=True)")
            _need(n.predicate is None or fused is not None, "join_where")
            coalesce = n.options[4]
            _need(how in ("semi", "anti", "cross") or coalesce == (how != "full"),
                  f"join(how={how}, coalesce={coalesce}) (tug coalesces the keys of all but full joins)")
            left, right = self.node(n.input_left), self.node(n.input_right)
            if how == "cross":
                lf = left.join(right, how="cross", suffix=suffix)
            else:
                lf = left.join(right, how=how, left_on=self.named(n.left_on), right_on=self.named(n.right_on),
                               suffix=suffix)
            if fused is not None:
                lf = lf.filter(self.expr(fused.node))
            if slc is not None:
                lf = lf.slice(slc[0], slc[1])
            return lf.select(list(nt.get_schema()))
        if kind == "Union":
            _need(n.slice is None, "union with a slice")
            return LazyFrame(_expr_mod._tug.concat([self.node(i)._lf for i in n.inputs]))
        raise _Unsupported(f"plan node {kind}")


class PolarsEngine(_PolarsEngine):
    """Runs Polars queries on tug: ``lf.collect(engine=tug.polars_engine(engine="gpu"))``."""

    name = "tug"

    def __init__(self, fallback: str = "warn", **options):
        if fallback not in ("warn", "raise", "silent"):
            raise NotSupportedError(f"fallback={fallback!r} is not one of warn, raise, silent")
        self.fallback = fallback
        self.options = EngineOptions(**options)
        self.fallbacks: list = []  # reasons the last query ran on Polars, empty when it ran on tug
        self.ran_on_tug = False  # whether the last query ran on tug
        self.plan: LazyFrame | None = None  # the last query's translation (explain() shows it)

    def __repr__(self):
        return f"PolarsEngine(fallback={self.fallback!r}, options={self.options!r})"

    def _callback(self, nt, *_):
        try:
            if nt.version()[0] != SUPPORTED_IR_VERSION:
                raise _Unsupported(f"Polars IR version {nt.version()} (tug translates version "
                                   f"{SUPPORTED_IR_VERSION})")
            schema = nt.get_schema()
            plan = _Translator(nt).node()
        except (_Unsupported, TugError) as e:  # a TugError here: a plan tug cannot express
            self.fallbacks.append(str(e))
            if self.fallback == "raise":
                raise NotSupportedError(f"tug cannot run this Polars query: {e}") from None
            if self.fallback == "warn":
                warnings.warn(f"tug: running this query on Polars: {e}", stacklevel=6)
            return
        options = self.options
        self.plan = plan

        def run(*_args):
            out = plan.collect(options=options).to_polars()
            self.ran_on_tug = True
            casts = {k: v for k, v in schema.items() if out.schema.get(k) != v}
            return (out.cast(casts) if casts else out).select(list(schema))

        nt.set_udf(run)

    def collect(self, lf, *, optimizations, background: bool = False, post_opt_callback=None):
        from polars._utils.wrap import wrap_df

        if background:
            raise NotSupportedError("the tug engine does not run Polars queries in the background")
        self.fallbacks, self.ran_on_tug, self.plan = [], False, None
        ldf = lf._ldf.with_optimizations(optimizations._pyoptflags)
        return wrap_df(ldf.collect("in-memory", post_opt_callback or self._callback))

    def execute(self, lf, *, optimizations):
        raise NotSupportedError("the tug engine supports collect(); execute() is not implemented")


def polars_engine(fallback: str = "warn", **options) -> PolarsEngine:
    """An engine for ``polars.LazyFrame.collect(engine=...)`` that runs the query on tug. `options` are
    EngineOptions fields (``engine="gpu"``, ``memory_limit=...``); `fallback` is "warn", "raise" or
    "silent" for queries tug cannot run (they run on Polars)."""
    return PolarsEngine(fallback=fallback, **options)


__all__ = ["PolarsEngine", "polars_engine"]
