#!/usr/bin/env bash
# The release archive's benchmark (BENCHMARKS.md): how long `scripts/package.sh` takes cold (a
# target folder of its own, the page's WebAssembly included) and warm (nothing changed), how big
# the archive and its files are, and how long an unpacked archive takes from `memcity record
# --pid --snapshots 1` on a running JVM without the agent (attach, start, the session's first
# snapshot received) to its end, the median of RUNS fresh JVMs.
#
# Usage: scripts/bench-package.sh [RUNS] [--warm]   (5; --warm: the attach runs alone, on the
#        archive scripts/package.sh left in target/package)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
scripts/build-java.sh >/dev/null
seconds() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

bench_target=$(realpath -m target/bench-package)
if [ "${2:-}" = --warm ]; then
  archive=$(ls target/package/memcity-*-linux-x86_64.tar.gz)
else
  rm -rf "$bench_target"
  echo "== scripts/package.sh, cold (CARGO_TARGET_DIR=$bench_target)"
  start=$(seconds)
  CARGO_TARGET_DIR="$bench_target" scripts/package.sh > "$bench_target.log" 2>&1
  cold=$(python3 -c "print(f'{$(seconds) - $start:.0f}')")
  start=$(seconds)
  CARGO_TARGET_DIR="$bench_target" scripts/package.sh >> "$bench_target.log" 2>&1
  warm=$(python3 -c "print(f'{$(seconds) - $start:.1f}')")
  archive=$(ls "$bench_target"/package/memcity-*-linux-x86_64.tar.gz)
  echo "cold: $cold s; warm (nothing changed): $warm s"
fi
echo "archive: $(stat -c %s "$archive") bytes ($(du -h "$archive" | cut -f1))"
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$archive" -C "$unpacked"
top=$(ls -d "$unpacked"/memcity-*)
for f in bin/memcity lib/libmemcity.so web/memcity-web.wasm THIRD-PARTY-LICENSES.txt; do
  echo "  $f: $(stat -c %s "$top/$f") bytes"
done

echo "== unpacked archive to the first snapshot of an attached JVM (memcity record --pid --snapshots 1), $runs runs"
java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
times=()
for _ in $(seq "$runs"); do
  out=$(mktemp)
  "$java" -Xmx512m -cp target/jvm-test-apps QuietHeap 120 > "$out" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q READY "$out" && break; sleep 0.1; done
  grep -q READY "$out" || { echo "QuietHeap did not start: $(cat "$out")" >&2; kill $pid; exit 1; }
  start=$(seconds)
  "$top/bin/memcity" record --pid "$pid" -o "$unpacked/first.mcrec" --snapshots 1 > /dev/null 2>&1
  times+=("$(python3 -c "print(f'{$(seconds) - $start:.3f}')")")
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  rm -f "$out"
done
echo "each: ${times[*]} s"
echo "median: $(printf '%s\n' "${times[@]}" | median) s"
rm -rf "$bench_target"
