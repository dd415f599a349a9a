"""Series: one named column, with Polars' basic Series methods. A Series holds a one-column DataFrame;
its methods run as tug expressions over it (``s + 1`` is ``select(col(name) + 1)``), and it converts to
pyarrow, Polars and pandas through the same Arrow C stream as a DataFrame."""
from __future__ import annotations

import inspect
import math
import operator

from .exceptions import InvalidArgumentError
from .expr import Expr, ExprDateTimeNameSpace, ExprStringNameSpace, col


class Series:
    """A named column. ``Series(name, values, dtype=None)`` (or ``Series(values)``) builds one from a
    list, a pyarrow array, a Polars or pandas Series (through pyarrow); ``DataFrame[name]`` and
    ``DataFrame.get_column`` give one without a copy."""

    __slots__ = ("_frame",)

    def __init__(self, name=None, values=None, dtype=None):
        from .frame import DataFrame, _to_pa

        if values is None and not isinstance(name, (str, type(None))):
            name, values = None, name
        if name is None:
            name = getattr(values, "name", None) or ""
        if values is None:
            values = []
        try:
            import pyarrow as pa
        except ImportError as e:  # pragma: no cover - pyarrow is in the test environment
            raise ImportError("Series(values) needs pyarrow") from e
        if isinstance(values, Series):
            arr = values.to_arrow()
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            arr = values
        elif type(values).__module__.split(".")[0] == "polars":
            arr = values.to_arrow()
        else:
            arr = pa.array(values)  # lists, NumPy arrays, pandas Series
        if dtype is not None:
            arr = arr.cast(_to_pa(dtype))
        elif pa.types.is_null(arr.type):  # Polars: an empty or all-None Series without a dtype is Null; tug has no
            arr = arr.cast(pa.float64() if len(arr) == 0 else pa.int64())  # Null type, so Float64 / Int64
        self._frame = DataFrame(pa.table({str(name): arr}))

    @classmethod
    def _wrap(cls, frame) -> Series:
        if frame.width != 1:
            raise InvalidArgumentError(f"a Series is one column; this frame has {frame.width}")
        out = cls.__new__(cls)
        out._frame = frame
        return out

    # --- what it is
    @property
    def name(self) -> str:
        return self._frame.columns[0]

    @property
    def dtype(self):
        return self._frame.dtypes[0]

    @property
    def shape(self) -> tuple:
        return (self.len(),)

    def len(self) -> int:
        return self._frame.height

    def __len__(self):
        return self.len()

    def is_empty(self) -> bool:
        return self.len() == 0

    def __repr__(self):
        values = self.to_list()
        shown = values if len(values) <= 10 else values[:5] + [...] + values[-5:]
        lines = "\n".join("\t…" if v is ... else "\t" + ("null" if v is None else repr(v) if isinstance(v, str) else str(v))
                          for v in shown)
        return f"shape: ({len(values)},)\nSeries: '{self.name}' [{self.dtype}]\n[\n{lines}\n]"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        return self._frame._repr_html_()

    # --- conversions
    def to_frame(self, name: str | None = None):
        """A one-column DataFrame (no copy)."""
        return self._frame if name is None else self._frame.rename({self.name: name})

    def to_list(self) -> list:
        return self._frame.to_dict()[self.name]

    def to_arrow(self):
        """A pyarrow Array sharing the buffers when the column is one partition (else the chunks are joined)."""
        return self._frame.to_arrow().column(0).combine_chunks()

    def to_polars(self):
        return self._frame.to_polars().to_series(0)

    def to_pandas(self, **kwargs):
        return self._frame.to_arrow().column(0).to_pandas(**kwargs).rename(self.name)

    def __iter__(self):
        return iter(self.to_list())

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.len())
            if step != 1:
                raise InvalidArgumentError(f"Series[{key}]: only steps of 1 are supported")
            return self.slice(start, max(0, stop - start))
        if isinstance(key, int):
            n = self.len()
            if not -n <= key < n:
                raise IndexError(f"index {key} is out of bounds for a Series of length {n}")
            return self.slice(key % n, 1).to_list()[0]
        raise InvalidArgumentError(f"Series[{key!r}]: an int or a slice")

    def item(self, index: int | None = None):
        if index is None:
            if self.len() != 1:
                raise InvalidArgumentError(f"item() without an index needs a Series of length 1, this one has {self.len()}")
            index = 0
        return self[index]

    def equals(self, other: Series) -> bool:
        return isinstance(other, Series) and self.name == other.name and self._frame.equals(other._frame)

    # --- element-wise: an expression over the column, the result keeps the name
    def _map(self, f) -> Series:
        return Series._wrap(self._frame.select(f(col(self.name)).alias(self.name)))

    def _binary(self, other, op, reflected: bool = False) -> Series:
        if isinstance(other, Expr):
            raise InvalidArgumentError("a Series combines with values and other Series, not with expressions")
        if not isinstance(other, Series):
            return self._map(lambda c: op(other, c) if reflected else op(c, other))
        if other.len() != self.len():
            raise InvalidArgumentError(f"Series '{self.name}' has {self.len()} values, '{other.name}' has {other.len()}")
        import pyarrow as pa

        from .frame import DataFrame

        both = DataFrame(pa.table({"l": self.to_arrow(), "r": other.to_arrow()}))
        a, b = (col("r"), col("l")) if reflected else (col("l"), col("r"))
        return Series._wrap(both.select(op(a, b).alias(self.name)))

    def alias(self, name: str) -> Series:
        return Series._wrap(self._frame.rename({self.name: name}))

    rename = alias

    def cast(self, dtype, *, strict: bool = True) -> Series:
        return self._map(lambda c: c.cast(dtype, strict=strict))

    def is_null(self) -> Series:
        return self._map(Expr.is_null)

    def is_not_null(self) -> Series:
        return self._map(Expr.is_not_null)

    def fill_null(self, value) -> Series:
        return self._map(lambda c: c.fill_null(value))

    def is_in(self, values) -> Series:
        return self._map(lambda c: c.is_in(list(values)))

    def is_between(self, lower, upper, closed: str = "both") -> Series:
        return self._map(lambda c: c.is_between(lower, upper, closed))

    def abs(self) -> Series:
        return self._map(Expr.abs)

    def round(self, decimals: int = 0) -> Series:
        return self._map(lambda c: c.round(decimals))

    def sqrt(self) -> Series:
        return self._map(Expr.sqrt)

    def floor(self) -> Series:
        return self._map(Expr.floor)

    def ceil(self) -> Series:
        return self._map(Expr.ceil)

    def exp(self) -> Series:
        return self._map(Expr.exp)

    def log(self, base: float = math.e) -> Series:
        return self._map(lambda c: c.log(base))

    def is_nan(self) -> Series:
        return self._map(Expr.is_nan)

    def not_(self) -> Series:
        return self._map(Expr.not_)

    @property
    def str(self) -> SeriesStringNameSpace:
        """String functions (``Expr.str``'s, with Polars' names), value by value."""
        return SeriesStringNameSpace(self)

    @property
    def dt(self) -> SeriesDateTimeNameSpace:
        """Temporal functions (``Expr.dt``'s, with Polars' names), value by value."""
        return SeriesDateTimeNameSpace(self)

    # --- shape
    def slice(self, offset: int, length: int | None = None) -> Series:
        return Series._wrap(self._frame.slice(offset, length))

    def head(self, n: int = 10) -> Series:
        return Series._wrap(self._frame.head(n))

    def limit(self, n: int = 10) -> Series:
        return self.head(n)

    def tail(self, n: int = 10) -> Series:
        return Series._wrap(self._frame.tail(n))

    def sort(self, *, descending: bool = False, nulls_last: bool = False) -> Series:
        return Series._wrap(self._frame.sort(self.name, descending=descending, nulls_last=nulls_last,
                                             maintain_order=True))

    def unique(self, *, maintain_order: bool = False) -> Series:
        return Series._wrap(self._frame.unique(maintain_order=maintain_order))

    def filter(self, predicate) -> Series:
        """The values where the boolean Series `predicate` is true."""
        if not isinstance(predicate, Series):
            raise InvalidArgumentError("Series.filter takes a boolean Series")
        import pyarrow as pa

        from .frame import DataFrame

        if predicate.len() != self.len():
            raise InvalidArgumentError(f"Series.filter: {predicate.len()} predicate values for {self.len()} values")
        pname = self.name + "_predicate"
        both = DataFrame(pa.table({self.name: self.to_arrow(), pname: predicate.to_arrow()}))
        return Series._wrap(both.filter(col(pname)).select(self.name))

    # --- reductions: Python values
    def _reduce(self, f):
        return self._frame.select(f(col(self.name))).item()

    def sum(self):
        return self._reduce(Expr.sum)

    def mean(self):
        return self._reduce(Expr.mean)

    def min(self):
        return self._reduce(Expr.min)

    def max(self):
        return self._reduce(Expr.max)

    def median(self):
        return self._reduce(Expr.median)

    def std(self, ddof: int = 1):
        return self._reduce(lambda c: c.std(ddof))

    def var(self, ddof: int = 1):
        return self._reduce(lambda c: c.var(ddof))

    def quantile(self, quantile: float, interpolation: str = "nearest"):
        return self._reduce(lambda c: c.quantile(quantile, interpolation))

    def count(self) -> int:
        """Non-null values."""
        return self._reduce(Expr.count)

    def null_count(self) -> int:
        return self.len() - self.count()

    def n_unique(self) -> int:
        return self._reduce(Expr.n_unique)

    def first(self):
        return self[0] if self.len() else None

    def last(self):
        return self[-1] if self.len() else None

    def any(self) -> bool:
        return self._reduce(Expr.any)

    def all(self) -> bool:
        return self._reduce(Expr.all)


