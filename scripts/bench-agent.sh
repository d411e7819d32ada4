#!/usr/bin/env bash
# Benchmarks the agent (not a test: this machine is shared and noisy, so it reports medians of
# several runs and the machine, and asserts nothing). Results go to BENCHMARKS.md by hand.
#
# 1. Throughput of an allocation-heavy app (AllocBench) without the agent, with the agent at its
#    defaults, with its defaults but lifetimes=off (what keeping lifetimes adds: every sample's
#    allocation site and clocks), and with sampling=0 (every allocation sampled; a debugging
#    mode).
# 2. Stopped time per snapshot on quiet heaps of about 1 M and 5 M live objects (BigHeap), from
#    -Xlog:safepoint ("HeapWalkOperation"), beside `jcmd GC.class_histogram` on the same heap
#    ("GC_HeapInspection"; with and without the full GC it starts with).
# 3. Leaking services on heaps of about 1 M, 10 M and 50 M live objects (CatalogLeak at full
#    speed), G1 and Parallel, with and without the agent at its defaults: snapshots per minute,
#    the longest stop memcity added (-Xlog:safepoint), throughput against no agent, the leaking
#    type's last estimate against `jcmd GC.class_histogram`, the agent's memory (tracking, and
#    RSS against no agent), and an exact walk's stop at that size, predicted and measured.
#
# 4. What the GC's own type count (JFR jdk.ObjectCountAfterGC, `gc_counts`) adds to a full GC on
#    quiet heaps of about 5 M and 24 M live objects (BigHeap), G1 and Parallel: the full GC's pause
#    with the agent's counts on and off (-Xlog:gc), and the count's own phase as the agent
#    measured it.
#
# 5. The stop to name a leak's holder (issue 18): a leaking service (CatalogLeak, a catalog and
#    a steady leak into a static list; about 1, 10, 24 and 50 M live objects), G1 and Parallel,
#    JDK 17 and 25. With memcity's path search alone (walks kept off, the search unlimited,
#    paths=100%): the holder it names, memcity's longest stop (-Xlog:safepoint), the searches'
#    objects and time. Beside it, on the same heap: an exact walk's stop (`memcity snapshot
#    --force`), and, in a second JVM without memcity, JFR's leak profiler (jdk.OldObjectSample
#    with path-to-gc-roots=true): the stop of `JFR.dump path-to-gc-roots=true` and how many of its
#    sampled Sessions it gave a root.
#
# 6. What the report claims (issue 30): the largest rise it says goes on for steady applications
#    at the agent's defaults, the seconds to a confirmed suspect on a leak, and the age of the
#    holder's evidence on a 24 M-object heap (see the section).
# 7. The path search's stop with 1 to 20,000 virtual threads (JDK 21+; VTHREADS="1 200" picks).
# 8. What the agent keeps alive: the heap after GC with and without it, per collector, JDK 17/25.
# 9. Estimates on JDK 25's generational ZGC (issue 31), where a standing sample says nothing:
#    the last estimate of a steady ring's arrays and of a leak's strings against what is live.
#
# Usage: scripts/bench-agent.sh [RUNS] [SECONDS]   (default 5 runs of 15 s)
#        SECTIONS="throughput walks heaps counts holders claims vthreads retention zgc" picks sections (default: all but
#        holders, claims, vthreads and retention; holders takes about an hour, claims about 20 minutes: HOLDER_HEAPS="1 10 24 50", HOLDER_GCS="G1 Parallel",
#        HOLDER_JDKS="17 25" pick its heaps, HOLDER_SECONDS=60 the leak's length); HEAPS="1 10 50" (millions of live
#        objects) and HEAP_GCS="G1 Parallel" pick the heaps of section 3 (HEAP_RUNS runs of
#        SECONDS each, at least 30 s; default 1); PACE=2000000 paces its requests like a service
#        under steady load (requests per second; 0, the default, is full speed) and adds the
#        process's CPU time against no agent.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
seconds=${2:-15}
java=${JAVA:-java}
jcmd=${JCMD:-jcmd}
scripts/setup.sh >/dev/null
cargo build --release -p memcity-agent -p memcity-viewer 2>&1 | tail -1
scripts/build-java.sh
target=$(realpath "${CARGO_TARGET_DIR:-target}")
# AGENT= compares another build of the agent (an older commit's, say) on the same runs.
agent="${AGENT:-$target/release/libmemcity.so}"
memcity="$target/release/memcity"
classes="$target/jvm-test-apps"
work=$(mktemp -d)
trap 'rm -rf "$work"; pkill -f "BigHeap 600" 2>/dev/null || true; pkill -f "CatalogLeak .* 0 600" 2>/dev/null || true' EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "jvm: $($java -version 2>&1 | head -2 | tail -1)"
echo

