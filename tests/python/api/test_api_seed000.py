"""Seed 000 end to end from Python (examples/seed000_cassandra_kernel.py): the kernel's host form on the CPU
engine and its CUDA source on a GPU over generated readings in memory, and the whole query between two tables of
the real Cassandra node the Cassandra API tests use (its `server` fixture), also as seed 000 runs it, inside
Spark (tug.spark.sink_cassandra, PySpark in local mode), every row checked against a numpy oracle. The
Cassandra tests need the package's Cassandra bindings (tug.scan_cassandra)."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import tug

try:  # the node of the Cassandra API tests: started when not running, stopped when they started it
    from test_api_cassandra import server  # noqa: F401
except (ImportError, pytest.skip.Exception):
    server = None

REPO = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("seed000", REPO / "examples" / "seed000_cassandra_kernel.py")
seed000 = importlib.util.module_from_spec(_spec)
sys.modules["seed000"] = seed000  # Spark's workers get its functions by value (they cannot import examples/)
_spec.loader.exec_module(seed000)

gpu = pytest.mark.skipif(not tug.gpu_available(), reason="needs a CUDA GPU (tug built with CUDA)")


def expect_dew_points(got, readings, fog_spread, rtol):
    """`got` (a pyarrow table of sensor, ts, site, dew_point_c, fog in any row order) holds exactly the rows the
    readings make: every key once, the site as written (null and "" apart), the dew point within `rtol`, the
    same fog flag but on the threshold itself."""
    got = got.sort_by([("sensor", "ascending"), ("ts", "ascending")])
    want = readings.sort_by([("sensor", "ascending"), ("ts", "ascending")])
    assert got.num_rows == want.num_rows
    for k in ("sensor", "ts", "site"):
        assert got[k].to_pylist() == want[k].to_pylist(), k
    t = want["temp_c"].to_numpy(zero_copy_only=False)
    rh = want["humidity"].to_numpy(zero_copy_only=False).astype(np.float64)
    known = ~np.isnan(t) & ~np.isnan(rh) & (np.nan_to_num(rh) > 0)
    with np.errstate(all="ignore"):
        g = np.log(rh / 100.0) + 17.62 * t / (243.12 + t)  # Magnus, its constants written out again
        d = 243.12 * g / (17.62 - g)
    dew = got["dew_point_c"].to_numpy(zero_copy_only=False)
    assert np.array_equal(np.isnan(dew), ~known), "nulls"
    np.testing.assert_allclose(dew[known], d[known], rtol=rtol, atol=rtol)
    fog = np.array(got["fog"].to_pylist(), dtype=object)
    assert all(f is None for f in fog[~known])
    decided = known & (np.abs(t - d - fog_spread) > 1e-6)
    assert list(fog[decided]) == list((t - d <= fog_spread)[decided])


@pytest.mark.parametrize("n", [0, 1, 33, 1024, 5000])
def test_the_host_form_on_every_partition_equals_the_oracle(n):
    readings = seed000.generate(n)
    out = seed000.pipeline(tug.from_arrow(readings).lazy()).collect(engine="cpu", target_partition_rows=100)
    assert out.columns == ["sensor", "ts", "site", "dew_point_c", "fog"]
    expect_dew_points(out.to_arrow(), readings, 2.0, 1e-12)


def test_the_fog_spread_is_a_plain_python_float():
    readings = seed000.generate(500)
    for spread in (0.0, 5.0, 100.0):
        out = seed000.pipeline(tug.from_arrow(readings).lazy(), spread).collect(engine="cpu")
        expect_dew_points(out.to_arrow(), readings, spread, 1e-12)


@gpu
@pytest.mark.parametrize("n", [0, 33, 100_000])
def test_gpu_the_cuda_source_on_every_partition_equals_the_oracle(n):
    readings = seed000.generate(n)
    lf = seed000.pipeline(tug.from_arrow(readings).lazy())
    assert "@cuda" in lf.explain(engine="gpu")
    expect_dew_points(lf.collect(engine="gpu", target_partition_rows=1000).to_arrow(), readings, 2.0, 1e-12)


needs_cassandra = pytest.mark.skipif(
    server is None or not hasattr(tug, "scan_cassandra"),
    reason="needs the package's Cassandra bindings (tug.scan_cassandra, LazyFrame.sink_cassandra)")


@needs_cassandra
@pytest.mark.parametrize("engine", ["cpu", pytest.param("gpu", marks=gpu)])
def test_cassandra_read_kernel_write_back(server, engine):  # noqa: F811 (the imported fixture)
    ks, rows = "tug_py_seed000", 3000
    seed000.create_tables(ks, **server)
    readings = seed000.generate(rows)
    r = tug.from_arrow(readings).lazy().sink_cassandra(ks, "readings", consistency="ONE", **server)
    assert r["rows_written"] == rows
    r = seed000.run(ks, engine=engine, splits=8, batch_rows=40, in_flight=3, **server)
    # every row written once, in batches of one partition key, never more requests in flight than allowed
    assert r["rows_written"] == rows and r["batches"] > 0 and r["requests"] < rows, r
    assert 1 <= r["max_in_flight"] <= 3, r
    got = tug.scan_cassandra(ks, "dew_points", consistency="ONE", **server).collect(engine="cpu").to_arrow()
    expect_dew_points(got, readings, 2.0, 1e-12)


@needs_cassandra
def test_spark_writes_each_partition_through_the_kernel_to_cassandra(server, spark):  # noqa: F811
    pytest.importorskip("pyspark")
    from pyspark import cloudpickle

    import tug.spark

    cloudpickle.register_pickle_by_value(seed000)
    ks, rows = "tug_py_seed000_spark", 2000
    seed000.create_tables(ks, **server)
    readings = seed000.generate(rows)
    columns = ["sensor", "ts", "temp_c", "humidity", "site"]
    sdf = spark.createDataFrame(list(zip(*(readings[c].to_pylist() for c in columns))),
                                "sensor int, ts long, temp_c double, humidity float, site string").repartition(4)
    r = tug.spark.sink_cassandra(sdf, ks, "dew_points", seed000.pipeline, consistency="ONE", batch_max_rows=40,
                                 max_in_flight=3, **server)
    assert r["rows_written"] == rows and 0 < r["batches"] and r["requests"] < rows, r
    got = tug.scan_cassandra(ks, "dew_points", consistency="ONE", **server).collect(engine="cpu").to_arrow()
    expect_dew_points(got, readings, 2.0, 1e-12)
