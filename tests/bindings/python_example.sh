#!/usr/bin/env bash
# ctest python.example: bindings/python/examples/agent_loop.py run with the venv's python (the
# installed package) against the installed libsbx, then checked like the Node example
# (example_checks.sh). $1 python, $2 bindings/python, $3 a parent for the "outside" directory
# (not /tmp, which workspace-write leaves writable).
set -euo pipefail
python=$1 binding=$2 outside_parent=$3
work=$(mktemp -d)
mkdir -p "$outside_parent" "$work/ws"
outside=$(mktemp -d "$outside_parent/example-XXXXXX")
trap 'rm -rf "$work" "$outside"' EXIT
"$python" "$binding/examples/agent_loop.py" "$work/ws" "$outside" >"$work/said" 2>&1 || {
  cat "$work/said"; echo "python_example: the example failed" >&2; exit 1; }
cat "$work/said"
said="$work/said" ws="$work/ws"
source "$(dirname "$0")/example_checks.sh"
