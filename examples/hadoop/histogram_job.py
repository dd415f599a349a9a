"""A tug job for Hadoop Streaming (python -m tug.streaming, docs/user-kernels.md "Inside Hadoop"): the CUDA
SDK's histogram64 as seed 001 ported it to MapRed. Input lines hold one byte value each (0..255); the mapper
counts them into 64 bins per partition with a user kernel, the reducer adds the counts of each bin."""
import numpy as np

import tug

MAPPER_INPUT = {"value": tug.Int64}
REDUCER_INPUT = {"bin": tug.Int64, "count": tug.Int64}


def histogram64(p):
    """The kernel: 64 bins of value / 4 over one partition (null values are not counted)."""
    values = p.numpy("value")[p.valid("value")]
    if values.size and (values.min() < 0 or values.max() > 255):
        raise ValueError(f"values must be bytes (0..255), got {values.min()}..{values.max()}")
    counts = np.bincount(values // 4, minlength=64).astype(np.int64)
    return {"bin": np.arange(64, dtype=np.int64), "count": counts}


def mapper(lf):
    partial = lf.map_partitions(tug.python_kernel(histogram64), inputs=["value"],
                                schema={"bin": tug.Int64, "count": tug.Int64})
    return partial.group_by("bin").agg(tug.col("count").sum())


def reducer(lf):
    return lf.group_by("bin").agg(tug.col("count").sum()).sort("bin")
