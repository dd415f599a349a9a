"""Users' own kernels on every partition (docs/user-kernels.md, "From Python").

    src = r'''
    #include <tug/kernel.cuh>
    extern "C" __global__ void axpy(long long rows, tug::in_column<double> x, tug::out_column<double> y, double a) {
      for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) y[i] = a * x[i];
    }'''
    k = tug.cuda_kernel(src, "axpy", host=lambda p: {"y": p.numpy("x") * p.args[0]})
    lf.map_partitions(k, inputs=["x"], args=[2.5], schema={"y": tug.Float64}).collect()

A kernel is CUDA source (compiled by NVRTC on the GPU engine), a Python callable run on each partition in
host memory (numpy / pyarrow views of tug's buffers), a Python callable run on each partition in device
memory (columns with ``__cuda_array_interface__`` and ``__dlpack__``, for CuPy and Numba), or several of
these. Scalar arguments are plain Python values.
"""
from __future__ import annotations

import atexit
import traceback

from . import _tug
from .datatypes import to_tug
from .exceptions import InvalidArgumentError

ColumnView = _tug.ColumnView


class Kernel:
    """A user kernel's forms; make one with :func:`cuda_kernel` or :func:`python_kernel`, or pass a plain
    callable (its host form) to ``map_partitions``."""

    __slots__ = ("name", "host", "device", "source", "entry", "options", "cache_dir", "launch")

    def __init__(self, name: str, *, host=None, device=None, source: str | None = None, entry: str | None = None,
                 options=(), cache_dir: str | None = None, launch=None):
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"a kernel needs a name, got {name!r}")
        for what, fn in (("host", host), ("device", device)):
            if fn is not None and not callable(fn):
                raise InvalidArgumentError(f"kernel {name!r}: {what}= must be callable, got {type(fn).__name__}")
        if host is None and device is None and source is None:
            raise InvalidArgumentError(f"kernel {name!r} has no form: give CUDA source, host= or device=")
        self.name = name
        self.host = host
        self.device = device
        self.source = source
        self.entry = entry if entry is not None else name
        self.options = [str(o) for o in options]
        self.cache_dir = cache_dir
        self.launch = _launch(launch, name)

    def __repr__(self):
        forms = [f for f, v in (("host", self.host), ("device", self.device), ("cuda source", self.source)) if v]
        return f"<tug.Kernel {self.name!r} ({'+'.join(forms)})>"


def cuda_kernel(source: str, name: str, *, options=(), host=None, launch=None, cache_dir: str | None = None) -> Kernel:
    """A kernel from CUDA C++ source: ``name`` is its ``extern "C" __global__`` entry point, which takes
    ``long long rows``, a ``tug::in_column<T>`` per input column, a ``tug::out_column<T>`` per output column,
    then the arguments. NVRTC compiles it on the GPU engine (``options`` are NVRTC's) and the cubin is cached
    on disk (``cache_dir``; default $TUG_KERNEL_CACHE or ~/.cache/tug/kernels). ``host`` is a Python callable
    for the CPU engine (see :func:`python_kernel`); without it the kernel needs a GPU. ``launch`` is
    ``(grid, block)`` or ``(grid, block, shared_bytes)``; tug chooses when it is not given."""
    if not isinstance(source, str) or not source.strip():
        raise InvalidArgumentError(f"cuda_kernel {name!r}: the source is empty")
    return Kernel(name, host=host, source=source, options=options, cache_dir=cache_dir, launch=launch)


def python_kernel(host=None, *, device=None, name: str | None = None) -> Kernel:
    """A kernel of Python callables, each called as ``fn(partition)`` with a :class:`Partition`: ``host`` on
    the CPU engine (numpy and pyarrow views), ``device`` on the GPU engine (device columns for CuPy, Numba or
    any ``__cuda_array_interface__`` / DLPack consumer; launch on ``partition.stream``). A callable fills
    ``partition.output(...)`` in place, calls ``set_output``, or returns the outputs: a dict of arrays by
    output name, a pyarrow RecordBatch or Table, or one array when the kernel has one output."""
    fn = host if host is not None else device
    if name is None:
        name = getattr(fn, "__name__", None) or "python_kernel"
        if name == "<lambda>":
            name = "lambda"
    return Kernel(name, host=host, device=device)


