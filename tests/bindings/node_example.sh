#!/usr/bin/env bash
# ctest node.example: compiles bindings/node/examples/agent_loop.ts with tsc --strict against
# the installed package's index.d.ts and runs it with node against the installed libsbx (the
# package node.install put in place, imported by its name), then checks what each tool call told
# the model and what reached the disk.
# $1 node, $2 tsc, $3 bindings/node, $4 the installed package (.../node_modules/sbx-sandbox), $5
# a parent for the "outside" directory (not /tmp, which workspace-write leaves writable).
set -euo pipefail
node=$1 tsc=$2 binding=$3 package=$4 outside_parent=$5
work=$(mktemp -d)
mkdir -p "$outside_parent"
outside=$(mktemp -d "$outside_parent/example-XXXXXX")
trap 'rm -rf "$work" "$outside"' EXIT
mkdir -p "$work/ws" "$work/out"
modules=$(dirname "$package")
cat >"$work/tsconfig.json" <<JSON
{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs",
  "moduleResolution": "node", "types": [], "lib": ["es2020"], "outDir": "$work/out",
  "baseUrl": "$work", "paths": {"sbx-sandbox": ["$package/index.d.ts"]}},
 "files": ["$binding/examples/agent_loop.ts"]}
JSON
"$tsc" -p "$work/tsconfig.json"
NODE_PATH="$modules" "$node" "$work/out/agent_loop.js" "$work/ws" "$outside" >"$work/said" 2>&1 || {
  cat "$work/said"; echo "node_example: the example failed" >&2; exit 1; }
cat "$work/said"
said="$work/said" ws="$work/ws"
source "$(dirname "$0")/example_checks.sh"