sections=${SECTIONS:-throughput walks heaps counts}
if [[ " $sections " == *" throughput "* ]]; then
echo "== throughput: AllocBench, $runs runs of ${seconds} s (+3 s warm-up), -Xmx1g G1, ops/s"
declare -A results
configs="none defaults nolifetimes budget1 sampling0"
for run in $(seq "$runs"); do
  # Configurations interleave within a run, so drift in the machine's load spreads over all.
  for config in $configs; do
    case $config in
      none) flags=() ;;
      defaults) flags=("-agentpath:$agent=port=0,log=warn") ;;
      nolifetimes) flags=("-agentpath:$agent=port=0,log=warn,lifetimes=off") ;;
      budget1) flags=("-agentpath:$agent=port=0,log=warn,budget=1%") ;;
      sampling0) flags=("-agentpath:$agent=port=0,log=warn,sampling=0") ;;
    esac
    ops=$($java -Xmx1g -XX:+UseG1GC "${flags[@]}" -cp "$classes" AllocBench "$seconds" 3 | awk '/^OPS/ {print $2}')
    echo "  $config run $run: $ops"
    results[$config]+="$ops "
  done
done
base=$(echo "${results[none]}" | tr ' ' '\n' | grep . | median)
for config in $configs; do
  m=$(echo "${results[$config]}" | tr ' ' '\n' | grep . | median)
  awk -v c="$config" -v m="$m" -v b="$base" 'BEGIN {printf "  median %-10s %12.0f ops/s  %+6.2f%% vs no agent\n", c, m, (m/b-1)*100}'
done
echo
fi

if [[ " $sections " == *" walks "* ]]; then
for objects in 1000000 5000000; do
  echo "== stopped time per snapshot: BigHeap with $objects live objects, $runs snapshots each"
  rm -f "$work/port" "$work/out" "$work/sp.log"
  $java -Xmx6g -XX:+UseG1GC -Xlog:safepoint:file="$work/sp.log" \
    "-agentpath:$agent=port=0,portfile=$work/port,period=off,max_pause=30s,log=warn" \
    -cp "$classes" BigHeap 600 "$objects" > "$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q READY "$work/out" 2>/dev/null && [ -s "$work/port" ] && break; sleep 0.1; done
  port=$(cat "$work/port")
  before=$(grep -c HeapWalkOperation "$work/sp.log" || true)
  # --force: these walks measure the stop itself, beyond what the budget would allow. Forced
  # walks come at most one every 10 s (the agent says when to retry): try again until taken.
  for _ in $(seq "$runs"); do
    for _ in $(seq 30); do "$memcity" snapshot --force "$port" > /dev/null 2>&1 && break; sleep 1; done
  done
  for _ in $(seq "$runs"); do $jcmd "$pid" GC.class_histogram > /dev/null; done
  for _ in $(seq "$runs"); do $jcmd "$pid" GC.class_histogram -all > /dev/null; done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  live=$(( objects + 25000 )) # plus the JDK's own objects at startup (about 25 k)
  walk=$(grep HeapWalkOperation "$work/sp.log" | tail -n +$((before + 1)) | sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | median)
  hist=$(grep GC_HeapInspection "$work/sp.log" | head -n "$runs" | sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | median)
  hist_all=$(grep GC_HeapInspection "$work/sp.log" | tail -n "$runs" | sed -E 's/.*Total: ([0-9]+) ns.*/\1/' | median)
  awk -v w="$walk" -v h="$hist" -v a="$hist_all" -v n="$live" 'BEGIN {
    printf "  memcity walk (FollowReferences)       %8.1f ms  %6.1f ns/object\n", w/1e6, w/n
    printf "  GC.class_histogram (full GC + count)   %8.1f ms  %6.1f ns/object  walk/histogram %.1fx\n", h/1e6, h/n, w/h
    printf "  GC.class_histogram -all (count only)   %8.1f ms  %6.1f ns/object  walk/histogram %.1fx\n", a/1e6, a/n, w/a
  }'
  echo
done
fi

