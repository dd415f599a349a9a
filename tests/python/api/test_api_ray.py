"""tug.ray.RayEngine: queries on ranks that are Ray actors (here 2 and 3 on this machine's CPUs, the CPU
engine), equal to the one-process answer; an error on one rank raises its kind in the driver."""
import sys

import pytest

import tug

ray = pytest.importorskip("ray")
from tug.ray import RayEngine  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    # the queries below are functions of this module, which the actors cannot import: send them by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def facts():
    import tug

    n = 5000
    return tug.from_dict({
        "k": [None if i % 11 == 5 else (i * 7919) % 97 for i in range(n)],
        "g": [None if i % 13 == 4 else f"g{i % 9}" for i in range(n)],
        "v": [None if i % 17 == 8 else (i * 31 % 1000) / 8 for i in range(n)],
        "i": list(range(n)),
    }).lazy()


def dims():
    import tug

    return tug.from_dict({"k": [i * 3 % 120 for i in range(60)], "w": [f"w{i}" for i in range(60)]}).lazy()


QUERIES = {
    "group_by": lambda: facts().group_by("k", "g").agg(tug.col("v").sum().alias("s"), tug.col("i").count().alias("c"))
    .sort("k", "g", nulls_last=True),
    "join": lambda: facts().join(dims(), on="k").select("i", "w", "v").sort("i", "w"),
    "sort": lambda: facts().filter(tug.col("v") > 20).sort("v", "i", descending=[True, False]),
    "global": lambda: facts().select(tug.col("v").mean().alias("m"), tug.col("g").n_unique().alias("u")),
}


@pytest.mark.parametrize("ranks", [2, 3])
def test_ray_ranks_give_the_one_process_answer(cluster, ranks):
    engine = RayEngine(ranks)
    try:
        assert "rank 0 of " + str(ranks) in engine.description
        for name, q in QUERIES.items():
            got = engine.collect(q, engine="cpu", num_threads=1, target_partition_rows=300)
            want = q().collect(engine="cpu")
            assert got.to_polars().equals(want.to_polars()), name
        # the engine keeps its ranks: a second round of queries on the same actors
        got = engine.collect(QUERIES["join"], engine="cpu")
        assert got.to_polars().equals(QUERIES["join"]().collect(engine="cpu").to_polars())
    finally:
        engine.shutdown()


def test_ray_error_on_one_rank_raises_its_kind(cluster):
    engine = RayEngine(2)
    try:
        bad = lambda: tug.from_dict({"s": ["1"] * 50 + ["x"] + ["2"] * 49}).lazy().select(  # noqa: E731
            tug.col("s").cast(tug.Int64).alias("n")).group_by("n").agg(tug.col("n").count().alias("c"))
        with pytest.raises(tug.ComputeError, match='"x"'):
            engine.collect(bad, engine="cpu", target_partition_rows=10)
        # the ranks go on after an error
        got = engine.collect(QUERIES["group_by"], engine="cpu")
        assert got.to_polars().equals(QUERIES["group_by"]().collect(engine="cpu").to_polars())
        with pytest.raises(TypeError, match="function"):
            engine.collect(facts())
    finally:
        engine.shutdown()


def test_ray_rank_that_dies_ends_the_query_with_an_error(cluster, tmp_path):
    """An actor killed mid-query (SIGKILL in a kernel, in whichever rank runs it first): its sockets close,
    the other rank's exchange fails at once, and collect raises instead of waiting; the engine is then
    shut down (its dead actor is not restarted)."""
    import numpy as np

    flag = str(tmp_path / "died")

    def dies_once(p):
        import os
        import signal

        try:
            os.close(os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            os.kill(os.getpid(), signal.SIGKILL)
        except FileExistsError:
            pass
        return {"z": np.zeros(p.rows, dtype=np.int64)}

    engine = RayEngine(2)
    try:
        q = lambda: facts().map_partitions(tug.python_kernel(dies_once), keep=["k", "v"],  # noqa: E731
                                           schema={"z": tug.Int64}).group_by("k").agg(tug.col("v").sum())
        # rank 0's error naming the rank that is gone, or Ray's ActorDiedError when rank 0 itself died
        with pytest.raises((tug.TugError, ray.exceptions.RayError), match="rank 1 of 2 is gone|actor died"):
            engine.collect(q, engine="cpu", collective_timeout=60, target_partition_rows=500)
    finally:
        engine.shutdown()
