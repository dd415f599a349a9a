#!/usr/bin/env bash
# Installs what building and testing tug needs, idempotently: Debian packages (apt; a Java runtime for Spark)
# (Maven fetches the Cassandra server that the Cassandra tests run) and a Python virtual environment (.venv) with the oracles (DuckDB, Polars, pyarrow, PySpark). Safe to run
# repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_pkgs=(build-essential cmake ninja-build ccache openmpi-bin libopenmpi-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev libsnappy-dev zlib1g-dev libzstd-dev liblz4-dev libssl-dev openssl python3 python3-venv python3-pip openjdk-17-jre-headless maven)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import duckdb, polars, pyarrow, numpy, pytest, matplotlib, pyspark, pandas, nanobind, scikit_build_core, cassandra" >/dev/null 2>&1; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -r requirements-dev.txt
fi

# CUDA: a system nvcc (the GPU machines) wins; otherwise the PyPI toolkit goes into .venv so that CMake
# compiles the CUDA backend even where no GPU exists. TUG_NO_CUDA=1 skips it.
if [ "${TUG_NO_CUDA:-0}" != 1 ] && ! command -v nvcc >/dev/null 2>&1; then
  if ! ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc .venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 >/dev/null 2>&1; then
    echo "setup: installing the CUDA toolkit (PyPI) into .venv"
    .venv/bin/pip install -q -r requirements-cuda.txt
  fi
  for cu in .venv/lib/python3*/site-packages/nvidia/cu13; do
    # the wheels ship lib/ and versioned libraries; nvcc and CMake look for lib64/, libcudart.so and libnvrtc.so
    [ -e "$cu/lib64" ] || ln -s lib "$cu/lib64"
    [ -e "$cu/lib/libcudart.so" ] || ln -s libcudart.so.13 "$cu/lib/libcudart.so"
    [ -e "$cu/lib/libnvrtc.so" ] || ln -s libnvrtc.so.13 "$cu/lib/libnvrtc.so"
  done
fi

# nvCOMP (PyPI, about 30 MB) into .venv, also where a system nvcc exists: the GPU Parquet reader decompresses pages on
# the device with it (docs/dependencies.md); CMake finds it there. TUG_NO_CUDA=1 skips it.
if [ "${TUG_NO_CUDA:-0}" != 1 ] && ! ls .venv/lib/python3*/site-packages/nvidia/libnvcomp/lib64/libnvcomp.so.6 >/dev/null 2>&1; then
  echo "setup: installing nvCOMP (PyPI) into .venv"
  .venv/bin/pip install -q "nvidia-libnvcomp-cu13==6.*"
fi

# Apache Cassandra for the Cassandra tests: its jars from Maven Central into .cache/cassandra (once)
bash scripts/cassandra.sh fetch
# Hadoop Streaming and the Hadoop client for the Hadoop Streaming tests: jars from Maven Central into .cache/hadoop
bash scripts/hadoop.sh fetch
# The Python package (python/, docs/python.md): `make build` builds its module into $TUG_BUILD_DIR/python
# (CMake builds it when nanobind is in .venv); a .pth file puts that directory on the .venv's sys.path, an
# editable install of the build tree, so the C++ core is compiled once for the tests, the CLI and Python.
build_dir="${TUG_BUILD_DIR:-$PWD/build}"
site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if [ "$(cat "$site/tug-build.pth" 2>/dev/null)" != "$build_dir/python" ]; then
  echo "setup: the tug Python package of $build_dir/python goes on the .venv's path ($site/tug-build.pth)"
  echo "$build_dir/python" > "$site/tug-build.pth"
fi
