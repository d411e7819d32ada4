#!/usr/bin/env bash
# Soak test (not in CI): a service that leaks to a cap and then runs steady, under the agent for
# MINUTES (default 30), while viewers connect and disconnect, snapshots are requested, and raw
# connections open and drop, every 20 s. Samples the JVM's RSS, threads and descriptors every
# 10 s and fails if, after the leak's cap and a warm-up, threads or descriptors grow or RSS grows
# by more than 10 % (the heap is steady then, so what grows is the agent's).
# Usage: scripts/soak.sh [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
seconds=$(( minutes * 60 ))
scripts/setup.sh >/dev/null
cargo build --release -p memcity-agent -p memcity-viewer 2>&1 | tail -1
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
memcity="$target/release/memcity"
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# 500 k products; 100 k requests/s, every 100th leaking a Session until 100 k of them (100 s).
# history=8m: the history kept for late viewers is capped at 64 MiB by default and fills for half
# an hour at this rate; a small cap fills in minutes, so what grows after it is a leak.
java -Xmx1g "-agentpath:$target/release/libmemcity.so=port=0,portfile=$work/port,log=warn,history=8m" \
  -cp "$target/jvm-test-apps" CatalogLeak "$(( seconds + 60 ))" 500000 0 5 600 100000 100000 \
  > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
echo "soak: JVM $pid on port $port for $minutes min; samples in $work/samples.csv"
echo "t,rss_kib,threads,fds" > "$work/samples.csv"
start=$(date +%s)
next_poke=$start
while kill -0 "$pid" 2>/dev/null; do
  now=$(date +%s)
  elapsed=$(( now - start ))
  [ "$elapsed" -ge "$seconds" ] && break
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  threads=$(awk '/Threads/ {print $2}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  echo "$elapsed,$rss,$threads,$fds" >> "$work/samples.csv"
  if [ "$now" -ge "$next_poke" ]; then
    # A viewer for 5 s, a requested snapshot, and 20 connections that say nothing.
    "$memcity" record -o "$work/r.mcrec" --duration 5 "$port" >/dev/null 2>&1 || true
    "$memcity" snapshot "$port" >/dev/null 2>&1 || true
    for _ in $(seq 20); do (exec 3<>"/dev/tcp/127.0.0.1/$port" && sleep 1) 2>/dev/null & done
    wait_for=$(jobs -p | grep -v "^$pid\$" || true)
    [ -n "$wait_for" ] && wait $wait_for 2>/dev/null || true
    next_poke=$(( now + 20 ))
  fi
  sleep 10
done
kill -0 "$pid" 2>/dev/null || { echo "soak: the JVM died"; cat "$work/err"; exit 1; }
python3 - "$work/samples.csv" <<'PY'
import csv, sys
rows = [tuple(int(v) for v in r.values()) for r in csv.DictReader(open(sys.argv[1]))]
# After the leak's cap (100 s) and a warm-up: the first quarter of the rest is the baseline.
steady = [r for r in rows if r[0] >= 180] or rows[len(rows) // 2:]
base = steady[: max(1, len(steady) // 4)]
end = steady[-max(1, len(steady) // 4):]
avg = lambda rs, i: sum(r[i] for r in rs) / len(rs)
rss0, rss1 = avg(base, 1), avg(end, 1)
thr0, thr1 = max(r[2] for r in base), max(r[2] for r in end)
fd0, fd1 = max(r[3] for r in base), max(r[3] for r in end)
print(f"soak: {len(rows)} samples; RSS {rss0/1024:.0f} -> {rss1/1024:.0f} MiB, threads {thr0} -> {thr1}, descriptors {fd0} -> {fd1}")
ok = rss1 <= rss0 * 1.10 and thr1 <= thr0 and fd1 <= fd0 + 4
print("soak: OK" if ok else "soak: FAILED (something grows)")
sys.exit(0 if ok else 1)
PY
