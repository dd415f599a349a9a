"""A build with the CUDA backend runs where CUDA is missing: the module needs no CUDA library to load (the runtime
is linked statically and opens the driver itself; NVRTC is opened on first use), and engine="gpu" without a
device runs on the CPU with a message that says why (docs/python.md, "Building and installing")."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tug


def _needed(path: str) -> list:
    """The DT_NEEDED entries of a shared object (readelf, from binutils)."""
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]


def test_the_module_needs_no_cuda_library():
    needed = _needed(tug._tug.__file__)
    assert needed, "readelf found no NEEDED entries"
    cuda = [n for n in needed
            if n.startswith(("libcudart", "libnvrtc", "libcuda.", "libnvJitLink", "libcublas", "libnvcomp"))]
    assert cuda == [], f"{tug._tug.__file__} needs {cuda}: it would not import on a machine without CUDA"


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tug.__file__).parents[1])] + sys.path)
    env.update(extra)
    return env


def test_gpu_engine_without_a_device_runs_on_the_cpu_and_says_why():
    # CUDA_VISIBLE_DEVICES="" hides every device, as on a machine without a GPU or driver
    code = ("import tug\n"
            "lf = tug.DataFrame({'a': [1, 2, 3]}).lazy().select(tug.col('a').sum())\n"
            "print(lf.collect(engine='gpu').item())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=_env(CUDA_VISIBLE_DEVICES=""))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "6"
    assert "engine=gpu was requested but no CUDA device is visible" in r.stderr
    assert "running on the cpu" in r.stderr


def _maps_after_a_query(library: str) -> bool:
    """Whether a new process that imports tug and runs a query on the CPU has `library` mapped."""
    code = ("import tug\n"
            "tug.DataFrame({'a': [1]}).lazy().collect()\n"
            f"print(any({library!r} in l for l in open('/proc/self/maps')))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "True"


@pytest.mark.skipif(not tug.built_with_cuda, reason="a build without CUDA has no NVRTC to open")
def test_nvrtc_is_opened_on_first_use():
    ok, why = tug._tug.nvrtc_available()
    assert ok, why
    # a process that never compiles a CUDA source kernel never maps NVRTC
    assert not _maps_after_a_query("libnvrtc")


@pytest.mark.skipif("without nvCOMP" in tug._tug.nvcomp_available()[1],
                    reason="a build without nvCOMP has none to open")
def test_nvcomp_is_opened_on_first_use():
    # nvCOMP (the GPU Parquet reader's decompression) is opened at run time, not linked: found here where
    # the build found it (or the PyPI wheel's directory), and never mapped by a process that does not ask
    ok, why = tug._tug.nvcomp_available()
    assert ok, why
    assert not _maps_after_a_query("libnvcomp")
