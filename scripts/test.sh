#!/usr/bin/env bash
# Every check and test of memcity: formatting, lints, unit tests, the golden recording, and the
# end-to-end tests that run real JVMs (JDK 17; JDK 25 too when one is under /usr/lib/jvm) with
# the real agent over real gRPC. Installs what it needs first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== build (agent, CLI, Java test apps)"
cargo build --workspace
scripts/build-java.sh
if ls -d /usr/lib/jvm/*25* >/dev/null 2>&1; then
  echo "JDK 25 found: the JDK 25 tests run too"
else
  echo "no JDK 25 under /usr/lib/jvm: the JDK 25 tests will print SKIPPED"
fi
echo "== cargo test"
# --nocapture shows the tests' own notes (SKIPPED reasons, measured residues) as they run.
cargo test --workspace -- --nocapture
