#!/usr/bin/env bash
# Where a bwrap run's time goes, phase by phase, from an sbx built with ablation.patch.
#
#   bench/ablation/phases.sh ABLATED_SBX [RUNS]
#
# Runs `sbx exec` (bwrap, only the cwd writable, /bin/true) RUNS times with X_TRACE=1 and prints
# for each trace point the median time since the previous one and since bash forked sbx.
set -euo pipefail
policy="$(cd "$(dirname "$0")/.." && pwd)/policies/cwd-only.json"
sbx="$1"
runs="${2:-31}"
work="$(mktemp -d /tmp/sbx-phases-XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/ws"
for ((r = 0; r < runs; r++)); do
  t0=$EPOCHREALTIME
  # From the workspace: PWD at the working directory, so the direct launch (bwrap -> command).
  (cd "$work/ws" && X_TRACE=1 exec "$sbx" --backends bwrap exec --policy "$policy" \
     -- /bin/true 2> "$work/trace.$r")
  t1=$EPOCHREALTIME
  { echo "XT $t0 bash forks sbx"; grep '^XT ' "$work/trace.$r"; echo "XT $t1 bash sees sbx exit"; } \
    > "$work/run.$r"
done
python3 - "$work" "$runs" <<'PY'
import statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
steps, order = {}, []
for r in range(runs):
    lines = [l.split(None, 2) for l in open(f"{work}/run.{r}")]
    start = prev = float(lines[0][1])
    for _, t, name in lines:
        t, name = float(t), name.strip()
        if name not in steps:
            steps[name] = []
            order.append(name)
        steps[name].append(((t - prev) * 1000, (t - start) * 1000))
        prev = t
print(f"runs: {runs} (medians; 'step' since the previous point, 'at' since bash forked sbx)")
for name in order:
    step = statistics.median(s for s, _ in steps[name])
    at = statistics.median(a for _, a in steps[name])
    print(f"{name:28s} step {step:6.3f} ms   at {at:6.3f} ms   (n={len(steps[name])})")
PY
