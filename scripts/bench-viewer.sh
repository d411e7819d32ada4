#!/usr/bin/env bash
# Benchmarks the viewer under Xvfb + Mesa llvmpipe (software OpenGL) at 1280x720: frames per
# second for cities of 1,000, 10,000 and 50,000 buildings, still and while stepping through time
# (each frame a time-travel step: scene, geometry, drawing), then the icicle and sunburst views
# of the 10,000- and 50,000-group trees. Medians; nothing asserted.
# Results go to BENCHMARKS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-60}
scripts/setup.sh >/dev/null
cargo build --release -p memcity-viewer 2>&1 | tail -1
target=$(realpath "${CARGO_TARGET_DIR:-target}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); renderer: Xvfb + Mesa llvmpipe"
for n in 1000 10000 50000; do
  cargo run --release -q -p memcity-city --example synth -- "$work/city-$n.mcrec" "$n" 10
  # Every building gets a lot: no pruning, so the city really has N buildings.
  xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/memcity" replay "$work/city-$n.mcrec" \
    --bench-frames "$frames" --size 1280x720 --children 1000
done
# The same cities as estimates, every building +-10 %: each gets a glass band of doubt over its
# solid body (twice the boxes, half of them blended).
for n in 1000 10000; do
  cargo run --release -q -p memcity-city --example synth -- "$work/estimated-$n.mcrec" "$n" 10 10
  echo "estimated, +-10 %:"
  xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/memcity" replay "$work/estimated-$n.mcrec" \
    --bench-frames "$frames" --size 1280x720 --children 1000
done
for n in 10000 50000; do
  for view in icicle sunburst; do
    xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/memcity" replay "$work/city-$n.mcrec" \
      --bench-frames "$frames" --size 1280x720 --view "$view"
  done
done