if [[ " $sections " == *" heaps "* ]]; then
heap_seconds=$(( seconds < 30 ? 30 : seconds ))
pace=${PACE:-0}
heap_runs=${HEAP_RUNS:-1}
for millions in ${HEAPS:-1 10 50}; do
  # Four objects per product, plus Sessions leaking to a tenth of the heap.
  products=$(( millions * 1000000 * 9 / 40 ))
  max_sessions=$(( millions * 100000 ))
  xmx=$(( millions < 10 ? 2 : millions / 5 + 2 ))g
  for gc in ${HEAP_GCS:-G1 Parallel}; do
    if [ "$pace" -gt 0 ]; then speed="paced at $pace requests/s"; else speed="at full speed"; fi
    echo "== leaking service: ~${millions} M live objects, $gc, ${heap_seconds} s $speed (-Xmx$xmx), $heap_runs runs"
    rm -f "$work/runs.jsonl"
    for run in $(seq "$heap_runs"); do
    for config in none agent; do
      rm -f "$work"/{port,out,sp.log,rec.mcrec}
      flags=()
      if [ "$config" = agent ]; then
        flags=("-agentpath:$agent=port=0,portfile=$work/port,record=$work/rec.mcrec,log=warn")
      fi
      $java "-Xmx$xmx" "-XX:+Use${gc}GC" -Xlog:safepoint:file="$work/sp.log" "${flags[@]}" \
        -cp "$classes" CatalogLeak "$heap_seconds" "$products" 0 5 600 "$max_sessions" "$pace" > "$work/out" 2>&1 &
      pid=$!
      for _ in $(seq 3000); do grep -q '^DONE' "$work/out" 2>/dev/null && break; sleep 0.2; done
      ops=$(awk '/^OPS/ {print $2}' "$work/out")
      cpu=$(awk '/^CPU/ {print $2}' "$work/out")
      # The report as of DONE: its last snapshot is the estimate after the app's final GC.
      [ "$config" = agent ] && "$memcity" report "$work/rec.mcrec" --json --top 0 > "$work/report.json"
      held=$(sed -n 's/^DONE sessions=//p' "$work/out")
      rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
      hist=$($jcmd "$pid" GC.class_histogram | awk '$4 == "CatalogLeak$Session" {print $2}')
      if [ "$config" = none ]; then
        base_ops=$ops; base_cpu=${cpu:-0}; base_rss=$rss_kb
        echo "  run $run, no agent: $ops requests/s${cpu:+, $cpu CPU s/s}, RSS $(( rss_kb / 1024 )) MiB, $held sessions (histogram: $hist)"
      else
        walk=$("$memcity" snapshot --force "$(cat "$work/port")" 2>&1 | tail -1)
        python3 - "$work/report.json" "$work/sp.log" "$hist" "$ops" "$base_ops" "$rss_kb" "$base_rss" "$walk" \
          "${cpu:-0}" "$base_cpu" "$run" "$work/runs.jsonl" "$pid" <<'PY'
import glob, json, os, re, sys
report, splog, hist, ops, base_ops, rss, base_rss, walk, cpu, base_cpu, run, out, pid = sys.argv[1:14]
# CPU time of the agent's own threads (worker, gRPC, JFR) against the whole JVM's, from /proc: a
# steadier measure of what memcity costs than throughput on a shared machine. (The sampling
# callbacks run on the application's threads; the agent holds them to `sampling_cost`.)
def cpu_seconds(stat_path):
    fields = open(stat_path).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
# JFR's own threads count too: the application here does not use JFR, memcity's GC counts do.
agent_s = sum(cpu_seconds(t + "/stat") for t in glob.glob(f"/proc/{pid}/task/*")
              if open(t + "/comm").read().startswith(("memcity", "JFR ")))
jvm_s = cpu_seconds(f"/proc/{pid}/stat")
r = json.load(open(report))
session = [g for g in r["groups"] if g["path"][-1] == "CatalogLeak$Session"]
est = session[0]["objects_last"] if session else 0
err = session[0]["objects_last_error"] if session else 0
minutes = r["duration_ms"] / 60000
stops = [int(m.group(1)) for line in open(splog) if "HeapWalkOperation" in line
         for m in [re.search(r"Total: (\d+) ns", line)] if m]
r = {
    "run": int(run),
    "throughput": (int(ops) / int(base_ops) - 1) * 100,
    "cpu": (float(cpu) / float(base_cpu) - 1) * 100 if float(base_cpu) > 0 else None,
    "rss_mib": (int(rss) - int(base_rss)) // 1024,
    "per_minute": r["snapshots"] / minutes,
    "walks": r["exact_snapshots"],
    # The last walk is the benchmark's own forced one: what memcity chose to add is the rest.
    "added_ms": max(stops[:-1], default=0) / 1e6,
    "estimate": est, "error": err, "histogram": int(hist),
    "off": (est / int(hist) - 1) * 100,
    "walk": walk,
    "agent_cpu": agent_s / jvm_s * 100 if jvm_s > 0 else None,
    # The sampling callbacks, as the agent measured them, in percent of one core.
    "sampling": r.get("sampling_overhead", 0) * 100,
}
open(out, "a").write(json.dumps(r) + "\n")
cpu = f", CPU {r['cpu']:+.2f} %" if r["cpu"] is not None else ""
print(f"  run {run}, agent: throughput {r['throughput']:+.2f} %{cpu}, agent threads {agent_s:.1f} s "
      f"of the JVM's {jvm_s:.1f} s CPU ({r['agent_cpu']:.2f} %), sampling {r['sampling']:.2f} % of a core, "
      f"RSS +{r['rss_mib']} MiB, "
      f"{r['per_minute']:.0f} snapshots/min ({r['walks']} walks), longest stop added {r['added_ms']:.1f} ms")
