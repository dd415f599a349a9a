"""Progress of a running query: a progress bar for terminals and notebooks, and the samples that
``Statistics.plot`` draws.

A query runs on a thread of its own; the Python thread that waits for it wakes every ``interval``
seconds (0.05), checks for Ctrl-C and calls the progress callback with a snapshot of the executor's
counters (C++ ``query_control::progress``): ``rows_scanned``, ``partitions_scanned``, ``rows_total``
(rows the sources hold, known before reading; -1 when a source does not know), ``operators_done``,
``operators_total``, ``spilled_bytes`` and ``bytes_moved`` (per tier direction, e.g. ``"host->disk"``).
"""
from __future__ import annotations

import os
import sys
import time

_MODES = ("auto", "on", "off")
_mode = "auto"


def set_progress(mode) -> None:
    """Whether ``collect``, ``profile`` and the sinks show a progress bar when they are not told:
    ``"auto"`` (the default: in notebooks and interactive sessions, for queries running longer than half a
    second; never in scripts), ``"on"`` / ``True`` (every query, on standard error or in the notebook) or
    ``"off"`` / ``False``.
    The environment variable ``TUG_PROGRESS`` (auto, on, off, 1, 0) sets the default at import."""
    global _mode
    _mode = _parse(mode, "set_progress")


def _parse(mode, where: str) -> str:
    if mode is True or mode in ("on", "1", 1):
        return "on"
    if mode is False or mode in ("off", "0", 0):
        return "off"
    if mode == "auto":
        return "auto"
    from .exceptions import InvalidArgumentError

    raise InvalidArgumentError(f"{where}: progress={mode!r} is not one of 'auto', 'on', 'off', True, False")


def _interactive() -> bool:
    """A notebook, an IPython shell or the interactive interpreter (``python -i``, the REPL)."""
    return _ipython_shell() is not None or hasattr(sys, "ps1") or bool(sys.flags.interactive)


def _ipython_shell():
    """The running IPython shell, or None (a script that merely imports IPython has none)."""
    ipython = sys.modules.get("IPython")
    try:
        return ipython.get_ipython() if ipython is not None else None
    except AttributeError:
        return None


def _in_notebook() -> bool:
    return type(_ipython_shell()).__name__ == "ZMQInteractiveShell"


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _count(n: int) -> str:
    for div, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= div:
            return f"{n / div:.1f}{suffix}"
    return str(n)


def describe(p: dict, seconds: float) -> str:
    """One line for a progress snapshot: rows (of the total when known), partitions, operators, spill."""
    rows = _count(p["rows_scanned"])
    if p["rows_total"] >= 0:
        rows += "/" + _count(p["rows_total"])
    return (f"{rows} rows, {p['partitions_scanned']} partitions, "
            f"{p['operators_done']}/{p['operators_total']} operators, spilled {_size(p['spilled_bytes'])}, "
            f"{seconds:.1f} s")


def fraction(p: dict) -> float | None:
    """How far the query is, 0..1: the rows scanned of the sources' rows when they are known, else the
    operators finished; None before the plan starts."""
    if p["rows_total"] > 0 and p["rows_scanned"] < p["rows_total"]:
        return p["rows_scanned"] / p["rows_total"]
    if p["operators_total"] > 0:
        return p["operators_done"] / p["operators_total"]
    return None


class ProgressBar:
    """A progress callback that draws a bar: on ``file`` (standard error by default) with carriage
    returns, or in a notebook as an updating output. It appears once the query has run ``delay``
    seconds, so quick queries print nothing, and ends with a final line when the query is done.
    ``collect(progress=True)`` uses one with the defaults."""

    def __init__(self, *, file=None, delay: float = 0.5, width: int = 24, min_interval: float = 0.1,
                 notebook: bool | None = None):
        self._file = file
        self._delay = delay
        self._width = width
        self._min_interval = min_interval
        self._notebook = _in_notebook() if notebook is None and file is None else bool(notebook)
        self._start = time.monotonic()
        self._last = -1.0
        self._shown = False
        self._handle = None
        self.lines: int = 0  # updates drawn (tests)

    def __call__(self, p: dict, finished: bool) -> None:
        now = time.monotonic()
        seconds = now - self._start
        if not self._shown and not finished and seconds < self._delay:
            return
        if finished and not self._shown and seconds < self._delay:
            return  # a quick query: nothing to show
        if not finished and now - self._last < self._min_interval:
            return
        self._last = now
        self._shown = True
        self.lines += 1
        f = 1.0 if finished else fraction(p)
        text = describe(p, seconds)
        if self._notebook:
            self._draw_notebook(f, text, finished)
        else:
            self._draw_text(f, text, finished)

    def _draw_text(self, f, text: str, finished: bool) -> None:
        out = self._file or sys.stderr
        if f is None:
            bar = "[" + " " * self._width + "]    "
        else:
            filled = int(round(f * self._width))
            bar = "[" + "#" * filled + "." * (self._width - filled) + f"] {f * 100:3.0f}%"
        out.write("\r" + bar + " " + text + ("\n" if finished else ""))
        out.flush()

    def _draw_notebook(self, f, text: str, finished: bool) -> None:
        from IPython.display import HTML, display

        value = "" if f is None else f' value="{f:.3f}" max="1"'
        html = HTML(f'<progress style="width:20em"{value}></progress> <code>{text}</code>')
        if self._handle is None:
            self._handle = display(html, display_id=True)
        else:
            self._handle.update(html)


class Recorder:
    """Records progress snapshots over the query (``Statistics.timeline``) and passes them on to ``inner``."""

    def __init__(self, inner=None):
        self._inner = inner
        self._start = time.monotonic()
        self.timeline: list = []
        self.final: dict | None = None

    def __call__(self, p: dict, finished: bool) -> None:
        self.timeline.append((time.monotonic() - self._start, p))
        if finished:
            self.final = p
        if self._inner is not None:
            self._inner(p, finished)


def resolve(progress, where: str):
    """The callback for ``progress=`` of collect, profile and the sinks: None (the ``set_progress``
    default), True / False, or a callable ``f(snapshot: dict, finished: bool)``."""
    if callable(progress):
        return progress
    mode = _mode if progress is None else _parse(progress, where)
    if mode == "off" or (mode == "auto" and not _interactive()):
        return None
    return ProgressBar(delay=0.0 if mode == "on" else 0.5)


if "TUG_PROGRESS" in os.environ:
    set_progress(os.environ["TUG_PROGRESS"].strip().lower())
