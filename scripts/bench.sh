#!/usr/bin/env bash
# `make bench`: core benchmarks of tug vs DuckDB and Polars on the same data, same run.
set -euo pipefail
BUILD=${1:-build}
exec .venv/bin/python bench/run.py --build "$BUILD" "${@:2}"
