#!/usr/bin/env bash
# Fuzzes tug's Parquet reader with libFuzzer (clang, AddressSanitizer, UndefinedBehaviorSanitizer).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS  how long each target runs (default 300)
#   TARGET   parquet_footer_fuzzer and/or parquet_page_fuzzer (default: both, one after the other)
# Environment: FUZZ_JOBS (parallel compile jobs, default 2), FUZZ_NICE (niceness, default 10).
#
# Builds the targets of fuzz/ in build-fuzz/ (apart from the CMake build), seeds the corpora with
# pyarrow files (tests/data/make_parquet.py, fuzz/make_seeds.py) and the regression files of
# tests/data/fuzz/, runs each target and copies what it found (crash-*, timeout-*, oom-*, leak-*)
# into tests/data/fuzz/ as whole Parquet files, which tests/unit/test_parquet_fuzz_regressions.cpp
# reads. Logs: build-fuzz/<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(parquet_footer_fuzzer parquet_page_fuzzer)
jobs="${FUZZ_JOBS:-2}"
niceness="${FUZZ_NICE:-10}"
out=build-fuzz
CXX=clang++-14

# Toolchain: clang 14 with the libFuzzer and sanitizer runtimes.
if ! command -v "$CXX" >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: installing clang-14 libclang-rt-14-dev"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang-14 libclang-rt-14-dev >/dev/null
fi

# Build: the Parquet reader and what it links against, instrumented; each target linked with libFuzzer.
mkdir -p "$out/obj"
flags=(-std=gnu++20 -O1 -g -fno-omit-frame-pointer -Iinclude -Isrc -fsanitize=address,undefined -fno-sanitize-recover=undefined)
sources=(src/io/parquet/reader.cpp src/io/parquet/column_decoder.cpp src/io/parquet/thrift.cpp src/io/parquet/encoding.cpp src/io/parquet/codec.cpp
         src/core/*.cpp src/memory/*.cpp src/runtime/thread_pool.cpp)
export CXX out
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} bash -c '
  src="{}"; obj="$out/obj/$(echo "$src" | tr / _).o"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find include -newer "$obj" -name "*.hpp" -print -quit)" ]; then
    echo "fuzz: compiling $src"
    $CXX '"${flags[*]}"' -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  fi'
for t in "${targets[@]}"; do
  echo "fuzz: linking $t"
  $CXX "${flags[@]}" -fsanitize=fuzzer "fuzz/$t.cpp" "$out"/obj/*.o -lsnappy -lz -lzstd -llz4 -lpthread -o "$out/$t"
done

# Seeds: pyarrow files (written once), then the regression files kept in the repository.
py="python3"
[ -x .venv/bin/python ] && py=.venv/bin/python
if [ ! -d "$out/corpus/parquet_footer_fuzzer" ]; then
  rm -rf "$out/seed_files"
  "$py" tests/data/make_parquet.py "$out/seed_files" >/dev/null
  "$py" fuzz/make_seeds.py "$out/seed_files" "$out/corpus/parquet_footer_fuzzer" "$out/corpus/parquet_page_fuzzer"
fi
mkdir -p tests/data/fuzz "$out/artifacts"
cp tests/data/fuzz/*.parquet "$out/corpus/parquet_footer_fuzzer/" 2>/dev/null || true

# Run, then keep what was found as whole files (the page target writes its wrapped file on request).
for t in "${targets[@]}"; do
  echo "fuzz: running $t for ${seconds}s (log: $out/$t.log)"
  mkdir -p "$out/corpus/$t"
  set +e
  nice -n "$niceness" "$out/$t" "$out/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -artifact_prefix="$out/artifacts/$t-" -print_final_stats=1 >"$out/$t.log" 2>&1
  rc=$?
  set -e
  grep -E '^#[0-9]+ *DONE|stat::number_of_executed_units|stat::average_exec_per_sec|cov:' "$out/$t.log" | tail -4 || true
  [ $rc -ne 0 ] && echo "fuzz: $t stopped with status $rc (see $out/$t.log)"
  for a in "$out/artifacts/$t-"*; do
    [ -e "$a" ] || continue
    name="$(basename "$a")"
    short="${t#parquet_}"
    dest="tests/data/fuzz/${short%_fuzzer}-${name#"$t-"}.parquet"
    if [ "$t" = parquet_page_fuzzer ]; then
      TUG_FUZZ_WRITE_FILE="$dest" "$out/$t" "$a" >/dev/null 2>&1 || true
    else
      cp "$a" "$dest"
    fi
    echo "fuzz: kept $dest"
  done
done