def compile_cuda_source(source: str, name: str, arch: str, *, options=(), cache_dir: str | None = None) -> dict:
    """Compiles CUDA source for ``arch`` ("sm_90") without a GPU (to check a kernel in CI, or warm the
    cache): returns ``arch``, ``cubin`` (bytes), ``log``, ``cache_file`` and ``from_cache``. Raises
    InvalidArgumentError with NVRTC's log (file and line of each error) when it does not compile, and
    NotSupportedError when tug was built without CUDA."""
    a, cubin, log, cache_file, from_cache = _tug.compile_cuda_source(source, name, [str(o) for o in options], arch,
                                                                     cache_dir)
    return {"arch": a, "cubin": cubin, "log": log, "cache_file": cache_file, "from_cache": from_cache}


class Partition:
    """One partition as a Python kernel receives it, valid while the kernel runs (the column views it hands
    out stay valid after). ``input(i | name)`` and ``output(i | name)`` are :class:`ColumnView`s over tug's
    buffers (host or device memory: ``on_device``); ``numpy(name)`` is an input or output as a numpy array
    without a copy (host); ``to_arrow()`` the inputs as a pyarrow RecordBatch without a copy (host)."""

    __slots__ = ("_p", "args")

    def __init__(self, p: _tug.KernelPartition, args: tuple):
        self._p = p
        self.args: tuple = args  #: the kernel's scalar arguments, as given

    rows = property(lambda self: self._p.rows,
                    doc="Rows of this call: the partition's, or a slice of them when the partition is larger than "
                        "one call may take (memory_limit / threads on the CPU, the device budget / num_streams on "
                        "the GPU).")
    number = property(lambda self: self._p.number, doc="The partition's place among the kernel's inputs.")
    first_row = property(lambda self: self._p.first_row,
                         doc="The first row of this call within partition ``number`` (0 unless it is cut into calls).")
    partition_rows = property(lambda self: self._p.partition_rows,
                              doc="Rows of the whole partition ``number`` (``rows`` unless it is cut into calls).")
    on_device = property(lambda self: self._p.on_device, doc="True on the GPU engine (device memory).")
    stream = property(lambda self: self._p.stream,
                      doc="The cudaStream_t (an int) to launch on; the kernel does not synchronize it.")
    input_names = property(lambda self: self._p.input_names)
    output_names = property(lambda self: self._p.output_names)

    def __repr__(self):
        return f"<tug.Partition {self._p.where}>"

    def input(self, key) -> ColumnView:
        """Input column ``key`` (position or name)."""
        return self._p.input(key)

    def output(self, key) -> ColumnView:
        """Output column ``key`` (position or name), allocated by tug with ``rows`` rows, all valid: write
        its values in place and mark nulls with :meth:`set_nulls`."""
        return self._p.output(key)

    def numpy(self, key, *, output: bool = False):
        """Input (or with ``output=True`` output) column ``key`` as a numpy array over tug's buffer (read-only
        for inputs; the values of null rows are undefined)."""
        return _numpy(self._p.output(key) if output else self._p.input(key))

    def valid(self, key):
        """A numpy bool array: True where input ``key`` is not null."""
        return _valid_mask(self._p.input(key), self.rows)

    def set_nulls(self, key, mask) -> None:
        """Marks the rows of output ``key`` where ``mask`` (bool array of ``rows``) is True as null."""
        import numpy as np

        col = self._p.output(key)
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (col.size,):
            raise InvalidArgumentError(f"set_nulls({key!r}): the mask has shape {mask.shape}, the output "
                                       f"{col.size} rows")
        if col.size:
            bits = _numpy(col.validity)
            packed = np.packbits(~mask, bitorder="little")
            bits[:packed.size] &= packed

    def to_arrow(self):
        """The input columns as a pyarrow RecordBatch sharing tug's buffers (host partitions only)."""
        import pyarrow as pa

        table = pa.RecordBatchReader.from_stream(self._p.inputs_frame()).read_all()
        batches = table.to_batches()
        return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)

    def set_output(self, key, values) -> None:
        """Replaces output ``key`` with ``values`` (a pyarrow Array or ChunkedArray, a numpy array or a list;
        any length, the same for every output; strings included); tug checks its type against the
        declaration. Fixed-width numpy and pyarrow values are taken without a copy on the CPU engine."""
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        elif not isinstance(values, pa.Array):
            values = pa.array(values)
        batch = pa.RecordBatch.from_arrays([values], names=["value"])
        schema_cap, array_cap = batch.__arrow_c_array__()
        self._p.set_output(key, _tug.DataFrame.from_arrow_array(schema_cap, array_cap))


