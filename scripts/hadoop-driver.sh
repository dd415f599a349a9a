#!/usr/bin/env bash
# The common driver of tug's Hadoop Streaming jobs (seed 001's launch scripts; docs/user-kernels.md, "Inside
# Hadoop"). A launch script names the job and its data generator; the driver
#   1. sets up the environment (the Python that runs tug, its package path, the Hadoop jars),
#   2. generates the input data (GENERATOR --rows N --out DIR),
#   3. removes the old input and uploads the new one,
#   4. ships the job file with the job (-files),
#   5. removes the output directory of the previous run,
#   6. submits the job (tug as the mapper and the reducer: python -m tug.streaming) and times it,
#   7. reports the run time and timestamps (stdout, and JSON in WORK/report.json).
# usage: scripts/hadoop-driver.sh --name NAME --generator GEN.py --job JOB.py [--rows N] [--work DIR]
#        [--reduces R] [--engine cpu|gpu|auto] [--python PY] [--archives ARCHIVE#DIR]
# Local mode (the default): scripts/hadoop.sh streaming. On a cluster set TUG_HADOOP_STREAMING to the submit
# command (`hadoop jar $HADOOP_HOME/share/hadoop/tools/lib/hadoop-streaming-*.jar`) and TUG_HADOOP_FS to the
# file system command (`hdfs dfs`), and ship tug with --archives (a packed environment; docs/user-kernels.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="" generator="" job="" rows=1000000 work="" reduces=2 engine=cpu python="" archives=""
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="$2"; shift 2 ;;
    --generator) generator="$2"; shift 2 ;;
    --job) job="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --reduces) reduces="$2"; shift 2 ;;
    --engine) engine="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --archives) archives="$2"; shift 2 ;;
    *) echo "hadoop-driver: unknown argument '$1'" >&2; sed -n '12,13p' "$0" >&2; exit 2 ;;
  esac
done
for v in name generator job; do
  if [ -z "${!v}" ]; then echo "hadoop-driver: --$v is required" >&2; exit 2; fi
done
[ -f "$job" ] || { echo "hadoop-driver: the job file '$job' does not exist" >&2; exit 2; }
now() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
secs() { date +%s.%N; }

# 1. environment
work="${work:-${TMPDIR:-/tmp}/tug-hadoop-$name}"
python="${python:-$root/.venv/bin/python}"
pkg="${TUG_BUILD_DIR:-$root/build}/python"
submit="${TUG_HADOOP_STREAMING:-$root/scripts/hadoop.sh streaming}"
fs="${TUG_HADOOP_FS:-}"
mkdir -p "$work"
input="$work/input" output="$work/output"
[ -z "$fs" ] && bash "$root/scripts/hadoop.sh" fetch
started=$(now)

# 2. input data
t0=$(secs)
"$python" "$generator" --rows "$rows" --out "$work/generated"
t1=$(secs)

# 3. upload (replacing the old input) and 5. remove the old output
if [ -n "$fs" ]; then
  $fs -rm -r -f "$input" "$output" >/dev/null
  $fs -mkdir -p "$input"
  $fs -put "$work/generated"/* "$input/"
else
  rm -rf "$input" "$output"
  cp -r "$work/generated" "$input"
fi
t2=$(secs)

# 4. the job ships with the submission; 6. submit and time
cp "$job" "$work/job.py"
run="$python -m tug.streaming"
env_args=(-cmdenv "PYTHONPATH=$pkg")
if [ -n "$archives" ]; then
  # a packed environment (ARCHIVE#DIR): the tasks run DIR/bin/python, which has tug installed
  run="./${archives##*#}/bin/python -m tug.streaming"
  env_args=(-archives "$archives")
fi
submitted=$(now)
t3=$(secs)
status=0
(cd "$work" && $submit -D mapreduce.job.name="tug-$name" -D mapreduce.job.reduces="$reduces" -files job.py \
  "${env_args[@]}" -input "$input" -output "$output" \
  -mapper "$run map --job job.py --engine $engine" -reducer "$run reduce --job job.py --engine $engine") \
  > "$work/job.log" 2>&1 || status=$?
t4=$(secs)
finished=$(now)

# 7. report
if [ -n "$fs" ]; then lines=$($fs -cat "$output/part-*" 2>/dev/null | wc -l); else lines=$(cat "$output"/part-* 2>/dev/null | wc -l); fi
"$python" - "$work/report.json" <<PY
import json, sys
r = {"name": "$name", "rows": $rows, "reduces": $reduces, "engine": "$engine", "status": $status,
     "started": "$started", "submitted": "$submitted", "finished": "$finished",
     "generate_s": round($t1 - $t0, 3), "upload_s": round($t2 - $t1, 3), "job_s": round($t4 - $t3, 3),
     "output_lines": $lines, "output": "$output", "log": "$work/job.log"}
json.dump(r, open(sys.argv[1], "w"), indent=1)
print(f"{r['name']}: {r['rows']} rows, job {r['job_s']} s (generate {r['generate_s']} s, upload {r['upload_s']} s), "
      f"{r['output_lines']} output lines, status {r['status']}; started {r['started']}, submitted {r['submitted']}, "
      f"finished {r['finished']}")
PY
if [ "$status" -ne 0 ]; then
  echo "hadoop-driver: the job failed (status $status); its log: $work/job.log" >&2
  tail -20 "$work/job.log" >&2
fi
exit "$status"
