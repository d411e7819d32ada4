#!/usr/bin/env bash
# Benchmarks reading heap dumps (dump/, issue 35); not a test: this machine is shared and noisy,
# so it reports the machine and one run per tool, and asserts nothing. Results go to
# BENCHMARKS.md by hand.
#
# For each heap of N million live objects (BigHeap: a chain of N/2 records, each with a byte
# array, the shape of a leaking linked list), `jcmd GC.heap_dump` writes a dump; then, on the
# same file, one after the other:
#   memcity   the whole analysis (counts, sizes, paths, dominators, retained sizes, retainers):
#             dump/examples/analyse.rs, what `memcity report` reads a dump with;
#   memcity shallow   the two passes alone (dump/examples/histogram.rs);
#   hprof-slurp       shallow per-class totals (crates.io, Apache-2.0), installed here;
#   hprof-analyzer    MAT-style dominators and retained sizes (crates.io, MIT), installed here
#                     when WITH_ANALYZER=1 (about 11 minutes to build), its top retained sizes
#                     printed beside memcity's.
# Wall time and peak memory (`/usr/bin/time -v`), and bytes per object.
#
# Usage: scripts/bench-dump.sh      HEAPS="1 10 25" (millions of objects; "380" makes a dump
#        larger than half of a 24 GiB machine's memory: 12.7 GB, and about 30 GB of disk for
#        the dump and memcity's files), JAVA=/path/to/java,
#        WITH_ANALYZER=1, DUMPS=/big/disk (where the dumps go; default a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
java=${JAVA:-java}
jcmd=$(dirname "$(readlink -f "$(command -v "$java")")")/jcmd
heaps=${HEAPS:-"1 10 25"}
scripts/setup.sh >/dev/null
cargo build -q --release -p memcity-dump --example analyse --example histogram
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
tools="$target/bench-tools"
if ! [ -x "$tools/bin/hprof-slurp" ]; then
  cargo install -q --locked --root "$tools" hprof-slurp
fi
if [ "${WITH_ANALYZER:-0}" = 1 ] && ! [ -x "$tools/bin/hprof-analyzer" ]; then
  cargo install -q --locked --root "$tools" hprof-analyzer
fi
out=$(mktemp -d "${DUMPS:-/tmp}/bench-dump.XXXXXX")
trap 'rm -rf "$out"; [ -n "${app:-}" ] && kill "$app" 2>/dev/null || true' EXIT
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r); $("$java" -version 2>&1 | head -1)"
# "tool: wall s, peak MiB, bytes per object" from /usr/bin/time -v's report in $1.
measure() {
  local name=$1 log=$2 objects=$3
  local wall peak
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$log")
  peak=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  printf '  %-16s %8.1f s %8.0f MiB %8.0f B/object\n' "$name" "$wall" "$((peak / 1024))" "$(echo "$peak * 1024 / $objects" | bc -l)"
}
for m in $heaps; do
  n=$((m * 1000000))
  # BigHeap keeps 24 bytes an object live; Parallel's full GC compacts in place, so the heap
  # needs little more (380 M objects, a 12.7 GB dump, fit in 15.7 GB).
  xmx=$((m * 40 + 512))m
  "$java" -Xmx"$xmx" -XX:+UseParallelGC -cp "$target/jvm-test-apps" BigHeap 3600 "$n" > "$out/app.log" 2>&1 &
  app=$!
  for _ in $(seq 600); do grep -q READY "$out/app.log" && break; sleep 0.5; done
  grep -q READY "$out/app.log" || { echo "BigHeap $m M did not start: $(cat "$out/app.log")"; exit 1; }
  dump="$out/big-$m.hprof"
  "$jcmd" "$app" GC.heap_dump "$dump" >/dev/null
  kill "$app"; wait "$app" 2>/dev/null || true; app=
  objects=$("$target/release/examples/histogram" "$dump" 2>&1 >/dev/null | awk '{print $1}')
  echo "$m M: $(du -h "$dump" | cut -f1) dump, $objects objects"
  /usr/bin/time -v "$target/release/examples/analyse" "$dump" > "$out/memcity.out" 2> "$out/memcity.time"
  measure "memcity" "$out/memcity.time" "$objects"
  /usr/bin/time -v "$target/release/examples/histogram" "$dump" > /dev/null 2> "$out/shallow.time"
  measure "memcity shallow" "$out/shallow.time" "$objects"
  /usr/bin/time -v "$tools/bin/hprof-slurp" "$dump" > /dev/null 2> "$out/slurp.time" || true
  measure "hprof-slurp" "$out/slurp.time" "$objects"
  if [ -x "$tools/bin/hprof-analyzer" ]; then
    /usr/bin/time -v "$tools/bin/hprof-analyzer" "$dump" "$out/analyzer.json" > /dev/null 2> "$out/analyzer.time" || true
    measure "hprof-analyzer" "$out/analyzer.time" "$objects"
    echo "  top retained (top-level dominators), memcity | hprof-analyzer:"
    paste -d'|' <("$target/release/examples/analyse" --top "$dump") \
      <(python3 -c 'import json, sys
for o in json.load(open(sys.argv[1]))["top"]["biggest_objects"][:5]:
    print(o["retained"], o["display_class"])' "$out/analyzer.json") | sed 's/^/    /'
  fi
  rm -f "$dump"
done
