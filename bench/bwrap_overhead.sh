#!/usr/bin/env bash
# Exec overhead of the bwrap backend.
#
#   bench/bwrap_overhead.sh [SBX] [RUNS]
#
# Times `sbx exec --preset workspace-write -- /bin/true` against the same bare bwrap invocation
# (the mount and namespace arguments `sbx debug bwrap` prints, running /bin/true directly,
# without sbx and without sbx-stage2), interleaved run by run so that load changes hit both
# sides alike, and prints both medians and their ratio. Target: ratio <= 1.25.
#
# It also times, in the same interleaved loop, the parts sbx adds, so that the ratio can be
# read against its floor: the complete plan run by hand (bwrap + sbx-stage2, no sbx process: the
# plan's form; `sbx exec` itself runs bwrap -> command in this network mode, no stage 2)
# and `sbx --version` (the start-up of the sbx executable alone: exec, dynamic loading,
# static initialisation, nothing else). Timestamps come from bash's $EPOCHREALTIME: no fork
# per sample, so both sides are measured without the timer's own process start.
set -euo pipefail
# The same run with only the cwd writable (bench/policies/cwd-only.json): workspace-write also
# makes /tmp writable, and sbx walks every writable root after the run for protected names
# created deep in it (the created-names scan), so the preset's figure grows with this host's
# /tmp. This one does not.
cwd_policy="$(cd "$(dirname "$0")" && pwd)/policies/cwd-only.json"
sbx="${1:-sbx}"
runs="${2:-31}"
work="$(mktemp -d /tmp/sbx-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# The bwrap argv sbx would run for policy options "$@", up to (not including) the "--" before
# the command, then /bin/true.
bare_argv() {
  local plan=() arg
  mapfile -t plan < <("$sbx" --backends bwrap debug bwrap "$@" --cwd "$work" -- /bin/true |
                        sed -n '/"argv": \[/,/\]/p' | sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p')
  for arg in "${plan[@]}"; do
    [[ "$arg" == "--" ]] && break
    printf '%s\n' "$arg"
  done
  printf '%s\n' -- /bin/true
}
mapfile -t bare < <(bare_argv --preset workspace-write)
mapfile -t bare_cwd < <(bare_argv --policy "$cwd_policy")
# The whole plan (bwrap, then sbx-stage2, then /bin/true), as sbx would start it.
mapfile -t full < <("$sbx" --backends bwrap debug bwrap --preset workspace-write --cwd "$work" \
                      -- /bin/true | sed -n '/"argv": \[/,/\]/p' | sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p')

# The bare bwrap runs create the plan's mount points for missing protected names on the host
# (sbx removes its own; nobody removes bare bwrap's). Remove the empty ones this script made,
# after every bare run (untimed): left in place, they would make every later sbx run find the
# names existing and skip the masks of missing names, which a real workspace does not (sbx
# removes its own mount points after each run). The plan lists them in host_paths.created (sbx
# debug prints the plan as JSON).
mapfile -t mount_points < <(for options in "--preset workspace-write" "--policy $cwd_policy"; do
                              # shellcheck disable=SC2086 # two words each
                              "$sbx" --backends bwrap debug bwrap $options --cwd "$work" \
                                -- /bin/true |
                                python3 -c 'import json, sys
print("\n".join(json.load(sys.stdin)["host_paths"]["created"]))'
                            done | sed '/^$/d' | sort -u)
created=()
for point in "${mount_points[@]}"; do
  [[ -e "$point" ]] || created+=("$point")
done
# Which of them are missing now: bare_run removes only those its bwrap made, never a mount
# point a concurrent sbx run (of another build, in /tmp) made and relies on.
missing=()
note_missing() {
  local point
  missing=()
  for point in "${created[@]}"; do [[ -e "$point" || -L "$point" ]] || missing+=("$point"); done
}
# Empty directories (sbx before the file mask) and empty regular files (since) only.
remove_bare_mount_points() {
  local point
  for point in "${missing[@]}"; do
    if [[ -d "$point" && ! -L "$point" ]]; then
      rmdir "$point" 2>/dev/null || true
    elif [[ -f "$point" && ! -L "$point" && ! -s "$point" ]]; then
      rm -f "$point"
    fi
  done
}
cleanup() {
  rm -rf "$work"
}
trap cleanup EXIT
[[ "${bare[0]}" == /* && "${bare_cwd[0]}" == /* ]] ||
  { echo "could not read the plans from '$sbx debug'" >&2; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { awk -v t="$1" 'BEGIN { printf "%.1f", t / 1000 }'; }

: > sbx.times
: > bare.times
: > plan.times
: > start.times
: > true.times
: > sbx_cwd.times
: > bare_cwd.times
"$sbx" --backends bwrap exec --preset workspace-write --cwd "$work" -- /bin/true  # warm caches
"$sbx" --backends bwrap exec --policy "$cwd_policy" --cwd "$work" -- /bin/true
for ((i = 0; i < runs; i++)); do
  t0=${EPOCHREALTIME/./}
  "$sbx" --backends bwrap exec --preset workspace-write --cwd "$work" -- /bin/true
  t1=${EPOCHREALTIME/./}
  note_missing
  t1b=${EPOCHREALTIME/./}
  "${bare[@]}"
  t2=${EPOCHREALTIME/./}
  remove_bare_mount_points
  note_missing
  t2b=${EPOCHREALTIME/./}
  "${full[@]}"
  t3=${EPOCHREALTIME/./}
  remove_bare_mount_points
  t3b=${EPOCHREALTIME/./}
  "$sbx" --version > /dev/null
  t4=${EPOCHREALTIME/./}
  /bin/true
  t5=${EPOCHREALTIME/./}
  "$sbx" --backends bwrap exec --policy "$cwd_policy" --cwd "$work" -- /bin/true
  t6=${EPOCHREALTIME/./}
  note_missing
  t6b=${EPOCHREALTIME/./}
  "${bare_cwd[@]}"
  t7=${EPOCHREALTIME/./}
  remove_bare_mount_points
  echo $((t6 - t5)) >> sbx_cwd.times
  echo $((t7 - t6b)) >> bare_cwd.times
  echo $((t1 - t0)) >> sbx.times
  echo $((t2 - t1b)) >> bare.times
  echo $((t3 - t2b)) >> plan.times
  echo $((t4 - t3b)) >> start.times
  echo $((t5 - t4)) >> true.times
done
s=$(median < sbx.times)
b=$(median < bare.times)
p=$(median < plan.times)
v=$(median < start.times)
t=$(median < true.times)
sc=$(median < sbx_cwd.times)
bc=$(median < bare_cwd.times)
echo "runs: $runs interleaved (medians)"
echo "sbx exec (bwrap, workspace-write):      $(ms "$s") ms"
echo "bare bwrap, same mounts:                $(ms "$b") ms"
echo "  the plan by hand (bwrap + sbx-stage2): $(ms "$p") ms"
echo "  sbx --version (sbx start-up alone):    $(ms "$v") ms"
echo "  /bin/true (starting any process):      $(ms "$t") ms"
echo "sbx exec, only the cwd writable:        $(ms "$sc") ms (bare bwrap, same mounts: $(ms "$bc") ms;" \
     "$(awk -v s="$sc" -v b="$bc" 'BEGIN { printf "%.2fx", s / b }'): no /tmp to scan)"
# Floors: what sbx would cost if it did no work at all. Were sbx to replace itself by bwrap
# (exec, nothing supervised), only its start-up beyond starting a process at all would remain:
# bare + sbx --version - /bin/true. As it runs, sbx stays beside bwrap (the pause-point check,
# signals, the unix-socket supervisor, the cleanup): two process starts where the baseline has
# one, so bare + sbx --version before any work (bench/README.md, session 13: with every safety
# step switched off a run is still ~1.6x).
awk -v s="$s" -v b="$b" -v p="$p" -v v="$v" -v t="$t" 'BEGIN {
  printf "ratio: %.2fx (target <= 1.25x)\n", s / b
  printf "floor of the old shape (sbx -> bwrap -> sbx-stage2): %.2fx (plan + sbx start-up - /bin/true)\n",
         (p + v - t) / b
  printf "floor if sbx exec()ed bwrap in its place (nothing supervised): %.2fx (bare + sbx start-up - /bin/true)\n",
         (b + v - t) / b
  printf "floor of sbx supervising bwrap (two process starts): %.2fx (bare + sbx --version)\n",
         (b + v) / b }'
