"""Expressions: ``col``, ``lit``, ``when`` and the ``Expr`` methods, with Polars' names and behaviour.

An ``Expr`` wraps an immutable C++ expression tree (include/tug/expr/expr.hpp). Inside operators and
value arguments (``col("a") + 1``, ``== "x"``, ``fill_null(0)``) Python values are literals; in
``select``, ``with_columns``, ``group_by``, ``agg``, ``sort`` and ``over`` a string names a column.
"""
from __future__ import annotations

import builtins
import datetime as _dt
import decimal as _decimal
import math

from . import _tug
from .datatypes import Datetime, Decimal, Duration, to_tug
from .exceptions import InvalidArgumentError

_EPOCH = _dt.date(1970, 1, 1)
_EPOCH_DT = _dt.datetime(1970, 1, 1)
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def _ticks_us(td: _dt.timedelta) -> int:
    return (td.days * 86400 + td.seconds) * 1_000_000 + td.microseconds


def _typed_scalar(value, dtype=None) -> _tug.Scalar:
    """A typed C++ scalar of a Python value (its type inferred unless `dtype` is given)."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        value = value.item()
    if dtype is not None:
        t = to_tug(dtype)
        if value is None:
            return _tug.Scalar(t, None)
        if t.id == "date" and isinstance(value, _dt.date):
            value = (value - _EPOCH).days
        elif t.id == "datetime" and isinstance(value, _dt.datetime):
            value = _datetime_ticks(value, t.unit)
        elif t.id == "duration" and isinstance(value, _dt.timedelta):
            value = _ticks_us(value) * {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit] // 1_000_000
        elif t.id == "decimal":
            value = str(int(_decimal.Decimal(value).scaleb(t.scale)))
        return _tug.Scalar(t, value)
    if value is None:
        return _tug.Scalar(_tug.DataType("int64"), None)
    if isinstance(value, bool):
        return _tug.Scalar(_tug.DataType("bool"), value)
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _UINT64_MAX:
            raise InvalidArgumentError(f"the integer literal {value} does not fit in 64 bits")
        if value > _INT64_MAX:
            return _tug.Scalar(_tug.DataType("uint64"), value)
        return _tug.Scalar(_tug.DataType("int64"), value)
    if isinstance(value, float):
        return _tug.Scalar(_tug.DataType("float64"), value)
    if isinstance(value, str):
        return _tug.Scalar(_tug.DataType("string"), value)
    if isinstance(value, _dt.datetime):
        return _typed_scalar(value, Datetime("us", str(value.tzinfo) if value.tzinfo else None))
    if isinstance(value, _dt.date):
        return _typed_scalar(value, "date")
    if isinstance(value, _dt.timedelta):
        return _typed_scalar(value, Duration("us"))
    if isinstance(value, _decimal.Decimal):
        exp = -value.as_tuple().exponent if isinstance(value.as_tuple().exponent, int) else 0
        scale = builtins.max(exp, 0)
        return _typed_scalar(value, Decimal(38, scale))
    raise InvalidArgumentError(f"cannot use {value!r} (of type {type(value).__name__}) as a literal")


def _datetime_ticks(value: _dt.datetime, unit: str) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    us = _ticks_us(value - _EPOCH_DT)
    return {"s": us // 1_000_000, "ms": us // 1000, "us": us, "ns": us * 1000}[unit]


def _lit_expr(value) -> _tug.Expr:
    """A literal the way Polars makes one: Python ints and floats adapt to the other operand's type."""
    if isinstance(value, Expr):
        return value._e
    if value is None:
        return _tug.lit_dynamic_null()
    if isinstance(value, bool):
        return _tug.lit(_typed_scalar(value))
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return _tug.lit_dynamic_int(value)
    if isinstance(value, float):
        return _tug.lit_dynamic_float(value)
    return _tug.lit(_typed_scalar(value))


def _expr(value, str_as_column: bool = False) -> _tug.Expr:
    """The C++ expression of an Expr, a column name (where `str_as_column`) or a literal."""
    if isinstance(value, Expr):
        return value._e
    if str_as_column and isinstance(value, str):
        return _tug.col(value)
    return _lit_expr(value)


def _exprs(args, named=None) -> list:
    """Expressions of `select`/`with_columns`/`agg`-style arguments: strings are columns, lists flatten,
    keyword arguments are aliases."""
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_exprs(a))
        else:
            out.append(_expr(a, str_as_column=True))
    for name, a in (named or {}).items():
        out.append(_expr(a, str_as_column=True).alias(name))
    return out


