#!/usr/bin/env bash
# Writes the golden recording of the current format version, proto/tests/data/golden-vN.mcrec
# (N: memcity_proto::recording::FORMAT_VERSION): a short real session of LinkedListLeak recorded
# by the agent (record= option) on JDK 17 with G1, every field of the format exercised: a site
# level, walks with their field edges and GC roots, estimates with errors and unconfirmed
# parts, object paths, lifetimes. Run by hand only when the format version changes; the
# goldens of earlier versions stay, each with its read test (proto/tests/golden.rs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
version=$(sed -n 's/^pub const FORMAT_VERSION: u32 = \([0-9]*\);/\1/p' proto/src/recording.rs)
cargo build -p memcity-agent
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
out=proto/tests/data/golden-v$version.mcrec
mkdir -p "$(dirname "$out")"
rm -f "$out"
# Walks 2 s apart at most, so that estimates come between them.
java -Xmx128m -Xmn8m -XX:+UseG1GC -Xshare:off \
  "-agentpath:$target/debug/libmemcity.so=port=off,record=$out,classifiers=package:type:site,sampling=16k,min_interval=2s" \
  -cp "$target/jvm-test-apps" LinkedListLeak 6 20000
ls -l "$out"
