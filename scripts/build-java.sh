#!/usr/bin/env bash
# Compiles the leaking test applications (jvm-test-apps/src) into target/jvm-test-apps with plain
# javac, targeting Java 11 so the classes run on every JDK we test (11 to 25). Skips when up to date.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${CARGO_TARGET_DIR:-$root/target}/jvm-test-apps"
stamp="$out/.built"
if [ -f "$stamp" ] && [ -z "$(find "$root/jvm-test-apps/src" "$root/scripts/build-java.sh" -newer "$stamp")" ]; then
  exit 0
fi
javac_bin="javac"
if [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/javac ]; then
  javac_bin=/usr/lib/jvm/java-17-openjdk-amd64/bin/javac
fi
mkdir -p "$out"
"$javac_bin" --release 11 -d "$out" "$root"/jvm-test-apps/src/*.java
touch "$stamp"