print(f"            Session: {est} ±{err} vs histogram {hist} ({r['off']:+.2f} %); exact walk now: {walk}")
PY
      fi
      kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    done
    done
    python3 - "$work/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
def med(key):
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else float("nan")
print(f"  median of {len(runs)}: throughput {med('throughput'):+.2f} %, CPU {med('cpu'):+.2f} %, "
      f"agent threads {med('agent_cpu'):.2f} % of the JVM's CPU, sampling {med('sampling'):.2f} % of a core, "
      f"{med('per_minute'):.0f} snapshots/min, longest stop added {med('added_ms'):.1f} ms, "
      f"Session off by {med('off'):+.2f} % (largest |off| {max(abs(r['off']) for r in runs):.2f} %), RSS +{med('rss_mib'):.0f} MiB")
PY
    echo
  done
done
fi

if [[ " $sections " == *" counts "* ]]; then
for objects in 5000000 24000000; do
  for gc in G1 Parallel; do
    echo "== GC counts: BigHeap with $objects live objects, $gc, $runs full GCs (jcmd GC.run) each"
    for counts in off on; do
      rm -f "$work"/{out,gc.log}
      # The limit is raised so the count runs at 24 M too: this measures what it would add.
      $java -Xmx8g "-XX:+Use${gc}GC" -Xlog:gc:file="$work/gc.log" \
        "-agentpath:$agent=port=off,period=off,max_pause=100ms,log=debug,gc_counts=$([ "$counts" = on ] && echo 5s || echo off)" \
        -cp "$classes" BigHeap 600 "$objects" > "$work/out" 2>&1 &
      pid=$!
      for _ in $(seq 1200); do grep -q READY "$work/out" 2>/dev/null && break; sleep 0.1; done
      # The agent starts JFR once a snapshot shows a heap too large to walk often: a first GC
      # makes that snapshot, then JFR needs a moment.
      $jcmd "$pid" GC.run > /dev/null; sleep 5
      before=$(grep -c 'Pause Full' "$work/gc.log" || true)
      for _ in $(seq "$runs"); do $jcmd "$pid" GC.run > /dev/null; sleep 2; done
      sleep 2
      kill "$pid"; wait "$pid" 2>/dev/null || true
      full=$(grep 'Pause Full' "$work/gc.log" | tail -n +$((before + 1)) | sed -E 's/.* ([0-9.]+)ms$/\1/' | median)
      phase=$( (grep -o 'counting took [0-9]*' "$work/out" || true) | awk '{print $3}' | tail -n "$runs" | median)
      if [ "$counts" = off ]; then
        echo "  counts off: full GC ${full} ms"
      else
        awk -v f="$full" -v p="${phase:-0}" -v n="$objects" 'BEGIN {
          printf "  counts on:  full GC %s ms; the count phase %.1f ms (%.1f ns per live object)\n", f, p/1000, p*1000/n }'
      fi
    done
    echo
  done
done
fi

