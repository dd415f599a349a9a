"""Fixtures shared by the Python tests."""
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tug():
    """Path of the built `tug` program (TUG_BUILD_DIR, default build/)."""
    exe = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build")) / "tug"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: build it (`ninja -C build tug_cli`) or set TUG_BUILD_DIR")
    return str(exe)


@pytest.fixture(scope="session")
def tug_gen():
    """Path of the built `tug_gen` data generator (TUG_BUILD_DIR, default build/)."""
    exe = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build")) / "tug_gen"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: build it (`ninja -C build tug_gen`) or set TUG_BUILD_DIR")
    return str(exe)


@pytest.fixture(scope="session")
def spark():
    """A local-mode Spark session (pip `pyspark`, Java 17) shared by the Spark tests."""
    if shutil.which("java") is None:
        pytest.fail("java is missing: Spark needs a JRE 17+ (scripts/setup.sh installs openjdk-17-jre-headless)")
    if "JAVA_HOME" not in os.environ:
        # .../lib/jvm/java-17-openjdk-amd64/bin/java -> .../lib/jvm/java-17-openjdk-amd64
        os.environ["JAVA_HOME"] = str(Path(os.path.realpath(shutil.which("java"))).parents[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers run this Python and import the tug package of the build tree, as the tests do
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    pkg = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build")) / "python"
    if (pkg / "tug").is_dir():
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(pkg), os.environ.get("PYTHONPATH")) if p)
    # Python-side conversions of Spark timestamps use the process time zone: pin it to UTC like Spark's.
    old_tz = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("tug-interop")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "512m")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    if old_tz is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old_tz
    time.tzset()
