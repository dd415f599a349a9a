"""tug inside Spark (docs/user-kernels.md, "Inside Spark"): PySpark's mapInArrow through tug.spark (a tug plan, a
user kernel, both) equals the same job written in PySpark, in local mode; foreach_partition runs a kernel for its
effect; the executor's Arrow batches reach tug without a copy."""
import sys

import numpy as np
import pyarrow as pa
import pytest

import tug
import tug.spark

pyspark = pytest.importorskip("pyspark")  # installed by scripts/setup.sh (tests/python/test_spark_interop.py)
from pyspark import cloudpickle  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

# The functions of this module travel to Spark's Python workers by value (the workers cannot import tests).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

N = 5000


@pytest.fixture(scope="module")
def sdf(spark):
    rows = [(i, None if i % 11 == 0 else (i * 37) % 201 - 100, i / 7.0, f"s{i % 13}", i % 5) for i in range(N)]
    return spark.createDataFrame(rows, "id long, x long, y double, s string, k long").repartition(4)


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def plan(lf):
    return lf.filter(tug.col("x") > 0).select("id", (tug.col("x") * 2 + tug.col("y")).alias("z"), "s")


def test_a_tug_plan_in_map_in_arrow_equals_pyspark(sdf):
    through_tug = sdf.mapInArrow(tug.spark.map_in_arrow(plan), "id long, z double, s string")
    pure = sdf.filter(F.col("x") > 0).select("id", (F.col("x") * 2 + F.col("y")).alias("z"), "s")
    got, want = rows(through_tug), rows(pure)
    assert len(want) > 1000 and got == want


def scale_host(p):
    z = p.numpy("z", output=True)
    z[:] = p.numpy("x") * p.args[0] + p.numpy("y")
    p.set_nulls("z", ~p.valid("x"))


def test_a_user_kernel_in_map_in_arrow_equals_pyspark(sdf):
    k = tug.python_kernel(scale_host, name="scale")
    f = tug.spark.map_in_arrow(kernel=k, inputs=["x", "y"], keep=["id"], args=[3], schema={"z": tug.Float64})
    got = rows(sdf.mapInArrow(f, "id long, z double"))
    want = rows(sdf.select("id", (F.col("x") * 3 + F.col("y")).alias("z")))
    assert got == want and sum(r[1] is None for r in got) == N // 11 + 1


def test_a_plan_then_a_kernel_per_batch_equals_pyspark(spark, sdf):
    k = tug.python_kernel(lambda p: {"w": p.numpy("z") * 0.5}, name="half")
    f = tug.spark.map_in_arrow(plan, kernel=k, inputs=["z"], keep=["id", "s"], schema={"w": tug.Float64},
                               per="batch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        got = rows(sdf.mapInArrow(f, "id long, s string, w double"))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    want = rows(sdf.filter(F.col("x") > 0).select("id", "s", ((F.col("x") * 2 + F.col("y")) * 0.5).alias("w")))
    assert got == want


def test_a_per_partition_aggregate_combined_by_spark_equals_pyspark(sdf):
    def partial(lf):
        return lf.group_by("k").agg(tug.col("x").sum().alias("sx"), tug.len().alias("n"))

    parts = sdf.mapInArrow(tug.spark.map_in_arrow(partial), "k long, sx long, n long")
    got = rows(parts.groupBy("k").agg(F.sum("sx").alias("sx"), F.sum("n").alias("n")))
    want = rows(sdf.groupBy("k").agg(F.sum("x").alias("sx"), F.count(F.lit(1)).alias("n")))
    assert got == want and len(got) == 5


def writer(out: str):
    """A kernel that writes each partition it gets to a Parquet file of its own in `out` (seed 000's write-back)."""
    def write_back(p):
        import uuid

        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_batches([p.to_arrow()]), f"{out}/part-{uuid.uuid4().hex}.parquet")

    return tug.python_kernel(write_back)


def test_foreach_partition_runs_a_kernel_for_its_effect(sdf, tmp_path):
    n = tug.spark.foreach_partition(sdf, writer(str(tmp_path)), inputs=["id", "x"])
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path)
    assert n == N and written.num_rows == N
    assert sorted(written["id"].to_pylist()) == list(range(N))


def test_spark_foreach_partition_rows_runs_a_kernel_on_each_partition(sdf, tmp_path):
    sdf.foreachPartition(tug.spark.foreach_partition_rows(writer(str(tmp_path)), inputs=["id", "s"]))
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path).sort_by("id")
    assert written.column_names == ["id", "s"]
    assert written["id"].to_pylist() == list(range(N))
    assert written["s"].to_pylist() == [f"s{i % 13}" for i in range(N)]


def test_batches_reach_tug_without_a_copy():
    batch = pa.record_batch([pa.array(np.arange(1000, dtype=np.int64)), pa.array(np.ones(1000))], names=["x", "y"])
    seen = {}

    def look(p):
        seen["x"] = p.input("x").data_ptr
        seen["y"] = p.input("y").data_ptr

    f = tug.spark.map_in_arrow(kernel=tug.python_kernel(look), inputs=["x", "y"])
    assert list(f(iter([batch]))) == []
    assert seen == {"x": batch.column(0).buffers()[1].address, "y": batch.column(1).buffers()[1].address}


def test_empty_partitions_give_no_batches():
    f = tug.spark.map_in_arrow(plan)
    assert list(f(iter([]))) == []
    empty = pa.record_batch([pa.array([], pa.int64())] * 2 + [pa.array([], pa.string())], names=["x", "y", "s"])
    assert list(f(iter([empty]))) == []