_NUMPY_DTYPES = {"bool": "?", "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1",
                 "uint16": "u2", "uint32": "u4", "uint64": "u8", "float32": "f4", "float64": "f8", "date": "i4",
                 "datetime": "i8", "duration": "i8"}


def _numpy(col: ColumnView):
    import numpy as np

    if col.on_device:
        raise InvalidArgumentError(f"column {col.name!r} is in device memory: read it with CuPy or Numba "
                                   "(__cuda_array_interface__) or DLPack, not numpy")
    if col.size == 0:
        if col.dtype.id not in _NUMPY_DTYPES:
            col.__array_interface__  # raises NotSupportedError naming the column and type
        return np.empty(0, dtype=_NUMPY_DTYPES[col.dtype.id])
    a = np.asarray(col)
    return a


def _valid_mask(col: ColumnView, n: int):
    import numpy as np

    if col.validity is None:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(_numpy(col.validity), bitorder="little")
    return bits[col.validity_offset:col.validity_offset + n].astype(bool)


def _launch(launch, name):
    if launch is None:
        return (0, 0, 0)
    t = tuple(int(x) for x in launch)
    if len(t) == 2:
        t = t + (0,)
    if len(t) != 3 or t[0] < 0 or t[1] < 0 or t[2] < 0:
        raise InvalidArgumentError(f"kernel {name!r}: launch= is (grid, block) or (grid, block, shared_bytes) of "
                                   f"non-negative ints, got {launch!r}")
    return t


def _scalar(v, i: int, name: str) -> _tug.Scalar:
    """A kernel argument from a plain value: bool -> bool, int -> int64 (uint64 past its range), float ->
    float64, str -> string; numpy scalars keep their own type (np.float32(1) -> float32)."""
    if isinstance(v, _tug.Scalar):
        return v
    if isinstance(v, bool):
        return _tug.Scalar(_tug.DataType("bool"), v)
    if isinstance(v, int):
        if -(1 << 63) <= v < (1 << 63):
            return _tug.Scalar(_tug.DataType("int64"), v)
        if 0 <= v < (1 << 64):
            return _tug.Scalar(_tug.DataType("uint64"), v)
        raise InvalidArgumentError(f"kernel {name!r}: argument {i} ({v}) does not fit 64 bits")
    if isinstance(v, float):
        return _tug.Scalar(_tug.DataType("float64"), v)
    if isinstance(v, str):
        return _tug.Scalar(_tug.DataType("string"), v)
    dtype = getattr(v, "dtype", None)
    if dtype is not None and getattr(v, "shape", None) == ():
        kind, size = dtype.kind, dtype.itemsize
        ids = {"b": "bool", "i": f"int{8 * size}", "u": f"uint{8 * size}", "f": f"float{8 * size}"}
        if kind in ids and ids[kind] in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                         "uint64", "float32", "float64"):
            return _tug.Scalar(_tug.DataType(ids[kind]), v.item())
    raise InvalidArgumentError(f"kernel {name!r}: argument {i} is {type(v).__name__} {v!r}; kernels take bool, "
                               "int, float, str and numpy scalars")


