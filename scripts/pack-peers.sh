#!/usr/bin/env bash
# Packs DuckDB and Polars for the GPU machine's Python 3.12 into one carry bundle,
# .peers/peers-duckdb<V>-polars<V>-cp312.tar.xz (about 45 MB; the device tool carries 64 MiB a call):
# the wheels (downloaded with pip into a cache outside the repository, or taken from .whl/) are
# installed with pip --target into a staging directory, caches and type stubs are dropped, the
# extension modules stripped (strip --strip-unneeded), and the result checked: it is unpacked again
# and imported by a Python 3.12 (python3.12 on PATH, or $PY312), which runs a query in each engine
# on a small Parquet file. scripts/lib/gpu-env.sh unpacks every .peers/*.tar.xz on the GPU machine.
#   scripts/pack-peers.sh [--force]     (--force: rebuild an existing bundle)
# Environment: DUCKDB_VERSION (2.0.0), POLARS_VERSION (2.1.0), PEERS_CACHE (wheel cache,
# /tmp/tug-peers-wheels), PEERS_MAX_MB (refuse a bundle larger than this, 55), PY312.
# xz -9e takes a few minutes of one core per 100 MB; the bundle is reused until --force.
set -euo pipefail
cd "$(dirname "$0")/.."
DUCKDB_VERSION=${DUCKDB_VERSION:-2.0.0}
POLARS_VERSION=${POLARS_VERSION:-2.1.0}
CACHE=${PEERS_CACHE:-/tmp/tug-peers-wheels}
MAX_MB=${PEERS_MAX_MB:-55}
BUNDLE=.peers/peers-duckdb$DUCKDB_VERSION-polars$POLARS_VERSION-cp312.tar.xz
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

py312() {
  local p
  for p in "${PY312:-}" python3.12 /root/.pyenv/versions/3.12*/bin/python3; do
    [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' \
      2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

# Unpacks the bundle into a fresh directory and runs a query in each engine with Python 3.12.
verify() {
  local py dir
  if ! py=$(py312); then
    echo "pack-peers: no Python 3.12 here (set PY312): the bundle is NOT verified" >&2
    return 0
  fi
  dir=$(mktemp -d)
  tar -xJf "$BUNDLE" -C "$dir"
  local rc=0
  "$py" -I -c 'import sys; sys.path.insert(0, sys.argv[1]); exec(sys.argv[2])' "$dir" "
import os, tempfile, duckdb, polars as pl
assert duckdb.__file__.startswith(sys.argv[1]) and pl.__file__.startswith(sys.argv[1]), (duckdb.__file__, pl.__file__)
f = os.path.join(tempfile.mkdtemp(), 't.parquet')
duckdb.sql(f\"COPY (SELECT i % 7 AS k, i::DOUBLE AS v FROM range(100000) t(i)) TO '{f}' (FORMAT PARQUET)\")
d = duckdb.sql(f\"SELECT k, sum(v) AS s FROM read_parquet('{f}') GROUP BY k ORDER BY k\").fetchall()
p = pl.scan_parquet(f).group_by('k').agg(pl.col('v').sum().alias('s')).sort('k').collect().rows()
assert d == p and len(d) == 7, (d, p)
print(f'verified with Python {sys.version.split()[0]}: duckdb {duckdb.__version__}, polars {pl.__version__}, same answer')
" || rc=1
  rm -rf "$dir"
  return $rc
}

if [ -e "$BUNDLE" ] && [ $FORCE = 0 ]; then
  echo "pack-peers: $BUNDLE exists ($(du -m "$BUNDLE" | cut -f1) MB; --force rebuilds it)"
  verify
  exit 0
fi

mkdir -p "$CACHE" .peers
wheels=()
for spec in duckdb==$DUCKDB_VERSION polars==$POLARS_VERSION polars-runtime-32==$POLARS_VERSION; do
  name=${spec%%==*}
  file=$(ls "$CACHE/${name//-/_}-${spec#*==}-"*.whl .whl/"${name//-/_}-${spec#*==}-"*.whl 2>/dev/null | head -1 || true)
  if [ -z "$file" ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d "$CACHE" "$spec"
    file=$(ls "$CACHE/${name//-/_}-${spec#*==}-"*.whl | head -1)
  fi
  wheels+=("$file")
done
printf 'pack-peers: %s\n' "${wheels[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
python3 -m pip install -q --no-deps --no-compile --no-index --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --target "$stage/site" "${wheels[@]}"
# not needed to run queries: type stubs, byte-code caches, pip's bin/ scripts
rm -rf "$stage"/site/*-stubs "$stage/site/bin"
find "$stage/site" -name __pycache__ -type d -prune -exec rm -rf {} +
find "$stage/site" -name '*.so' -exec strip --strip-unneeded {} \;
echo "pack-peers: staged $(du -sm "$stage/site" | cut -f1) MB; compressing (xz -9e)"
tar -C "$stage/site" -cf - . | xz -9e -T0 >"$BUNDLE.tmp"
mv "$BUNDLE.tmp" "$BUNDLE"
size=$(du -m "$BUNDLE" | cut -f1)
echo "pack-peers: $BUNDLE, $size MB"
if [ "$size" -gt "$MAX_MB" ]; then
  echo "pack-peers: larger than $MAX_MB MB: it does not fit one device call with the repository" >&2
  exit 1
fi
verify
