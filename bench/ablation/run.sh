#!/usr/bin/env bash
# What each per-run safety step of a bwrap run costs, and what is left without all of them.
#
#   bench/ablation/run.sh ABLATED_SBX [RUNS]
#
# ABLATED_SBX is an sbx built with bench/ablation/ablation.patch applied (measurement only,
# never shipped: each X_NO* variable there switches one step off). Times, interleaved run by
# run in a fresh workspace with only the cwd writable: the bare bwrap of the same plan, the
# full sbx run, the run without each step, and without all of them; medians. Each variant is
# started the way bash starts any command (the variable is exported in the forked subshell
# that then execs sbx: no extra process). Every run starts in the workspace, so the command's
# PWD is its working directory and sbx takes the direct launch (sbx -> bwrap -> command), as
# for a shell user; with PWD elsewhere it takes stage 2, where most steps below do not apply.
set -euo pipefail
policy="$(cd "$(dirname "$0")/.." && pwd)/policies/cwd-only.json"
sbx="$1"
runs="${2:-41}"
work="$(mktemp -d /tmp/sbx-ablation-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir ws
# The bwrap argv the plan holds, up to the command, then /bin/true (as bwrap_overhead.sh).
mapfile -t bare < <("$sbx" --backends bwrap debug bwrap --policy "$policy" --cwd "$work/ws" \
                      -- /bin/true | sed -n '/"argv": \[/,/\]/p' |
                      sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p' | sed '/^--$/,$d')
bare+=(-- /bin/true)
steps=(X_NOPAUSE X_NONOTIFY X_NOSECCOMP X_NOSCOPE X_NOLIMITS X_NOSCAN)
all=$(IFS=+; echo "${steps[*]}")
variants=(bare full "${steps[@]}" "$all")
declare -A samples
for ((r = 0; r < runs; r++)); do
  for v in "${variants[@]}"; do
    t0=${EPOCHREALTIME/./}
    if [[ $v == bare ]]; then
      (cd ws && exec "${bare[@]}")
    else
      (
        [[ $v == full ]] || for step in ${v//+/ }; do export "$step=1"; done
        cd ws && exec "$sbx" --backends bwrap exec --policy "$policy" -- /bin/true
      )
    fi
    t1=${EPOCHREALTIME/./}
    samples[$v]+="$((t1 - t0)) "
    # bare bwrap leaves the mount points it made for missing names (sbx removes its own).
    [[ $v == bare ]] && rm -f ws/.git ws/.codex ws/.agents
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
full=$(median <<< "${samples[full]}")
echo "runs: $runs interleaved (medians), only the cwd writable"
for v in "${variants[@]}"; do
  m=$(median <<< "${samples[$v]}")
  label=$v
  [[ $v == "$all" ]] && label="all six off"
  printf '%-14s %6.2f ms   vs full %+6.2f ms\n' "$label" "$(awk -v t="$m" 'BEGIN{print t/1000}')" \
         "$(awk -v a="$m" -v b="$full" 'BEGIN{print (a-b)/1000}')"
done