def _as_kernel(kernel) -> Kernel:
    if isinstance(kernel, Kernel):
        return kernel
    if callable(kernel):
        return python_kernel(kernel)
    raise InvalidArgumentError(f"map_partitions takes a tug.Kernel (cuda_kernel, python_kernel) or a callable, "
                               f"got {type(kernel).__name__}")


def _adapter(fn, args: tuple):
    """``fn`` as the C++ side calls it: wraps the partition, takes what ``fn`` returns as the outputs."""

    def call(p):
        part = Partition(p, args)
        try:
            out = fn(part)
            if out is not None:
                _set_outputs(part, out)
        except Exception as e:
            # the message tug's error carries: the exception and the kernel's frames (not tug's nor the caller's)
            frames = traceback.format_tb(e.__traceback__.tb_next)
            raise _KernelRaised(f"{type(e).__name__}: {e}" + ("\n" + "".join(frames[-3:]).rstrip() if frames else ""))

    return call


class _KernelRaised(Exception):
    """What a Python kernel raised, as text for tug's ComputeError."""


def _set_outputs(part: Partition, out) -> None:
    names = part.output_names
    if hasattr(out, "column_names") and hasattr(out, "column"):  # pyarrow RecordBatch / Table
        out = {n: out.column(n) for n in out.column_names}
    if not isinstance(out, dict):
        if len(names) != 1:
            raise InvalidArgumentError(f"the kernel returned one array but declares {len(names)} outputs "
                                       f"({', '.join(names) or 'none'}): return a dict by output name")
        out = {names[0]: out}
    unknown = [n for n in out if n not in names]
    if unknown:
        raise InvalidArgumentError(f"the kernel returned {', '.join(map(repr, unknown))}, which it does not "
                                   f"declare (outputs: {', '.join(names) or 'none'})")
    for n in names:
        if n in out:
            part.set_output(n, out[n])


def _user_kernel(lf, kernel, args, schema, inputs, keep):
    k = _as_kernel(kernel)
    args = tuple(args)
    columns = [n for n, _ in lf._lf.schema]
    if inputs is None:
        inputs = columns
    elif isinstance(inputs, str):
        inputs = [inputs]
    keep = [keep] if isinstance(keep, str) else list(keep or [])
    if schema is None:
        outputs = []
    else:
        items = schema.items() if isinstance(schema, dict) else schema
        outputs = [(str(n), to_tug(t)) for n, t in items]
    host = _adapter(k.host, args) if k.host is not None else None
    device = _adapter(k.device, args) if k.device is not None else None
    source = (k.source, k.entry, k.options) if k.source is not None else None
    return _tug.user_kernel(k.name, list(inputs), outputs, keep, [_scalar(a, i, k.name) for i, a in enumerate(args)],
                            host, device, source, k.cache_dir, k.launch)


def map_partitions(lf, kernel, *, args=(), schema=None, inputs=None, keep=None):
    """See ``LazyFrame.map_partitions``."""
    from .frame import LazyFrame

    return LazyFrame(_tug.map_partitions(lf._lf, _user_kernel(lf, kernel, args, schema, inputs, keep)))


def foreach_partition(lf, kernel, *, args=(), inputs=None, options=None) -> None:
    """See ``LazyFrame.foreach_partition``."""
    _tug.foreach_partition(lf._lf, _user_kernel(lf, kernel, args, None, inputs, None), options)


def gpu_available() -> bool:
    """True when tug was built with CUDA and a GPU is visible."""
    return _tug.gpu_available()


# plans are invisible to the garbage collector: drop the kernels' Python functions before the interpreter's
# modules go, so that frames held by module globals that the functions reach are freed (python/src/kernels.cpp)
atexit.register(_tug._release_kernels)

__all__ = ["ColumnView", "Kernel", "Partition", "compile_cuda_source", "cuda_kernel", "gpu_available",
           "python_kernel"]
