"""DataFrame and LazyFrame: Polars' names over tug's lazy C++ API (include/tug/api/*.hpp)."""
from __future__ import annotations

import html
import os

from . import _tug
from . import progress as _progress
from .datatypes import from_tug, to_tug
from .exceptions import InvalidArgumentError
from .expr import Expr, _expr, _exprs, col
from .options import resolve
from .series import Series


def _schema(items) -> dict:
    return {name: from_tug(t) for name, t in items}


def _names(args) -> list:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_names(a))
        elif isinstance(a, str):
            out.append(a)
        else:
            raise InvalidArgumentError(f"expected a column name, got {a!r}")
    return out


def _flags(value, n: int, what: str) -> list:
    if isinstance(value, bool):
        return [value]
    value = list(value)
    if len(value) != n:
        raise InvalidArgumentError(f"sort: {what} has {len(value)} entries for {n} sort keys")
    return [bool(v) for v in value]


def _count(n: int, what: str) -> int:
    if n < 0:
        raise InvalidArgumentError(f"{what}({n}): a negative count is not supported (Polars' 'all but the last n')")
    return n


class Statistics:
    """What ``profile()`` measured: ``to_dict()`` for programs, ``str()`` for people, ``plot()`` for the eyes."""

    def __init__(self, r: _tug.QueryResult, recorder: _progress.Recorder | None = None):
        #: progress snapshots taken while the query ran, as (seconds since the start, snapshot dict)
        #: (tug.progress; one every 0.05 s, the last at the end)
        self.timeline: list = list(recorder.timeline) if recorder else []
        #: bytes moved between memory tiers by direction ("device->host", "host->disk", ...), in total
        self.transfers: dict = dict(recorder.final["bytes_moved"]) if recorder and recorder.final else {}
        self.physical_plan: str = r.physical_plan
        self.fallbacks: list = list(r.fallbacks)
        self.peak_memory: int = r.peak_memory
        self.total_seconds: float = r.total_seconds
        self.operators: list = [
            {"name": o.name, "rows_in": o.rows_in, "rows_out": o.rows_out, "partitions_out": o.partitions_out,
             "bytes_out": o.bytes_out, "seconds": o.seconds, "device_waits": o.device_waits,
             "wait_seconds": o.wait_seconds, "bytes_in": o.bytes_in, "peak_host_memory": o.peak_host_memory,
             "peak_device_memory": o.peak_device_memory, "spilled_from_device": o.spilled_from_device,
             "spilled_to_disk": o.spilled_to_disk}
            for o in r.operators
        ]
        self._text: str = r.statistics
        self._json: str = r.statistics_json

    def to_json(self) -> str:
        """The engine's statistics as JSON text: per operator (rows and bytes in and out, time, peak host and
        device memory, bytes moved by direction), the peaks and the transfers of the query."""
        return self._json

    def to_dict(self) -> dict:
        return {"operators": self.operators, "peak_memory": self.peak_memory, "total_seconds": self.total_seconds,
                "fallbacks": self.fallbacks, "physical_plan": self.physical_plan, "transfers": self.transfers}

    def plot(self, *, axes=None):
        """Draws the statistics with matplotlib: the bytes moved between memory tiers over the query (one
        line per direction, from ``timeline``) and the time of each operator. Returns the matplotlib Figure
        (in a notebook it shows itself). ``axes``: two matplotlib Axes to draw into instead of a new figure.
        @raises ModuleNotFoundError naming matplotlib when it is not installed."""
        try:
            import matplotlib.pyplot as plt
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError("Statistics.plot needs matplotlib, which is not installed: "
                                      "pip install matplotlib", name="matplotlib") from e
        if axes is None:
            fig, (tiers, ops) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
        else:
            tiers, ops = axes
            fig = tiers.figure
        directions = sorted({d for _, p in self.timeline for d, b in p["bytes_moved"].items() if b > 0}
                            | {d for d, b in self.transfers.items() if b > 0})
        end = max(self.total_seconds, self.timeline[-1][0] if self.timeline else 0.0)
        for d in directions:
            xs = [0.0] + [t for t, _ in self.timeline] + [end]
            ys = [0] + [p["bytes_moved"].get(d, 0) for _, p in self.timeline] + [self.transfers.get(d, 0)]
            tiers.step(xs, [y / 2**20 for y in ys], where="post", label=d)
        if directions:
            tiers.legend(loc="upper left", fontsize="small")
        else:
            tiers.text(0.5, 0.5, "nothing moved between memory tiers", ha="center", va="center",
                       transform=tiers.transAxes)
        tiers.set_xlabel("seconds")
        tiers.set_ylabel("MiB moved (cumulative)")
        tiers.set_title("bytes moved per tier")
        names = [f"{i}: {o['name']}" for i, o in enumerate(self.operators)]
        ops.barh(names, [o["seconds"] for o in self.operators])
        ops.invert_yaxis()
        ops.set_xlabel("seconds")
        ops.set_title(f"operators (total {self.total_seconds:.3f} s, peak {self.peak_memory / 2**20:.1f} MiB)")
        ops.tick_params(axis="y", labelsize="small")
        fig.tight_layout()
        return fig

    def __str__(self):
        return self._text

    __repr__ = __str__


