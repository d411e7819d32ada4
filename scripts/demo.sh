#!/usr/bin/env bash
# The main job on a fresh machine: build memcity, start a leaking Java app with the agent, and
# watch it live. With a display this is `memcity demo`: the 3D city grows in a window. Without one
# (a server, a CI box), `memcity record` follows the live session over gRPC instead and
# `memcity report` ranks what grew and shows the references from the leaking objects to their
# holder.
#
# Usage: scripts/demo.sh [SECONDS] [APP]     (default 20 s of LinkedListLeak; apps: LinkedListLeak,
#        HostPoolLeak, CacheKeyLeak, SteadyState)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
app=${2:-LinkedListLeak}
# MEMCITY_PROFILE=debug reuses the test build (the docs test runs this script that way).
profile=${MEMCITY_PROFILE:-release}
scripts/setup.sh demo
. scripts/setup-env.sh
if [ "$profile" = release ]; then
  scripts/build.sh --native
else
  # Exactly the tests' own build (tests/src/workspace.rs `ensure_built`): any other set of
  # packages unifies features differently and rebuilds the agent under the running tests.
  cargo build -p memcity-agent -p memcity-viewer
fi
scripts/build-java.sh
target="${CARGO_TARGET_DIR:-target}"
bin="$target/$profile"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "$app" = LinkedListLeak ]; then
  echo "== memcity demo: LinkedListLeak with the agent, watched live in a window (Esc quits)"
  exec "$bin/memcity" demo --seconds "$seconds"
fi
echo "== no display (DISPLAY is not set): following the session as text instead of a window"
# Where its recording and logs go (the docs test gives its own, and leaves the user's alone).
out=${MEMCITY_DEMO_DIR:-target/demo}
mkdir -p "$out"
rm -f "$out/port"
echo "== starting $app with the memcity agent for $seconds s"
# A demo shows more than a production default would: a 5 % pause budget walks the small heap
# (for exact counts and references) every second or so, and the path search may take 20 % of a
# core, so the holder it names is seconds old, as `memcity demo` does.
java -Xmx1g -XX:+UseG1GC \
  "-agentpath:$(realpath "$bin")/libmemcity.so=port=0,portfile=$out/port,budget=5%,min_interval=500ms,paths=20%" \
  -cp "$target/jvm-test-apps" "$app" "$seconds" > "$out/app.out" 2> "$out/agent.log" &
java_pid=$!
trap 'kill $java_pid 2>/dev/null || true' EXIT
for _ in $(seq 300); do [ -s "$out/port" ] && break; sleep 0.1; done
[ -s "$out/port" ] || { echo "the agent did not start; see $out/agent.log"; cat "$out/agent.log"; exit 1; }
port=$(cat "$out/port")
echo "== watching it live on 127.0.0.1:$port (memcity record)"
if ! "$bin/memcity" record "$port" -o "$out/demo.mcrec"; then
  if ! kill -0 "$java_pid" 2>/dev/null; then
    echo "the Java app exited early; its output and the agent's log:"
    cat "$out/app.out" "$out/agent.log"
  fi
  exit 1
fi
wait $java_pid || true
echo
echo "== what grew (memcity report $out/demo.mcrec)"
"$bin/memcity" report "$out/demo.mcrec" --top 12
