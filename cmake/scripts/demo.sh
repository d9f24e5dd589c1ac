#!/usr/bin/env bash
# The README's "main job": install what is missing, build, install sbx into a trusted prefix,
# probe the backends, then run a sandboxed demo that tries to write inside and outside its
# workspace. Prefix: $SBX_PREFIX, else /opt/sbx as root, else ~/.local/opt/sbx.
set -euo pipefail
cd "$(dirname "$0")/../.."

bash cmake/scripts/bootstrap-debian.sh
cmake --preset release >/dev/null
cmake --build --preset release

if [[ -n "${SBX_PREFIX:-}" ]]; then
  prefix=$SBX_PREFIX
elif [[ $(id -u) -eq 0 ]]; then
  prefix=/opt/sbx
else
  prefix=$HOME/.local/opt/sbx
fi
# The loader trusts plugins only in directories nobody else can write: install with umask 022.
(umask 022 && cmake --install build/release --prefix "$prefix" >/dev/null)
mapfile -t installed < build/release/install_manifest.txt
bash cmake/scripts/check_no_debug_info.sh "${installed[@]}"
sbx="$prefix/bin/sbx"
echo "== installed sbx $("$sbx" --version) into $prefix"

echo
echo "== sbx backends --probe"
"$sbx" backends --probe

workspace=$(mktemp -d)
outside="/var/tmp/sbx-demo-outside-$$"
trap 'rm -rf "$workspace" "$outside"' EXIT
echo
echo "== sbx explain --preset workspace-write --cwd $workspace"
"$sbx" explain --preset workspace-write --cwd "$workspace"

echo
echo "== sbx exec: write inside the workspace, then try to write outside it and reach the network"
set +e
"$sbx" exec --preset workspace-write --cwd "$workspace" -- /bin/bash -c "
  echo 'written inside the sandbox' > inside.txt && echo 'inside.txt: ok'
  if echo escape > '$outside' 2>/dev/null; then echo 'outside write: ALLOWED'; else echo 'outside write: denied'; fi
  if (exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null; then echo 'network: ALLOWED'; else echo 'network: denied'; fi
"
status=$?
set -e
echo "exit status: $status"
if [[ $status -eq 125 ]]; then
  echo "sbx refused to run the command unsandboxed: no backend is available here (see the probe above)."
  exit 0
fi
[[ -f "$workspace/inside.txt" ]] && echo "host sees $workspace/inside.txt: $(cat "$workspace/inside.txt")"
if [[ -e "$outside" ]]; then
  echo "FAIL: $outside exists on the host" >&2
  exit 1
fi
echo "host check: $outside was not created"