class LazyFrame:
    """A lazy query: each method adds a step to the plan; ``collect()`` runs it."""

    __slots__ = ("_lf",)

    def __init__(self, lf: _tug.LazyFrame):
        self._lf = lf

    # --- schema
    @property
    def schema(self) -> dict:
        """Column names and data types of the result, known without running anything."""
        return _schema(self._lf.schema)

    def collect_schema(self) -> dict:
        return self.schema

    @property
    def columns(self) -> list:
        return [n for n, _ in self._lf.schema]

    @property
    def dtypes(self) -> list:
        return list(self.schema.values())

    @property
    def width(self) -> int:
        return len(self._lf.schema)

    def __repr__(self):
        return "<tug.LazyFrame [" + ", ".join(f"{n}: {t}" for n, t in self._lf.schema) + "]>"

    def lazy(self) -> LazyFrame:
        return self

    # --- transformations
    def filter(self, *predicates, **constraints) -> LazyFrame:
        """Rows where every predicate holds (null counts as false); ``name=value`` means ``col(name) == value``.
        A predicate may use aggregates of the whole input, as in Polars: ``col("x") == col("x").max()``."""
        ps = _exprs(predicates) + [(col(k) == v)._e for k, v in constraints.items()]
        if not ps:
            raise InvalidArgumentError("filter() needs a predicate")
        p = ps[0]
        for q in ps[1:]:
            p = p.and_(q)
        return LazyFrame(self._lf.filter(p))

    def select(self, *exprs, **named_exprs) -> LazyFrame:
        return LazyFrame(self._lf.select(_exprs(exprs, named_exprs)))

    def with_columns(self, *exprs, **named_exprs) -> LazyFrame:
        return LazyFrame(self._lf.with_columns(_exprs(exprs, named_exprs)))

    def group_by(self, *by, maintain_order: bool = False) -> LazyGroupBy:
        keys = _exprs(by)
        if not keys:
            raise InvalidArgumentError("group_by() needs at least one key")
        return LazyGroupBy(self._lf.group_by(keys, maintain_order))

    def join(self, other, on=None, how: str = "inner", *, left_on=None, right_on=None,
             suffix: str = "_right") -> LazyFrame:
        """Joins with `other` (a LazyFrame or DataFrame) on equal keys; ``how`` is inner, left, right, full,
        semi, anti or cross."""
        other = _as_lazy(other)
        if how == "cross":
            if on is not None or left_on is not None or right_on is not None:
                raise InvalidArgumentError("a cross join takes no keys")
            return LazyFrame(self._lf.join(other._lf, [], [], "cross", suffix))
        if on is not None:
            if left_on is not None or right_on is not None:
                raise InvalidArgumentError("join: pass either on= or left_on= and right_on=")
            left_on = right_on = on
        if left_on is None or right_on is None:
            raise InvalidArgumentError("join: pass on= or both left_on= and right_on=")
        lk = _exprs([left_on])
        rk = _exprs([right_on])
        if len(lk) != len(rk):
            raise InvalidArgumentError(f"join: {len(lk)} left keys but {len(rk)} right keys")
        return LazyFrame(self._lf.join(other._lf, lk, rk, how, suffix))

    def sort(self, by, *more_by, descending=False, nulls_last=False, maintain_order: bool = False) -> LazyFrame:
        keys = _exprs([by, *more_by])
        return LazyFrame(self._lf.sort(keys, _flags(descending, len(keys), "descending"),
                                       _flags(nulls_last, len(keys), "nulls_last"), maintain_order))

    def unique(self, subset=None, *, keep: str = "any", maintain_order: bool = False) -> LazyFrame:
        subset = [] if subset is None else _names([subset])
        return LazyFrame(self._lf.unique(subset, keep, maintain_order))

    def slice(self, offset: int, length: int | None = None) -> LazyFrame:
        return LazyFrame(self._lf.slice(offset, -1 if length is None else length))

    def head(self, n: int = 5) -> LazyFrame:
        return self.slice(0, _count(n, "head"))

    def limit(self, n: int = 5) -> LazyFrame:
        return self.slice(0, _count(n, "limit"))

    def tail(self, n: int = 5) -> LazyFrame:
        return self.slice(-_count(n, "tail"), n)

    def with_row_index(self, name: str = "index", offset: int = 0) -> LazyFrame:
        return LazyFrame(self._lf.with_row_index(name, offset))

    def rename(self, mapping: dict) -> LazyFrame:
        return LazyFrame(self._lf.rename(dict(mapping)))

    def drop(self, *columns) -> LazyFrame:
        return LazyFrame(self._lf.drop(_names(columns)))

    def map_partitions(self, kernel, *, args=(), schema=None, inputs=None, keep=None) -> LazyFrame:
        """Runs a user kernel on every partition (docs/user-kernels.md): ``kernel`` is a ``tug.cuda_kernel``,
        a ``tug.python_kernel`` or a callable taking a ``tug.Partition``. ``inputs`` are the columns it reads
        (default: all), ``schema`` the columns it makes (``{"z": tug.Float64}``; checked on every partition),
        ``keep`` input columns passed through ahead of them, ``args`` plain Python scalars."""
        from .kernels import map_partitions

        return map_partitions(self, kernel, args=args, schema=schema, inputs=inputs, keep=keep)

    def foreach_partition(self, kernel, *, args=(), inputs=None, engine="auto", options=None,
                          **option_overrides) -> None:
        """Runs the query and a user kernel on every partition for its effect (it declares no outputs)."""
        from .kernels import foreach_partition

        foreach_partition(self, kernel, args=args, inputs=inputs, options=resolve(engine, options, option_overrides))

    # --- running
    def explain(self, *, engine="auto", options=None, **option_overrides) -> str:
        """The optimized logical plan and the physical plan (the backend of each node)."""
        return self._lf.explain(resolve(engine, options, option_overrides))

    def collect(self, *, engine="auto", options=None, progress=None, **option_overrides) -> DataFrame:
        """Runs the query. ``engine`` is "auto", "cpu", "gpu" or an EngineOptions; other engine options may
        follow as keywords (``collect(engine="cpu", memory_limit=1 << 30)``). ``progress``: True or False for
        a progress bar, a callable ``f(snapshot, finished)``, or None for the ``tug.set_progress`` default
        (a bar in notebooks and interactive sessions only; tug.progress). Ctrl-C cancels the query and
        raises tug.CancelledError, a KeyboardInterrupt."""
        o = resolve(engine, options, option_overrides)
        o.statistics = False
        return DataFrame._from(self._lf.collect(o, _progress.resolve(progress, "collect")))

    def profile(self, *, engine="auto", options=None, progress=None, **option_overrides) -> tuple:
        """Runs the query with statistics: returns (DataFrame, Statistics). ``progress`` as in collect."""
        o = resolve(engine, options, option_overrides)
        o.statistics = True
        rec = _progress.Recorder(_progress.resolve(progress, "profile"))
        r = self._lf.profile(o, rec)
        return DataFrame._from(r.frame), Statistics(r, rec)

    def sink_parquet(self, path, *, compression: str = "snappy", row_group_size: int | None = None,
                     statistics: bool = True, engine="auto", options=None, progress=None,
                     **option_overrides) -> None:
        """Runs the query and writes Parquet; a path ending in '/' (or a directory) gets one file per partition.
        ``progress`` as in collect."""
        self._lf.sink_parquet(os.fspath(path), compression, row_group_size or 0, statistics,
                              resolve(engine, options, option_overrides), _progress.resolve(progress, "sink_parquet"))

    def sink_csv(self, path, *, include_header: bool = True, separator: str = ",", engine="auto", options=None,
                 progress=None, **option_overrides) -> None:
        """Runs the query and writes CSV. ``progress`` as in collect."""
        self._lf.sink_csv(os.fspath(path), include_header, separator, resolve(engine, options, option_overrides),
                          _progress.resolve(progress, "sink_csv"))


    def sink_cassandra(self, keyspace: str, table: str, *, engine="auto", options=None, progress=None,
                       **cassandra_options) -> dict:
        """Runs the query and writes its rows into the Cassandra table ``keyspace.table`` with a prepared
        INSERT (unlogged batches of one partition key). Every column must exist in the table with a type it
        can take, and the primary key must be complete, before anything is written (ColumnNotFoundError,
        SchemaError, InvalidArgumentError). Options besides the connection's (tug.cassandra module):
        ``consistency`` ("LOCAL_QUORUM"), ``max_in_flight`` (5), ``batch_max_rows`` (100),
        ``batch_max_bytes`` (16384), ``ttl_seconds`` (0: none), ``write_time_us`` (-1: the server's),
        ``if_not_exists`` (False), ``max_rows_per_second`` (0: no cap). ``engine``, ``options``: the query's
        engine options as in collect (an EngineOptions field as a keyword goes to Cassandra's options, so
        pass them in ``options``). The rows are written as the query makes them, partition by partition, so
        a result larger than ``memory_limit`` can be written. Returns what it did: ``rows_written``,
        ``rows_not_applied`` (``if_not_exists``: rows whose key existed), ``requests``, ``batches``, ``retries``, ``max_in_flight``, the session's ``metrics``, ``peak_memory``
        and the query's ``statistics`` (as ``profile``, with a ``CASSANDRA SINK`` line). A failed write
        raises IOError saying how many rows were written."""
        return _tug.sink_cassandra(self._lf, keyspace, table, cassandra_options, resolve(engine, options, {}),
                                   _progress.resolve(progress, "sink_cassandra"))


