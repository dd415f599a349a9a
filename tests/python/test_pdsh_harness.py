"""The PDS-H harness: tug_pdsh's JSON (plan backends, fallbacks, --time-limit) and bench/pdsh.py
(results.json, --replot, the tables for skipped queries and GPU fallbacks). SF 0.01, a few queries."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "pdsh"))
sys.path.insert(0, str(REPO / "bench"))
import data as pdsh_data  # noqa: E402
import pdsh  # noqa: E402

BUILD = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build"))


@pytest.fixture(scope="module")
def exe():
    p = BUILD / "tug_pdsh"
    if not p.exists():
        pytest.fail(f"{p} is missing: build it (`ninja -C build tug_pdsh tug_gen`) or set TUG_BUILD_DIR")
    return str(p)


@pytest.fixture(scope="module")
def sf001(tmp_path_factory):
    where = os.environ.get("TUG_PDSH_DATA") or tmp_path_factory.mktemp("pdsh") / "sf0.01"
    return pdsh_data.ensure_data(where, 0.01, BUILD)


def run_json(exe, args, tmp_path):
    js = tmp_path / "t.json"
    p = subprocess.run([exe, "--json", str(js)] + args, capture_output=True, text=True)
    return p, (json.loads(js.read_text()) if js.exists() else None)


def test_cpu_records_plan_backends(exe, sf001, tmp_path):
    p, doc = run_json(exe, ["--data", str(sf001), "--query", "1,3", "--engine", "cpu", "--reps", "2"], tmp_path)
    assert p.returncode == 0, p.stderr
    for rec in doc["queries"]:
        assert rec["nodes"]["cpu"] >= 3 and rec["nodes"]["cuda"] == 0
        assert rec["fallbacks"] == []
        assert rec["reps"] == 2 and len(rec["times_s"]) == 2
    assert "nodes=cpu:" in p.stdout


def test_gpu_engine_is_gpu_or_refused(exe, sf001, tmp_path):
    """engine=gpu either runs nodes on the GPU (and lists any fallback) or, without a GPU, refuses to
    time the CPU instead."""
    p, doc = run_json(exe, ["--data", str(sf001), "--query", "1,6", "--engine", "gpu", "--reps", "0"], tmp_path)
    if p.returncode == 1 and "no CUDA device" in p.stderr:
        assert doc is None
        return
    assert p.returncode == 0, p.stderr
    for rec in doc["queries"]:
        assert rec["nodes"]["cuda"] > 0
        assert isinstance(rec["fallbacks"], list)


def test_time_limit_skips_the_rest(exe, sf001, tmp_path):
    """Query 1 repeats until the 1 s limit, the others are recorded as skipped."""
    p, doc = run_json(exe, ["--data", str(sf001), "--query", "1,2,3", "--engine", "cpu", "--reps", "100000",
                            "--time-limit", "1"], tmp_path)
    assert p.returncode == 0, p.stderr
    q1, q2, q3 = doc["queries"]
    assert 0 <= q1["reps"] < 100000 and q1["rows"] == 4
    assert q2 == {"query": 2, "skipped": "time limit"} and q3 == {"query": 3, "skipped": "time limit"}


def test_fallback_flag_is_checked(exe, sf001):
    p = subprocess.run([exe, "--data", str(sf001), "--query", "1", "--fallback", "never"], capture_output=True,
                       text=True)
    assert p.returncode == 2 and "--fallback" in p.stderr


def test_harness_writes_and_replots(exe, sf001, tmp_path):
    out = tmp_path / "res"
    subprocess.run([sys.executable, str(REPO / "bench" / "pdsh.py"), "--data", str(sf001), "--sf", "0.01",
                    "--queries", "1,6", "--reps", "0", "--engines", "tug-cpu,duckdb", "--build", str(BUILD),
                    "--out", str(out)], check=True, capture_output=True, text=True)
    doc = json.loads((out / "results.json").read_text())
    assert doc["results"]["tug-cpu"]["1"]["nodes"]["cpu"] > 0
    assert doc["results"]["duckdb"]["6"]["rows"] == 1
    md = (out / "results.md").read_text()
    (out / "results.md").unlink()
    subprocess.run([sys.executable, str(REPO / "bench" / "pdsh.py"), "--replot", str(out)], check=True,
                   capture_output=True)
    assert (out / "results.md").read_text() == md
    assert "| Q6 |" in md


def test_markdown_shows_skips_and_fallbacks():
    rec = {"rows": 4, "cold_s": 0.2, "times_s": [0.1], "reps": 1, "median_s": 0.1, "min_s": 0.1, "max_s": 0.1}
    results = {
        "tug-gpu": {1: dict(rec, nodes={"cpu": 2, "cuda": 6}, fallbacks=["operator sort cannot run on cuda: x"]),
                    2: {"skipped": "time limit"}},
        "duckdb": {1: dict(rec, median_s=0.05, min_s=0.05, max_s=0.05), 2: dict(rec)},
    }
    meta = {"sf": "10", "date": "2026-01-01", "reps": 1, "threads": 0, "cores": 16, "queries": [1, 2],
            "machine_desc": "test machine", "command": "x", "skipped": {"tug-gpu": [2]}}
    md = pdsh.markdown(results, [1, 2], meta)
    assert "| Q1 | 0.100 (0.100-0.100) * | 0.050 (0.050-0.050) | 2.00 |" in md
    assert "| Q2 | skipped (time limit) |" in md
    assert "| Q1 | 6 | 2 | operator sort cannot run on cuda: x |" in md
    assert "Skipped (past the deadline): tug-gpu Q2." in md
    assert "all (16)" in md


def test_deadline_shares():
    d = pdsh.Deadline(100)
    assert 45 < d.share(2).left() <= 50
    assert pdsh.Deadline(0).share(3).left() is None and not pdsh.Deadline(0).passed()
