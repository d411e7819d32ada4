#!/usr/bin/env bash
# Compiles the leaking test applications (jvm-test-apps/src) into target/jvm-test-apps with plain
# javac, targeting Java 11 so the classes run on every JDK we test (11 to 25). Skips when up to date.
# The apps on a real server (jvm-test-apps/jetty, package `jetty`) compile against Debian's Jetty
# 9.4 jars (libjetty9-java, scripts/setup.sh), and the HTTP client app (jvm-test-apps/httpclient)
# against Debian's Commons HttpClient 3.1, into the same folder, only when those jars are there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${CARGO_TARGET_DIR:-$root/target}/jvm-test-apps"
stamp="$out/.built"
# What the jetty apps compile and run against (tests/tests/server.rs lists the same jars).
jetty_jars=()
for jar in jetty9-server jetty9-servlet jetty9-security jetty9-http jetty9-io jetty9-util servlet-api; do
  jetty_jars+=("/usr/share/java/$jar.jar")
done
# What the HTTP client app compiles and runs against (tests/tests/server.rs lists the same).
httpclient_jars=()
for jar in commons-httpclient commons-logging commons-codec; do
  httpclient_jars+=("/usr/share/java/$jar.jar")
done
# True when the stamp $1 is missing or older than any of the other paths or this script.
stale() {
  local stamp="$1"
  shift
  [ ! -f "$stamp" ] || [ -n "$(find "$@" "$root/scripts/build-java.sh" -newer "$stamp")" ]
}
javac_bin="javac"
if [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/javac ]; then
  javac_bin=/usr/lib/jvm/java-17-openjdk-amd64/bin/javac
fi
mkdir -p "$out"
if stale "$stamp" "$root/jvm-test-apps/src"; then
  "$javac_bin" --release 11 -d "$out" "$root"/jvm-test-apps/src/*.java
  touch "$stamp"
fi
# Compiles the apps in jvm-test-apps/$1 against the jars after it, when those are all there
# (built again once they are installed) and anything changed since.
build_against() {
  local app="$1"
  shift
  local app_stamp="$out/.built-$app"
  for jar in "$@"; do
    if [ ! -f "$jar" ]; then
      rm -f "$app_stamp"
      return
    fi
  done
  if stale "$app_stamp" "$root/jvm-test-apps/$app" "$@"; then
    "$javac_bin" --release 11 -cp "$(IFS=:; echo "$*")" -d "$out" "$root/jvm-test-apps/$app"/*.java
    touch "$app_stamp"
  fi
}
build_against jetty "${jetty_jars[@]}"
build_against httpclient "${httpclient_jars[@]}"