if [[ " $sections " == *" holders "* ]]; then
holder_seconds=${HOLDER_SECONDS:-60}
# Waits (at most $2 tenths of a second) for a line matching $1 in the app's output.
wait_line() { for _ in $(seq "$2"); do grep -q "$1" "$work/out" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
for jdk in ${HOLDER_JDKS:-17 25}; do
  case $jdk in
    17) hjava=/usr/lib/jvm/java-17-openjdk-amd64/bin/java ;;
    *) hjava=$(ls -d /usr/lib/jvm/*"$jdk"*/bin/java 2>/dev/null | head -1) ;;
  esac
  if [ ! -x "${hjava:-}" ]; then echo "== holders: no JDK $jdk under /usr/lib/jvm, skipped"; continue; fi
  hbin=$(dirname "$hjava")
  for millions in ${HOLDER_HEAPS:-1 10 24 50}; do
    # Four objects per product; the leak adds a tenth of the heap in Sessions over the run, at
    # least 10,000 a second: slower, a 32-byte Session is sampled too rarely (at the default
    # 512 KiB interval) for a trend within a minute, and no young GC runs to count it.
    products=$(( millions * 1000000 * 9 / 40 ))
    rate=$(( millions * 100000 / holder_seconds ))
    rate=$(( rate < 10000 ? 10000 : rate ))
    xmx=$(( millions < 10 ? 2 : millions / 5 + 2 ))g
    for gc in ${HOLDER_GCS:-G1 Parallel}; do
      echo "== holder: JDK $jdk, $gc, ~$millions M live objects (CatalogLeak, $products products, $rate sessions/s for $holder_seconds s, -Xmx$xmx)"
      rm -f "$work"/{port,out,err,sp.log,rec.mcrec,leak.jfr}
      "$hjava" "-Xmx$xmx" "-XX:+Use${gc}GC" -Xlog:safepoint:file="$work/sp.log" \
        "-agentpath:$agent=port=0,portfile=$work/port,record=$work/rec.mcrec,max_pause=1ms,paths=100%,log=debug" \
        -cp "$classes" CatalogLeak "$holder_seconds" "$products" "$rate" 0 600 > "$work/out" 2> "$work/err" &
      pid=$!
      if ! wait_line '^DONE' $(( (holder_seconds + 600) * 10 )); then echo "  no DONE: $(tail -3 "$work/err")"; kill "$pid"; wait "$pid" 2>/dev/null || true; continue; fi
      "$memcity" report "$work/rec.mcrec" --json --top 0 > "$work/report.json"
      stops_before=$(grep -c HeapWalkOperation "$work/sp.log" || true)
      walk=$("$memcity" snapshot --force "$(cat "$work/port")" 2>&1 | tail -1)
      kill "$pid"; wait "$pid" 2>/dev/null || true
      memcity_line=$(python3 - "$work/report.json" "$work/sp.log" "$stops_before" "$work/err" <<'PY'
import json, re, statistics, sys
report, splog, before, err = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
r = json.load(open(report))
live = sum(g.get("objects_last", 0) for g in r["groups"])
s = (r.get("suspects") or [{}])[0]
stops = [int(m.group(1)) for line in open(splog) if "HeapWalkOperation" in line
         for m in [re.search(r"Total: (\d+) ns", line)] if m]
searches = [line for line in open(err) if re.search(r"path search: \d+ of \d+ samples", line)]
def field(line, after):
    words = line.split()
    return float(words[words.index(after) + 1]) if after in words else None
objects = [field(l, "through") for l in searches]
cpu = [field(l, "in") for l in searches]
med = lambda v: statistics.median([x for x in v if x is not None]) if any(x is not None for x in v) else 0
holder = f"{s.get('holder', '-')} ({s.get('root', '-')}, {s.get('confidence', '-')})" if s else "none"
print(f"  memcity: {live / 1e6:.1f} M live objects; holder {holder}; longest stop {max(stops[:before], default=0) / 1e6:.0f} ms;"
      f" {len(searches)} searches, median {med(objects) / 1e6:.2f} M objects in {med(cpu) / 1000:.1f} s on the agent's thread;"
      f" an exact walk stops {stops[before] / 1e6 if len(stops) > before else float('nan'):.0f} ms")
PY
)
      echo "$memcity_line"
      # JFR's leak profiler on the same heap, in a JVM without memcity.
      rm -f "$work"/{out,sp.log}
      "$hjava" "-Xmx$xmx" "-XX:+Use${gc}GC" -Xlog:safepoint:file="$work/sp.log" \
        -XX:StartFlightRecording=name=leak,settings=default,path-to-gc-roots=true \
        -cp "$classes" CatalogLeak "$holder_seconds" "$products" "$rate" 0 600 > "$work/out" 2>&1 &
      pid=$!
      if wait_line '^DONE' $(( (holder_seconds + 600) * 10 )); then
        lines=$(wc -l < "$work/sp.log")
        started=$(date +%s%N)
        "$hbin/jcmd" "$pid" JFR.dump name=leak filename="$work/leak.jfr" path-to-gc-roots=true > /dev/null
        took=$(( ($(date +%s%N) - started) / 1000000 ))
        kill "$pid"; wait "$pid" 2>/dev/null || true
        "$hbin/jfr" print --json --events jdk.OldObjectSample "$work/leak.jfr" > "$work/old.json"
        python3 - "$work/old.json" "$work/sp.log" "$lines" "$took" <<'PY'
import json, re, sys
old, splog, lines, took = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) / 1000
events = json.load(open(old))["recording"]["events"]
def type_of(e):
    o = e["values"].get("object") or {}
    return ((o.get("type") or {}).get("name")) or "?"
rooted = [e for e in events if e["values"].get("root")]
sessions = [e for e in events if type_of(e) == "CatalogLeak$Session"]
sessions_rooted = [e for e in sessions if e["values"].get("root")]
stops = []
for line in open(splog).readlines()[lines:]:
    m = re.search(r'Safepoint "([^"]+)".*Total: (\d+) ns', line)
    if m:
        stops.append((int(m.group(2)), m.group(1)))
