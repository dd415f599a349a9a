"""Writes docs/python_api.md, the API reference of the `tug` Python package, from its docstrings and
signatures. `--check` exits 1 when the committed file differs (tests/python/api/test_api_docs.py runs it).

    .venv/bin/python scripts/python_api_docs.py [--check]   (needs the package: make build, or pip install .)
"""
import inspect
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "python_api.md"


def _doc(obj) -> str:
    d = inspect.getdoc(obj)
    return d.strip() if d else ""


def _sig(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _members(cls):
    for name, member in cls.__dict__.items():
        if name.startswith("_") and name not in ("__init__", "__arrow_c_stream__", "_repr_html_"):
            continue
        yield name, member


def render(tug) -> str:
    lines = ["# tug Python API reference", "",
             "Generated from the docstrings by `scripts/python_api_docs.py` (do not edit; `make build` then run "
             "it). The guide is docs/python.md.", ""]
    functions, classes = [], []
    for name in sorted(tug.__all__):
        obj = getattr(tug, name)
        (classes if inspect.isclass(obj) else functions).append((name, obj))
    lines += ["## Functions", ""]
    for name, f in functions:
        lines += [f"### `tug.{name}{_sig(f)}`", "", _doc(f) or "(no docstring)", ""]
    lines += ["## Classes", ""]
    for name, cls in classes:
        if issubclass(cls, BaseException):
            continue
        lines += [f"### `tug.{name}`", "", _doc(cls) or "(no docstring)", ""]
        for mname, m in _members(cls):
            if isinstance(m, property):
                lines += [f"- `{mname}` (property): {_doc(m).splitlines()[0] if _doc(m) else ''}".rstrip(": ")]
            elif callable(m) or isinstance(m, (staticmethod, classmethod)):
                f = m.__func__ if isinstance(m, (staticmethod, classmethod)) else m
                first = _doc(f).splitlines()[0] if _doc(f) else ""
                lines += [f"- `{mname}{_sig(f)}`" + (f": {first}" if first else "")]
        lines += [""]
    lines += ["## Exceptions", ""]
    for name, cls in classes:
        if issubclass(cls, BaseException):
            bases = ", ".join(b.__name__ for b in cls.__bases__)
            lines += [f"- `tug.{name}({bases})`: {_doc(cls)}"]
    lines += [""]
    return "\n".join(lines)


def main() -> int:
    import tug

    text = render(tug)
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run scripts/python_api_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
