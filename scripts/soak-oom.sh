#!/usr/bin/env bash
# Repeats the OutOfMemoryError tests (tests/tests/oom.rs: LinkedListLeak runs out of a 128 MB
# heap under each collector) RUNS times (default 30), for a loss that comes once in many runs (a
# worker kept from the error's request lost ZGC's last snapshot about one run in 14). Prints each
# run's result and keeps a failing run's output; fails if any run failed.
# Usage: scripts/soak-oom.sh [RUNS] [TEST FILTER, default out_of_memory_on_zgc]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
filter=${2:-out_of_memory_on_zgc}
scripts/setup.sh >/dev/null
work=$(mktemp -d)
failed=0
for i in $(seq "$runs"); do
  if cargo test -q -p memcity-e2e --test oom -- "$filter" > "$work/run-$i.log" 2>&1; then
    echo "run $i of $runs: passed"
    rm "$work/run-$i.log"
  else
    echo "run $i of $runs: FAILED (output in $work/run-$i.log)"
    failed=$(( failed + 1 ))
  fi
done
echo "soak-oom: $failed of $runs runs of '$filter' failed"
[ "$failed" -eq 0 ]
