#!/usr/bin/env bash
# Benchmarks the viewer in the browser beside the window, on this machine's software renderers:
# the page in headless Chromium (WebGL on SwiftShader, through `memcity serve`), the window under
# Xvfb + Mesa llvmpipe; both 1280x720, the same synthetic cities (1,000, 10,000 and 50,000
# buildings), still and stepping in time, medians of FRAMES frames (the page's `bench=N` is the
# window's `--bench-frames N`). Then live: a real JVM with the agent, relayed to the page by
# `memcity serve` and watched by the window, and the time from each snapshot's arrival to the
# first frame showing it in each. Last, what bounds both: how fast each renderer fills pixels
# (40 full-canvas layers a frame, opaque and blended; `scripts/bench/fill.html` in the page,
# `viewer/examples/fill.rs` in a window).
# Nothing asserted; results go to BENCHMARKS.md by hand.
#
# Usage: scripts/bench-web.sh [FRAMES]
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-40}
scripts/setup.sh >/dev/null
cargo build --release -p memcity-agent -p memcity-viewer 2>&1 | tail -1
cargo build --release -p memcity-e2e --example bench_page 2>&1 | tail -1
cargo build --release -p memcity-viewer --example fill 2>&1 | tail -1
scripts/build-web.sh | tail -1
scripts/build-java.sh >/dev/null
target=$(realpath "${CARGO_TARGET_DIR:-target}")
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(chromium --version 2>/dev/null || echo chromium)"

# `memcity serve ARGS` on a free port; sets `url` (with the token) once it prints it. Called
# in this shell, not in $(...), so the server is among the pids killed at exit.
serve() {
  local out="$work/serve-$RANDOM.out"
  "$target/release/memcity" serve "$@" --port 0 > "$out" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    if grep -q '^memcity: serving' "$out"; then
      url=$(grep -o 'http://[^ ]*' "$out")
      return
    fi
    sleep 0.1
  done
  echo "memcity serve did not start: $(cat "$out")" >&2
  exit 1
}

# No vsync, as the window under Xvfb. (--disable-frame-rate-limit as well makes the page's frame
# times jump between two modes, 54 and 93 ms at 10,000 buildings, run to run: left out.)
page_flags=(--disable-gpu-vsync)
for n in 1000 10000 50000; do
  cargo run --release -q -p memcity-city --example synth -- "$work/city-$n.mcrec" "$n" 10
  echo "window: $(xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/memcity" replay "$work/city-$n.mcrec" \
    --bench-frames "$frames" --size 1280x720 --children 1000)"
  serve "$work/city-$n.mcrec"
  echo "page:   $("$target/release/examples/bench_page" "$url&bench=$frames&children=1000" 1280x720 "${page_flags[@]}")"
done
# Every building solid (`--solid 0`): no glass, the opaque boxes' depth test at work.
for n in 10000 50000; do
  echo "window, all solid: $(xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/memcity" replay "$work/city-$n.mcrec" \
    --bench-frames "$frames" --size 1280x720 --children 1000 --solid 0)"
  serve "$work/city-$n.mcrec"
  echo "page, all solid:   $("$target/release/examples/bench_page" "$url&bench=$frames&children=1000&solid=0" 1280x720 "${page_flags[@]}")"
done

# Live: LinkedListLeak with the agent, a snapshot every 500 ms, watched from its start (a viewer
# that joins later first gets the agent's history in one burst, which would be timed too): once
# through memcity serve by the page, once by the window, each with a JVM of its own.
# Sets `port` (called in this shell, not in $(...), so the JVM is among the pids killed at exit).
start_jvm() {
  local portfile="$work/port-$1"
  java -Xmx512m "-agentpath:$target/release/libmemcity.so=port=0,portfile=$portfile,period=500ms" \
    -cp "$target/jvm-test-apps" LinkedListLeak 120 > "$work/app-$1.out" 2> "$work/app-$1.err" &
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$portfile" ] && break; sleep 0.1; done
  [ -s "$portfile" ] || { echo "the agent did not start: $(cat "$work/app-$1.err")" >&2; exit 1; }
  port=$(cat "$portfile")
}
start_jvm page
serve "127.0.0.1:$port"
echo "page live: $("$target/release/examples/bench_page" "$url" 1280x720 --live 40 "${page_flags[@]}")"
start_jvm window
# MEMCITY_LATENCY makes `view` say the same at --exit-after.
echo "window live: $(MEMCITY_LATENCY=1 xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/memcity" view \
  "127.0.0.1:$port" --exit-after 41 --size 1280x720 2>&1 | grep -o '[0-9]* live snapshots.*')"

# Fill rate: the same full-canvas layers in the page (SwiftShader) and in a window (llvmpipe),
# without vsync and, for the page, without Chromium's frame-rate limit (a 40-layer frame is far
# below 60 Hz anyway). The page is served as a plain file: memcity is not involved.
python3 -u -m http.server 0 --bind 127.0.0.1 --directory scripts/bench > "$work/http.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q 'port [0-9]*' "$work/http.out" && break; sleep 0.1; done
fill_port=$(grep -o 'port [0-9]*' "$work/http.out" | head -1 | cut -d' ' -f2)
[ -n "$fill_port" ] || { echo "python3 -m http.server did not start: $(cat "$work/http.out")" >&2; exit 1; }
for blend in 0 1; do
  echo "page fill:   $("$target/release/examples/bench_page" "http://127.0.0.1:$fill_port/fill.html?layers=40&blend=$blend" 1280x720 "${page_flags[@]}" --disable-frame-rate-limit)"
  echo "window fill: $(xvfb-run -a -s "-screen 0 1280x720x24" "$target/release/examples/fill" 40 $([ $blend = 1 ] && echo blend))"
done
