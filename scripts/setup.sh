#!/usr/bin/env bash
# Installs what memcity needs to build and test on a fresh Debian machine, and nothing twice:
# a JDK 17 (javac, jcmd, jvmti.h), Xvfb and Mesa for the window test, a C/C++ compiler, pip and
# openssl for the build, the JDK matrix and the TLS test, Debian's Jetty 9.4 jars for the server
# test, Prometheus for the fleet test, Go for the pprof test's `go tool pprof`, and the Rust
# components for fmt and clippy. Safe to re-run.
set -euo pipefail
need_apt=()
if ! command -v javac >/dev/null 2>&1 || ! command -v jcmd >/dev/null 2>&1; then
  need_apt+=(openjdk-17-jdk-headless)
fi
# The viewer's window test: Xvfb for a real X server, Mesa's llvmpipe for OpenGL, and the X
# libraries miniquad loads at run time (it links none of them, so no -dev packages).
command -v xvfb-run >/dev/null 2>&1 || need_apt+=(xvfb xauth)
# A C and C++ compiler: ring (TLS) builds C, and cargo-fuzz builds libFuzzer.
{ command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; } || need_apt+=(build-essential)
# pip fetches the JDK matrix's runtimes (scripts/jdks.sh; download only, nothing is installed).
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
# The TLS test makes a self-signed certificate.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
# The interaction test moves the pointer and presses keys with real X events.
command -v xdotool >/dev/null 2>&1 || need_apt+=(xdotool)
# The server test (tests/tests/server.rs) leaks sessions in a real Jetty 9.4: Debian's jars.
dpkg -s libjetty9-java >/dev/null 2>&1 || need_apt+=(libjetty9-java)
# ... and churns connections with a real HTTP client: Debian's Commons HttpClient 3.1.
dpkg -s libcommons-httpclient-java >/dev/null 2>&1 || need_apt+=(libcommons-httpclient-java)
# The web page's tests draw it in a real browser: Debian's Chromium, headless.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# The fleet test (tests/tests/fleet.rs) scrapes JVMs with a real Prometheus and checks the docs'
# alert rule with it.
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
# The pprof test (tests/tests/pprof.rs) reads memcity's profiles with Go's own `go tool pprof`.
command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
for pkg in libgl1 libgl1-mesa-dri libx11-6 libxi6; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi
# The viewer builds for the browser (scripts/build-web.sh, memcity serve).
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
