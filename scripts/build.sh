#!/usr/bin/env bash
# Builds all of memcity from source: the agent (target/release/libmemcity.so), the command
# (target/release/memcity) and the web page both of them serve (target/web: the viewer compiled
# to WebAssembly, found there by `memcity serve` and the agent's `http=` page). After it, every
# command works. Where the WebAssembly target cannot be built, the native commands still are,
# and this says what to run for the page. scripts/package.sh makes the release archive instead.
#
# Usage: scripts/build.sh [--debug] [--native]   (--native: not the page, for the demo)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
page=yes
for arg in "$@"; do
  case "$arg" in
    --debug) profile=debug ;;
    --native) page=no ;;
    *) echo "build: unknown option '$arg' (--debug, --native)" >&2; exit 2 ;;
  esac
done
flag=()
if [ "$profile" = release ]; then flag=(--release); fi
# The agent alone, then the command: built together, cargo unifies the features of the
# dependencies they share and the agent comes out different from the one the tests build
# alone, so the next build of either rebuilds it.
cargo build "${flag[@]}" -p memcity-agent
cargo build "${flag[@]}" -p memcity-viewer --bin memcity
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
if [ "$page" = no ]; then
  page="not the page (scripts/build-web.sh builds it)"
elif scripts/build-web.sh; then
  page="the page in $target/web"
else
  page="NOT the web page (see above): \`memcity serve\` and the agent's http= page need it; \
once the wasm32-unknown-unknown target can be installed (rustup target add wasm32-unknown-unknown), \
run scripts/build-web.sh"
fi
echo "build: $target/$profile/memcity, $target/$profile/libmemcity.so and $page"
