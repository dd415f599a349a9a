# Shared set-up of the scripts that run on a fresh GPU machine (scripts/gpu-check.sh,
# scripts/pdsh-gpu.sh); sourced from the repository root with OUT set. Functions:
#   step TEXT                 a timestamped line on stdout and in $OUT/steps.log
#   gpu_env_snappy            unpacks carried .deb/libsnappy*.deb into /tmp/snappy when the system has no
#                             snappy headers; sets TUG_CMAKE_EXTRA (an array) for the configure
#   gpu_env_python            makes carried Python packages importable by python3: wheels in .whl/ (but
#                             numpy where the machine has one) are
#                             installed into /tmp/site, bundles in .peers/*.tar.xz (scripts/pack-peers.sh)
#                             unpacked into /tmp/peers; prepends both to PYTHONPATH
#   gpu_env_nvcomp            unpacks a carried .nvcomp/*.tar.xz (scripts/pack-nvcomp.sh) into build-nvcomp/,
#                             or finds it there from an earlier call, and exports TUG_NVCOMP_ROOT (the GPU
#                             Parquet reader then decompresses pages on the device); says when there is none
#   gpu_env_build DIR LOG CUDA TARGET...   configures DIR (Release, TUG_WITH_CUDA=CUDA: ON or OFF, no
#                             examples, benchmarks when Google Benchmark is installed) and builds
#                             TARGETs (all when none) on every core; output to LOG, errors shown;
#                             status 1 on failure

# every program these scripts start keeps NVLink multicast off (NCCL reads it; the GPU machines' rule)
export NCCL_NVLS_ENABLE=0

step() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }

TUG_CMAKE_EXTRA=()
gpu_env_snappy() {  # gpu_env_snappy [shared]: shared links the carried libsnappy.so.1 (a Python module
  # cannot take the static libsnappy.a, which is not position independent)
  if ls .deb/libsnappy-dev*.deb >/dev/null 2>&1 && [ ! -e /usr/include/snappy-c.h ]; then
    step "unpacking snappy"
    for f in .deb/libsnappy*.deb; do dpkg -x "$f" /tmp/snappy; done
    local lib=/tmp/snappy/usr/lib/x86_64-linux-gnu
    if [ "${1:-}" = shared ]; then
      TUG_CMAKE_EXTRA+=("-DTUG_LIB_snappy=$(ls $lib/libsnappy.so.1.* | head -1)")
      export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    else
      TUG_CMAKE_EXTRA+=(-DTUG_LIB_snappy=$lib/libsnappy.a)
    fi
    TUG_CMAKE_EXTRA+=("-DCMAKE_CXX_FLAGS=-isystem /tmp/snappy/usr/include")
  fi
}

gpu_env_python() {
  local path=()
  if ls .whl/*.whl >/dev/null 2>&1; then
    step "installing .whl/ into /tmp/site"
    # a carried numpy would shadow the machine's, which its CuPy and numba-cuda are built against (numba-cuda
    # calls np.row_stack, gone in numpy 2.5): carried only where the machine has none
    local wheels=()
    for w in .whl/*.whl; do
      case "$(basename "$w")" in numpy-*) python3 -c "import numpy" 2>/dev/null && continue ;; esac
      wheels+=("$w")
    done
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}" &&
      path+=(/tmp/site)
  fi
  if ls .peers/*.tar.xz >/dev/null 2>&1; then
    step "unpacking .peers/ into /tmp/peers"
    mkdir -p /tmp/peers
    # Python's tarfile, not tar: the xz program may be missing; the 'data' filter refuses odd members
    python3 - .peers/*.tar.xz <<'EOF' && path=(/tmp/peers "${path[@]}")
import sys, tarfile
for f in sys.argv[1:]:
    with tarfile.open(f) as t:
        t.extractall("/tmp/peers", filter="data")
EOF
  fi
  if [ ${#path[@]} -gt 0 ]; then
    local joined
    joined=$(IFS=:; echo "${path[*]}")
    export PYTHONPATH="$joined${PYTHONPATH:+:$PYTHONPATH}"
  fi
}

gpu_env_nvcomp() {
  local b
  b=$(ls .nvcomp/*.tar.xz 2>/dev/null | head -1)
  if [ -n "$b" ] && [ ! -e "build-nvcomp/$(basename "$b").done" ]; then
    step "unpacking $b into build-nvcomp"
    rm -rf build-nvcomp && mkdir -p build-nvcomp
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall("build-nvcomp", filter="data")' "$b" &&
      touch "build-nvcomp/$(basename "$b").done"
  fi
  if [ -e build-nvcomp/libnvcomp/lib64/libnvcomp.so.6 ]; then
    export TUG_NVCOMP_ROOT=$PWD/build-nvcomp/libnvcomp
    step "nvCOMP: $TUG_NVCOMP_ROOT"
  else
    step "nvCOMP: none (carry .nvcomp/, scripts/pack-nvcomp.sh): the host decompresses Parquet pages"
  fi
}

gpu_env_build() {
  local dir=$1 log=$2 cuda=$3
  shift 3
  : >"$log"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUG_WITH_CUDA="$cuda" -DTUG_BUILD_EXAMPLES=OFF \
    -DTUG_BUILD_BENCH=ON "${TUG_CMAKE_EXTRA[@]}" >"$log" 2>&1 || { tail -30 "$log"; return 1; }
  ninja -C "$dir" -j"$(nproc)" "$@" >>"$log" 2>&1 || { grep -E "error|FAILED" -A3 "$log" | head -60; return 1; }
}
