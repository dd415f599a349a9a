"""Seed 000 end to end from Python (the C++ form is examples/seed000_cassandra_kernel.cpp): read a Cassandra
table, run a CUDA kernel on every partition, write the results back to Cassandra in bounded batches, in one
query. What the seed does by hand with PySpark's foreachPartition, PyCUDA's SourceModule (every argument a
numpy construct) and batched driver writes:

    tug.scan_cassandra(ks, "readings")            the table, split by token range, read in parallel
      .map_partitions(DEW_POINT, args=[...])      the kernel per partition: its CUDA source on the GPU engine
                                                  (NVRTC, cached), its numpy host form on the CPU engine;
                                                  scalars as plain Python floats
      .sink_cassandra(ks, "dew_points", ...)      unlogged batches of one partition key, at most
                                                  max_in_flight requests at once (seed 004)

The kernel computes each reading's dew point (the Magnus formula) and whether fog is likely (the temperature
within `fog_spread` degrees of it); a reading without temperature or humidity, or with a humidity that is not
positive, has neither.

    python examples/seed000_cassandra_kernel.py --port 9042 --user cassandra --password cassandra \\
        --load --rows 100000 [--engine cpu|gpu|auto] [--keyspace ks] [--splits N] [--batch-rows N] [--in-flight N]

Needs the Python package with its Cassandra bindings (tug.scan_cassandra, LazyFrame.sink_cassandra).
Tested by tests/python/api/test_api_seed000.py."""
import argparse
import time

import numpy as np
import pyarrow as pa

import tug

MAGNUS_B, MAGNUS_C = 17.62, 243.12

DEW_POINT_CU = r"""
#include <tug/kernel.cuh>
extern "C" __global__ void dew_point(long long rows, tug::in_column<double> temp_c, tug::in_column<float> humidity,
                                     tug::out_column<double> dew_point_c, tug::out_column<bool> fog,
                                     double b, double c, double fog_spread) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
    const bool known = temp_c.valid(i) && humidity.valid(i) && humidity[i] > 0.0f;
    double t = known ? temp_c[i] : 0.0;
    double g = known ? log(humidity[i] / 100.0) + b * t / (c + t) : 0.0;
    dew_point_c[i] = known ? c * g / (b - g) : 0.0;
    fog[i] = known && t - dew_point_c[i] <= fog_spread;
    if (!known) {
      dew_point_c.set_null(i);
      fog.set_null(i);
    }
  }
}"""


def dew_point_host(p):
    """The CPU form: numpy views of the partition's buffers, outputs written in place."""
    b, c, fog_spread = p.args
    known = p.valid("temp_c") & p.valid("humidity") & (p.numpy("humidity") > 0)
    t = np.where(known, p.numpy("temp_c"), 0.0)
    rh = np.where(known, p.numpy("humidity").astype(np.float64), 100.0)
    g = np.log(rh / 100.0) + b * t / (c + t)
    d = np.where(known, c * g / (b - g), 0.0)
    p.numpy("dew_point_c", output=True)[:] = d
    p.numpy("fog", output=True)[:] = known & (t - d <= fog_spread)
    p.set_nulls("dew_point_c", ~known)
    p.set_nulls("fog", ~known)


DEW_POINT = tug.cuda_kernel(DEW_POINT_CU, "dew_point", host=dew_point_host)


def pipeline(readings, fog_spread=2.0):
    """The query between the two tables: the kernel over the readings, the key and the site kept."""
    return readings.map_partitions(DEW_POINT, inputs=["temp_c", "humidity"], keep=["sensor", "ts", "site"],
                                   args=[MAGNUS_B, MAGNUS_C, fog_spread],
                                   schema={"dew_point_c": tug.Float64, "fog": tug.Boolean})