longest = max(stops, default=(0, "-"))
print(f"  JFR: JFR.dump path-to-gc-roots=true took {took:.1f} s, longest stop {longest[0] / 1e6:.0f} ms ({longest[1]});"
      f" {len(events)} old-object samples, {len(rooted)} with a root; Sessions {len(sessions_rooted)} of {len(sessions)} rooted")
PY
      else
        echo "  JFR: no DONE"; kill "$pid"; wait "$pid" 2>/dev/null || true
      fi
      echo
    done
  done
done
fi

if [[ " $sections " == *" claims "* ]]; then
# 6. What the report claims (issue 30): on steady applications at the agent's defaults, the
#    largest rise the report says goes on (`continuing`, what its table ranks by) and the largest
#    growth beyond its stated doubt (error and unconfirmed part), where the true rise is nil by
#    construction (a fixed ring; connections released and purged); on a leak (LinkedListLeak),
#    the seconds from the JVM's start to the first snapshot at which `memcity report --to` names
#    the leak's holder as a backed, confirmed suspect; on the 24 M-object CatalogLeak, the age
#    of the holder's evidence at the end. CLAIM_RUNS runs each (default 3).
claim_runs=${CLAIM_RUNS:-3}
jdk25=$(ls -d /usr/lib/jvm/*25*/bin/java 2>/dev/null | head -1 || true)
httpclient_cp="$classes:/usr/share/java/commons-httpclient.jar:/usr/share/java/commons-logging.jar:/usr/share/java/commons-codec.jar"
# "steady NAME JAVA FLAGS... -- MAIN ARGS...": runs it with the agent at its defaults, prints
# the largest claims of its report.
steady() {
  local name="$1" bin="$2"
  shift 2
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  local claims=()
  for run in $(seq "$claim_runs"); do
    rm -f "$work/claim.mcrec"
    "$bin" "${flags[@]}" "-agentpath:$agent=port=0,log=warn,record=$work/claim.mcrec" "$@" > /dev/null
    claim=$("$memcity" report "$work/claim.mcrec" --json --top 0 | python3 -c '
import json, sys
r = json.load(sys.stdin)
app = [g for g in r["groups"] if g["path"][0] != "(memcity)"]
beyond = max((g["objects_last"] - g["objects_first"] - g["objects_last_error"] - g["objects_last_unconfirmed"] for g in app), default=0)
going = max((g["continuing"] for g in app), default=0)
print(going, max(beyond, 0), len(r["suspects"]), len(r["rising"]))')
    echo "  $name run $run: continuing, beyond doubt, suspects, rising: $claim"
    claims+=("$claim")
  done
  local going beyond named
  going=$(printf '%s\n' "${claims[@]}" | awk '{print $1}' | median)
  beyond=$(printf '%s\n' "${claims[@]}" | awk '{print $2}' | median)
  named=$(printf '%s\n' "${claims[@]}" | awk '{s += $3; r += $4} END {printf "suspects %d, rising %d in %d runs", s, r, NR}')
  printf '  median %-24s largest continuing %8s  beyond doubt %8s  (true: 0); %s\n' "$name" "$going" "$beyond" "$named"
}
echo "== claims: steady applications at the agent's defaults, $claim_runs runs of 20 s"
steady "SteadyState G1" "$java" -XX:+UseG1GC -Xmx1g -- -cp "$classes" SteadyState 20 200000
steady "SteadyState Parallel" "$java" -XX:+UseParallelGC -Xmx1g -- -cp "$classes" SteadyState 20 200000
steady "HttpClientChurn G1" "$java" -XX:+UseG1GC -Xmx512m -- -cp "$httpclient_cp" httpclient.HttpClientChurn 20
if [ -n "$jdk25" ]; then
  steady "SteadyState JDK 25 ZGC" "$jdk25" -XX:+UseZGC -Xmx1g -- -cp "$classes" SteadyState 20 200000
fi
echo
echo "== claims: seconds to a confirmed suspect, LinkedListLeak at the agent's defaults, $claim_runs runs of 30 s"
for run in $(seq "$claim_runs"); do
  rm -f "$work/leak.mcrec"
  "$java" -XX:+UseG1GC "-agentpath:$agent=port=0,log=warn,record=$work/leak.mcrec" -cp "$classes" LinkedListLeak 30 > /dev/null
  snapshots=$("$memcity" report "$work/leak.mcrec" --json --top 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshots"])')
  seconds=none
  for to in $(seq 3 "$snapshots"); do
    seconds=$("$memcity" report "$work/leak.mcrec" --json --top 1 --to "$to" | python3 -c '
import json, sys
r = json.load(sys.stdin)
s = r["suspects"]
ok = s and s[0]["backed"] and s[0]["confirmed"] and "PEOPLE" in s[0]["root"]
print("%.1f" % (r["window"]["to_ms"] / 1000) if ok else "")')
    [ -n "$seconds" ] && break
    seconds=none
  done
  echo "  LinkedListLeak run $run: confirmed at ${seconds} s (snapshot $to of $snapshots)"
done
echo
echo "== claims: the holder's evidence on CatalogLeak, 5 M products and 40,000 sessions a second, 60 s"
for run in $(seq "$claim_runs"); do
  rm -f "$work/big.mcrec"
  "$java" -XX:+UseG1GC -Xmx4g -Xmn256m "-agentpath:$agent=port=0,log=warn,record=$work/big.mcrec" \
    -cp "$classes" CatalogLeak 60 5000000 40000 > /dev/null
  "$memcity" report "$work/big.mcrec" --json --top 1 | python3 -c '
import json, sys
r = json.load(sys.stdin)
s = r["suspects"][0] if r["suspects"] else {}
e = s.get("evidence") or {}
print("  CatalogLeak run %s: %s, confidence %s, evidence %.1f s old at the end, also reached from %s"
      % (sys.argv[1], s.get("root"), s.get("confidence"), e.get("age_ms", 0) / 1000, s.get("also_reached_from")))' "$run"
done
echo
fi

if [[ " $sections " == *" vthreads "* ]]; then
# 7. The path search's one stop with virtual threads (issue 30): the roots' enumeration walks
#    every parked virtual thread's frames too, so its stop grows with them. VirtualThreadLeak
#    with 1 to 20,000 virtual threads (each holding a list in a local and sleeping between
#    batches), JDK 25 (or JAVA21=path/to/java), the agent at its defaults but log=debug, whose
#    "ms stopped for the roots" line each search writes; median and largest over the run.
vt_java=${JAVA21:-$(ls -d /usr/lib/jvm/*25*/bin/java 2>/dev/null | head -1 || true)}
if [ -z "$vt_java" ]; then
  echo "== vthreads: no JDK 21+ (set JAVA21=path/to/java): skipped"
else
  echo "== vthreads: the path search's stop for the roots, VirtualThreadLeak, $("$vt_java" -version 2>&1 | head -1), G1, ${seconds} s"
  for threads in ${VTHREADS:-1 200 2000 20000}; do
    "$vt_java" -XX:+UseG1GC -Xmx2g "-agentpath:$agent=port=0,log=debug" -cp "$classes" \
      VirtualThreadLeak "$seconds" "$threads" 40000 > /dev/null 2> "$work/vt.log"
    pauses=$(sed -n 's/.*in [0-9]* ms on the worker (\([0-9]*\) ms stopped for the roots.*/\1/p' "$work/vt.log")
    m=$(echo "$pauses" | grep . | median || true)
    max=$(echo "$pauses" | grep . | sort -n | tail -1 || true)
    printf '  %6d virtual threads: %3d searches, stop median %4s ms, largest %4s ms\n' \
      "$threads" "$(echo "$pauses" | grep -c . || true)" "${m:-none}" "${max:-none}"
  done
  echo
fi
fi

if [[ " $sections " == *" retention "* ]]; then
# 8. What the agent keeps alive (issue 31): DroppedArrays (256 KiB arrays dropped at once beside
#    a 13 MB live set), 15 s, -Xmx4g; the heap after each GC from -Xlog:gc (median and largest)
#    and the GCs, without the agent and with it at its defaults, per collector, JDK 17 and 25.
jdk25_java=$(ls -d /usr/lib/jvm/*25*/bin/java 2>/dev/null | head -1 || true)
after_gc() {
  # "... 520M(13%)->48M(1%) ..." (ZGC) or "... 120M->14M(4096M) ..." (others): the MB after.
  sed -n 's/.*->\([0-9]*\)M.*/\1/p' "$1"
}
# DroppedGraph drops TreeMaps of a million entries instead (at 1 GB, where the collectors run
# some 25 times in 15 s; at 4 GB 3-5 times, too few to judge): a sampled entry reaches the whole
# map. RETENTION_APPS picks the apps (default both); RETENTION_CONFIGS the agent's settings:
# none (no agent), defaults, nopaths (defaults but the path search, which holds what it is in).
# The stalls are the collector's allocation stalls.
for app in ${RETENTION_APPS:-DroppedArrays DroppedGraph}; do
heap=-Xmx4g
[ "$app" = DroppedGraph ] && heap=-Xmx1g
echo "== retention: $app 15 s, $heap, heap after GC in MB (median, largest), GCs and allocation stalls"
for jdk in 17 25; do
  bin=$java
  if [ "$jdk" = 25 ]; then bin=$jdk25_java; fi
  [ -n "$bin" ] || { echo "  JDK $jdk: none here, skipped"; continue; }
  for gc in G1 Parallel Z Shenandoah; do
    for config in ${RETENTION_CONFIGS:-none defaults}; do
      agent_flag=()
      [ "$config" = defaults ] && agent_flag=("-agentpath:$agent=port=0,log=warn")
      [ "$config" = nopaths ] && agent_flag=("-agentpath:$agent=port=0,log=warn,paths=off")
      if ! "$bin" "-XX:+Use${gc}GC" "$heap" "-Xlog:gc:file=$work/gc.log" "${agent_flag[@]}" \
          -cp "$classes" "$app" 15 > /dev/null 2> "$work/err.log"; then
        echo "  JDK $jdk $gc: not available ($(head -1 "$work/err.log"))"
        break
      fi
      values=$(after_gc "$work/gc.log")
      printf '  JDK %s %-10s %-8s after GC median %5s MB, largest %5s MB, %4d GCs, %d stalls\n' "$jdk" "$gc" "$config" \
        "$(echo "$values" | grep . | median)" "$(echo "$values" | sort -n | tail -1)" "$(echo "$values" | grep -c .)" \
        "$(grep -c 'Allocation Stall (' "$work/gc.log" || true)"
    done
  done
done
echo
done
fi

if [[ " $sections " == *" zgc "* ]]; then
# 9. Estimates on generational ZGC (issue 31): its young collections keep what the samples'
#    weak references hold, so the agent estimates the types it follows from the path search's
#    counts and verdicts. ZGC_RUNS runs (default 5) of each, JDK 25, agent at its defaults but
#    walks refused after the start (max_pause=50ms), so the last snapshot is an estimate: the
#    last estimate of `byte[]` and `String` with its 95 % error, against what is live, which
#    each app's structure gives (SteadyState's ring: a string and an array per message and an
#    array per string; LinkedListLeak: two names per person, each with its array), beside a
#    few thousand of the JDK's own.
jdk25_bin=$(ls -d /usr/lib/jvm/*25*/bin/java 2>/dev/null | head -1 || true)
if [ -z "$jdk25_bin" ]; then
  echo "== zgc: no JDK 25 here, skipped"
else
zgc_runs=${ZGC_RUNS:-5}
# "zgc_estimate NAME ARRAYS STRINGS UNITS FLAGS... -- MAIN ARGS...": the last estimates against
# ARRAYS live byte[] and STRINGS live strings per unit; UNITS is a count, or `done` for the
# count the app's DONE line ends with.
zgc_estimate() {
  local name="$1" arrays="$2" strings="$3" units="$4"
  shift 4
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  rm -f "$work/zgc.pct"
  for run in $(seq "$zgc_runs"); do
    rm -f "$work/zgc.mcrec"
    done_line=$("$jdk25_bin" -XX:+UseZGC -Xmx1g "${flags[@]}" \
      "-agentpath:$agent=port=0,log=warn,max_pause=50ms,record=$work/zgc.mcrec" "$@" | tail -1)
    local n=$units
    [ "$units" = done ] && n=${done_line##*=}
    "$memcity" report "$work/zgc.mcrec" --json --top 0 | python3 -c '
import json, sys
r = json.load(sys.stdin)
name, arrays, strings, units, run = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
for t, per in [("byte[]", arrays), ("java.lang.String", strings)]:
    g = next(g for g in r["groups"] if g["path"][-1] == t)
    truth = per * units
    last, error, doubt = g["objects_last"], g["objects_last_error"], g["objects_last_unconfirmed"]
    # The JDK holds a few thousand of each of its own (6,458 arrays beside the steady
    # ring, counted by a search): the truth lies in [truth, truth + 10,000].
    within = last - error - doubt <= truth + 10000 and truth <= last + error
    print("  %-14s run %s %-17s estimated %9d +-%-7d (up to %7d may be garbage), the app holds %9d: %+6.1f %%, %s"
          % (name, run, t, last, error, doubt, truth, (last / truth - 1) * 100,
             "within its doubt" if within else "OUTSIDE its doubt"))
    with open(sys.argv[6], "a") as pct:
        pct.write("%s %.1f\n" % (t, (last / truth - 1) * 100))
' "$name" "$arrays" "$strings" "$n" "$run" "$work/zgc.pct"
  done
  for t in 'byte[]' java.lang.String; do
    printf '  median %-14s %-17s %+.1f %%\n' "$name" "$t" \
      "$(awk -v t="$t" '$1 == t {print $2}' "$work/zgc.pct" | median)"
  done
}
echo "== zgc: last estimates on JDK 25 generational ZGC, $zgc_runs runs each"
zgc_estimate SteadyState 2 1 200000 -- -cp "$classes" SteadyState 20 200000
zgc_estimate LinkedListLeak 2 2 done -XX:-DoEscapeAnalysis -- -cp "$classes" LinkedListLeak 12
echo
fi
fi
