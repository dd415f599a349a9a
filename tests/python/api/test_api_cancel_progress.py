"""Ctrl-C cancels a running query (tug.CancelledError, a KeyboardInterrupt) and the interpreter runs the
next one; progress callbacks and the progress bar; Statistics.plot (docs/python.md)."""
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tug

# A query that runs for a minute on 2 cores in little memory: K different filters (K operators) over one
# 1M-row frame (the optimizer shares its scan), each keeping no row, concatenated and summed.
LONG_QUERY = r'''
import tug
base = tug.DataFrame({"v": list(range(1_000_000))}).lazy()
K = int(__import__("os").environ.get("TUG_TEST_K", "20000"))
q = tug.concat([base.filter(tug.col("v") < -1 - i) for i in range(K)]).select(tug.col("v").sum())
'''

CHILD = LONG_QUERY + r'''
import sys, time
seen = []
def watch(p, finished):
    if p["operators_done"] > 0:  # the plan is running
        seen.append(p)
        if len(seen) == 1:
            print("running", flush=True)  # the parent sends SIGINT now
try:
    q.collect(engine="cpu", target_partition_rows=1 << 16, progress=watch)
    print("finished", flush=True)
except tug.CancelledError as e:
    p = seen[-1]
    print("cancelled", isinstance(e, KeyboardInterrupt), p["operators_done"] < p["operators_total"], flush=True)
except KeyboardInterrupt:
    print("interrupted without cancelling", flush=True)
# the interpreter and the engine run the next query
df = tug.DataFrame({"a": [1, 2, 3, None]}).lazy().select(tug.col("a").sum()).collect()
print("next", df.item(), flush=True)
'''


def _env():
    return dict(os.environ, PYTHONPATH=str(Path(tug.__file__).resolve().parents[1]))  # the same package


def test_sigint_cancels_a_running_query_and_the_interpreter_goes_on():
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env())
    try:
        line = p.stdout.readline().strip()
        assert line == "running", (line, p.stderr.read() if p.poll() is not None else "")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)  # a query that ignored the cancel would run for minutes
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    assert p.returncode == 0, err
    lines = out.split("\n")
    # stopped at a cancellation point (CancelledError comes only from a query that threw cancelled_error),
    # raised as a KeyboardInterrupt
    assert lines[0] == "cancelled True True", out + err
    assert lines[1] == "next 6", out + err


@pytest.mark.parametrize("what", ["sort", "join", "group_by"])
def test_a_cancel_from_another_thread_stops_one_huge_partition(what):
    # One partition and one thread: the sort, hash join or hash aggregate is one long task. A Python thread
    # interrupts the main thread (as Ctrl-C does) once every operator below it has finished (`above`: the
    # operators of the physical plan above it). A cancel seen only between partitions or tasks would let
    # it and the query finish: the call would then raise a plain KeyboardInterrupt, not tug.CancelledError
    # (raised only when the query stopped at a cancellation point).
    import threading
    import _thread

    n = 1 << 21
    keys = [f"key-{(i * 7919) % 1000003}-long-enough-to-compare-bytes" for i in range(n)]
    df = tug.DataFrame({"s": keys, "k": [(i * 104729) % n for i in range(n)]})
    lf = df.lazy()
    q, above = {"sort": (lf.sort("s", "k"), 0),
                "join": (df.head(1).lazy().join(lf, on=["s", "k"], how="full"), 1),
                "group_by": (lf.group_by("s", "k").agg(tug.col("k").median().alias("m")), 1)}[what]
    latest, fired = {}, threading.Event()

    def watch(p, finished):
        latest.update(p)

    def watcher():
        while not fired.is_set():
            if latest and latest["operators_done"] == latest["operators_total"] - 1 - above:
                latest["at_cancel"] = latest["operators_done"]
                fired.set()
                _thread.interrupt_main()
                return
            fired.wait(0.001)

    # interrupt_main acts only where Python handles SIGINT: a shell's background job starts with it ignored
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    t = threading.Thread(target=watcher)
    t.start()
    try:
        with pytest.raises(tug.CancelledError):
            q.collect(engine="cpu", num_threads=1, target_partition_rows=1 << 40, progress=watch)
    finally:
        fired.set()
        t.join()
        signal.signal(signal.SIGINT, old_handler)
    assert "at_cancel" in latest  # the blocking operator was running when the interrupt came
    # the interpreter and the engine run the next query
    assert tug.DataFrame({"a": [1, 2, 3]}).lazy().select(tug.col("a").sum()).collect().item() == 6


