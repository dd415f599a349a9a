#!/usr/bin/env bash
# `make demo`: the seed-002 speed-anomaly query on generated AIS-like data, on the best engine.
set -euo pipefail
BUILD=${1:-build}
ROWS=${TUG_DEMO_ROWS:-2000000}
exec "$BUILD/example_speed_anomaly" --rows "$ROWS" --engine auto --explain
