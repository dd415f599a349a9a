"""docs/python_api.md is generated from the docstrings: it must match the package (regenerate with
scripts/python_api_docs.py), and every public function and class has a docstring."""
import importlib.util
from pathlib import Path

import tug

REPO = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location("python_api_docs", REPO / "scripts" / "python_api_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_reference_is_up_to_date():
    assert (REPO / "docs" / "python_api.md").read_text() == _generator().render(tug), \
        "docs/python_api.md is out of date: run .venv/bin/python scripts/python_api_docs.py"


def test_every_public_name_has_a_docstring():
    assert "(no docstring)" not in _generator().render(tug)