class LazyGroupBy:
    """``group_by(...)``: ``.agg(...)`` finishes it."""

    def __init__(self, gb: _tug.GroupBy):
        self._gb = gb

    def agg(self, *aggs, **named_aggs) -> LazyFrame:
        return LazyFrame(self._gb.agg(_exprs(aggs, named_aggs)))


class GroupBy:
    """``DataFrame.group_by(...)``: ``.agg(...)`` runs it."""

    def __init__(self, lgb: LazyGroupBy):
        self._lgb = lgb

    def agg(self, *aggs, **named_aggs) -> DataFrame:
        return self._lgb.agg(*aggs, **named_aggs).collect()


def _as_lazy(x) -> LazyFrame:
    if isinstance(x, LazyFrame):
        return x
    if isinstance(x, DataFrame):
        return x.lazy()
    raise InvalidArgumentError(f"expected a tug LazyFrame or DataFrame, got {type(x).__name__}")


class DataFrame:
    """An in-memory table: what ``collect()`` returns. ``DataFrame(data)`` takes a dict of columns (through
    pyarrow), or anything with ``__arrow_c_stream__`` / ``__arrow_c_array__`` (pyarrow, Polars, pandas,
    DuckDB results), without copying fixed-width buffers."""

    __slots__ = ("_df",)

    def __init__(self, data=None, schema=None):
        if data is None:
            data = {}
        if isinstance(data, _tug.DataFrame):
            self._df = data
            return
        if isinstance(data, DataFrame):
            self._df = data._df
            return
        if isinstance(data, (list, tuple)) and data and all(isinstance(v, Series) for v in data):
            data = {v.name: v for v in data}  # a list of tug Series
        if isinstance(data, dict):
            try:
                import pyarrow as pa
            except ImportError as e:  # pragma: no cover - pyarrow is in the test environment
                raise ImportError("DataFrame(dict) needs pyarrow; or pass an Arrow-compatible object") from e
            data = {n: v.to_arrow() if isinstance(v, Series) else v for n, v in data.items()}
            if schema is not None:
                fields = [(n, _to_pa(t)) for n, t in dict(schema).items()]
                data = pa.table(data, schema=pa.schema(fields))
            else:
                data = pa.table(data)
        elif schema is not None:
            raise InvalidArgumentError("schema= is only supported with a dict of columns")
        self._df = from_arrow(data)._df

    @classmethod
    def _from(cls, df: _tug.DataFrame) -> DataFrame:
        out = cls.__new__(cls)
        out._df = df
        return out

    # --- shape and schema
    @property
    def schema(self) -> dict:
        return _schema(self._df.schema)

    @property
    def columns(self) -> list:
        return [n for n, _ in self._df.schema]

    @property
    def dtypes(self) -> list:
        return list(self.schema.values())

    @property
    def height(self) -> int:
        return self._df.num_rows

    @property
    def width(self) -> int:
        return len(self._df.schema)

    @property
    def shape(self) -> tuple:
        return (self.height, self.width)

    def __len__(self):
        return self.height

    def is_empty(self) -> bool:
        return self.height == 0

    # --- columns as Series
    def get_column(self, name: str):
        """The column `name` as a Series (no copy). @raises ColumnNotFoundError."""
        return Series._wrap(self.select(name))

    def get_columns(self) -> list:
        return [self.get_column(n) for n in self.columns]

    def iter_columns(self):
        return iter(self.get_columns())

    def to_series(self, index: int = 0):
        return self.get_column(self.columns[index])

    def __getitem__(self, key):
        """``df["a"]``: a Series; ``df[["a", "b"]]``: a DataFrame of those columns; ``df[i:j]``: rows i..j."""
        if isinstance(key, str):
            return self.get_column(key)
        if isinstance(key, (list, tuple)) and all(isinstance(k, str) for k in key):
            return self.select(list(key))
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(self.height)
            return self.slice(start, max(0, stop - start))
        raise InvalidArgumentError(f"DataFrame[{key!r}]: a column name, a list of names or a row slice")

    # --- display
    def __repr__(self):
        return self._df.to_string(10)

    __str__ = __repr__

    def _repr_html_(self, max_rows: int = 10) -> str:
        n = self.height
        rows = list(range(n)) if n <= max_rows else list(range((max_rows + 1) // 2)) + [None] + list(
            range(n - max_rows // 2, n))
        cols = self.columns
        head = self.slice(0, (max_rows + 1) // 2 if n > max_rows else n)
        tail = self.slice(n - max_rows // 2, max_rows // 2) if n > max_rows else None
        values = head.to_dict(as_series=False)
        tvalues = tail.to_dict(as_series=False) if tail is not None else None
        out = ["<div><small>shape: ", f"({n}, {self.width})", "</small><table border=\"1\" class=\"dataframe\">",
               "<thead><tr>", *(f"<th>{html.escape(c)}</th>" for c in cols), "</tr><tr>",
               *(f"<td>{html.escape(str(t))}</td>" for t in self.dtypes), "</tr></thead><tbody>"]
        k = 0
        for r in rows:
            if r is None:
                out.append("<tr>" + "<td>&hellip;</td>" * len(cols) + "</tr>")
                k = 0
                values = tvalues
                continue
            cells = []
            for c in cols:
                v = values[c][k]
                cells.append("<td>" + ("null" if v is None else html.escape(repr(v) if isinstance(v, str) else str(v)))
                             + "</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
            k += 1
        out.append("</tbody></table></div>")
        return "".join(out)

    # --- interchange
    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream interface: one record batch per partition, buffers shared."""
        return self._df.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self):
        return self._df.__arrow_c_schema__()

    def to_arrow(self):
        """A pyarrow Table sharing this frame's buffers (booleans are packed to bits)."""
        import pyarrow as pa

        return pa.RecordBatchReader.from_stream(self).read_all()

    def to_polars(self):
        """A Polars DataFrame (through Arrow; fixed-width buffers are shared)."""
        import polars as pl

        return pl.from_arrow(self.to_arrow(), rechunk=False)

    def to_pandas(self, **kwargs):
        """A pandas DataFrame (pyarrow's ``Table.to_pandas(**kwargs)``): numpy columns share tug's buffers
        where the layouts agree (fixed width, no nulls, one partition), and such columns are read-only
        (``split_blocks=False`` or ``.copy()`` for writable ones); ``types_mapper=pd.ArrowDtype`` shares every
        buffer."""
        kwargs.setdefault("split_blocks", True)  # a block per column: pyarrow's default copies them into one
        return self.to_arrow().to_pandas(**kwargs)

    def to_dict(self, *, as_series: bool = False) -> dict:
        """Columns as lists of Python values (``as_series=True``: as tug Series, no copy)."""
        if as_series:
            return {s.name: s for s in self.get_columns()}
        return self.to_arrow().to_pydict()

    def rows(self) -> list:
        d = self.to_dict()
        cols = [d[c] for c in self.columns]
        return list(zip(*cols))

    def item(self, row: int | None = None, column: int | str | None = None):
        if row is None and column is None:
            if self.shape != (1, 1):
                raise InvalidArgumentError(f"item() without arguments needs a 1x1 frame, this one is {self.shape}")
            row, column = 0, 0
        name = self.columns[column] if isinstance(column, int) else column
        return self.to_dict()[name][row]

    def equals(self, other: DataFrame) -> bool:
        return self.schema == other.schema and self.to_arrow().equals(other.to_arrow())

    # --- eager versions of the lazy methods
    def lazy(self) -> LazyFrame:
        return LazyFrame(self._df.lazy())

    def filter(self, *predicates, **constraints) -> DataFrame:
        return self.lazy().filter(*predicates, **constraints).collect()

    def select(self, *exprs, **named_exprs) -> DataFrame:
        return self.lazy().select(*exprs, **named_exprs).collect()

    def with_columns(self, *exprs, **named_exprs) -> DataFrame:
        return self.lazy().with_columns(*exprs, **named_exprs).collect()

    def group_by(self, *by, maintain_order: bool = False) -> GroupBy:
        return GroupBy(self.lazy().group_by(*by, maintain_order=maintain_order))

    def join(self, other, on=None, how: str = "inner", **kwargs) -> DataFrame:
        return self.lazy().join(other, on, how, **kwargs).collect()

    def sort(self, by, *more_by, **kwargs) -> DataFrame:
        return self.lazy().sort(by, *more_by, **kwargs).collect()

    def unique(self, subset=None, **kwargs) -> DataFrame:
        return self.lazy().unique(subset, **kwargs).collect()

    def slice(self, offset: int, length: int | None = None) -> DataFrame:
        return self.lazy().slice(offset, length).collect()

    def head(self, n: int = 5) -> DataFrame:
        return self.lazy().head(n).collect()

    def limit(self, n: int = 5) -> DataFrame:
        return self.head(n)

    def tail(self, n: int = 5) -> DataFrame:
        return self.lazy().tail(n).collect()

    def with_row_index(self, name: str = "index", offset: int = 0) -> DataFrame:
        return self.lazy().with_row_index(name, offset).collect()

    def rename(self, mapping: dict) -> DataFrame:
        return self.lazy().rename(mapping).collect()

    def drop(self, *columns) -> DataFrame:
        return self.lazy().drop(*columns).collect()

    def map_partitions(self, kernel, **kwargs) -> DataFrame:
        """``lazy().map_partitions(kernel, **kwargs).collect()``."""
        return self.lazy().map_partitions(kernel, **kwargs).collect()

    def foreach_partition(self, kernel, **kwargs) -> None:
        """``lazy().foreach_partition(kernel, **kwargs)``."""
        self.lazy().foreach_partition(kernel, **kwargs)

    def write_parquet(self, path, **kwargs) -> None:
        self.lazy().sink_parquet(path, **kwargs)

    def write_csv(self, path, **kwargs) -> None:
        self.lazy().sink_csv(path, **kwargs)

    def _buffer_addresses(self) -> dict:
        """Test hook: per column of the first partition, (values address, validity address or 0)."""
        return {n: (v, m) for n, v, m in self._df._buffer_addresses()}

    @property
    def n_partitions(self) -> int:
        return self._df.num_partitions


def _to_pa(dtype):
    import pyarrow as pa

    t = to_tug(dtype)
    simple = {"bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
              "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
              "float32": pa.float32(), "float64": pa.float64(), "string": pa.large_string(), "date": pa.date32()}
    if t.id in simple:
        return simple[t.id]
    if t.id == "datetime":
        return pa.timestamp(t.unit, t.tz or None)
    if t.id == "duration":
        return pa.duration(t.unit)
    return pa.decimal128(t.precision, t.scale)


def from_arrow(data) -> DataFrame:
    """A DataFrame from anything with ``__arrow_c_stream__`` (pyarrow Table/RecordBatchReader, Polars, pandas,
    DuckDB) or ``__arrow_c_array__`` (a pyarrow RecordBatch). Fixed-width values, validity bitmaps and large
    strings are shared, not copied (the source stays alive while tug uses them)."""
    if hasattr(data, "__arrow_c_stream__"):
        return DataFrame._from(_tug.DataFrame.from_arrow_stream(data.__arrow_c_stream__()))
    if hasattr(data, "__arrow_c_array__"):
        schema_cap, array_cap = data.__arrow_c_array__()
        return DataFrame._from(_tug.DataFrame.from_arrow_array(schema_cap, array_cap))
    raise InvalidArgumentError(f"from_arrow: {type(data).__name__} exposes neither __arrow_c_stream__ nor "
                               "__arrow_c_array__")


def from_polars(df) -> DataFrame:
    """A DataFrame from a Polars DataFrame (its Arrow C stream; fixed-width buffers shared)."""
    return from_arrow(df)


def from_pandas(df) -> DataFrame:
    """A DataFrame from a pandas DataFrame (through pyarrow; the index is dropped)."""
    import pyarrow as pa

    return from_arrow(pa.Table.from_pandas(df, preserve_index=False))


def from_dict(data: dict, schema=None) -> DataFrame:
    """A DataFrame from a dict of columns (lists, arrays), typed by `schema` when given (through pyarrow)."""
    return DataFrame(data, schema=schema)


def scan_parquet(source, *, skip_unsupported_columns: bool = False) -> LazyFrame:
    """Lazily scans Parquet: a file, a glob ("data/*.parquet") or a directory (hive ``key=value`` directories
    become string columns). Only the used columns are read; row groups the filters rule out are skipped."""
    return LazyFrame(_tug.scan_parquet(os.fspath(source), skip_unsupported_columns))


def scan_csv(source, *, has_header: bool = True, separator: str = ",", quote_char: str | None = '"',
             null_values=None, comment_prefix: str | None = None, skip_rows: int = 0,
             infer_schema_length: int = 1000, schema_overrides: dict | None = None, ignore_errors: bool = False,
             n_rows: int | None = None, encoding: str = "utf8") -> LazyFrame:
    """Lazily scans CSV (a file, glob or directory of .csv files), with Polars' option names."""
    if null_values is None:
        null_values = [""]
    elif isinstance(null_values, str):
        null_values = [null_values]
    overrides = [(n, to_tug(t)) for n, t in (schema_overrides or {}).items()]
    return LazyFrame(_tug.scan_csv(os.fspath(source), has_header, separator, quote_char or "", list(null_values),
                                   comment_prefix or "", skip_rows, infer_schema_length, overrides, ignore_errors,
                                   -1 if n_rows is None else n_rows, encoding))


def read_parquet(source, **kwargs) -> DataFrame:
    """``scan_parquet(source, **kwargs).collect()``."""
    return scan_parquet(source, **kwargs).collect()


def read_csv(source, **kwargs) -> DataFrame:
    """``scan_csv(source, **kwargs).collect()``."""
    return scan_csv(source, **kwargs).collect()


def concat(items) -> LazyFrame | DataFrame:
    """Vertical concatenation of frames with equal schemas (DataFrames give a DataFrame)."""
    items = list(items)
    if not items:
        raise InvalidArgumentError("concat() needs at least one frame")
    eager = all(isinstance(i, DataFrame) for i in items)
    out = LazyFrame(_tug.concat([_as_lazy(i)._lf for i in items]))
    return out.collect() if eager else out