def test_bad_arguments_are_named():
    with pytest.raises(tug.InvalidArgumentError, match="needs a plan"):
        tug.spark.map_in_arrow()
    with pytest.raises(tug.InvalidArgumentError, match="per='rows'"):
        tug.spark.map_in_arrow(plan, per="rows")
    f = tug.spark.map_in_arrow(lambda lf: 42)
    with pytest.raises(tug.InvalidArgumentError, match="returned int"):
        list(f(iter([pa.record_batch([pa.array([1])], names=["x"])])))


JOB = r'''
import sys
import tug, tug.spark
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")

def where(batches):
    import sys
    import pyarrow as pa
    import tug
    for _ in batches:
        pass
    yield pa.record_batch([pa.array([sys.executable]), pa.array([tug.__file__])], names=["python", "tug"])

seen = {tuple(r) for r in spark.range(8).repartition(2).mapInArrow(where, "python string, tug string").collect()}
df = spark.range(1000).selectExpr("id", "id % 7 AS x")
plan = tug.spark.map_in_arrow(lambda lf: lf.filter(tug.col("x") > 3))
got = sorted(tuple(r) for r in df.mapInArrow(plan, "id long, x long").collect())
want = sorted(tuple(r) for r in df.filter("x > 3").collect())
print("DRIVER", sys.executable, tug.__file__)
for python, tug_file in sorted(seen):
    print("EXECUTOR", python, tug_file)
print("EQUAL", got == want, len(got))
spark.stop()
'''


def spark_submit(submit, master, archives, env, tmp_path):
    """Runs JOB with `submit --master master --archives archives`; checks that it equals pure PySpark and returns
    the lines it printed and each executor's (Python, tug's __init__.py)."""
    import subprocess

    job = tmp_path / "job.py"
    job.write_text(JOB)
    p = subprocess.run([str(submit), "--master", master, "--conf", "spark.ui.enabled=false",
                        "--conf", "spark.driver.memory=512m", "--archives", archives, str(job)],
                       capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr[-5000:]
    lines = p.stdout.splitlines()
    assert "EQUAL True 428" in lines, p.stdout
    executors = [line.split()[1:] for line in lines if line.startswith("EXECUTOR ")]
    assert executors, p.stdout
    return lines, executors


def test_spark_submit_ships_the_package_with_archives(spark, tmp_path):
    """The recipe of docs/user-kernels.md: the build's package as an archive that Spark unpacks next to every
    task as the directory `tug` (--archives tug_pkg.tar.gz#tug), which the workers import."""
    import os
    import tarfile
    from pathlib import Path

    pkg = Path(tug.__file__).parent
    archive = tmp_path / "tug_pkg.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        for f in pkg.iterdir():
            if f.name != "__pycache__":
                t.add(f, arcname=f.name)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=str(pkg.parent))  # the driver's own tug; the executors must take the shipped one
    _, executors = spark_submit(Path(sys.executable).parent / "spark-submit", "local[2]", f"{archive}#tug", env,
                                tmp_path)
    for _, f in executors:
        assert "/userFiles-" in f and f.endswith("/tug/__init__.py") and str(pkg) not in f, f


def test_spark_submit_runs_executors_in_a_packed_environment(spark, tmp_path):
    """The recipe's packed environment (docs/user-kernels.md): a virtual environment holding tug, packed,
    shipped with `--archives tug_env.tar.gz#environment` and run by `PYSPARK_PYTHON=./environment/bin/python`,
    on a local standalone cluster (`local-cluster`: executors in processes of their own, each in a working
    directory where Spark unpacks the archive, as YARN does in its containers; plain local mode unpacks it in
    the SparkFiles directory instead). The environment takes pyarrow, numpy and pyspark from this Python's
    site-packages through a .pth file, as from a node's own Python (packing them would pack hundreds of MB)."""
    import os
    import shutil
    import tarfile
    import venv
    from pathlib import Path

    env_dir = tmp_path / "tug_env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    shutil.copytree(Path(tug.__file__).parent, site / "tug", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "node_packages.pth").write_text(str(Path(pa.__file__).parents[1]) + "\n")
    archive = tmp_path / "tug_env.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(env_dir, arcname=".")
    # a SPARK_HOME of links into the pyspark package: the cluster's work directory ($SPARK_HOME/work) is the test's
    spark_home = tmp_path / "spark_home"
    spark_home.mkdir()
    for d in ("bin", "jars", "sbin", "python"):
        (spark_home / d).symlink_to(Path(pyspark.__file__).parent / d)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # tug only from the environment
    env.update(SPARK_HOME=str(spark_home), PYSPARK_PYTHON="./environment/bin/python",
               PYSPARK_DRIVER_PYTHON=str(env_dir / "bin" / "python"))
    lines, executors = spark_submit(spark_home / "bin" / "spark-submit", "local-cluster[1,1,1024]",
                                    f"{archive}#environment", env, tmp_path)
    assert f"DRIVER {env_dir}/bin/python {site}/tug/__init__.py" in lines, lines
    work = f"{spark_home}/work/app-"
    for python, tug_file in executors:  # the unpacked archive in the executor's working directory
        assert python.startswith(work) and python.endswith("/environment/bin/python"), python
        assert tug_file.startswith(work) and "/environment/lib/python3" in tug_file, tug_file
