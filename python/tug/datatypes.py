"""Data types, named as in Polars (``tug.Int64``, ``tug.Datetime("ns")``, ``tug.Decimal(12, 2)``, ...).

The simple types may be used as classes or instances (``tug.Int64`` and ``tug.Int64()`` are equal);
``cast`` also accepts Polars and pyarrow data types and tug's short names ("i64", "str", ...).
"""
from __future__ import annotations

from . import _tug


class DataType:
    """Base of tug's data types."""

    _id = ""

    def _to_tug(self) -> _tug.DataType:
        return _tug.DataType(self._id)

    def __eq__(self, other):
        if isinstance(other, type) and issubclass(other, DataType):
            other = other()
        return isinstance(other, DataType) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return type(self).__name__


def _simple(name, tid):
    return type(name, (DataType,), {"_id": tid, "__doc__": f"The {tid} type."})


Boolean = _simple("Boolean", "bool")
Int8 = _simple("Int8", "int8")
Int16 = _simple("Int16", "int16")
Int32 = _simple("Int32", "int32")
Int64 = _simple("Int64", "int64")
UInt8 = _simple("UInt8", "uint8")
UInt16 = _simple("UInt16", "uint16")
UInt32 = _simple("UInt32", "uint32")
UInt64 = _simple("UInt64", "uint64")
Float32 = _simple("Float32", "float32")
Float64 = _simple("Float64", "float64")
String = _simple("String", "string")
Utf8 = String
Date = _simple("Date", "date")


class Datetime(DataType):
    """Timestamps: ticks of ``time_unit`` since the epoch; ``time_zone`` is kept as metadata."""

    _id = "datetime"

    def __init__(self, time_unit: str = "us", time_zone: str | None = None):
        self.time_unit = time_unit
        self.time_zone = time_zone

    def _to_tug(self):
        return _tug.DataType("datetime", unit=self.time_unit, tz=self.time_zone or "")

    def __repr__(self):
        return f"Datetime(time_unit={self.time_unit!r}, time_zone={self.time_zone!r})"


class Duration(DataType):
    """Durations: ticks of ``time_unit``."""

    _id = "duration"

    def __init__(self, time_unit: str = "us"):
        self.time_unit = time_unit

    def _to_tug(self):
        return _tug.DataType("duration", unit=self.time_unit)

    def __repr__(self):
        return f"Duration(time_unit={self.time_unit!r})"


class Decimal(DataType):
    """128-bit decimals of ``precision`` 1..38 digits, ``scale`` of them after the point."""

    _id = "decimal"

    def __init__(self, precision: int = 38, scale: int = 0):
        self.precision = precision
        self.scale = scale

    def _to_tug(self):
        return _tug.DataType("decimal", precision=self.precision, scale=self.scale)

    def __repr__(self):
        return f"Decimal(precision={self.precision}, scale={self.scale})"


_SIMPLE = {c._id: c for c in (Boolean, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float32,
                              Float64, String, Date)}
_SHORT = {"bool": Boolean, "i8": Int8, "i16": Int16, "i32": Int32, "i64": Int64, "u8": UInt8, "u16": UInt16,
          "u32": UInt32, "u64": UInt64, "f32": Float32, "f64": Float64, "str": String, "date": Date}
_POLARS_NAMES = {c.__name__: c for c in _SIMPLE.values()} | {"Utf8": String}


def from_tug(t: _tug.DataType) -> DataType:
    """The Python data type of a C++ one."""
    if t.id == "datetime":
        return Datetime(t.unit, t.tz or None)
    if t.id == "duration":
        return Duration(t.unit)
    if t.id == "decimal":
        return Decimal(t.precision, t.scale)
    return _SIMPLE[t.id]()


def to_tug(dtype) -> _tug.DataType:
    """A C++ data type from a tug, Polars or pyarrow data type or a short name ("i64", "str", ...).

    Raises InvalidArgumentError for anything else.
    """
    from .exceptions import InvalidArgumentError

    if isinstance(dtype, type) and issubclass(dtype, DataType):
        dtype = dtype()
    if isinstance(dtype, DataType):
        return dtype._to_tug()
    if isinstance(dtype, str):
        if dtype in _SHORT:
            return _SHORT[dtype]()._to_tug()
        raise InvalidArgumentError(f"unknown data type {dtype!r} (short names: {', '.join(_SHORT)})")
    mod = getattr(type(dtype) if not isinstance(dtype, type) else dtype, "__module__", "") or ""
    if mod.startswith("polars"):
        name = dtype.__name__ if isinstance(dtype, type) else type(dtype).__name__
        if name in _POLARS_NAMES:
            return _POLARS_NAMES[name]()._to_tug()
        if name == "Datetime":
            return Datetime(getattr(dtype, "time_unit", None) or "us", getattr(dtype, "time_zone", None))._to_tug()
        if name == "Duration":
            return Duration(getattr(dtype, "time_unit", None) or "us")._to_tug()
        if name == "Decimal":
            return Decimal(getattr(dtype, "precision", None) or 38, getattr(dtype, "scale", None) or 0)._to_tug()
    if mod.startswith("pyarrow"):
        import pyarrow as pa

        t = dtype
        for check, cls in ((pa.types.is_boolean, Boolean), (pa.types.is_int8, Int8), (pa.types.is_int16, Int16),
                           (pa.types.is_int32, Int32), (pa.types.is_int64, Int64), (pa.types.is_uint8, UInt8),
                           (pa.types.is_uint16, UInt16), (pa.types.is_uint32, UInt32),
                           (pa.types.is_uint64, UInt64), (pa.types.is_float32, Float32),
                           (pa.types.is_float64, Float64), (pa.types.is_date32, Date)):
            if check(t):
                return cls()._to_tug()
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return String()._to_tug()
        if pa.types.is_timestamp(t):
            return Datetime(t.unit, t.tz)._to_tug()
        if pa.types.is_duration(t):
            return Duration(t.unit)._to_tug()
        if pa.types.is_decimal128(t):
            return Decimal(t.precision, t.scale)._to_tug()
    raise InvalidArgumentError(f"unknown data type {dtype!r}")
