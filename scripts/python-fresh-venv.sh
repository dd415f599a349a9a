#!/usr/bin/env bash
# A fresh virtual environment runs the README's Python quick start (issue 20). Makes a clean clone of the
# committed HEAD, a new `python -m venv`, runs `pip install ".[polars]"` from the clone's path (pip fetches
# the build requirements - scikit-build-core, nanobind, CMake and Ninja when the system has none - and
# pyarrow and Polars from PyPI; the C++ core compiles from scratch, CPU only), then runs the first
# ```python block of the README's "## Python" section in an empty directory with the venv's python.
# Prints the quick start's output and the durations; exits nonzero when a step fails.
#
# Not part of `make test`: the from-scratch build of the core dominates (4 min 24 s in all on the 2-core
# development machine when no other build ran, 2026-11-26; several times that while other builds share
# the cores), and it needs PyPI.
#
# Usage: scripts/python-fresh-venv.sh [--python PYTHON] [--worktree] [--keep] [--log FILE]
#   --python PYTHON  the interpreter whose venv module makes the environment (default: python3)
#   --worktree       install from a copy of the working tree (uncommitted changes included) instead of HEAD
#   --keep           keep the temporary directory (printed) afterwards
#   --log FILE       the pip log (default: <tmp>/pip.log)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
python=python3
worktree=0
keep=0
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python=$2; shift 2 ;;
    --worktree) worktree=1; shift ;;
    --keep) keep=1; shift ;;
    --log) log=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

tmp=$(mktemp -d /var/tmp/tug-fresh-venv.XXXXXX)
cleanup() { if [ "$keep" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
log=${log:-$tmp/pip.log}

src=$tmp/src
if [ "$worktree" = 1 ]; then
  mkdir -p "$src"
  # tracked and untracked files that git does not ignore
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard) |
    (cd "$repo" && xargs -0 cp --parents -t "$src" 2>/dev/null || true)
else
  git clone -q "$repo" "$src"
fi
echo "source: $src ($( [ "$worktree" = 1 ] && echo "working tree" || git -C "$src" rev-parse --short HEAD))"

start=$(date +%s)
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --upgrade pip >"$log" 2>&1
echo "pip install \".[polars]\" (log: $log)"
if ! "$tmp/venv/bin/python" -m pip install -v "$src[polars]" >>"$log" 2>&1; then
  tail -40 "$log"
  echo "FAILED: pip install" >&2
  exit 1
fi
installed=$(date +%s)
echo "installed in $((installed - start)) s: $("$tmp/venv/bin/python" -m pip list 2>/dev/null | grep -E '^(tug|pyarrow|polars) ' | tr -s ' ' | paste -sd, -)"

# the quick start: the first ```python block after "## Python"
awk '/^## Python/{p=1} p&&/^```python/{q=1; next} q&&/^```/{exit} q{print}' "$src/README.md" >"$tmp/quickstart.py"
[ -s "$tmp/quickstart.py" ] || { echo "FAILED: no \`\`\`python block under ## Python in README.md" >&2; exit 1; }
mkdir -p "$tmp/run"
echo "--- README quick start ($(wc -l <"$tmp/quickstart.py") lines), in an empty directory:"
if ! (cd "$tmp/run" && "$tmp/venv/bin/python" "$tmp/quickstart.py"); then
  echo "FAILED: the quick start" >&2
  exit 1
fi
echo "--- ok: pip install $((installed - start)) s, quick start $(( $(date +%s) - installed )) s"
