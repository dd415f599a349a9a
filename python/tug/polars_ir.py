"""tug as an engine for Polars queries: ``lf.collect(engine=tug.polars_engine())`` (docs/python.md).

Polars (2.x) lets an engine (``polars.lazyframe.engine.Engine``, marked unstable by Polars) receive its
optimized plan through a post-optimization callback, the hook cudf-polars uses. This engine walks that
plan (Polars' IR, NodeTraverser version 16), translates it into a tug LazyFrame and hands Polars a
function that runs it on tug. When a node or expression has no translation, that node runs on Polars
and the largest subtrees below it that translate run on tug (each replaced in Polars' plan by a function
that runs it on tug, as the whole plan is), per ``fallback``: "warn" (a warning naming the nodes),
"silent", or "raise" (tug.NotSupportedError; nothing runs). ``engine.fallbacks`` lists the nodes of the
last query that ran on Polars and why; ``engine.tug_parts`` the plans that ran on tug.

Supported (docs/python.md): DataFrame, Parquet and CSV scans (projection, row slice, predicate), Select,
HStack (with_columns), SimpleProjection, Filter (also on global aggregates), GroupBy, Join (inner, left,
right, full, semi, anti, cross, and inequality joins with one side of at most IEJOIN_MAX_SMALL_SIDE rows),
Sort (with its slice), Slice, Distinct, Union, Cache, with_row_index, unpivot; expressions: columns,
literals, binary operators, casts, when/then/otherwise, len, the aggregations tug has, over(), and a set of
functions (is_in, is_null, is_not_null, not, str.starts_with/ends_with/contains/len_chars/len_bytes/
to_uppercase/to_lowercase/slice, dt.year/month/day/hour/minute/second/weekday, quantile, fill_null, abs).
"""
from __future__ import annotations

import warnings

from . import expr as _expr_mod
from .datatypes import to_tug
from .exceptions import NotSupportedError, TugError
from .expr import Expr, col, lit, when
from .frame import LazyFrame, from_arrow, scan_csv, scan_parquet
from .options import EngineOptions

try:  # the hook exists from Polars 2.0 on
    from polars.lazyframe.engine import Engine as _PolarsEngine
except ImportError:  # pragma: no cover - older Polars
    _PolarsEngine = object

SUPPORTED_IR_VERSION = 16


class _Unsupported(Exception):
    """What has no translation; `node`: the index of the plan node where translation stopped."""

    node = None


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
              "Lowercase": "to_lowercase", "Titlecase": "to_titlecase"}
_DT_UNARY = {"Year": "year", "Month": "month", "Day": "day", "Hour": "hour", "Minute": "minute",
             "Second": "second", "WeekDay": "weekday"}


def _view(nt):
    """The current plan node; a node Polars cannot show (an opaque Python function: map_batches) has no
    translation."""
    try:
        return nt.view_current_node()
    except NotImplementedError as e:
        raise _Unsupported(f"plan node: {e}") from None


