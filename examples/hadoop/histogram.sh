#!/usr/bin/env bash
# Seed 001's launch script for its histogram64 port, on tug: the generator, the job, nothing else (the
# common driver does the rest). examples/hadoop/histogram.sh --rows 10000000 --work /tmp/histogram64
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../../scripts/hadoop-driver.sh" --name histogram64 --generator "$here/gen_bytes.py" \
  --job "$here/histogram_job.py" "$@"
