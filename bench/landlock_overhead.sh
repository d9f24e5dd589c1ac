#!/usr/bin/env bash
# Exec overhead of the landlock backend.
#
#   bench/landlock_overhead.sh [SBX] [RUNS] [PRESET]
#
# Times `sbx --backends landlock exec --preset read-only -- /bin/true` against a bare
# `/bin/true`, interleaved run by run so load changes hit both sides alike, and prints both
# medians and the median added time. Timestamps come from bash's $EPOCHREALTIME (no fork per
# sample). read-only is used because workspace-write's protected names are refused by Landlock.
# Target: < 2 ms added at the median.
set -euo pipefail
sbx="${1:-sbx}"
runs="${2:-101}"
preset="${3:-read-only}"
work="$(mktemp -d /tmp/sbx-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

now_us() { local t="${EPOCHREALTIME/./}"; echo "$t"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"$sbx" --backends landlock exec --preset "$preset" --cwd "$work" -- /bin/true  # warm caches
: > sbx.times
: > bare.times
for ((i = 0; i < runs; i++)); do
  t0=${EPOCHREALTIME/./}
  "$sbx" --backends landlock exec --preset "$preset" --cwd "$work" -- /bin/true
  t1=${EPOCHREALTIME/./}
  /bin/true
  t2=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >> sbx.times
  echo $((t2 - t1)) >> bare.times
done
s=$(median < sbx.times)
b=$(median < bare.times)
awk -v s="$s" -v b="$b" -v n="$runs" -v p="$preset" 'BEGIN {
  printf "runs: %d interleaved\nsbx --backends landlock exec --preset %s median: %.2f ms\n", n, p, s / 1000
  printf "bare /bin/true median: %.2f ms\nadded: %.2f ms (target < 2 ms)\n", b / 1000, (s - b) / 1000 }'
