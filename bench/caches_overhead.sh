#!/usr/bin/env bash
# What the toolchain-cache entry (":caches", --caches) costs a run that touches no cache:
# `sbx exec -- /bin/true` with only the cwd writable, without and with --caches, on bwrap and on
# Landlock, the two alternating run by run (the order swapped every round). Prints per backend
# the medians, the difference and the ratio (issue #40's target: +0.5 ms at most). bwrap takes
# the direct launch without --caches; with it, where its probe passes cache_overlay, the
# stage-2 launch with one overlay per cache directory the caller's home has (~/.cache always),
# each unmounted (the upper filesystem synced) when the run ends.
#
#   bench/caches_overhead.sh SBX [RUNS]
#
# The runs use the caller's HOME (run it with HOME=an empty private directory for the case of a
# home with no cache but ~/.cache): the project's cache of the scratch workspace is made there
# (by the first run with --caches) and removed at the end (`sbx cache clear --project`).
set -euo pipefail
sbx="$1"
runs="${2:-41}"
work="$(mktemp -d /tmp/sbx-caches-XXXXXX)"
mkdir "$work/ws"
# No protected names: Landlock refuses them, and both backends run the same policy.
cat > "$work/cwd-only.json" <<'JSON'
{"version": 1, "filesystem": {"kind": "restricted", "protected_names": [], "entries": [
  {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
 "network": {"mode": "restricted"}}
JSON
cleanup() {
  (cd "$work/ws" && "$sbx" cache clear --project "$work/ws" > /dev/null) || true
  rm -rf "$work"
}
trap cleanup EXIT
one() {  # BACKEND OUT_FILE [--caches]
  local backend="$1" out="$2" t0 t1
  shift 2
  t0=${EPOCHREALTIME/./}
  # Started in the workspace with PWD there: bwrap takes the direct launch.
  (cd "$work/ws" && exec "$sbx" --backends "$backend" exec --policy "$work/cwd-only.json" "$@" \
    -- /bin/true)
  t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >> "$out"
}
backends=()
for backend in bwrap landlock; do
  if one "$backend" /dev/null --caches 2> /dev/null && one "$backend" /dev/null 2> /dev/null; then
    backends+=("$backend")
  else
    echo "$backend: cannot run the policy here, left out" >&2
  fi
done
cd "$work"
for ((i = 0; i < runs; i++)); do
  for backend in "${backends[@]}"; do
    if ((i % 2)); then
      one "$backend" "$backend.with" --caches
      one "$backend" "$backend.without"
    else
      one "$backend" "$backend.without"
      one "$backend" "$backend.with" --caches
    fi
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { awk -v t="$1" 'BEGIN { printf "%.2f", t / 1000 }'; }
echo "runs: $runs alternating; sbx = $sbx; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for backend in "${backends[@]}"; do
  without=$(median < "$backend.without")
  with=$(median < "$backend.with")
  printf '%-9s without %6s ms   with --caches %6s ms   +%s ms   %s\n' "$backend:" \
         "$(ms "$without")" "$(ms "$with")" "$(ms $((with - without)))" \
         "$(awk -v a="$without" -v b="$with" 'BEGIN { printf "%.3fx", b / a }')"
done
