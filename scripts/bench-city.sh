#!/usr/bin/env bash
# Benchmarks the window-free city model in release mode (medians; nothing asserted).
# Results go to BENCHMARKS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
cargo run --release -q -p memcity-city --example bench