def generate(rows, sensors=37) -> pa.Table:
    """`rows` readings of `sensors` sensors, deterministic: temp_c from -20 to 40 (null every 53rd row),
    humidity from 0 to 100 % (null every 41st row, 0 every 97th), site a text (null every 29th, empty every
    31st)."""
    i = np.arange(rows)
    rng = np.random.default_rng(0)
    temp = -20 + 60 * rng.random(rows)
    hum = np.where(i % 97 == 11, 0.0, 100 * rng.random(rows)).astype(np.float32)
    site = [None if k % 29 == 5 else "" if k % 31 == 9 else f"site-{k % sensors % 5}" for k in range(rows)]
    return pa.table({"sensor": pa.array(i % sensors, type=pa.int32()),
                     "ts": pa.array(1_700_000_000_000 + i // sensors * 60_000, type=pa.int64()),
                     "temp_c": pa.array(temp, mask=i % 53 == 7),
                     "humidity": pa.array(hum, mask=i % 41 == 3),
                     "site": pa.array(site, type=pa.string())})


def create_tables(keyspace, replication=1, **connection):
    """Creates `keyspace` and the two tables, empty."""
    tug.cassandra_execute(f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
                          f"{{'class': 'SimpleStrategy', 'replication_factor': {replication}}}", **connection)
    for t in ("readings", "dew_points"):
        tug.cassandra_execute(f"DROP TABLE IF EXISTS {keyspace}.{t}", **connection)
    tug.cassandra_execute(f"CREATE TABLE {keyspace}.readings (sensor int, ts bigint, temp_c double, humidity float, "
                          "site text, PRIMARY KEY ((sensor), ts))", **connection)
    tug.cassandra_execute(f"CREATE TABLE {keyspace}.dew_points (sensor int, ts bigint, site text, dew_point_c double, "
                          "fog boolean, PRIMARY KEY ((sensor), ts))", **connection)


def run(keyspace, *, engine="auto", fog_spread=2.0, splits=0, batch_rows=100, in_flight=5, consistency="ONE",
        **connection) -> dict:
    """Reads keyspace.readings, runs the kernel on every partition, writes keyspace.dew_points; what the sink
    did (rows_written, requests, batches, retries, max_in_flight, metrics)."""
    readings = tug.scan_cassandra(keyspace, "readings", splits=splits, consistency=consistency, **connection)
    return pipeline(readings, fog_spread).sink_cassandra(keyspace, "dew_points", engine=engine,
                                                         consistency=consistency, batch_max_rows=batch_rows,
                                                         max_in_flight=in_flight, **connection)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9042)
    ap.add_argument("--user", default="")
    ap.add_argument("--password", default="")
    ap.add_argument("--keyspace", default="tug_seed000")
    ap.add_argument("--load", action="store_true", help="create the tables and write --rows generated readings")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--engine", default="auto", choices=["cpu", "gpu", "auto"])
    ap.add_argument("--splits", type=int, default=0)
    ap.add_argument("--batch-rows", type=int, default=100)
    ap.add_argument("--in-flight", type=int, default=5)
    ap.add_argument("--fog-spread", type=float, default=2.0)
    a = ap.parse_args()
    conn = dict(contact_points=a.host, port=a.port, username=a.user, password=a.password)
    if a.load:
        create_tables(a.keyspace, **conn)
        r = tug.from_arrow(generate(a.rows)).lazy().sink_cassandra(a.keyspace, "readings", consistency="ONE", **conn)
        print(f"loaded {r['rows_written']} readings into {a.keyspace}.readings")
    t0 = time.perf_counter()
    r = run(a.keyspace, engine=a.engine, fog_spread=a.fog_spread, splits=a.splits, batch_rows=a.batch_rows,
            in_flight=a.in_flight, **conn)
    print(f"dew_point over {a.keyspace}.readings -> {a.keyspace}.dew_points: {r['rows_written']} rows in "
          f"{time.perf_counter() - t0:.2f} s; {r['requests']} requests ({r['batches']} batches of at most "
          f"{a.batch_rows} rows), at most {r['max_in_flight']} in flight, {r['retries']} retries")


if __name__ == "__main__":
    main()
