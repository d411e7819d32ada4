#!/usr/bin/env bash
# The README's first command on a fresh machine, for real, and how long it takes. Not in CI (it
# downloads a Debian root, a JDK and Rust). A minimal Debian bookworm root is made with
# debootstrap under target/distro/fresh (made anew each run), this checkout's committed files are
# put in it (git archive HEAD), and `scripts/demo.sh` runs there as root with no display and no
# Rust: it must install what it needs, build, run the leaking app and print the report naming
# its holder. The time of each step is printed for the README.
#
# Usage: scripts/try-fresh-machine.sh [SUITE]     (bookworm)
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-bookworm}
[ "$(id -u)" = 0 ] || { echo "try-fresh-machine: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends debootstrap
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
root="$target/distro/fresh"
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
rm -rf "$root"
echo "== debootstrap $suite (minimal) into $root"
debootstrap --variant=minbase "$suite" "$root" http://deb.debian.org/debian > "$root.log" 2>&1
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --bind /dev "$root/dev" && mounted+=("$root/dev")
mount -t tmpfs tmpfs "$root/tmp" && mounted+=("$root/tmp")
# Where this machine reaches the network through a TLS proxy of its own, the root trusts what
# this machine trusts (a copy kept apart: installing ca-certificates there rewrites the store).
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/host-ca.crt"
ca=/etc/host-ca.crt
mkdir -p "$root/root/memcity"
git archive HEAD | tar -x -C "$root/root/memcity"
echo "== scripts/demo.sh in the fresh root (no Rust, no JDK, no display)"
start=$(date +%s)
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  TERM=dumb SSL_CERT_FILE=$ca CURL_CA_BUNDLE=$ca CARGO_HTTP_CAINFO=$ca PIP_CERT=$ca \
  bash -c 'cd /root/memcity && time scripts/demo.sh' 2>&1 | tee "$target/distro/fresh-demo.log" \
  | grep -E '^== |^real|^setup:|LEAK SUSPECTS|^1\. |GC root'
echo "try-fresh-machine: scripts/demo.sh took $(( $(date +%s) - start )) s on a fresh $suite root"
grep -q "GC root: static LinkedListLeak.PEOPLE" "$target/distro/fresh-demo.log" || {
  echo "try-fresh-machine: the demo did not name the leak's holder; see $target/distro/fresh-demo.log" >&2
  exit 1
}