class _Translator:
    """Polars IR (through its NodeTraverser) to a tug LazyFrame."""

    def __init__(self, nt, stubs=None):
        self.nt = nt
        self.stubs = stubs or {}  # plan node index -> the LazyFrame that stands for it (see PolarsEngine._split)

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
            if fname == "Slice":
                bounds = [self.nt.view_expression(a) for a in args[1:3]]
                _need(all(type(b).__name__ == "Literal" for b in bounds), "str.slice with computed bounds")
                _need(bounds[0].value is not None, "str.slice with a null offset")
                return x.str.slice(int(bounds[0].value), None if bounds[1].value is None else int(bounds[1].value))
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
            if nt.get_node() in self.stubs:
                return self.stubs[nt.get_node()]
            return self._node(_view(nt))
        except (_Unsupported, TugError) as e:  # a TugError here: a plan tug cannot express
            u = e if isinstance(e, _Unsupported) else _Unsupported(str(e))
            if u.node is None:
                u.node = nt.get_node()
            raise u from None
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
            _need(n.scan_type[0] in ("parquet", "csv"), f"{n.scan_type[0]} scan")
            _need(n.hive_parts is None, "hive-partitioned scan")
            fo = n.file_options
            _need(fo.include_file_paths is None and fo.deletion_files is None and fo.column_mapping is None and
                  fo.default_values is None, "scan options")
            _need(fo.row_index is None or n.scan_type[0] == "csv", "parquet scan with a row index")
            if n.scan_type[0] == "csv":
                lfs = self.csv_scans(n)
            else:
                lfs = [scan_parquet(p) for p in n.paths]
            lf = lfs[0] if len(lfs) == 1 else LazyFrame(_expr_mod._tug.concat([x._lf for x in lfs]))
            if fo.row_index is not None:  # rows counted from the first file's first, before n_rows and the predicate
                lf = lf.with_row_index(fo.row_index[0], fo.row_index[1])
            if fo.n_rows is not None:
                lf = lf.slice(fo.n_rows[0], fo.n_rows[1])
            if n.predicate is not None:
                lf = lf.filter(self.expr(n.predicate.node))
            if fo.with_columns is not None:
                lf = lf.select(([fo.row_index[0]] if fo.row_index is not None else []) + list(fo.with_columns))
            return lf
        if kind == "Cache":
            return self.node(n.input)
        if kind == "SimpleProjection":
            return self.node(n.input).select(list(nt.get_schema()))
        if kind == "Select":
            return self.node(n.input).select(self.named(n.expr))
        if kind == "HStack":
            return self.node(n.input).with_columns(self.named(n.exprs))
        if kind == "Filter":  # also on global aggregates (Q15's col == col.max()): tug's filter takes them
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
            if isinstance(how, tuple) and how[0] == "IEJoin":
                return self.inequality_join(n, how[1:], suffix, slc)
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
        if kind == "MapFunction":
            name = n.function[0]
            if name == "unpivot":
                return self.unpivot(n)
            _need(name != "explode", "plan node MapFunction(explode): tug has no list type")
            _need(name == "row_index", f"plan node MapFunction({name})")
            return self.node(n.input).with_row_index(n.function[1], n.function[2] or 0)
        if kind == "Union":
            _need(n.slice is None, "union with a slice")
            return LazyFrame(_expr_mod._tug.concat([self.node(i)._lf for i in n.inputs]))
        raise _Unsupported(f"plan node {kind}")

    # --- nodes tug runs as other nodes
    def inequality_join(self, n, ops, suffix, slc) -> LazyFrame:
        """Polars' inequality join (IEJoin: join_where, or a cross join and a filter of comparisons its
        optimizer turned into one) as a cross join and a filter, when one side has at most
        IEJOIN_MAX_SMALL_SIDE rows that the plan shows (an aggregation of a whole input, a small in-memory
        frame, a slice): tug has no inequality join, and a cross join of two large inputs would be
        quadratic, so those stay on Polars."""
        bounds = [_max_rows(self.nt, i) for i in (n.input_left, n.input_right)]
        _need(any(b is not None and b <= IEJOIN_MAX_SMALL_SIDE for b in bounds),
              f"inequality join (IEJoin) of two inputs that may have more than {IEJOIN_MAX_SMALL_SIDE} rows")
        comparisons = {"Gt": "__gt__", "GtEq": "__ge__", "Lt": "__lt__", "LtEq": "__le__"}
        ops = [str(o).split(".")[-1] for o in ops if o is not None]
        _need(len(ops) == len(n.left_on) == len(n.right_on) and all(o in comparisons for o in ops),
              f"inequality join with operators {ops}")
        left, right = self.node(n.input_left), self.node(n.input_right)
        taken = left.columns + right.columns
        lk = [_fresh(f"__tug_left_key{k}", taken) for k in range(len(ops))]
        rk = [_fresh(f"__tug_right_key{k}", taken) for k in range(len(ops))]
        # the keys as columns of their side first: a right column that the left has too is renamed by the join
        left = left.with_columns([self.expr(x.node).alias(k) for x, k in zip(n.left_on, lk)])
        right = right.with_columns([self.expr(x.node).alias(k) for x, k in zip(n.right_on, rk)])
        pred = None
        for o, a, b in zip(ops, lk, rk):
            p = getattr(col(a), comparisons[o])(col(b))
            pred = p if pred is None else pred & p
        lf = left.join(right, how="cross", suffix=suffix).filter(pred)
        if slc is not None:
            lf = lf.slice(slc[0], slc[1])
        return lf.select(list(self.nt.get_schema()))

    def unpivot(self, n) -> LazyFrame:
        """unpivot (melt): for each of the `on` columns in turn, the index columns, its name and its
        values cast to the output's value type, concatenated."""
        _, index, on, _variable, _value = n.function
        _need(len(on) > 0, "unpivot without value columns")
        schema = self.nt.get_schema()
        variable, value = list(schema)[-2:]
        _need(schema[variable] == _pl_string(), f"unpivot with a {schema[variable]} variable column")
        dtype = self.dtype(schema[value])
        lf = self.node(n.input)
        parts = [lf.select([col(i) for i in index] + [lit(c).alias(variable), col(c).cast(dtype).alias(value)])
                 for c in on]
        return parts[0] if len(parts) == 1 else LazyFrame(_expr_mod._tug.concat([p._lf for p in parts]))

    def csv_scans(self, n) -> list:
        """tug scan_csv of each file of a Polars CSV scan, with Polars' parse options, and the types Polars
        gave the columns the query reads (tug's inference differs: it reads dates, Polars strings)."""
        import json

        o = json.loads(n.scan_type[1])
        po = o["parse_options"]
        for key, default in (("eol_char", 10), ("truncate_ragged_lines", False), ("try_parse_dates", False),
                             ("decimal_comma", False), ("missing_is_null", True)):
            _need(po.get(key) == default, f"CSV scan with {key}={po.get(key)!r}")
        for key, default in (("skip_lines", 0), ("skip_rows_after_header", 0), ("ignore_errors", False),
                             ("column_names_overwrite", None), ("dtype_overwrite", None), ("columns", None),
                             ("projection", None), ("raise_if_empty", True), ("fields_to_cast", [])):
            _need(o.get(key, default) == default, f"CSV scan with {key}={o.get(key)!r}")
        nulls = po["null_values"]
        if nulls is None:
            null_values = [""]
        else:
            (form, values), = nulls.items()
            _need(form in ("AllColumnsSingle", "AllColumns"), f"CSV scan with null_values per column ({form})")
            null_values = [""] + ([values] if form == "AllColumnsSingle" else list(values))
        comment = po["comment_prefix"]
        if comment is not None:
            (form, value), = comment.items() if isinstance(comment, dict) else (("Multi", comment),)
            comment = chr(value) if form == "Single" else value
            _need(len(comment) == 1, f"CSV scan with comment_prefix={comment!r} (tug takes one character)")
        encoding = {"Utf8": "utf8", "LossyUtf8": "utf8-lossy"}.get(po["encoding"])
        _need(encoding is not None, f"CSV scan with encoding={po['encoding']!r}")
        fo = n.file_options
        row_index = fo.row_index[0] if fo.row_index is not None else None
        types = {k: self.dtype(v) for k, v in self.nt.get_schema().items() if k != row_index}
        names = {k: k for k in types}
        if not o["has_header"]:  # Polars 2 names the columns of a file without a header column_0, tug column_1, ...
            for k in types:
                _need(k.startswith("column_") and k[7:].isdigit(), f"CSV scan without a header, column {k!r}")
                names[k] = f"column_{int(k[7:]) + 1}"
        return [scan_csv(p, has_header=o["has_header"], separator=chr(po["separator"]),
                         quote_char=None if po["quote_char"] is None else chr(po["quote_char"]),
                         null_values=null_values, comment_prefix=comment, skip_rows=o["skip_rows"],
                         schema_overrides={names[k]: t for k, t in types.items()}, encoding=encoding)
                .select([col(names[k]).alias(k) for k in types]) for p in n.paths]


