#!/usr/bin/env bash
# The release archive on a Linux older than this machine's, for real. Not in CI: it downloads a
# distribution's root (some 250 MB) from Debian's mirrors. A minimal Debian root (bullseye by
# default: glibc 2.31, with its own OpenJDK 11) is made with debootstrap under
# target/distro/SUITE (kept for the next run); the archive (scripts/package.sh) and a leaking
# test app are put in it, the app runs there under the archive's agent (-agentpath, recording),
# and the archive's memcity, inside the same root, reports the recording: the report must name
# the leak's holder.
#
# Usage: scripts/try-old-distro.sh [SUITE] [SECONDS]     (bullseye, 20)
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-bullseye}
seconds=${2:-20}
[ "$(id -u)" = 0 ] || { echo "try-old-distro: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends debootstrap
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
version=$(scripts/version.sh)
name="memcity-$version-linux-x86_64"
archive="$target/package/$name.tar.gz"
[ -f "$archive" ] || scripts/package.sh x86_64
scripts/build-java.sh
root="$target/distro/$suite"
if [ ! -x "$root/usr/bin/java" ]; then
  echo "== debootstrap $suite into $root (minimal, with OpenJDK's headless runtime)"
  rm -rf "$root"
  debootstrap --variant=minbase --include=default-jre-headless "$suite" "$root" http://deb.debian.org/debian
fi
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --bind /dev "$root/dev" && mounted+=("$root/dev")
mount -t tmpfs tmpfs "$root/tmp" && mounted+=("$root/tmp")
# The JVM's launcher finds its libraries through /proc/self/exe.
glibc=$(chroot "$root" /usr/bin/ldd --version | sed -n 1p)
java_version=$(chroot "$root" /usr/bin/java -version 2>&1 | sed -n 1p)
echo "== in $suite: $glibc; $java_version"
rm -rf "$root/opt/$name" "$root/opt/app"
mkdir -p "$root/opt/app"
tar -xzf "$archive" -C "$root/opt"
cp "$target"/jvm-test-apps/LinkedListLeak*.class "$root/opt/app/"
echo "== LinkedListLeak for $seconds s under the archive's agent, in $suite"
chroot "$root" /usr/bin/java -Xmx512m \
  "-agentpath:/opt/$name/lib/libmemcity.so=port=off,record=/tmp/leak.mcrec" \
  -cp /opt/app LinkedListLeak "$seconds" 2> "$target/distro/$suite-agent.log" | tail -1
sed -n 1p "$target/distro/$suite-agent.log"
echo "== the archive's memcity report, in $suite"
chroot "$root" "/opt/$name/bin/memcity" report /tmp/leak.mcrec --top 5 | tee "$target/distro/$suite-report.txt" | sed -n 1,12p
if grep -q "GC root: static LinkedListLeak.PEOPLE" "$target/distro/$suite-report.txt"; then
  echo "try-old-distro: $suite ($glibc) runs the archive: the report names the leak's holder"
else
  echo "try-old-distro: the report in $suite did not name LinkedListLeak.PEOPLE; the agent's log: $target/distro/$suite-agent.log" >&2
  exit 1
fi
