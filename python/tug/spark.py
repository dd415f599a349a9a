"""tug inside Spark (docs/user-kernels.md, "Inside Spark"): functions for PySpark's ``DataFrame.mapInArrow``
that take the executor's Arrow record batches without copying them (the Arrow C Data Interface), run a tug
plan or a user kernel on them, and return record batches.

    import tug, tug.spark
    def plan(lf):
        return lf.filter(tug.col("x") > 0).with_columns((tug.col("x") * 2).alias("y"))
    sdf.mapInArrow(tug.spark.map_in_arrow(plan), "x long, y long")

    k = tug.cuda_kernel(src, "axpy", host=axpy_host)
    sdf.mapInArrow(tug.spark.map_in_arrow(kernel=k, inputs=["x", "y"], keep=["id"], args=[2.5],
                                          schema={"z": tug.Float64}), "id long, z double")
    tug.spark.foreach_partition(sdf, kernel=writer)   # a kernel run for its effect; returns rows seen
    sdf.foreachPartition(tug.spark.foreach_partition_rows(writer))   # the same from Spark's Row loop
    tug.spark.sink_cassandra(sdf, "ks", "t", plan, port=9042)        # each partition into Cassandra (seed 000)
"""
from __future__ import annotations

from .exceptions import InvalidArgumentError

_MODES = ("partition", "batch")


def map_in_arrow(plan=None, *, kernel=None, args=(), schema=None, inputs=None, keep=None, per: str = "partition",
                 engine="cpu", **options):
    """A function ``f(iterator of pyarrow.RecordBatch) -> iterator of pyarrow.RecordBatch`` for Spark's
    ``mapInArrow``. ``plan`` is ``fn(LazyFrame) -> LazyFrame`` (a tug query over the batches); ``kernel`` a user
    kernel with ``map_partitions``' arguments (``args``, ``schema``, ``inputs``, ``keep``), run after ``plan``
    when both are given. ``per="partition"`` runs the query once over all the batches of a Spark partition
    (each batch a tug partition; aggregates see the whole Spark partition), ``per="batch"`` once per batch
    (streaming, the least memory). ``engine`` and ``options`` are the engine options of each run (the
    executor's GPU with ``engine="gpu"``). Strings come back as Arrow ``string`` (Spark's type)."""
    if plan is None and kernel is None:
        raise InvalidArgumentError("map_in_arrow needs a plan (LazyFrame -> LazyFrame), a kernel, or both")
    if plan is not None and not callable(plan):
        raise InvalidArgumentError(f"map_in_arrow: plan must be callable, got {type(plan).__name__}")
    if per not in _MODES:
        raise InvalidArgumentError(f"map_in_arrow: per={per!r} is not one of {', '.join(_MODES)}")

    def run(batches: list):
        lf = _query("map_in_arrow", batches, plan, kernel, args, schema, inputs, keep)
        return _spark_batches(lf.collect(engine=engine, **options).to_arrow())

    def f(iterator):
        if per == "batch":
            for b in iterator:
                if b.num_rows:
                    yield from run([b])
            return
        batches = [b for b in iterator if b.num_rows]
        if batches:
            yield from run(batches)

    return f


def foreach_partition(sdf, kernel, *, args=(), inputs=None, engine="cpu", **options) -> int:
    """Runs ``kernel`` on every Spark partition of ``sdf`` for its effect (a kernel that writes somewhere
    itself, as seed 000 writes to Cassandra), through ``mapInArrow`` so that the rows cross as Arrow batches
    without a copy. Returns the number of rows the kernels saw."""
    def f(iterator):
        import pyarrow as pa

        import tug

        batches = [b for b in iterator if b.num_rows]
        n = sum(b.num_rows for b in batches)
        if batches:
            lf = tug.concat([tug.from_arrow(b).lazy() for b in batches])
            lf.foreach_partition(kernel, args=args, inputs=inputs, engine=engine, **options)
        yield pa.record_batch([pa.array([n], type=pa.int64())], names=["rows"])

    total = sdf.mapInArrow(f, "rows long").groupBy().sum("rows").collect()[0][0]
    return int(total or 0)


