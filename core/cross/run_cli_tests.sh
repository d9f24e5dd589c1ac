#!/usr/bin/env bash
# Runs the cross-built sbx.exe (core/cross/cli.cmake) under Wine: run_cli_tests.sh <cross dir>
# Exits 77 (ctest: skipped) with the reason when Wine is not installed; any failure fails.
#
# sbx.exe and the windows backend are installed as a Windows install is laid out
# (C:\sbx-stage\bin\sbx.exe, C:\sbx-stage\lib\sbx\backends\sbx-backend-windows.dll) on the
# prefix's own C: drive, which lives in the build tree: the loader checks the owner and DACL of
# every directory from the drive root, and the build tree's parents (e.g. /tmp) may be
# writable by others. Wine keeps no real owners or ACLs and enforces no restricted tokens: this
# run proves the pipeline (layout, loading, probe, resolution, planning, running, the exit
# status), not Windows' enforcement.
set -euo pipefail
out=$1
source "$(dirname "$0")/../../plugins/windows/cross/wine_env.sh"
sbx_wine_env "$out" "sbx.exe"
for f in "$out/bin/sbx.exe" "$out/bin/sbx.dll" "$out/plugins/sbx-backend-windows.dll" \
         "$out/testbin/exit_with.exe" "$out/testbin/capi_smoke.exe"; do
  [[ -f "$f" ]] || { echo "run_cli_tests: $f was not built" >&2; exit 1; }
done
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# The prefix (and its C: drive) exists after the first run.
"$wine" "$out/bin/sbx.exe" --version >/dev/null
stage="$WINEPREFIX/drive_c/sbx-stage"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib/sbx/backends" "$stage/testbin/elsewhere" "$stage/work"
cp "$out/bin/sbx.exe" "$out/bin/sbx.dll" "$stage/bin/"
cp "$out/plugins/sbx-backend-windows.dll" "$stage/lib/sbx/backends/"
cp "$out/testbin/exit_with.exe" "$stage/testbin/"
# Two levels below the prefix: were the install found from the program instead of from
# sbx.dll, its plugin directory would be C:\sbx-stage\testbin\lib\sbx\backends (empty).
cp "$out/testbin/capi_smoke.exe" "$stage/testbin/elsewhere/"
sbx='C:\sbx-stage\bin\sbx.exe'
cd "$stage/work"  # the Windows cwd: C:\sbx-stage\work
run() { "$wine" "$sbx" "$@"; }

# --version
version=$(run --version | tr -d '\r')
[[ "$version" =~ ^sbx\ [0-9]+\.[0-9]+\.[0-9]+\ \(plugin\ ABI\ [0-9]+\.[0-9]+\)$ ]] &&
  ok "--version: $version" ||
  fail "--version printed '$version'"

# backends --probe --json: the windows backend is loaded from the trusted directory and
# answers its probe; nothing is rejected.
probe=$(run backends --probe --json | tr -d '\r')
if python3 - "$probe" <<'EOF'
import json, sys
report = json.loads(sys.argv[1])
windows = [b for b in report["backends"] if b["name"] == "windows"]
assert windows, "the windows backend is not listed: %s" % report
backend = windows[0]
assert backend["path"].lower() == "c:/sbx-stage/lib/sbx/backends/sbx-backend-windows.dll", backend["path"]
assert backend["abi"] == report["abi"], (backend["abi"], report["abi"])
assert "available" in backend and backend["summary"], backend
assert any(c["name"] == "restricted_token" for c in backend["checks"]), backend["checks"]
# Honest: what a restricted token cannot enforce is not claimed.
assert "network_block" not in backend["capabilities"], backend["capabilities"]
assert report["rejected"] == [], report["rejected"]
assert report["plugin_loading"]["mode"] == "path", report["plugin_loading"]
print("windows: available=%s, capabilities %s" % (backend["available"], backend["capabilities"]))
EOF
then ok "backends --probe --json"; else fail "backends --probe --json: $probe"; fi

# explain: both questions answered for a Windows cwd; no backend can take the default policy
# (it needs the dangerous-syscall filter, which the windows backend does not claim).
explain=$(run explain --network enabled | tr -d '\r')
if [[ "$explain" == *"policy (cwd C:/sbx-stage/work)"* &&
      "$explain" == *"C:/sbx-stage/work "*"read and write"* &&
      "$explain" == *"windows  cannot enforce what the policy needs here: syscall_filter"* ]]; then
  ok "explain"
else
  fail "explain: $explain"
fi

# debug windows: the plan of the windows backend, the command found with PATH and PATHEXT.
plan=$(run debug windows --network enabled -- cmd /c exit 3 | tr -d '\r')
if python3 - "$plan" <<'EOF'
import json, sys
plan = json.loads(sys.argv[1])
assert plan["backend"] == "windows", plan["backend"]
assert plan["argv"][0].lower() == "c:\\windows\\system32\\cmd.exe", plan["argv"]
assert plan["argv"][1:] == ["/c", "exit", "3"], plan["argv"]
EOF
then ok "debug windows"; else fail "debug windows: $plan"; fi

# exec: a policy that needs no sandbox runs the program, its output and exit status pass
# through (an argument with a space survives the command line).
set +e
output=$(run exec --preset danger-full-access -- 'C:\sbx-stage\testbin\exit_with.exe' 7 "two words")
status=$?
set -e
output=$(tr -d '\r' <<<"$output")
if [[ $status -eq 7 && "$output" == *"arg1=7"* && "$output" == *"arg2=two words"* ]]; then
  ok "exec: status 7 passed through"
else
  fail "exec: status $status, output '$output'"
fi

# exec of a policy that needs a sandbox nobody here can give: refused (125), never run.
set +e
refused=$(run exec --network enabled -- 'C:\sbx-stage\testbin\exit_with.exe' 0 2>&1)
status=$?
set -e
if [[ $status -eq 125 && "$refused" != *"arg1="* ]]; then
  ok "exec: a policy no backend can enforce is refused (125)"
else
  fail "exec of an unenforceable policy: status $status, output '$refused'"
fi

# policy import is not in sbx.exe: refused with the reason.
set +e
imported=$(run policy import --from codex x.toml 2>&1)
status=$?
set -e
if [[ $status -eq 125 && "$imported" == *"not available in sbx.exe"* ]]; then
  ok "policy import refused"
else
  fail "policy import: status $status, output '$imported'"
fi

# The C API (sbx.dll) from a C program in a directory of its own; Windows finds the DLL on
# PATH (WINEPATH), as a program that embeds libsbx would.
set +e
smoke=$(WINEPATH='C:\sbx-stage\bin' "$wine" 'C:\sbx-stage\testbin\elsewhere\capi_smoke.exe' \
          'C:\sbx-stage\testbin\exit_with.exe' 'C:\sbx-stage\work' 2>&1 | tr -d '\r')
status=$?
set -e
echo "$smoke" | sed 's/^/  capi: /'
if [[ $status -eq 0 && "$smoke" == *"capi_smoke: ok"* ]]; then
  ok "C API (sbx.dll): every capi_smoke check"
else
  fail "C API (sbx.dll): status $status"
fi

if ((failures > 0)); then
  echo "run_cli_tests: $failures check(s) failed" >&2
  exit 1
fi
echo "run_cli_tests: ok (wine proves the pipeline, not Windows' enforcement)"