def test_cancelled_error_is_a_keyboard_interrupt_not_an_exception():
    assert issubclass(tug.CancelledError, KeyboardInterrupt)
    assert not issubclass(tug.CancelledError, Exception)


def test_an_exception_in_the_progress_callback_cancels_the_query():
    ns = {}
    exec(LONG_QUERY.replace('"20000"', '"2000"'), ns)
    calls = []

    class Stop(Exception):
        pass

    def stop(p, finished):
        calls.append(p)
        if len(calls) == 2:
            raise Stop("enough")

    # the callback's exception cancels the query; CancelledError says so and names it
    with pytest.raises(tug.CancelledError, match="enough"):
        ns["q"].collect(engine="cpu", target_partition_rows=1 << 16, progress=stop)
    assert calls[-1]["operators_done"] < calls[-1]["operators_total"]
    # and the next query runs
    assert tug.DataFrame({"a": [1, 2]}).lazy().select(tug.col("a").sum()).collect().item() == 3


@pytest.mark.parametrize("n", [0, 1, 33, 1024, 100_000])
def test_progress_callback_sees_the_counts(n):
    pa = pytest.importorskip("pyarrow")
    seen = []
    df = tug.DataFrame(pa.table({"k": pa.array([i % 7 for i in range(n)], pa.int64()),
                                 "v": pa.array(list(range(n)), pa.int64())}))
    q = df.lazy().filter(tug.col("v") > 3).group_by("k").agg(tug.col("v").sum())
    out = q.collect(engine="cpu", target_partition_rows=1000, progress=lambda p, f: seen.append((p, f)))
    assert out.height == (min(7, n - 4) if n > 4 else 0)
    final, finished = seen[-1]
    assert finished and not any(f for _, f in seen[:-1])
    assert final["rows_scanned"] == n and final["rows_total"] == n
    assert final["partitions_scanned"] >= (n + 999) // 1000
    assert final["operators_done"] == final["operators_total"] > 0
    assert final["spilled_bytes"] == 0
    # the counters only grow
    for (a, _), (b, _) in zip(seen, seen[1:]):
        assert b["rows_scanned"] >= a["rows_scanned"] and b["operators_done"] >= a["operators_done"]


def _spilling_join(n):
    """A join whose probe side (computed, so owned by the query) is held while the build side aggregates:
    with spill_everything it goes to disk and comes back."""
    left = tug.DataFrame({"k": [i % 500 for i in range(n)], "v": list(range(n))}).lazy().select(
        "k", (tug.col("v") + 1).alias("w"))
    right = tug.DataFrame({"k": [i % 500 for i in range(2 * n)], "v": list(range(2 * n))}).lazy().group_by(
        "k").agg(tug.col("v").sum().alias("s"))
    return left.join(right, on="k")


def test_progress_counts_spilled_bytes_and_profile_keeps_the_transfers(tmp_path):
    q = _spilling_join(50_000)
    seen = []
    out, stats = q.profile(engine="cpu", spill_everything=True, spill_directory=str(tmp_path),
                           progress=lambda p, f: seen.append(p))
    assert out.height == 50_000
    assert seen[-1]["spilled_bytes"] > 0 and seen[-1]["bytes_moved"]["host->disk"] > 0
    assert stats.transfers["host->disk"] == seen[-1]["bytes_moved"]["host->disk"]
    assert stats.to_dict()["transfers"]["disk->host"] > 0
    assert stats.timeline and stats.timeline[-1][1] == seen[-1]


