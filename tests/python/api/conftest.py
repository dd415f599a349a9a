"""The Python API tests import the `tug` package of the build tree (TUG_BUILD_DIR/python, which `make build`
fills), else an installed one (`pip install .`)."""
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
_pkg = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build")) / "python"
if (_pkg / "tug").is_dir():
    sys.path.insert(0, str(_pkg))
