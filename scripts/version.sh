#!/usr/bin/env bash
# Prints memcity's version (the workspace's, as `memcity --version` says it): the archives'
# names carry it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, sys
print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "memcity-viewer"))'
