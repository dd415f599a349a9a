"""The exceptions tug raises, one per error class of the C++ core (include/tug/core/error.hpp).

Each carries the C++ message, which names the file, column, option or value involved.
"""


class TugError(Exception):
    """Base of every error tug raises."""


class ColumnNotFoundError(TugError):
    """A column name that does not exist in the input (C++ ``column_not_found_error``)."""


class SchemaError(TugError):
    """An expression applied to a type it does not support (C++ ``type_error``)."""


class ComputeError(TugError):
    """A computation invalid for the values, e.g. a failing strict cast (C++ ``compute_error``)."""


class InvalidArgumentError(TugError, ValueError):
    """An invalid argument or option value (C++ ``invalid_argument_error``)."""


class IOError(TugError, OSError):  # noqa: A001 - Polars-like name inside the tug namespace
    """A file that cannot be opened, read, decoded or written (C++ ``io_error``)."""


class OutOfMemoryError(TugError, MemoryError):
    """The memory budget (``memory_limit``) was exhausted (C++ ``memory_error``)."""


class ResourceError(TugError):
    """The operating system refused a resource, e.g. a thread (C++ ``resource_error``)."""


class NotSupportedError(TugError, NotImplementedError):
    """A feature tug does not implement, e.g. an Arrow type it cannot represent (C++ ``not_implemented_error``)."""


class InternalError(TugError):
    """A broken invariant inside tug: a bug, never the user's fault (C++ ``internal_error``)."""


class CancelledError(KeyboardInterrupt):
    """A query stopped at a cancellation point before it finished (C++ ``cancelled_error``): what Ctrl-C
    raises while ``collect``, ``profile`` or a sink runs. A ``KeyboardInterrupt``, so that ``except
    Exception`` does not swallow it; not a TugError for the same reason."""
