#!/usr/bin/env bash
# Benchmarks the path search that names leak holders (agent/src/paths/mod.rs); not a test: this
# machine is shared and noisy, so it reports medians and the machine, and asserts nothing.
# Results go to BENCHMARKS.md by hand.
#
# On quiet heaps of N live objects (BigHeap: a chain of N/2 records, each with a byte array, the
# shape of a leaking linked list), the agent searches with no cost limit (paths=100%) for
# SECONDS; per search it logs the objects it went through, its time on the agent's thread and
# the stop it made to list the roots. The stop is read from -Xlog:safepoint too (the roots'
# FollowReferences is a HeapWalkOperation; walks are kept off with max_pause=1ms).
#
# Usage: scripts/bench-paths.sh [SECONDS]     HEAPS="1 10 24" (millions of live objects),
#        JAVA=/path/to/java picks the JDK (default: java on the PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
java=${JAVA:-java}
heaps=${HEAPS:-"1 10 24"}
scripts/setup.sh >/dev/null
cargo build --release -p memcity-agent 2>&1 | tail -1
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
agent="$target/release/libmemcity.so"
classes="$target/jvm-test-apps"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r); $("$java" -version 2>&1 | head -1)"
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else print a[int((NR + 1) / 2)]}'; }
for m in $heaps; do
  n=$((m * 1000000))
  xmx=$(( (m * 80 / 1000) + 1 ))g
  log="$out/agent-$m.log"
  "$java" -Xmx"$xmx" -XX:+UseG1GC -Xlog:safepoint*=info:file="$out/safepoint-$m.log" \
    "-agentpath:$agent=port=off,log=debug,paths=100%,sampling=64k,max_pause=1ms,gc_counts=off" \
    -cp "$classes" BigHeap "$seconds" "$n" > "$out/app-$m.out" 2> "$log" || true
  grep "path search: [0-9]* of" "$log" > "$out/searches-$m" || true
  searches=$(wc -l < "$out/searches-$m")
  # "path search: F of T samples reached through V objects in C ms on the worker (R ms stopped ...)"
  visited=$(awk '{for (i = 1; i <= NF; i++) if ($i == "through") print $(i + 1)}' "$out/searches-$m" | median)
  cpu=$(awk '{for (i = 1; i <= NF; i++) if ($i == "in") print $(i + 1)}' "$out/searches-$m" | median)
  roots=$(awk '{for (i = 1; i <= NF; i++) if ($i == "(") ; } {for (i = 1; i <= NF; i++) if ($(i + 1) == "ms" && $(i + 2) == "stopped") print $i}' "$out/searches-$m" | tr -d '(' | median)
  ns=$(awk -v v="$visited" -v c="$cpu" 'BEGIN { if (v > 0) printf "%.0f", c * 1e6 / v; else print "-" }')
  longest=$(grep -h "HeapWalkOperation" "$out/safepoint-$m.log" | sed -n 's/.*Total: \([0-9]*\) ns.*/\1/p' | sort -n | tail -1)
  echo "heap ${m}M objects: $searches searches; median: $visited objects in $cpu ms on the agent's thread ($ns ns/object), roots listed in a $roots ms stop; longest HeapWalkOperation $(( ${longest:-0} / 1000000 )) ms"
done
