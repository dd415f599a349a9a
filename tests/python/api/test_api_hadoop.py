"""tug as a Hadoop Streaming mapper and reducer (python -m tug.streaming; docs/user-kernels.md, "Inside Hadoop"):
the mapper and reducer in-process on edge inputs, then seed 001's histogram64 launch script
(examples/hadoop/histogram.sh -> scripts/hadoop-driver.sh) as a real streaming job on Hadoop's local job runner
(jars from Maven Central), whose output equals numpy's histogram of the generated data."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tug
import tug.streaming

REPO = Path(__file__).resolve().parents[3]
JOB = REPO / "examples" / "hadoop" / "histogram_job.py"


def lines_of(values):
    return io.BytesIO("".join(f"{v}\n" for v in values).encode())


def parse(out: bytes):
    return {int(k): int(v) for k, v in (line.split("\t") for line in out.decode().splitlines())}


def reference(values):
    counts = np.bincount(np.asarray(values, dtype=np.int64) // 4, minlength=64)
    return {b: int(c) for b, c in enumerate(counts)}


@pytest.mark.parametrize("n", [1, 31, 33, 1024, 50000])
def test_the_mapper_histograms_stdin_lines(n):
    values = np.random.default_rng(n).integers(0, 256, n)
    out = io.BytesIO()
    # small partitions: the kernel runs on several and the mapper's group_by adds them up
    rows = tug.streaming.run("map", tug.streaming.load_job(str(JOB)), lines_of(values), out, partition_bytes=16384)
    assert rows == 64 and parse(out.getvalue()) == reference(values)


def test_the_reducer_adds_the_mappers_counts():
    text = b"3\t10\n1\t5\n3\t7\n63\t1\n1\t0\n"
    out = io.BytesIO()
    tug.streaming.run("reduce", tug.streaming.load_job(str(JOB)), io.BytesIO(text), out)
    assert out.getvalue() == b"1\t5\n3\t17\n63\t1\n"


def test_empty_input_gives_no_lines():
    for role in ("map", "reduce"):
        out = io.BytesIO()
        assert tug.streaming.run(role, tug.streaming.load_job(str(JOB)), io.BytesIO(b""), out) == 0
        assert out.getvalue() == b""


def test_bad_input_and_bad_jobs_are_named(tmp_path):
    job = tug.streaming.load_job(str(JOB))
    with pytest.raises(tug.InvalidArgumentError, match="input lines have 2 fields.*MAPPER_INPUT names 1"):
        tug.streaming.run("map", job, io.BytesIO(b"1\t2\n"), io.BytesIO())
    with pytest.raises(tug.ComputeError, match=r'kernel "histogram64".*values must be bytes'):
        tug.streaming.run("map", job, lines_of([1, 300]), io.BytesIO())
    empty = tmp_path / "job.py"
    empty.write_text("MAPPER_INPUT = {'v': 'i64'}\n")
    with pytest.raises(tug.InvalidArgumentError, match="defines no mapper"):
        tug.streaming.run("map", tug.streaming.load_job(str(empty)), lines_of([1]), io.BytesIO())
    with pytest.raises(tug.InvalidArgumentError, match="does not exist"):
        tug.streaming.load_job(str(tmp_path / "missing.py"))
    # as a program: a message on stderr and exit status 1, which Hadoop reports as a failed task
    env = dict(os.environ, PYTHONPATH=str(Path(tug.__file__).parents[1]))
    p = subprocess.run([sys.executable, "-m", "tug.streaming", "map", "--job", str(empty)], input=b"1\n",
                       capture_output=True, env=env, timeout=120)
    assert p.returncode == 1 and b"defines no mapper" in p.stderr


def test_histogram64_on_hadoop_streaming_local_mode(tmp_path):
    work = tmp_path / "work"
    env = dict(os.environ, TUG_BUILD_DIR=str(Path(tug.__file__).parents[2]))
    p = subprocess.run([str(REPO / "examples" / "hadoop" / "histogram.sh"), "--rows", "30000", "--work", str(work),
                        "--python", sys.executable, "--reduces", "2"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr + (work / "job.log").read_text()
    report = json.loads((work / "report.json").read_text())
    assert report["status"] == 0 and report["output_lines"] == 64 and report["job_s"] > 0
    assert "histogram64: 30000 rows" in p.stdout
    generated = np.concatenate([np.loadtxt(f, dtype=np.int64, ndmin=1) for f in sorted((work / "generated").iterdir())])
    assert generated.size == 30000
    got = {}
    for part in sorted((work / "output").glob("part-*")):
        got.update(parse(part.read_bytes()))
    assert got == reference(generated)
