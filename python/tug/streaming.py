"""tug as a Hadoop Streaming mapper and reducer (docs/user-kernels.md, "Inside Hadoop").

    python -m tug.streaming map    --job job.py     # stdin lines -> tug partitions -> job.mapper -> stdout
    python -m tug.streaming reduce --job job.py     # stdin lines -> tug partitions -> job.reducer -> stdout

A job is a Python file with ``MAPPER_INPUT`` / ``REDUCER_INPUT`` (the columns of an input line, in order:
``{"v": tug.Int64}``) and ``mapper(lf) -> LazyFrame`` / ``reducer(lf) -> LazyFrame`` (a tug query; it may call
``map_partitions`` with a user kernel). Input lines are fields split by ``--separator`` (a tab, Hadoop
Streaming's default), read by tug's CSV reader in partitions of ``--partition-bytes``; results are written
as lines of tab-separated fields (Hadoop's key, a tab, the value), nulls as empty fields.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile

from .exceptions import InvalidArgumentError


def load_job(path: str):
    """The job module at ``path``."""
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"tug.streaming: the job file {path!r} does not exist")
    spec = importlib.util.spec_from_file_location("tug_streaming_job", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(role: str, job, stdin, stdout, *, separator: str = "\t", partition_bytes: int = 64 << 20,
        engine: str = "cpu", workdir: str | None = None) -> int:
    """Runs ``job``'s ``role`` ("map" or "reduce") over the lines of the binary file ``stdin`` and writes its
    result to the binary file ``stdout``. Returns the number of rows written."""
    import tug

    fn_name, schema_name = {"map": ("mapper", "MAPPER_INPUT"), "reduce": ("reducer", "REDUCER_INPUT")}[role]
    fn = getattr(job, fn_name, None)
    columns = getattr(job, schema_name, None)
    if not callable(fn):
        raise InvalidArgumentError(f"tug.streaming {role}: the job defines no {fn_name}(lf) function")
    if not isinstance(columns, dict) or not columns:
        raise InvalidArgumentError(f"tug.streaming {role}: the job defines no {schema_name} dict of input columns")
    with tempfile.TemporaryDirectory(prefix="tug-streaming-", dir=workdir) as tmp:
        src = os.path.join(tmp, "input.csv")
        with open(src, "wb") as f:
            shutil.copyfileobj(stdin, f, 1 << 20)
        names = list(columns)
        if os.path.getsize(src) == 0:
            lf = tug.DataFrame({n: [] for n in names}, schema=columns).lazy()
        else:
            generic = [f"column_{i + 1}" for i in range(len(names))]
            lf = tug.scan_csv(src, has_header=False, separator=separator, quote_char=None,
                              schema_overrides=dict(zip(generic, columns.values())))
            if lf.columns != generic:
                raise InvalidArgumentError(f"tug.streaming {role}: input lines have {lf.width} fields, the job's "
                                           f"{schema_name} names {len(names)} ({', '.join(names)})")
            lf = lf.rename(dict(zip(generic, names)))
        out = fn(lf)
        if not isinstance(out, tug.LazyFrame):
            raise InvalidArgumentError(f"tug.streaming {role}: {fn_name} returned {type(out).__name__}, "
                                       "not a LazyFrame")
        dst = os.path.join(tmp, "output.tsv")
        out.sink_csv(dst, include_header=False, separator="\t", engine=engine, target_partition_size=partition_bytes)
        rows = 0
        with open(dst, "rb") as f:
            for line in f:
                stdout.write(line)
                rows += 1
        stdout.flush()
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tug.streaming", description=__doc__.split("\n\n")[0])
    p.add_argument("role", choices=["map", "reduce"])
    p.add_argument("--job", required=True, help="the job file (MAPPER_INPUT, mapper, REDUCER_INPUT, reducer)")
    p.add_argument("--separator", default="\t", help="field separator of input lines (default: a tab)")
    p.add_argument("--partition-bytes", type=int, default=64 << 20, help="bytes of input per tug partition")
    p.add_argument("--engine", default="cpu", choices=["auto", "cpu", "gpu"])
    a = p.parse_args(argv)
    sep = "\t" if a.separator in ("tab", "\\t") else a.separator
    try:
        run(a.role, load_job(a.job), sys.stdin.buffer, sys.stdout.buffer, separator=sep,
            partition_bytes=a.partition_bytes, engine=a.engine)
    except Exception as e:  # a task's error goes to its stderr log with a status Hadoop reports
        print(f"tug.streaming {a.role}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
