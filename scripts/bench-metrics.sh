#!/usr/bin/env bash
# What Prometheus metrics (metrics=PORT) cost the JVM. Not a test: it asserts nothing, and the
# results go to BENCHMARKS.md by hand.
#
# 1. The agent's side of a scrape, in-process on synthetic sessions of 1,000, 10,000 and
#    100,000 groups (agent/examples/bench_metrics.rs): taking in a snapshot, rendering the first
#    scrape after it, answering later scrapes from the cache; medians over 60 snapshots.
# 2. A real JVM: AllocBench's throughput with the agent at its defaults, beside the same with
#    metrics=0 scraped every second (fifteen times Prometheus's default rate), RUNS runs of
#    SECONDS each, interleaved; medians.
#
# Usage: scripts/bench-metrics.sh [RUNS] [SECONDS]   (default 5 runs of 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
seconds=${2:-15}
scripts/setup.sh >/dev/null
cargo build --release -p memcity-agent --example bench_metrics 2>&1 | tail -1
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
agent="$target/release/libmemcity.so"
classes="$target/jvm-test-apps"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "jvm: $(java -version 2>&1 | head -2 | tail -1)"
echo
echo "== a scrape in the agent (synthetic sessions, metrics_top=10)"
for groups in 1000 10000 100000; do
  "$target/release/examples/bench_metrics" "$groups" 60 10
done
echo

# Scrapes the metrics of JVM `pid` once a second until it exits (bash's /dev/tcp: no curl).
scrape_every_second() {
  local pid=$1 file port
  file="${TMPDIR:-/tmp}/memcity-$(id -u)/$pid"
  for _ in $(seq 100); do grep -q '^metrics=' "$file" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's|^metrics=http://[^:]*:\([0-9]*\)/metrics|\1|p' "$file")
  while kill -0 "$pid" 2>/dev/null; do
    if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
      printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
      cat <&3 >> "$work/scrapes"
      exec 3<&-
    fi
    sleep 1
  done
}

echo "== throughput: AllocBench, $runs runs of ${seconds} s (+3 s warm-up), -Xmx1g G1, ops/s"
declare -A results
for run in $(seq "$runs"); do
  for config in defaults scraped; do
    options="port=0,log=warn"
    [ "$config" = scraped ] && options="$options,metrics=0"
    java -Xmx1g -XX:+UseG1GC "-agentpath:$agent=$options" -cp "$classes" AllocBench "$seconds" 3 > "$work/out" &
    pid=$!
    pids+=("$pid")
    [ "$config" = scraped ] && scrape_every_second "$pid" &
    wait "$pid"
    wait
    ops=$(awk '/^OPS/ {print $2}' "$work/out")
    echo "  $config run $run: $ops"
    results[$config]+="$ops "
  done
done
base=$(echo "${results[defaults]}" | tr ' ' '\n' | grep . | median)
for config in defaults scraped; do
  m=$(echo "${results[$config]}" | tr ' ' '\n' | grep . | median)
  awk -v c="$config" -v m="$m" -v b="$base" 'BEGIN {printf "  median %-10s %12.0f ops/s  %+6.2f%% vs the agent without metrics\n", c, m, (m/b-1)*100}'
done
echo "  scrapes answered: $(grep -c '^HTTP/1.[01] 200' "$work/scrapes" 2>/dev/null || echo 0)"
echo "  the agent's render time, last scrape: $(grep '^memcity_metrics_render_seconds' "$work/scrapes" | tail -1 | awk '{print $2}') s"
