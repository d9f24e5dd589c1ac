#!/usr/bin/env bash
# Start-up cost and memory of the sbx executable.
#
#   bench/start_overhead.sh SBX [RUNS] [OTHER_SBX]
#
# 1. `sbx --version` against `/bin/true`, interleaved run by run (and OTHER_SBX --version in the
#    same loop when given, e.g. a build of the previous commit, for a before/after in one run):
#    medians and the ratio. Timestamps from bash's $EPOCHREALTIME (no fork per sample).
#    Target: sbx --version <= 1.3x /bin/true.
# 2. Peak RSS of `sbx exec --preset workspace-write -- /bin/true` (default backend order) and of
#    `sbx --backends landlock exec --preset read-only -- /bin/true`: ru_maxrss as GNU time reports
#    it (%M), the largest of sbx and every descendant it waited for, medians of 11 runs.
#    Target: <= 8 MiB.
# 3. Minor page faults (GNU time %R, medians of 11) of `sbx --version`, `/bin/true` and a
#    landlock `exec --dry-run`: on a VM most of a start's time is page faults, and their count
#    does not depend on the load of the machine, unlike the times above.
# 4. What the dynamic loader maps at the start of `sbx --version` (LD_DEBUG=files).
set -euo pipefail
sbx="$1"
runs="${2:-101}"
other="${3:-}"
work="$(mktemp -d /tmp/sbx-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"$sbx" --version > /dev/null
[[ -z "$other" ]] || "$other" --version > /dev/null
: > sbx.times
: > bare.times
: > other.times
for ((i = 0; i < runs; i++)); do
  t0=${EPOCHREALTIME/./}
  "$sbx" --version > /dev/null
  t1=${EPOCHREALTIME/./}
  /bin/true
  t2=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >> sbx.times
  echo $((t2 - t1)) >> bare.times
  if [[ -n "$other" ]]; then
    t3=${EPOCHREALTIME/./}
    "$other" --version > /dev/null
    t4=${EPOCHREALTIME/./}
    echo $((t4 - t3)) >> other.times
  fi
done
s=$(median < sbx.times)
b=$(median < bare.times)
awk -v s="$s" -v b="$b" -v n="$runs" 'BEGIN {
  printf "runs: %d interleaved\nsbx --version median: %.3f ms\n/bin/true median: %.3f ms\n", n, s / 1000, b / 1000
  printf "ratio: %.2fx (target <= 1.3x)\n", s / b }'
if [[ -n "$other" ]]; then
  o=$(median < other.times)
  awk -v o="$o" -v b="$b" 'BEGIN { printf "other sbx --version median: %.3f ms (%.2fx)\n", o / 1000, o / b }'
fi

peak_rss() {
  : > rss
  for ((i = 0; i < 11; i++)); do
    /usr/bin/time -f %M -o rss.one "$@" > /dev/null 2>&1 || true
    cat rss.one >> rss
  done
  median < rss
}
for bin in "$sbx" ${other:+"$other"}; do
  echo "peak RSS ($bin):"
  kb=$(peak_rss "$bin" exec --preset workspace-write --cwd "$work" -- /bin/true)
  echo "  exec --preset workspace-write -- /bin/true: $kb KiB (target <= 8192)"
  kb=$(peak_rss "$bin" --backends landlock exec --preset read-only --cwd "$work" -- /bin/true)
  echo "  --backends landlock exec --preset read-only -- /bin/true: $kb KiB"
  kb=$(peak_rss "$bin" --version)
  echo "  --version: $kb KiB"
done
faults() {
  : > faults
  for ((i = 0; i < 11; i++)); do
    /usr/bin/time -f %R -o faults.one "$@" > /dev/null 2>&1 || true
    cat faults.one >> faults
  done
  median < faults
}
echo "minor page faults (medians of 11):"
echo "  /bin/true: $(faults /bin/true)"
for bin in "$sbx" ${other:+"$other"}; do
  echo "  $bin --version: $(faults "$bin" --version)"
  echo "  $bin --backends landlock exec --dry-run --preset read-only -- /bin/true: $(faults \
    "$bin" --backends landlock exec --dry-run --preset read-only --cwd "$work" -- /bin/true)"
done
echo "objects mapped by 'sbx --version':"
LD_DEBUG=files "$sbx" --version 2>&1 >/dev/null | sed -n 's/.*file=\([^ ]*\).*\[0\];  needed by.*/  \1/p' | sort -u