class SeriesStringNameSpace:
    """``Series.str``: every method of ``Expr.str`` on the Series' values; each returns a Series of the
    same name (``s.str.to_uppercase()`` is ``select(col(name).str.to_uppercase())``)."""

    __slots__ = ("_s",)

    def __init__(self, series: Series):
        self._s = series


class SeriesDateTimeNameSpace:
    """``Series.dt``: every method of ``Expr.dt`` on the Series' values; each returns a Series of the
    same name (``s.dt.year()`` is ``select(col(name).dt.year())``)."""

    __slots__ = ("_s",)

    def __init__(self, series: Series):
        self._s = series


def _install_namespace(cls, expr_ns, attr: str):
    """Gives `cls` one method per public method of the expression namespace `expr_ns` (reached as
    ``Expr.<attr>``), with its signature and docstring: one list of string and temporal functions."""
    for name, f in vars(expr_ns).items():
        if name.startswith("_") or not inspect.isfunction(f):
            continue

        def method(self, *args, _name=name, **kwargs):
            return self._s._map(lambda c: getattr(getattr(c, attr), _name)(*args, **kwargs))

        method.__name__ = method.__qualname__ = name
        method.__doc__ = f.__doc__ or f"``Expr.{attr}.{name}`` of every value."
        method.__signature__ = inspect.signature(f)
        setattr(cls, name, method)


_install_namespace(SeriesStringNameSpace, ExprStringNameSpace, "str")
_install_namespace(SeriesDateTimeNameSpace, ExprDateTimeNameSpace, "dt")


def _install_operators():
    ops = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
           "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow}
    for name, op in ops.items():
        setattr(Series, f"__{name}__", lambda self, other, op=op: self._binary(other, op))
        setattr(Series, f"__r{name}__", lambda self, other, op=op: self._binary(other, op, reflected=True))
    for name, op in {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
                     "gt": operator.gt, "ge": operator.ge, "and": operator.and_, "or": operator.or_,
                     "xor": operator.xor}.items():
        setattr(Series, f"__{name}__", lambda self, other, op=op: self._binary(other, op))
    Series.__rand__ = lambda self, other: self._binary(other, operator.and_, reflected=True)
    Series.__ror__ = lambda self, other: self._binary(other, operator.or_, reflected=True)
    Series.__neg__ = lambda self: self._map(operator.neg)
    Series.__invert__ = lambda self: self._map(operator.invert)
    Series.__hash__ = None  # == is element-wise


_install_operators()
