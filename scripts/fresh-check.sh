#!/usr/bin/env bash
# Proves the README's fresh-machine path: builds a throwaway Debian 12 (bookworm) root with debootstrap,
# clones this repository's committed HEAD into it and runs the README's two commands there, `make demo`
# and `make test`, logging everything and printing a summary (exit status, test counts, durations).
#
# "A fresh Debian 12 machine" here is debootstrap's minbase plus what the README's commands presuppose:
# git (to clone), make (both commands are make targets), ca-certificates (HTTPS to PyPI) and sudo with a
# password-less non-root user `debian`, as Debian's cloud images have. No compiler, no Python, no CMake:
# scripts/setup.sh must install all of that. The commands run as `debian` (setup.sh goes through sudo)
# or, with --as-root, as root (setup.sh calls apt directly).
#
# From the host the root gets only its network environment: apt sources, resolv.conf, extra CA
# certificates (/usr/local/share/ca-certificates, e.g. a TLS-intercepting egress proxy's) and the proxy /
# certificate variables (http_proxy, https_proxy, no_proxy, PIP_CERT, REQUESTS_CA_BUNDLE, SSL_CERT_FILE).
#
# Usage (as root on a Debian host; installs debootstrap with apt when missing):
#   scripts/fresh-check.sh [--root DIR] [--keep] [--only demo|test] [--as-root] [--ccache] [--refresh]
#                          [--log FILE]
#   --root DIR   where to build the root (default /var/tmp/tug-fresh-root); deleted first and at the end
#   --keep       keep the root afterwards (chroot DIR to look around)
#   --only X     run only `make demo` or only `make test`
#   --as-root    run the commands as root instead of the sudo-capable user `debian`
#   --ccache     mount the host's ccache directory into the root (faster reruns; not a fresh machine)
#   --refresh    rebuild the cached base root (/var/tmp/tug-fresh-cache/bookworm-base.tar.gz)
#   --log FILE   full log (default /var/tmp/tug-fresh-check-<date>.log)
# Exits nonzero when a command fails.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
root=/var/tmp/tug-fresh-root
cache_dir=/var/tmp/tug-fresh-cache
keep=0
only=""
as_root=0
use_ccache=0
refresh=0
log=/var/tmp/tug-fresh-check-$(date +%Y%m%d-%H%M%S).log
mirror=http://deb.debian.org/debian
base_pkgs=ca-certificates,git,make,sudo

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --only) only=$2; shift 2 ;;
    --as-root) as_root=1; shift ;;
    --ccache) use_ccache=1; shift ;;
    --refresh) refresh=1; shift ;;
    --log) log=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "fresh-check: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
