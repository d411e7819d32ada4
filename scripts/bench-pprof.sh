#!/usr/bin/env bash
# Benchmarks `memcity export --pprof` in release mode: the size of one pprof profile of a heap
# with 10,000 allocation sites (synthetic, city/examples/bench_pprof.rs), and the time to build
# and to encode it (medians; nothing asserted). Results go to BENCHMARKS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
cargo run --release -q -p memcity-city --example bench_pprof
