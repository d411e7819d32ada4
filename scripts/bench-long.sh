#!/usr/bin/env bash
# Long sessions (issue 32): `memcity report`, `memcity replay --screenshot` (the viewer's
# first frame under Xvfb) and the page's opening in headless Chromium through `memcity serve`
# (from the browser's start to the session opened: fetched, loaded, laid out; and the peak
# resident memory of Chromium's renderer, the page's WebAssembly and JavaScript) on synthetic
# recordings of many snapshots, one a second, every snapshot after the first an estimate
# (+-5 %). Wall time and peak memory of the first two, one run; and what a live snapshot costs
# at the end of each (city/examples/bench_push.rs: the model's push, the suspects worked out
# again and the copy of the model the window works them out from, medians of 20). Nothing
# asserted. Results go to BENCHMARKS.md by hand.
# Usage: scripts/bench-long.sh ["GROUPSxSNAPSHOTS ..."]   (default: 3000x1080 3000x4320 3000x8640 300x30000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"3000x1080 3000x4320 3000x8640 300x30000"}
cargo build --release -q -p memcity-viewer -p memcity-city --bins --examples
cargo build --release -q -p memcity-e2e --example bench_page
scripts/build-web.sh >/dev/null
target=$(realpath "${CARGO_TARGET_DIR:-target}")
work=$(mktemp -d)
serve_pid=
trap '[ -n "$serve_pid" ] && { kill "$serve_pid" 2>/dev/null || true; }; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-8s %-10s %-10s %-22s %-22s %-12s %s\n' groups snapshots "file MB" "report s / MB" "replay frame s / MB" "page open s / MB" "live push"
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
  "$target/release/memcity" serve "$file" --port 0 > "$work/serve.out" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 300); do grep -q '^memcity: serving' "$work/serve.out" && break; sleep 0.1; done
  url=$(grep -o 'http://[^ ]*' "$work/serve.out")
  page=$("$target/release/examples/bench_page" "$url" 1280x720 --open-time --disable-gpu-vsync | sed -E 's/opened in ([0-9.]+ s), renderer peak ([0-9]+ MB)/\1 \/ \2/')
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  push=$("$target/release/examples/bench_push" "$file" 20 | tr '\n' ' ' | sed -E 's/.*model ([0-9.]+) ms.*suspects ([0-9.]+) ms.*copies the model in ([0-9.]+) ms.*in steps \(the page\): ([0-9.]+) ms in ([0-9]+) steps, the largest ([0-9.]+) ms.*/model \1 ms, suspects \2 ms (copy \3 ms; in steps \4 ms, \5 steps, the largest \6 ms)/')
  printf '%-8s %-10s %-10s %-22s %-22s %-12s %s\n' "$groups" "$snapshots" "$mb" "$rs / $((rk / 1024))" "$ps / $((pk / 1024))" "$page" "$push"
  rm -f "$file"
done