# An inequality join runs on tug (as a cross join and a filter) when one side has at most this many rows.
IEJOIN_MAX_SMALL_SIDE = 64


def _fresh(stem: str, taken) -> str:
    """A column name starting with `stem` that is not in `taken`."""
    name, k = stem, 0
    while name in taken:
        k += 1
        name = f"{stem}_{k}"
    return name


def _pl_string():
    import polars as pl

    return pl.String


def _is_scalar(nt, node: int) -> bool:
    """Whether Polars' expression `node` gives one value for a whole input (aggregations of it, literals
    and what is computed from them only)."""
    e = nt.view_expression(node)
    kind = type(e).__name__
    if kind in ("Agg", "Len"):
        return True
    if kind == "Literal":
        return not isinstance(e.value, (list, tuple)) and type(e.dtype).__name__ not in ("List", "Array")
    if kind == "BinaryExpr":
        return _is_scalar(nt, e.left) and _is_scalar(nt, e.right)
    if kind == "Cast":
        return _is_scalar(nt, e.expr)
    if kind == "Ternary":
        return all(_is_scalar(nt, x) for x in (e.predicate, e.truthy, e.falsy))
    return False


def _max_rows(nt, index: int):
    """An upper bound of the rows of plan node `index` that the plan shows, or None."""
    here = nt.get_node()
    nt.set_node(index)
    try:
        try:
            n = nt.view_current_node()
        except NotImplementedError:
            return None
        kind = type(n).__name__
        if kind == "DataFrameScan":
            import polars as pl

            return pl.DataFrame._from_pydf(n.df).height
        if kind == "Select":
            if n.expr and all(_is_scalar(nt, x.node) for x in n.expr):
                return 1
            return _max_rows(nt, n.input)
        if kind == "Slice":
            inner = _max_rows(nt, n.input)
            return n.len if inner is None else min(inner, n.len)
        if kind == "GroupBy" and not n.keys:
            return 1
        if kind in ("Filter", "Sort", "HStack", "SimpleProjection", "Cache", "Distinct", "GroupBy"):
            return _max_rows(nt, n.input)
        return None
    finally:
        nt.set_node(here)

