#!/usr/bin/env bash
# Exec overhead of the bwrap backend (issue 3, acceptance 5).
#
#   bench/bwrap_overhead.sh [SBX] [RUNS]
#
# Times `sbx exec --preset workspace-write -- /bin/true` against the same bare bwrap invocation
# (the mount and namespace arguments `sbx debug bwrap` prints, running /bin/true directly,
# without sbx and without sbx-stage2), interleaved run by run so that load changes hit both
# sides alike, and prints both medians and their ratio. Target: ratio <= 1.25.
set -euo pipefail
sbx="${1:-sbx}"
runs="${2:-31}"
work="$(mktemp -d /tmp/sbx-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# The bwrap argv sbx would run, up to (not including) the "--" before sbx-stage2.
mapfile -t plan < <("$sbx" --backends bwrap debug bwrap --preset workspace-write --cwd "$work" \
                      -- /bin/true | sed -n '/"argv": \[/,/\]/p' | sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p')
bare=()
for arg in "${plan[@]}"; do
  [[ "$arg" == "--" ]] && break
  bare+=("$arg")
done
bare+=(-- /bin/true)

# The bare bwrap runs create the plan's mount points for missing protected names on the host
# (sbx removes its own; nobody removes bare bwrap's). Remove the empty ones this script made.
mapfile -t mount_points < <("$sbx" --backends bwrap debug bwrap --preset workspace-write \
                              --cwd "$work" -- /bin/true |
                            sed -n 's/^ *"sbx-bwrap:mount-point \(.*\)",\{0,1\}$/\1/p')
created=()
for point in "${mount_points[@]}"; do
  [[ -e "$point" ]] || created+=("$point")
done
cleanup() {
  for point in "${created[@]}"; do rmdir "$point" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
[[ "${bare[0]}" == /* ]] || { echo "could not read the plan from '$sbx debug'" >&2; exit 1; }

now_us() { local t; t=$(date +%s%N); echo $((t / 1000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: > sbx.times
: > bare.times
"$sbx" --backends bwrap exec --preset workspace-write --cwd "$work" -- /bin/true  # warm caches
for ((i = 0; i < runs; i++)); do
  t0=$(now_us); "$sbx" --backends bwrap exec --preset workspace-write --cwd "$work" -- /bin/true
  t1=$(now_us); "${bare[@]}"
  t2=$(now_us)
  echo $((t1 - t0)) >> sbx.times
  echo $((t2 - t1)) >> bare.times
done
s=$(median < sbx.times)
b=$(median < bare.times)
awk -v s="$s" -v b="$b" -v n="$runs" 'BEGIN {
  printf "runs: %d interleaved\nsbx exec (bwrap, workspace-write) median: %.1f ms\n", n, s / 1000
  printf "bare bwrap, same mounts, median:          %.1f ms\nratio: %.2fx (target <= 1.25x)\n",
         b / 1000, s / b }'
