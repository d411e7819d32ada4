#!/usr/bin/env bash
# Runs each fuzz target (fuzz/fuzz_targets: the recording reader, the live stream into the city
# model, the Memory Cities JSON loader, the heap dump reader) for SECONDS (default 60) with cargo-fuzz, on nightly,
# starting from the committed corpus. A crash fails the run; its input is kept in
# fuzz/artifacts/<target>/: copy it to fuzz/regressions/<target>/ and fix it (the city crate's
# unit tests replay that folder on stable). Installs nightly and cargo-fuzz when missing.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
for target in recording stream json dump; do
  echo "== fuzz $target for ${seconds} s"
  # A scratch copy of the corpus: what the fuzzer adds stays out of the repository.
  work=$(mktemp -d)
  cp -r "fuzz/corpus/$target/." "$work/"
  (cd fuzz && cargo +nightly fuzz run "$target" "$work" -- \
    -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 2>&1 | tail -15)
  rm -rf "$work"
done
