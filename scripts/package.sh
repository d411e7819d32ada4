#!/usr/bin/env bash
# The release archive, one per architecture: target/package/memcity-<version>-linux-<arch>.tar.gz
# holding bin/memcity, lib/libmemcity.so, web/ (the page `memcity serve` and the agent's `http=`
# serve), README.txt, LICENSE and THIRD-PARTY-LICENSES.txt. Unpacked anywhere, it runs on any
# glibc Linux from glibc 2.28 on (RHEL 8, Debian 10, Ubuntu 20.04): it is built against that
# glibc with cargo-zigbuild and the zig compiler from PyPI, and checked here to need no newer
# glibc symbol and no library outside glibc (and libgcc_s, which glibc itself loads).
#
# Usage: scripts/package.sh [x86_64] [aarch64]     (default: x86_64)
# Installs what it needs first: cargo-zigbuild (cargo install), zig (pip's ziglang), the Rust
# targets (rustup); a JDK's javac for the agent's GC-count helper comes with scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(x86_64)
glibc=2.28
allowed_libraries="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libgcc_s.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"

if ! python3 -c 'import ziglang' 2>/dev/null; then
  python3 -m pip install --quiet ziglang
fi
if ! command -v cargo-zigbuild >/dev/null 2>&1; then
  cargo install --locked --quiet cargo-zigbuild
fi
command -v javac >/dev/null 2>&1 || { echo "package: no javac: run scripts/setup.sh (the agent's GC counts are compiled with it)" >&2; exit 1; }
command -v readelf >/dev/null 2>&1 || { echo "package: no readelf: run scripts/setup.sh (binutils)" >&2; exit 1; }

target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
version=$(scripts/version.sh)
out="$target/package"
mkdir -p "$out"

# The page is the same WebAssembly for every architecture.
scripts/build-web.sh

# Fails unless `file` needs glibc $glibc at most and no library outside glibc.
check_binary() {
  local file=$1
  local newest
  newest=$(readelf -W -V "$file" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  if [ "$(printf '%s\n%s\n' "$newest" "$glibc" | sort -V | tail -1)" != "$glibc" ]; then
    echo "package: $file needs glibc $newest, newer than $glibc:" >&2
    readelf -W -V "$file" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -Vu | tail -5 >&2
    exit 1
  fi
  local library
  for library in $(readelf -d "$file" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    case " $allowed_libraries " in
      *" $library "*) ;;
      *) echo "package: $file needs $library, which is not part of glibc" >&2; exit 1 ;;
    esac
  done
  echo "package: $(basename "$file"): glibc $newest at most, libraries: $(readelf -d "$file" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
}

for arch in "${arches[@]}"; do
  case "$arch" in
    x86_64 | aarch64) ;;
    *) echo "package: unknown architecture '$arch' (x86_64 or aarch64)" >&2; exit 2 ;;
  esac
  triple="$arch-unknown-linux-gnu"
  rustup target list --installed | grep -qx "$triple" || rustup target add "$triple"
  echo "== $triple, glibc $glibc"
  # No debug info (it would be most of the size); symbol names stay, for backtraces. The agent
  # alone, then the command, as scripts/build.sh builds them.
  export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo
  cargo zigbuild --release --target "$triple.$glibc" -p memcity-agent
  cargo zigbuild --release --target "$triple.$glibc" -p memcity-viewer --bin memcity
  unset CARGO_PROFILE_RELEASE_DEBUG CARGO_PROFILE_RELEASE_STRIP
  name="memcity-$version-linux-$arch"
  stage="$out/$name"
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/lib" "$stage/web"
  cp "$target/$triple/release/memcity" "$stage/bin/"
  cp "$target/$triple/release/libmemcity.so" "$stage/lib/"
  cp "$target/web/index.html" "$target/web/gl.js" "$target/web/memcity.js" "$target/web/memcity-web.wasm" "$stage/web/"
  check_binary "$stage/bin/memcity"
  check_binary "$stage/lib/libmemcity.so"
  cp LICENSE "$stage/"
  python3 scripts/licenses.py "$stage/THIRD-PARTY-LICENSES.txt" "$triple" wasm32-unknown-unknown
  sed "s/@VERSION@/$version/; s/@ARCH@/$arch/" scripts/package-readme.txt > "$stage/README.txt"
  tar -C "$out" -czf "$out/$name.tar.gz.tmp" "$name"
  mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
  echo "package: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
done