done
case "$only" in "" | demo | test) ;; *) echo "fresh-check: --only takes demo or test, not '$only'" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "fresh-check: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
case "$root" in /*) ;; *) root=$(pwd)/$root ;; esac
[ "$root" != / ] || { echo "fresh-check: --root must not be /" >&2; exit 2; }

mkdir -p "$(dirname "$log")" "$cache_dir"
exec 9>"$root.lock"
flock -n 9 || { echo "fresh-check: another run uses $root" >&2; exit 2; }
exec > >(tee -a "$log") 2>&1
say() { echo "fresh-check: $*"; }
started=$(date +%s)
head=$(git -C "$repo" rev-parse HEAD)
say "repository $repo at $(git -C "$repo" log -1 --format='%h %s' | cut -c1-100)"
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] ||
  say "warning: uncommitted changes in $repo are not checked (the committed HEAD is cloned)"
say "root $root, log $log"

# Refuses to delete a root that still has something mounted under it (rm -rf would reach the host's /dev).
remove_root() {
  if grep -q " $root/" /proc/mounts; then
    say "error: mounts remain under $root; not deleting it"
    return 1
  fi
  rm -rf --one-file-system "$root"
}
cleanup() {
  local rc=$?
  # the mounts live in the unshare'd namespace and vanish with it; unmount leftovers anyway
  for m in dev/shm dev/pts dev sys proc var/cache/host-ccache; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
  done
  if [ "$keep" = 1 ]; then say "kept the root at $root"; else remove_root || true; fi
  rm -f "$root.lock"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap on the host"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

[ -e "$root" ] && remove_root
mkdir -p "$root"
base_tar=$cache_dir/bookworm-base.tar.gz
t0=$(date +%s)
if [ "$refresh" = 0 ] && [ -s "$base_tar" ] && [ "$(cat "$base_tar.pkgs" 2>/dev/null)" = "$base_pkgs" ]; then
  say "unpacking the cached base root $base_tar"
  tar -xzf "$base_tar" -C "$root"
else
  say "debootstrap bookworm (minbase + $base_pkgs)"
  debootstrap --variant=minbase --include="$base_pkgs" bookworm "$root" "$mirror" >/dev/null
  rm -rf "$root"/var/cache/apt/archives/*.deb
  tar -czf "$base_tar.tmp" -C "$root" . && mv "$base_tar.tmp" "$base_tar" && echo "$base_pkgs" >"$base_tar.pkgs"
fi
say "base root ready in $(($(date +%s) - t0)) s"

# The host's network environment: apt sources, DNS, extra CAs.
rm -f "$root/etc/apt/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && cp "$f" "$root$f"
done
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# debootstrap writes no /etc/hosts; a Debian machine's names localhost (Spark binds to it) and itself
# (the root shares the host's name; else sudo warns on each call), as the installer writes it
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" \
  >"$root/etc/hosts"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi
# no services start inside the root
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"

user=debian
home=/root
if [ "$as_root" = 0 ]; then
  chroot "$root" useradd -m -s /bin/bash "$user"
  echo "$user ALL=(ALL) NOPASSWD:ALL" >"$root/etc/sudoers.d/90-$user"
  chmod 440 "$root/etc/sudoers.d/90-$user"
  home=/home/$user
fi
git clone -q "$repo" "$root$home/tug"
git -C "$root$home/tug" checkout -q --detach "$head"
[ "$as_root" = 1 ] || chroot "$root" chown -R "$user:$user" "$home/tug"

envs=(HOME="$home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_CERT REQUESTS_CA_BUNDLE SSL_CERT_FILE; do
  [ -n "${!v:-}" ] && envs+=("$v=${!v}")
done
mkdir -p "$root/var/cache/host-ccache"
if [ "$use_ccache" = 1 ]; then
  host_ccache=$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")
  say "using the host's ccache $host_ccache (not a fresh machine)"
  envs+=(CCACHE_DIR=/var/cache/host-ccache)
  # a non-root user may not write the host's cache: read it only
  [ "$as_root" = 1 ] || envs+=(CCACHE_READONLY=1 CCACHE_TEMPDIR=/tmp/ccache-tmp)
fi

# Runs one command in the root, in a private mount namespace so that no mount outlives it.
run_in_root() {
  local cmd=$1
  unshare --mount --propagation private bash -euo pipefail -c '
    root=$1; ccache_dir=$2; shift 2
    # the root a mount point of its own, as a real machine'"'"'s / is: programs that look up the mount of
    # a path in /proc/mounts (Java'"'"'s FileStore, which the Cassandra test server asks for free space)
    # find none in a plain chroot
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --bind /sys "$root/sys"
    mount --bind /dev "$root/dev"
    mount --bind /dev/pts "$root/dev/pts"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    [ -z "$ccache_dir" ] || mount --bind "$ccache_dir" "$root/var/cache/host-ccache"
    exec chroot "$root" "$@"' _ "$root" "${host_ccache:-}" \
    runuser -u "$([ "$as_root" = 1 ] && echo root || echo "$user")" -- \
    env -i "${envs[@]}" bash -c "cd ~/tug && $cmd"
}

declare -A status duration
commands=()
[ "$only" != test ] && commands+=(demo)
[ "$only" != demo ] && commands+=(test)
for c in "${commands[@]}"; do
  say "=== make $c (as $([ "$as_root" = 1 ] && echo root || echo "$user")) ==="
  t0=$(date +%s)
  set +e
  run_in_root "make $c" 2>&1 | tee "$log.$c"
  status[$c]=${PIPESTATUS[0]}
  set -e
  duration[$c]=$(($(date +%s) - t0))
  say "make $c exited ${status[$c]} after ${duration[$c]} s"
done

# Summary: each command's status and time, the ctest and pytest counts from `make test`'s output.
fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
echo
echo "================ fresh-check summary ================"
echo "commit   $head"
echo "machine  Debian $(cat "$root/etc/debian_version") root, user $([ "$as_root" = 1 ] && echo root || echo "$user")$([ "$use_ccache" = 1 ] && echo ', host ccache')"
failed=0
for c in "${commands[@]}"; do
  printf 'make %-5s exit %-3s %s\n' "$c" "${status[$c]}" "$(fmt "${duration[$c]}")"
  [ "${status[$c]}" = 0 ] || failed=1
done
if [ -f "$log.test" ]; then
  ctest_line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log.test" | tail -1 || true)
  if [ -n "$ctest_line" ]; then
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$ctest_line")
    nfail=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$ctest_line")
    nskip=$(grep -c '\*\*\*Skipped\|\*\*\*Not Run' "$log.test" || true)
    echo "ctest    $((total - nfail - nskip)) passed, $nfail failed, $nskip skipped (of $total)"
  else
    echo "ctest    no result line (did the build fail?)"
  fi
  pytest_line=$(grep -E '^=*.*[0-9]+ (passed|failed|error).* in [0-9.]+s' "$log.test" | tail -1 || true)
  echo "pytest   ${pytest_line:-no result line (not reached?)}" | sed -E 's/=+ ?//g'
fi
[ ! -f "$log.demo" ] || echo "demo     $(grep -m1 '^speed anomalies:' "$log.demo" || echo 'no result line')"
echo "total    $(fmt $(($(date +%s) - started)))"
echo "log      $log (per command: $log.demo, $log.test)"
echo "====================================================="
exit "$failed"
