#!/usr/bin/env bash
# Exec overhead of the C API on a warm manager.
#
#   bench/capi_overhead.sh PREFIX [RUNS] [BENCH]
#
# PREFIX is an sbx install in trusted directories (e.g. /opt/sbx, or the test install
# /opt/sbx-test/<hash> that ctest stages as root); BENCH the sbx_bench_capi program (default:
# build/ci/tree/bin/sbx_bench_capi). Builds the bare bwrap argv of the workspace-write plan from
# `sbx debug bwrap` (its arguments up to the "--" before sbx-stage2, then /bin/true), exactly as
# bench/bwrap_overhead.sh does, and hands it to sbx_bench_capi, which times sbx_exec on one warm
# manager per backend against the bare runs, interleaved (see bench/capi_overhead.c).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${1:?usage: capi_overhead.sh PREFIX [RUNS] [BENCH]}"
runs="${2:-41}"
bench="${3:-$here/build/ci/tree/bin/sbx_bench_capi}"
sbx="$prefix/bin/sbx"
# The shortest libsbx.so* name: the SONAME link (a binding loads that one).
libsbx="$(find "$prefix"/lib* -maxdepth 2 -name 'libsbx.so*' | awk '{ print length, $0 }' |
          sort -n | head -n 1 | cut -d' ' -f2-)"
[[ -n "$libsbx" ]] || { echo "no libsbx.so* under $prefix" >&2; exit 1; }
work="$(mktemp -d /tmp/sbx-bench-XXXXXX)"
cd "$work"

plan_json="$("$sbx" --backends bwrap debug bwrap --preset workspace-write --cwd "$work" -- /bin/true)"
mapfile -t plan < <(sed -n '/"argv": \[/,/\]/p' <<< "$plan_json" |
                    sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p')
bare=()
for arg in "${plan[@]}"; do
  [[ "$arg" == "--" ]] && break
  bare+=("$arg")
done
bare+=(-- /bin/true)
[[ "${bare[0]}" == /* ]] || { echo "could not read the plan from '$sbx debug'" >&2; exit 1; }

# The bare runs create the plan's mount points for missing protected names on the host (sbx
# removes its own; nobody removes bare bwrap's): remove the empty ones this script made.
mapfile -t mount_points < <(python3 -c 'import json, sys
print("\n".join(json.load(sys.stdin)["host_paths"]["created"]))' <<< "$plan_json" | sed '/^$/d')
created=()
for point in "${mount_points[@]}"; do
  [[ -e "$point" ]] || created+=("$point")
done
# Empty directories (sbx before the file mask) and empty regular files (bwrap's own, since).
cleanup() {
  local point
  for point in "${created[@]}"; do
    if [[ -d "$point" && ! -L "$point" ]]; then
      rmdir "$point" 2>/dev/null || true
    elif [[ -f "$point" && ! -L "$point" && ! -s "$point" ]]; then
      rm -f "$point"
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The bench removes after each bare run the mount points that run made (see capi_overhead.c).
SBX_BENCH_BARE_MOUNT_POINTS="$(IFS=:; echo "${created[*]}")" \
  "$bench" "$libsbx" "$work" "$runs" "${bare[@]}"
