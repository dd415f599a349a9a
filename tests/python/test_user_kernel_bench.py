"""bench/user_kernel_vs_cupy.py (issue 22's billion-row benchmark) rehearsed without a GPU (--cpu): the data,
the tug query with the kernel's host form, the hand loop over the same chunks, the value comparison, the
table, results.json, README.md and the chart, at a small size. Checks results, never timings."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build"))


def run(tmp_path, rows, parts):
    if not (BUILD / "python" / "tug").is_dir():
        pytest.fail(f"{BUILD}/python/tug is missing: build the Python module (`ninja -C {BUILD} _tug`)")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(REPO / "bench" / "user_kernel_vs_cupy.py"), "--cpu", "--build", str(BUILD),
                        "--out", str(out), "--rows", str(rows), "--partition-rows", parts, "--repeat", "1"],
                       capture_output=True, text=True, timeout=300)
    return p, out


@pytest.mark.parametrize("rows", [1, 33, 100_003])
def test_cpu_rehearsal_gives_equal_results_and_its_files(tmp_path, rows):
    p, out = run(tmp_path, rows, "32,65536")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads((out / "results.json").read_text())
    assert r["equal"] is True and r["rows"] == rows and r["fewer_rows_because"] is None
    assert r["fog_differences"] == 0 and r["max_relative_dew_point_difference"] == 0.0
    names = [(x["name"], x["partition_rows"]) for x in r["runs"]]
    tug_run, hand = "tug map_partitions (numpy host form, --cpu)", "numpy by hand (the --cpu rehearsal)"
    assert names == [(tug_run, 32), (hand, 32), (tug_run, 65536), (hand, 65536)]
    assert (out / "user-kernel-vs-cupy.png").stat().st_size > 0
    assert "Results equal: yes" in (out / "README.md").read_text()
    # the table comes last
    assert p.stdout.rstrip().splitlines()[-1].startswith("| numpy by hand (the --cpu rehearsal) | 65,536 |")


def test_more_rows_than_memory_holds_are_cut_with_a_reason(tmp_path):
    # 10^15 rows fit no machine's memory: the script runs fewer and says why (checked through the function
    # that decides, since running even the fewer rows would take too long here)
    sys.path.insert(0, str(REPO / "bench"))
    import user_kernel_vs_cupy as b

    rows, why = b.fitting_rows(10**15)
    assert rows < 10**15 and "half the available" in why
    assert b.fitting_rows(1000) == (1000, None)
