#!/usr/bin/env bash
# Builds memcity's web page into target/web (or $CARGO_TARGET_DIR/web), where `memcity serve`
# finds it: the viewer compiled to WebAssembly (memcity-web.wasm), miniquad's WebGL loader
# (gl.js, from the miniquad crate cargo fetched for the viewer: the JS half of the same
# dependency), and the page (viewer/web/). Nothing built is committed.
# Usage: scripts/build-web.sh [--release]   (default: release; the debug wasm is slow to draw)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
# No debug info: the page downloads the file (the native builds keep theirs).
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo \
  cargo build -q --release -p memcity-viewer --bin memcity-web --target wasm32-unknown-unknown
out="$target/web"
mkdir -p "$out"
cp "$target/wasm32-unknown-unknown/release/memcity-web.wasm" "$out/memcity-web.wasm.tmp"
mv "$out/memcity-web.wasm.tmp" "$out/memcity-web.wasm"
miniquad=$(cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, os, sys
# The lock file holds one miniquad, the one macroquad uses: gl.js matches the Rust half.
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "miniquad":
        print(os.path.dirname(p["manifest_path"]))
        break
')
if [ -z "$miniquad" ] || [ ! -f "$miniquad/js/gl.js" ]; then
  echo "build-web: miniquad's js/gl.js not found (cargo metadata gave '$miniquad')" >&2
  exit 1
fi
cp "$miniquad/js/gl.js" "$out/gl.js"
cp viewer/web/index.html viewer/web/memcity.js "$out/"
echo "build-web: the page is in $out ($(du -h "$out/memcity-web.wasm" | cut -f1) of WebAssembly)"
