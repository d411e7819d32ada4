#!/usr/bin/env bash
# Long sessions (issue 32): `memcity report` and `memcity replay --screenshot` (the viewer's
# first frame under Xvfb) on synthetic recordings of many snapshots, one a second, every
# snapshot after the first an estimate (+-5 %). Wall time and peak memory of each, one run;
# nothing asserted. Results go to BENCHMARKS.md by hand.
# Usage: scripts/bench-long.sh ["GROUPSxSNAPSHOTS ..."]   (default: 3000x1080 3000x4320 3000x8640 300x30000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"3000x1080 3000x4320 3000x8640 300x30000"}
cargo build --release -q -p memcity-viewer -p memcity-city --bins --examples
target=$(realpath "${CARGO_TARGET_DIR:-target}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-8s %-10s %-10s %-22s %-22s\n' groups snapshots "file MB" "report s / MB" "replay frame s / MB"
for size in $sizes; do
  groups=${size%x*}
  snapshots=${size#*x}
  file="$work/long-$size.mcrec"
  "$target/release/examples/synth" "$file" "$groups" "$snapshots" 5
  mb=$(( $(stat -c %s "$file") / 1000000 ))
  report=$( { /usr/bin/time -f "%e %M" "$target/release/memcity" report "$file" >/dev/null; } 2>&1 | tail -1)
  replay=$( { /usr/bin/time -f "%e %M" xvfb-run -a -s "-screen 0 1280x720x24" \
    "$target/release/memcity" replay "$file" --screenshot "$work/shot.png" --size 1280x720 >/dev/null; } 2>&1 | tail -1)
  read -r rs rk <<<"$report"
  read -r ps pk <<<"$replay"
  printf '%-8s %-10s %-10s %-22s %-22s\n' "$groups" "$snapshots" "$mb" "$rs / $((rk / 1024))" "$ps / $((pk / 1024))"
  rm -f "$file"
done
