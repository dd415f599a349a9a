"""The spill file of a query is unlinked as soon as it is opened: a process killed with SIGKILL in the
middle of a spilling query leaves nothing in spill_directory (issue 17)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tug

CHILD = r'''
import sys, tug
spill = sys.argv[1]
n = 300_000
left = tug.DataFrame({"k": [i % 5000 for i in range(n)], "v": list(range(n))}).lazy().select(
    tug.col("k"), (tug.col("v") + 1).alias("w"))
right = tug.DataFrame({"k": [i % 5000 for i in range(2 * n)], "v": list(range(2 * n))}).lazy().group_by(
    "k").agg(tug.col("v").sum().alias("s"))
q = left.join(right, on="k").group_by("k").agg(tug.col("w").sum())
print("ready", flush=True)
while True:  # spill_everything: the probe side goes to disk while the build side runs, every time
    q.collect(engine="cpu", spill_everything=True, spill_directory=spill)
'''


def spill_files_open(pid: int, spill: Path) -> int:
    """The descriptors of `pid` that point into `spill` (unlinked files show as '... (deleted)')."""
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        n += target.startswith(str(spill))
    return n


def test_kill_9_while_spilling_leaves_no_file(tmp_path):
    spill = tmp_path / "spill"
    spill.mkdir()
    env = dict(os.environ, PYTHONPATH=str(Path(tug.__file__).resolve().parents[1]))  # the same package
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(spill)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "ready"
        # wait until the query holds its spill file open (each query opens one on its first spill)
        deadline = time.monotonic() + 60
        seen = 0
        while time.monotonic() < deadline and not seen:
            seen = spill_files_open(p.pid, spill)
            time.sleep(0.01)
        assert seen, "the child never had a spill file open"
        assert list(spill.iterdir()) == []  # open, but never with a name
    finally:
        p.kill()
        p.wait(timeout=30)
    assert p.returncode == -9
    assert list(spill.iterdir()) == []
