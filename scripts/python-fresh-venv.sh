#!/usr/bin/env bash
# A fresh virtual environment runs the README's Python quick start (issue 20). Makes a clean clone of the
# committed HEAD, a new `python -m venv`, runs a bare `pip install .` from the clone's path (pip fetches
# the build requirements - scikit-build-core, nanobind, CMake and Ninja when the system has none, and on
# Linux the CUDA toolkit and nvCOMP - and pyarrow, the one run-time dependency, from PyPI; no Polars: the
# quick start must not need an extra; the C++ core compiles from scratch,
# with the CUDA backend on Linux unless TUG_WITH_CUDA=OFF is in the environment), then runs the first
# ```python block of the README's "## Python" section in an empty directory with the venv's python.
# Then checks the build: `tug.built_with_cuda` as expected (true on Linux unless TUG_WITH_CUDA=OFF), and
# tests/python/api/test_api_cuda_runtime.py's checks that need no NVRTC or nvCOMP (pytest installed into
# the venv): the module needs no CUDA library, and engine="gpu" without a device runs on the CPU and says
# so. Prints the quick start's output, what the build has and the durations; exits nonzero when a step fails.
#
# Not part of `make test`: the from-scratch build of the core dominates (CPU only: 4 min 24 s in all on the
# 2-core development machine when no other build ran, 2026-11-26; with the CUDA backend, 552 s of CPU time
# against 294 s CPU only, docs/python.md), and it needs PyPI.
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
echo "pip install . (log: $log)"
if ! "$tmp/venv/bin/python" -m pip install -v "$src" >>"$log" 2>&1; then
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
quick=$(date +%s)

# the build: CUDA compiled in where expected, and what this machine has
expect_cuda=0
if [ "$(uname -s)" = Linux ]; then
  case "${TUG_WITH_CUDA:-}" in [Oo][Ff][Ff] | 0 | [Ff]alse | FALSE | [Nn]o | NO | n) ;; *) expect_cuda=1 ;; esac
fi
echo "--- the build (CUDA backend expected: $expect_cuda):"
if ! (cd "$tmp/run" && "$tmp/venv/bin/python" - "$expect_cuda" <<'PY'
import sys
import tug
print(f"tug.built_with_cuda={tug.built_with_cuda} tug.gpu_available()={tug.gpu_available()} "
      f"nvrtc={tug._tug.nvrtc_available()} nvcomp={tug._tug.nvcomp_available()}")
if tug.built_with_cuda != (sys.argv[1] == "1"):
    sys.exit(f"tug.built_with_cuda is {tug.built_with_cuda}, expected {sys.argv[1] == '1'}")
PY
); then
  echo "FAILED: the build does not have what was expected" >&2
  exit 1
fi
"$tmp/venv/bin/python" -m pip install -q pytest >>"$log" 2>&1
# tests/python/api/conftest.py imports the build tree's package only where $src/build/python exists: the
# pip build's directory is build/py-<wheel tag>, so the installed package is tested
if ! (cd "$src" && "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider tests/python/api/test_api_cuda_runtime.py \
        -k "not nvrtc and not nvcomp"); then
  echo "FAILED: tests/python/api/test_api_cuda_runtime.py on the installed package" >&2
  exit 1
fi
echo "--- ok: pip install $((installed - start)) s, quick start $((quick - installed)) s, checks $(( $(date +%s) - quick )) s"
