#!/usr/bin/env bash
# Exec overhead of the landlock backend, with a breakdown.
#
#   bench/landlock_overhead.sh [SBX] [RUNS] [PRESET] [OTHER_SBX]
#
# Times `sbx --backends landlock exec --preset read-only -- /bin/true` against a bare
# `/bin/true`, interleaved run by run so load changes hit both sides alike, and prints both
# medians and the median added time. In the same loop it times `sbx --version` (starting sbx)
# and `sbx --backends landlock exec --dry-run` (policy, plugin load, probe, transform: all but
# the run), so the added time splits into start, planning and the run itself. With OTHER_SBX
# (e.g. another build of sbx, before a change) that one's exec is timed in the same loop too.
# Timestamps come from bash's $EPOCHREALTIME (no fork per sample). read-only is used because
# workspace-write's protected names are refused by Landlock. Target: < 2 ms added at the median.
set -euo pipefail
sbx="${1:-sbx}"
runs="${2:-101}"
preset="${3:-read-only}"
other="${4:-}"
work="$(mktemp -d /tmp/sbx-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run_exec() { "$1" --backends landlock exec --preset "$preset" --cwd "$work" -- /bin/true; }

run_exec "$sbx"  # warm caches
[[ -z "$other" ]] || run_exec "$other"
: > sbx.times; : > bare.times; : > version.times; : > dry.times; : > other.times
for ((i = 0; i < runs; i++)); do
  t0=${EPOCHREALTIME/./}
  run_exec "$sbx"
  t1=${EPOCHREALTIME/./}
  /bin/true
  t2=${EPOCHREALTIME/./}
  "$sbx" --version > /dev/null
  t3=${EPOCHREALTIME/./}
  "$sbx" --backends landlock exec --dry-run --preset "$preset" --cwd "$work" -- /bin/true \
    > /dev/null
  t4=${EPOCHREALTIME/./}
  if [[ -n "$other" ]]; then run_exec "$other"; fi
  t5=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >> sbx.times
  echo $((t2 - t1)) >> bare.times
  echo $((t3 - t2)) >> version.times
  echo $((t4 - t3)) >> dry.times
  echo $((t5 - t4)) >> other.times
done
s=$(median < sbx.times)
b=$(median < bare.times)
v=$(median < version.times)
d=$(median < dry.times)
o=$(median < other.times)
awk -v s="$s" -v b="$b" -v v="$v" -v d="$d" -v o="$o" -v n="$runs" -v p="$preset" \
    -v other="$other" 'BEGIN {
  printf "runs: %d interleaved (medians)\n", n
  printf "sbx --backends landlock exec --preset %s: %.2f ms\n", p, s / 1000
  printf "bare /bin/true: %.2f ms\nadded: %.2f ms (target < 2 ms)\n", b / 1000, (s - b) / 1000
  printf "breakdown: sbx --version %.2f ms (start: +%.2f ms over /bin/true); ", v / 1000, (v - b) / 1000
  printf "exec --dry-run %.2f ms (planning: +%.2f ms over --version); ", d / 1000, (d - v) / 1000
  printf "the run itself: +%.2f ms over --dry-run\n", (s - d) / 1000
  if (other != "") printf "%s exec: %.2f ms (added %.2f ms)\n", other, o / 1000, (o - b) / 1000 }'