class PolarsEngine(_PolarsEngine):
    """Runs Polars queries on tug: ``lf.collect(engine=tug.polars_engine(engine="gpu"))``."""

    name = "tug"

    def __init__(self, fallback: str = "warn", **options):
        if fallback not in ("warn", "raise", "silent"):
            raise NotSupportedError(f"fallback={fallback!r} is not one of warn, raise, silent")
        self.fallback = fallback
        self.options = EngineOptions(**options)
        self.fallbacks: list = []  # the nodes of the last query that ran on Polars, with the reason; empty: none
        self.ran_on_tug = False  # whether the whole last query ran on tug
        self.plan: LazyFrame | None = None  # the last query's translation when all of it translated
        self.tug_parts: list = []  # the plans of the last query that ran on tug (the whole one, or subtrees)

    def __repr__(self):
        return f"PolarsEngine(fallback={self.fallback!r}, options={self.options!r})"

    @staticmethod
    def _translate(nt, index):
        """The tug plan of the subtree at node `index`, or None, the reason it has none and the index of the
        node where its translation stopped."""
        try:
            return _Translator(nt).node(index), None, None
        except _Unsupported as e:
            return None, str(e), e.node

    def _run_on_tug(self, nt, index, plan, whole: bool):
        """Replaces node `index` of Polars' plan by a function that runs `plan` on tug and gives Polars the
        node's output (with its types: tug's integer widths differ in places)."""
        here = nt.get_node()
        nt.set_node(index)
        schema = nt.get_schema()
        options = self.options
        self.tug_parts.append(plan)

        def run(with_columns=None, _predicate=None, n_rows=None, *_args):
            out = plan.collect(options=options).to_polars()
            if whole:
                self.ran_on_tug = True
            casts = {k: v for k, v in schema.items() if out.schema.get(k) != v}
            out = (out.cast(casts) if casts else out).select(list(schema))
            if with_columns is not None:
                out = out.select(list(with_columns))
            return out.head(n_rows) if n_rows is not None else out

        nt.set_udf(run)
        nt.set_node(here)

    def _split(self, nt, index):
        """The plan of the subtree at `index` when all of it translates (the caller places it). Otherwise the
        subtrees below it that translate are placed on tug, and the nodes that do not are listed in
        self.fallbacks with the reason; returns None."""
        plan, reason, where = self._translate(nt, index)
        if plan is not None:
            return plan
        here = nt.get_node()
        nt.set_node(index)
        try:
            kind = type(nt.view_current_node()).__name__
        except NotImplementedError:
            kind = "MapFunction"
        inputs = list(nt.get_inputs())
        nt.set_node(here)
        plans = [self._split(nt, i) for i in inputs]
        if where != index and not all(p is not None for p in plans):
            # an input stopped the translation: would this node itself translate? (its inputs stubbed)
            reason, where = self._own_reason(nt, index, inputs)
        if where == index or all(p is not None for p in plans):  # this node itself is what tug cannot run
            self.fallbacks.append(f"{kind}: {reason}")
        for i, p in zip(inputs, plans):
            nt.set_node(i)
            leaf = p is not None and type(nt.view_current_node()).__name__ == "DataFrameScan"  # Polars has the data
            nt.set_node(here)
            if p is not None and not leaf:
                self._run_on_tug(nt, i, p, whole=False)
        return None

    @staticmethod
    def _own_reason(nt, index, inputs):
        """Why node `index` itself has no translation, and `index`; (None, None) when it has one or when
        tug cannot stand in for its inputs: each is stubbed by an empty frame of its schema."""
        import polars as pl

        here = nt.get_node()
        stubs = {}
        try:
            for i in inputs:
                nt.set_node(i)
                stubs[i] = from_arrow(pl.DataFrame(schema=nt.get_schema()).to_arrow()).lazy()
        except Exception:  # noqa: BLE001 - an input of a type tug has not: its own reason is listed
            return None, None
        finally:
            nt.set_node(here)
        try:
            _Translator(nt, stubs).node(index)
        except _Unsupported as e:
            return str(e), e.node
        return None, None

    def _callback(self, nt, *_):
        root = nt.get_node()
        if nt.version()[0] != SUPPORTED_IR_VERSION:
            plan, reason = None, (f"Polars IR version {nt.version()} (tug translates version "
                                  f"{SUPPORTED_IR_VERSION})")
        else:
            plan, reason, _ = self._translate(nt, root)
        if plan is not None:
            self.plan = plan
            self._run_on_tug(nt, root, plan, whole=True)
            return
        if self.fallback == "raise":
            self.fallbacks.append(reason)
            raise NotSupportedError(f"tug cannot run this Polars query: {reason}") from None
        if nt.version()[0] == SUPPORTED_IR_VERSION:
            self._split(nt, root)
            nt.set_node(root)
        else:
            self.fallbacks.append(reason)
        if self.fallback == "warn":
            where = (f"{len(self.tug_parts)} part(s) of this query on tug, the rest" if self.tug_parts
                     else "this query")
            warnings.warn(f"tug: running {where} on Polars: {'; '.join(self.fallbacks)}", stacklevel=6)

    def collect(self, lf, *, optimizations, background: bool = False, post_opt_callback=None):
        from polars._utils.wrap import wrap_df

        if background:
            raise NotSupportedError("the tug engine does not run Polars queries in the background")
        self.fallbacks, self.ran_on_tug, self.plan, self.tug_parts = [], False, None, []
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
