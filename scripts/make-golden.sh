#!/usr/bin/env bash
# Regenerates proto/tests/data/golden-v1.mcrec: a short real session of LinkedListLeak recorded by
# the agent (record= option), with a site level so every field of the format is exercised. Run by
# hand only when the recording format version changes (then add golden-v2, keep v1).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build -p memcity-agent
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
out=proto/tests/data/golden-v1.mcrec
mkdir -p "$(dirname "$out")"
java -Xmx128m -Xmn4m -XX:+UseSerialGC -Xshare:off \
  "-agentpath:$target/debug/libmemcity.so=port=off,record=$out,classifiers=package:type:site,sampling=16k,budget=50,min_interval=300ms" \
  -cp "$target/jvm-test-apps" LinkedListLeak 1.5 20000
ls -l "$out"