def test_progress_bar_draws_on_a_file_and_is_off_in_scripts():
    buf = io.StringIO()
    bar = tug.ProgressBar(file=buf, delay=0, min_interval=0)
    tug.DataFrame({"a": list(range(5000))}).lazy().select(tug.col("a").sum()).collect(
        engine="cpu", target_partition_rows=100, progress=bar)
    text = buf.getvalue()
    assert bar.lines >= 1
    assert text.startswith("\r[") and text.endswith("\n")
    assert "5.0k/5.0k rows" in text and "100%" in text.rsplit("\r", 1)[-1]
    # a quick query with the default delay draws nothing
    quiet = io.StringIO()
    tug.DataFrame({"a": [1]}).lazy().collect(progress=tug.ProgressBar(file=quiet))
    assert quiet.getvalue() == ""
    # this test runs as a script: the default ("auto") shows no bar, True does
    assert tug.progress.resolve(None, "collect") is None
    assert isinstance(tug.progress.resolve(True, "collect"), tug.ProgressBar)
    assert tug.progress.resolve(False, "collect") is None
    with pytest.raises(tug.InvalidArgumentError, match="progress='sometimes'"):
        tug.DataFrame({"a": [1]}).lazy().collect(progress="sometimes")


def test_set_progress_on_shows_a_bar_on_stderr():
    query = "tug.DataFrame({'a': [1, 2]}).lazy().collect()"
    for code, env, shown in ((f"import tug; tug.set_progress('on'); {query}", {}, True),
                             (f"import tug; {query}", {"TUG_PROGRESS": "on"}, True),
                             (f"import tug; tug.set_progress(True); tug.set_progress('off'); {query}", {}, False),
                             (f"import tug; {query}", {}, False)):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**_env(), **env},
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert ("2/2 rows" in r.stderr) == shown and (r.stderr == "") != shown, (code, env, r.stderr)
    r = subprocess.run([sys.executable, "-c", "import tug; tug.set_progress('often')"], capture_output=True,
                       text=True, env=_env(), timeout=120)
    assert "InvalidArgumentError" in r.stderr and "'often'" in r.stderr


def test_plot_draws_the_tiers_and_the_operators(tmp_path):
    pytest.importorskip("matplotlib")
    q = _spilling_join(20_000)
    _, stats = q.profile(engine="cpu", spill_everything=True, spill_directory=str(tmp_path))
    fig = stats.plot()
    tiers, ops = fig.axes
    assert {line.get_label() for line in tiers.get_lines()} >= {"host->disk", "disk->host"}
    assert len(ops.patches) == len(stats.operators)
    fig.savefig(tmp_path / "stats.png")
    assert (tmp_path / "stats.png").stat().st_size > 0


def test_plot_without_matplotlib_names_it():
    code = ("import sys; sys.modules['matplotlib'] = None; import tug; "
            "_, s = tug.DataFrame({'a': [1]}).lazy().profile(); s.plot()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode != 0
    assert "ModuleNotFoundError: Statistics.plot needs matplotlib" in r.stderr


def test_progress_bar_in_a_notebook(monkeypatch):
    """In a Jupyter kernel (IPython's ZMQInteractiveShell) the default shows a bar, drawn as an HTML
    <progress> output that is updated in place (a stand-in IPython records what is displayed)."""
    import types

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj.data))

    class HTML:
        def __init__(self, data):
            self.data = data

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(("display", obj.data))
        return Handle()

    class ZMQInteractiveShell:
        pass

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: ZMQInteractiveShell()
    ipython_display = types.ModuleType("IPython.display")
    ipython_display.HTML, ipython_display.display = HTML, display
    ipython.display = ipython_display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", ipython_display)

    bar = tug.progress.resolve(None, "collect")  # "auto" in a notebook: a bar
    assert isinstance(bar, tug.ProgressBar)
    bar = tug.ProgressBar(delay=0, min_interval=0)
    tug.DataFrame({"a": list(range(3000))}).lazy().select(tug.col("a").sum()).collect(
        engine="cpu", target_partition_rows=100, progress=bar)
    assert shown and shown[0][0] == "display" and all(kind == "update" for kind, _ in shown[1:])
    assert '<progress style="width:20em" value="1.000" max="1">' in shown[-1][1] and "3.0k/3.0k rows" in shown[-1][1]
