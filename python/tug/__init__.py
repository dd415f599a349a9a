"""tug: a GPU-accelerated, out-of-core dataframe engine with Polars' API.

    import tug
    q = tug.scan_parquet("lineitem.parquet").filter(tug.col("l_quantity") > 10).group_by("l_returnflag")
    df = q.agg(tug.col("l_extendedprice").sum()).collect(engine="gpu")   # or "cpu", "auto"
    df.to_polars(); df.to_arrow(); df.to_pandas()

See docs/python.md.
"""
from . import _tug
from . import exceptions as _exceptions
from .cassandra import cassandra_execute, scan_cassandra
from .datatypes import (Boolean, DataType, Date, Datetime, Decimal, Duration, Float32, Float64, Int8, Int16, Int32,
                        Int64, String, UInt8, UInt16, UInt32, UInt64, Utf8)
from .exceptions import (CancelledError, ColumnNotFoundError, ComputeError, InternalError, InvalidArgumentError, IOError,
                         NotSupportedError, OutOfMemoryError, ResourceError, SchemaError, TugError)
from .expr import Expr, coalesce, col, concat_str, count, len, lit, max, mean, min, sum, when
from .frame import (DataFrame, GroupBy, LazyFrame, LazyGroupBy, Statistics, concat, from_arrow, from_dict,
                    from_pandas, from_polars, read_csv, read_parquet, scan_csv, scan_parquet)
from .kernels import Kernel, Partition, compile_cuda_source, cuda_kernel, gpu_available, python_kernel
from .options import EngineOptions, OptimizerFlags
from .progress import ProgressBar, set_progress
from .series import Series



def polars_engine(fallback: str = "warn", **options):
    """An engine for Polars' ``LazyFrame.collect(engine=...)`` that runs the query on tug (tug.polars_ir
    module; needs Polars 2.x)."""
    from .polars_ir import polars_engine as make

    return make(fallback=fallback, **options)


def _add_cuda_library_directories():
    """Tells the module where the PyPI CUDA wheels keep their libraries (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib,
    nvidia/libnvcomp/lib64, nvidia/nccl/lib): NVRTC, opened on the first CUDA source kernel, nvCOMP, opened by
    the first GPU Parquet scan, and NCCL, opened by the first exchange of device rows between ranks, are there
    when they are no system libraries. Nothing is loaded here, and without those
    packages nothing happens: tug then runs everything but CUDA source kernels, and decompresses Parquet
    pages on the host."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            lib = os.path.join(root, sub, "lib64" if sub == "libnvcomp" else "lib")
            if (sub.startswith("cu") or sub in ("cuda_nvrtc", "libnvcomp", "nccl")) and os.path.isdir(lib):
                _tug.add_cuda_library_directory(lib)


if _tug.built_with_cuda:
    _add_cuda_library_directories()

_tug._register_exceptions({k: getattr(_exceptions, k) for k in (
    "TugError", "ColumnNotFoundError", "SchemaError", "ComputeError", "InvalidArgumentError", "IOError",
    "OutOfMemoryError", "ResourceError", "NotSupportedError", "InternalError", "CancelledError")})

__version__ = _tug.__version__
built_with_cuda: bool = _tug.built_with_cuda

__all__ = [
    "Boolean", "CancelledError", "ColumnNotFoundError", "ComputeError", "DataFrame", "DataType", "Date", "Datetime", "Decimal",
    "Duration", "EngineOptions", "Expr", "Float32", "Float64", "GroupBy", "IOError", "Int16", "Int32", "Int64", "Int8",
    "InternalError", "InvalidArgumentError", "Kernel", "LazyFrame", "LazyGroupBy", "NotSupportedError", "OptimizerFlags",
    "OutOfMemoryError", "Partition", "ProgressBar", "ResourceError", "SchemaError", "Series", "Statistics", "String",
    "TugError", "UInt16", "UInt32", "UInt64", "UInt8", "Utf8", "cassandra_execute", "coalesce", "col",
    "compile_cuda_source", "concat", "concat_str", "count", "cuda_kernel", "from_arrow", "from_dict", "from_pandas",
    "from_polars", "gpu_available", "len", "polars_engine", "python_kernel", "lit", "max", "mean", "min", "read_csv",
    "read_parquet", "scan_cassandra", "scan_csv", "scan_parquet", "set_progress", "sum", "when",
]