class Expr:
    """A lazy expression: builds a tree that a LazyFrame evaluates."""

    __slots__ = ("_e",)

    def __init__(self, e: _tug.Expr):
        self._e = e

    def __repr__(self):
        return f"<Expr {self._e}>"

    def __str__(self):
        return str(self._e)

    def __bool__(self):
        raise TypeError("the truth value of an Expr is ambiguous: use & | ~ instead of and, or, not, "
                        "and .is_in() instead of in")

    __hash__ = None  # == builds an expression

    def meta_eq(self, other: Expr) -> bool:
        """Structural equality of two expressions."""
        return self._e.meta_eq(other._e)

    def meta_output_name(self) -> str:
        return self._e.output_name()

    # --- naming and types
    def alias(self, name: str) -> Expr:
        return Expr(self._e.alias(name))

    def cast(self, dtype, strict: bool = True) -> Expr:
        """Cast to `dtype`; strict casts raise ComputeError on values that do not fit or parse, others give null."""
        return Expr(self._e.cast(to_tug(dtype), strict))

    # --- arithmetic and comparison
    def _bin(self, name, other):
        return Expr(getattr(self._e, name)(_lit_expr(other)))

    def _rbin(self, name, other):
        return Expr(getattr(_lit_expr(other), name)(self._e))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._rbin("add", o)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._rbin("sub", o)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._rbin("mul", o)
    def __truediv__(self, o): return self._bin("truediv", o)
    def __rtruediv__(self, o): return self._rbin("truediv", o)
    def __floordiv__(self, o): return self._bin("floor_div", o)
    def __rfloordiv__(self, o): return self._rbin("floor_div", o)
    def __mod__(self, o): return self._bin("mod", o)
    def __rmod__(self, o): return self._rbin("mod", o)
    def __pow__(self, o): return self._bin("pow", o)
    def __rpow__(self, o): return self._rbin("pow", o)
    def __neg__(self): return Expr(self._e.neg())
    def __pos__(self): return self
    def __abs__(self): return self.abs()
    def __eq__(self, o): return self._bin("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("ne", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __and__(self, o): return self._bin("and_", o)
    def __rand__(self, o): return self._rbin("and_", o)
    def __or__(self, o): return self._bin("or_", o)
    def __ror__(self, o): return self._rbin("or_", o)
    def __xor__(self, o): return self._bin("xor", o)
    def __rxor__(self, o): return self._rbin("xor", o)
    def __invert__(self): return Expr(self._e.not_())

    def add(self, o): return self + o
    def sub(self, o): return self - o
    def mul(self, o): return self * o
    def truediv(self, o): return self / o
    def floordiv(self, o): return self // o
    def mod(self, o): return self % o
    def pow(self, o): return self ** o
    def neg(self): return -self
    def eq(self, o): return self == o
    def ne(self, o): return self != o
    def lt(self, o): return self < o
    def le(self, o): return self <= o
    def gt(self, o): return self > o
    def ge(self, o): return self >= o
    def and_(self, *others):
        out = self
        for o in others:
            out = out & o
        return out
    def or_(self, *others):
        out = self
        for o in others:
            out = out | o
        return out
    def xor(self, o): return self ^ o
    def not_(self): return ~self

    # --- nulls and membership
    def is_null(self): return Expr(self._e.is_null())
    def is_not_null(self): return Expr(self._e.is_not_null())
    def is_nan(self): return Expr(self._e.is_nan())

    def fill_null(self, value) -> Expr:
        return Expr(self._e.fill_null(_lit_expr(value)))

    def is_in(self, values) -> Expr:
        """True where the value is one of `values` (a list, tuple, set or any iterable of Python values)."""
        if isinstance(values, Expr) or isinstance(values, str):
            raise InvalidArgumentError("is_in takes a collection of Python values (an expression is not supported)")
        return Expr(self._e.is_in([_typed_scalar(v) for v in values]))

    def is_between(self, lower_bound, upper_bound, closed: str = "both") -> Expr:
        return Expr(self._e.is_between(_lit_expr(lower_bound), _lit_expr(upper_bound), closed))

    # --- math
    def abs(self): return Expr(self._e.abs())
    def round(self, decimals: int = 0): return Expr(self._e.round(decimals))
    def floor(self): return Expr(self._e.floor())
    def ceil(self): return Expr(self._e.ceil())
    def sqrt(self): return Expr(self._e.sqrt())
    def exp(self): return Expr(self._e.exp())

    def log(self, base: float = math.e) -> Expr:
        return Expr(self._e.log(0.0 if base == math.e else float(base)))

    # --- aggregations
    def sum(self): return Expr(self._e.sum())
    def mean(self): return Expr(self._e.mean())
    def min(self): return Expr(self._e.min())
    def max(self): return Expr(self._e.max())
    def count(self): return Expr(self._e.count())
    def n_unique(self): return Expr(self._e.n_unique())
    def first(self): return Expr(self._e.first())
    def last(self): return Expr(self._e.last())
    def std(self, ddof: int = 1): return Expr(self._e.std(ddof))
    def var(self, ddof: int = 1): return Expr(self._e.var(ddof))
    def median(self): return Expr(self._e.median())
    def any(self): return Expr(self._e.any())
    def all(self): return Expr(self._e.all())

    def quantile(self, quantile: float, interpolation: str = "nearest") -> Expr:
        return Expr(self._e.quantile(float(quantile), interpolation))

    def over(self, *partition_by) -> Expr:
        """This expression per group of `partition_by`, broadcast to every row of the group."""
        keys = _exprs(partition_by)
        if not keys:
            raise InvalidArgumentError("over() needs at least one partition column")
        return Expr(self._e.over(keys))

    @property
    def str(self) -> ExprStringNameSpace:
        return ExprStringNameSpace(self)

    @property
    def dt(self) -> ExprDateTimeNameSpace:
        return ExprDateTimeNameSpace(self)


class ExprStringNameSpace:
    """``Expr.str``: string functions."""

    def __init__(self, e: Expr):
        self._e = e._e

    def len_chars(self): return Expr(self._e.str_len_chars())
    def len_bytes(self): return Expr(self._e.str_len_bytes())
    def starts_with(self, prefix): return Expr(self._e.str_starts_with(_lit_expr(prefix)))
    def ends_with(self, suffix): return Expr(self._e.str_ends_with(_lit_expr(suffix)))
    def to_uppercase(self): return Expr(self._e.str_to_upper())
    def to_lowercase(self): return Expr(self._e.str_to_lower())

    def to_titlecase(self) -> Expr:
        """The first character of each word (a run of alphabetic characters) titlecased and the others
        lowercased, as Polars: ``"o'neil 3d"`` -> ``"O'Neil 3D"``, ``"ß"`` -> ``"Ss"``."""
        return Expr(self._e.str_to_title())

    def contains(self, pattern, literal: bool = False) -> Expr:
        """Substring test; as in Polars, `pattern` is a regular expression unless `literal`."""
        return Expr(self._e.str_contains(_lit_expr(pattern), literal))

    def slice(self, offset: int, length: int | None = None) -> Expr:
        return Expr(self._e.str_slice(offset, -1 if length is None else length))

    def strip_chars(self, characters: str | None = None) -> Expr:
        return Expr(self._e.str_strip(characters or ""))


class ExprDateTimeNameSpace:
    """``Expr.dt``: temporal functions."""

    def __init__(self, e: Expr):
        self._e = e._e

    def year(self): return Expr(self._e.dt_year())
    def month(self): return Expr(self._e.dt_month())
    def day(self): return Expr(self._e.dt_day())
    def hour(self): return Expr(self._e.dt_hour())
    def minute(self): return Expr(self._e.dt_minute())
    def second(self): return Expr(self._e.dt_second())
    def weekday(self): return Expr(self._e.dt_weekday())
    def date(self): return Expr(self._e.dt_date())
    def truncate(self, every: str): return Expr(self._e.dt_truncate(every))
    def total_days(self): return Expr(self._e.dt_total_days())
    def total_seconds(self): return Expr(self._e.dt_total_seconds())
    def total_milliseconds(self): return Expr(self._e.dt_total_milliseconds())


def col(name: str) -> Expr:
    """A reference to the column `name`."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"col() takes a column name, got {type(name).__name__}")
    return Expr(_tug.col(name))


def lit(value, dtype=None) -> Expr:
    """A literal. Without `dtype`, Python ints and floats take the type of the operand next to them."""
    if dtype is None:
        return Expr(_lit_expr(value))
    return Expr(_tug.lit(_typed_scalar(value, dtype)))


def len() -> Expr:  # noqa: A001 - Polars' name
    """The number of rows (nulls included)."""
    return Expr(_tug.len())


def coalesce(*exprs) -> Expr:
    """The first non-null value of `exprs`, row by row."""
    return Expr(_tug.coalesce(_exprs(exprs)))


def concat_str(*exprs, separator: str = "") -> Expr:
    """String columns joined with `separator` (null where any input is null)."""
    return Expr(_tug.concat_str(_exprs(exprs), separator))


def sum(name: str) -> Expr:  # noqa: A001
    """``col(name).sum()``."""
    return col(name).sum()


def mean(name: str) -> Expr:
    """``col(name).mean()``."""
    return col(name).mean()


def min(name: str) -> Expr:  # noqa: A001
    """``col(name).min()``."""
    return col(name).min()


def max(name: str) -> Expr:  # noqa: A001
    """``col(name).max()``."""
    return col(name).max()


def count(name: str) -> Expr:
    """``col(name).count()``."""
    return col(name).count()


class When:
    """``when(cond)``: needs ``.then(value)``."""

    def __init__(self, branches, cond):
        self._branches, self._cond = branches, cond

    def then(self, value) -> Then:
        return Then(self._branches + [(self._cond, _expr(value, str_as_column=True))])


class Then(Expr):
    """``when(...).then(...)``: an expression (null where no condition holds) that can go on with
    ``.when(...)`` or end with ``.otherwise(...)``."""

    __slots__ = ("_branches",)

    def __init__(self, branches):
        self._branches = branches
        super().__init__(_tug.when_then(branches, None))

    def when(self, *predicates) -> When:
        return When(self._branches, _all_of(predicates))

    def otherwise(self, value) -> Expr:
        return Expr(_tug.when_then(self._branches, _expr(value, str_as_column=True)))


def _all_of(predicates) -> _tug.Expr:
    ps = _exprs(predicates)
    if not ps:
        raise InvalidArgumentError("when() needs a condition")
    out = ps[0]
    for p in ps[1:]:
        out = out.and_(p)
    return out


def when(*predicates) -> When:
    """``when(cond).then(a).when(cond2).then(b).otherwise(c)``."""
    return When([], _all_of(predicates))
