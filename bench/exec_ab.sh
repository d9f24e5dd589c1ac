#!/usr/bin/env bash
# Two sbx builds in one loop: `sbx exec -- /bin/true` on the bwrap backend with the
# workspace-write preset, with only the cwd writable and with full filesystem access (no write
# layer; the network restricted, so still sandboxed), A and B alternating run by run (the
# order swapped every round): medians, and means and 90th percentiles (a stall in one run of
# several, e.g. a fixed sleep at the run's end, barely moves the median but shows in both), and
# the mean CPU time per run of the whole process tree (what a loaded host does not distort).
#
#   bench/exec_ab.sh SBX_A SBX_B [RUNS]
#
# BACKEND (default bwrap) runs another backend; SBX_GLOBALS adds global options, e.g. a
# third-party plugin: BACKEND=fixture-call-good SBX_GLOBALS="--plugin-dir DIR" (a trusted copy
# of <build>/fixture-plugins: what call isolation costs, core/src/plugins/README.md).
#
# Both run in the same fresh workspace (no .git, .codex, .agents: the masks of missing names
# are made and removed by every run, as in a real workspace).
set -euo pipefail
cwd_policy="$(cd "$(dirname "$0")" && pwd)/policies/cwd-only.json"
full_policy="$(cd "$(dirname "$0")" && pwd)/policies/full-access.json"
a="$1"
b="$2"
runs="${3:-31}"
backend="${BACKEND:-bwrap}"
read -r -a globals <<< "${SBX_GLOBALS:-}"
work="$(mktemp -d /tmp/sbx-ab-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir ws
timed() {  # SBX POLICY_OPTION...: "user system" seconds of the whole run on stderr
  local sbx="$1" TIMEFORMAT='%3U %3S'
  shift
  # Started in the workspace, like a shell user's run: the command's PWD is its working
  # directory, so sbx takes the direct launch (with PWD elsewhere it runs stage 2). `time`
  # counts the whole tree (sbx, bwrap and the sandbox: each reaps its children); sbx's own
  # stderr goes on to the script's (descriptor 3).
  cd "$work/ws"
  time "$sbx" "${globals[@]}" --backends "$backend" exec "$@" -- /bin/true 2>&3
}
one() {  # SBX OUT_FILE POLICY_OPTION...
  local sbx="$1" out="$2" t0 t1
  shift 2
  t0=${EPOCHREALTIME/./}
  (timed "$sbx" "$@") 3>&2 2>> "$out.cpu"
  t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >> "$out"
}
for sbx in "$a" "$b"; do  # warm caches
  (cd "$work/ws" && exec "$sbx" "${globals[@]}" --backends "$backend" exec --preset workspace-write \
    -- /bin/true)
done
for ((i = 0; i < runs; i++)); do
  if ((i % 2)); then first="$b" second="$a" fo=b so=a; else first="$a" second="$b" fo=a so=b; fi
  one "$first" "ww.$fo" --preset workspace-write
  one "$second" "ww.$so" --preset workspace-write
  one "$first" "cwd.$fo" --policy "$cwd_policy"
  one "$second" "cwd.$so" --policy "$cwd_policy"
  one "$first" "full.$fo" --policy "$full_policy"
  one "$second" "full.$so" --policy "$full_policy"
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mean() { awk '{s+=$1} END {print s/NR}'; }
p90() { sort -n | awk '{a[NR]=$1} END {i=int(NR*0.9+0.5); if (i<1) i=1; print a[i]}'; }
ms() { awk -v t="$1" 'BEGIN { printf "%.1f", t / 1000 }'; }
[[ -z "$(ls -A ws)" ]] || { echo "the runs left something in the workspace: $(ls -A ws)" >&2; exit 1; }
echo "runs: $runs alternating; backend $backend; A = $a, B = $b"
for row in ww cwd full; do
  case $row in
    ww) label="workspace-write" ;;
    cwd) label="only the cwd writable" ;;
    full) label="full access, no layer" ;;
  esac
  for stat in median mean p90 cpu; do
    if [[ $stat == cpu ]]; then  # mean CPU time per run (1 ms resolution per run)
      ma=$(awk '{ print ($1 + $2) * 1000000 }' "$row.a.cpu" | mean)
      mb=$(awk '{ print ($1 + $2) * 1000000 }' "$row.b.cpu" | mean)
    else
      ma=$($stat < "$row.a")
      mb=$($stat < "$row.b")
    fi
    printf '%-24s %-6s A %6s ms   B %6s ms   B/A %s\n' "$label:" "$stat" "$(ms "$ma")" \
           "$(ms "$mb")" "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }')"
  done
done