def foreach_partition_rows(kernel, *, args=(), inputs=None, engine="cpu", **options):
    """A function for Spark's own ``DataFrame.foreachPartition`` / ``RDD.foreachPartition``, which hand a
    partition over as Row objects (seed 000's loop): the rows become one tug frame (through pyarrow, a copy;
    ``foreach_partition`` above takes Arrow batches without one) and ``kernel`` runs on it for its effect."""
    def f(rows):
        import pyarrow as pa

        import tug

        records = [r.asDict() if hasattr(r, "asDict") else dict(r) for r in rows]
        if records:
            tug.from_arrow(pa.Table.from_pylist(records)).lazy().foreach_partition(
                kernel, args=args, inputs=inputs, engine=engine, **options)

    return f


_WRITE_TOTALS = ("rows_written", "requests", "batches", "retries")


def sink_cassandra(sdf, keyspace: str, table: str, plan=None, *, kernel=None, args=(), schema=None, inputs=None,
                   keep=None, engine="cpu", options=None, **cassandra_options) -> dict:
    """Writes every Spark partition of ``sdf`` into the Cassandra table ``keyspace.table`` from its executor,
    seed 000's ``foreachPartition`` with batched writes: the partition's Arrow batches (without a copy), then
    ``plan`` and ``kernel`` as in ``map_in_arrow``, then ``LazyFrame.sink_cassandra`` with ``cassandra_options``
    (the connection's, ``consistency``, ``batch_max_rows``, ``max_in_flight``, ...; the tug.cassandra module)
    and the engine options ``engine`` and ``options``. Returns the totals over the partitions: ``rows_written``,
    ``requests``, ``batches``, ``retries``. Needs the package's Cassandra bindings on the executors."""
    if plan is not None and not callable(plan):
        raise InvalidArgumentError(f"sink_cassandra: plan must be callable, got {type(plan).__name__}")

    def f(iterator):
        import pyarrow as pa

        batches = [b for b in iterator if b.num_rows]
        done = dict.fromkeys(_WRITE_TOTALS, 0)
        if batches:
            lf = _query("sink_cassandra", batches, plan, kernel, args, schema, inputs, keep)
            done = lf.sink_cassandra(keyspace, table, engine=engine, options=options, **cassandra_options)
        yield pa.record_batch([pa.array([done[k]], type=pa.int64()) for k in _WRITE_TOTALS], names=list(_WRITE_TOTALS))

    row = sdf.mapInArrow(f, ", ".join(f"{k} long" for k in _WRITE_TOTALS)).groupBy().sum().collect()[0]
    return {k: int(row[f"sum({k})"] or 0) for k in _WRITE_TOTALS}


def _query(who: str, batches: list, plan, kernel, args, schema, inputs, keep):
    """The batches as one LazyFrame (a tug partition each), then ``plan``, then ``kernel``."""
    import tug

    lf = tug.concat([tug.from_arrow(b).lazy() for b in batches])
    if plan is not None:
        lf = plan(lf)
        if not isinstance(lf, tug.LazyFrame):
            raise InvalidArgumentError(f"{who}: the plan returned {type(lf).__name__}, not a LazyFrame")
    if kernel is not None:
        lf = lf.map_partitions(kernel, args=args, schema=schema, inputs=inputs, keep=keep)
    return lf


def _spark_batches(table):
    """``table``'s batches with large strings as Arrow ``string``, the type Spark reads back."""
    import pyarrow as pa

    fields = [pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type, f.nullable)
              for f in table.schema]
    target = pa.schema(fields)
    if not target.equals(table.schema):
        table = table.cast(target)
    return table.to_batches()


__all__ = ["foreach_partition", "foreach_partition_rows", "map_in_arrow", "sink_cassandra"]
