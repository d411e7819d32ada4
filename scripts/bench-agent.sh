#!/usr/bin/env bash
# Benchmarks the agent (not a test: this machine is shared and noisy, so it reports medians of
# several runs and the machine, and asserts nothing). Results go to BENCHMARKS.md by hand.
#
# 1. Throughput of an allocation-heavy app (AllocBench) without the agent, with the agent at its
#    defaults, and with sampling=0 (every allocation sampled; a debugging mode).
# 2. Stopped time per snapshot on quiet heaps of about 1 M and 5 M live objects (BigHeap), from
#    -Xlog:safepoint ("HeapWalkOperation"), beside `jcmd GC.class_histogram` on the same heap
#    ("GC_HeapInspection"; with and without the full GC it starts with).
#
# Usage: scripts/bench-agent.sh [RUNS] [SECONDS]   (default 5 runs of 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
seconds=${2:-15}
java=${JAVA:-java}
jcmd=${JCMD:-jcmd}
scripts/setup.sh >/dev/null
cargo build --release -p memcity-agent -p memcity-viewer 2>&1 | tail -1
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
agent="$target/release/libmemcity.so"
memcity="$target/release/memcity"
classes="$target/jvm-test-apps"
work=$(mktemp -d)
trap 'rm -rf "$work"; pkill -f "BigHeap 600" 2>/dev/null || true' EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "jvm: $($java -version 2>&1 | head -2 | tail -1)"
echo

echo "== throughput: AllocBench, $runs runs of ${seconds} s (+3 s warm-up), -Xmx1g G1, ops/s"
declare -A results
configs="none defaults budget1 sampling0"
for run in $(seq "$runs"); do
  # Configurations interleave within a run, so drift in the machine's load spreads over all.
  for config in $configs; do
    case $config in
      none) flags=() ;;
      defaults) flags=("-agentpath:$agent=port=0,log=warn") ;;
      budget1) flags=("-agentpath:$agent=port=0,log=warn,budget=1%") ;;
      sampling0) flags=("-agentpath:$agent=port=0,log=warn,sampling=0") ;;
    esac
    ops=$($java -Xmx1g -XX:+UseG1GC "${flags[@]}" -cp "$classes" AllocBench "$seconds" 3 | awk '/^OPS/ {print $2}')
    echo "  $config run $run: $ops"
    results[$config]+="$ops "
  done
done
base=$(echo "${results[none]}" | tr ' ' '\n' | grep . | median)
for config in $configs; do
  m=$(echo "${results[$config]}" | tr ' ' '\n' | grep . | median)
  awk -v c="$config" -v m="$m" -v b="$base" 'BEGIN {printf "  median %-10s %12.0f ops/s  %+6.2f%% vs no agent\n", c, m, (m/b-1)*100}'
done
echo

for objects in 1000000 5000000; do
  echo "== stopped time per snapshot: BigHeap with $objects live objects, $runs snapshots each"
  rm -f "$work/port" "$work/out" "$work/sp.log"
  $java -Xmx6g -XX:+UseG1GC -Xlog:safepoint:file="$work/sp.log" \
    "-agentpath:$agent=port=0,portfile=$work/port,period=off,max_pause=30s,log=warn" \
    -cp "$classes" BigHeap 600 "$objects" > "$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q READY "$work/out" 2>/dev/null && [ -s "$work/port" ] && break; sleep 0.1; done
  port=$(cat "$work/port")
  before=$(grep -c HeapWalkOperation "$work/sp.log" || true)
  for _ in $(seq "$runs"); do "$memcity" snapshot "$port" > /dev/null; done
  for _ in $(seq "$runs"); do $jcmd "$pid" GC.class_histogram > /dev/null; done
  for _ in $(seq "$runs"); do $jcmd "$pid" GC.class_histogram -all > /dev/null; done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  live=$(( objects + 25000 )) # plus the JDK's own objects at startup (about 25 k)
  walk=$(grep HeapWalkOperation "$work/sp.log" | tail -n +$((before + 1)) | sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | median)
  hist=$(grep GC_HeapInspection "$work/sp.log" | head -n "$runs" | sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | median)
  hist_all=$(grep GC_HeapInspection "$work/sp.log" | tail -n "$runs" | sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | median)
  awk -v w="$walk" -v h="$hist" -v a="$hist_all" -v n="$live" 'BEGIN {
    printf "  memcity walk (FollowReferences)       %8.1f ms  %6.1f ns/object\n", w/1e6, w/n
    printf "  GC.class_histogram (full GC + count)   %8.1f ms  %6.1f ns/object  walk/histogram %.1fx\n", h/1e6, h/n, w/h
    printf "  GC.class_histogram -all (count only)   %8.1f ms  %6.1f ns/object  walk/histogram %.1fx\n", a/1e6, a/n, w/a
  }'
  echo
done
