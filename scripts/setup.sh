#!/usr/bin/env bash
# Installs what a memcity command needs on a fresh Debian machine, nothing twice and nothing
# more: Debian packages without their recommended ones (with them, the test set came to 183
# packages: a systemd upgrade, udev, avahi-daemon, smartmontools, CUPS helpers...), Rust by
# rustup where there is none, and its components. Safe to re-run.
#
# Usage: scripts/setup.sh [demo|test]    (default: test, everything)
#   demo   what scripts/demo.sh needs: a JDK 17 (javac, jcmd, jvmti.h), a C compiler for the
#          build (ring's TLS), and with a display the libraries the window loads (X11, Mesa)
#   test   that, and what scripts/test.sh needs: Xvfb and xdotool for the window tests, pip for
#          the JDK matrix (scripts/jdks.sh), openssl for the TLS test, Debian's Jetty 9.4 and
#          Commons HttpClient jars for the server test, Chromium for the page's tests,
#          Prometheus for the fleet test, Go for the pprof test, binutils' readelf for the
#          archive's check, rustfmt and clippy, and the WebAssembly target for the page
set -euo pipefail
mode=${1:-test}
case "$mode" in
  demo | test) ;;
  *) echo "setup: unknown mode '$mode' (demo or test)" >&2; exit 2 ;;
esac
need_apt=()
if ! command -v javac >/dev/null 2>&1 || ! command -v jcmd >/dev/null 2>&1; then
  need_apt+=(openjdk-17-jdk-headless)
fi
# A C and C++ compiler: ring (TLS) builds C, and cargo-fuzz builds libFuzzer.
{ command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; } || need_apt+=(build-essential)
# The window's libraries: miniquad loads OpenGL and X11 at run time (it links none of them, so
# no -dev packages); Mesa's llvmpipe draws where there is no GPU.
window_libraries() {
  for pkg in libgl1 libgl1-mesa-dri libx11-6 libxi6; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
  done
}
if [ "$mode" = demo ]; then
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then window_libraries; fi
else
  window_libraries
  command -v xvfb-run >/dev/null 2>&1 || need_apt+=(xvfb xauth)
  python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
  command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
  command -v xdotool >/dev/null 2>&1 || need_apt+=(xdotool)
  command -v readelf >/dev/null 2>&1 || need_apt+=(binutils)
  dpkg -s libjetty9-java >/dev/null 2>&1 || need_apt+=(libjetty9-java)
  dpkg -s libcommons-httpclient-java >/dev/null 2>&1 || need_apt+=(libcommons-httpclient-java)
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
  command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
fi
# Rust itself, where there is none: rustup's own installer, from the Rust project's servers.
have_cargo() { command -v cargo >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/cargo" ]; }
have_cargo || command -v curl >/dev/null 2>&1 || need_apt+=(curl ca-certificates)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi
if ! have_cargo; then
  echo "setup: installing Rust (rustup, the stable toolchain's minimal profile)"
  # Named rustup-init: rustup tells what it is run as by its file name.
  dir=$(mktemp -d)
  curl --proto '=https' --tlsv1.2 -sSf -o "$dir/rustup-init" \
    "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
  chmod +x "$dir/rustup-init"
  "$dir/rustup-init" -y --no-modify-path --profile minimal
  rm -rf "$dir"
fi
# The scripts that run this one find cargo there too (`. scripts/setup-env.sh`).
export PATH="$HOME/.cargo/bin:$PATH"
if [ "$mode" = test ]; then
  if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy
  fi
  # The viewer builds for the browser (scripts/build-web.sh, memcity serve).
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
  fi
fi
