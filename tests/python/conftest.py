"""Fixtures shared by the Python tests."""
import os
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
