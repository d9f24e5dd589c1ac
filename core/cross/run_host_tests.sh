#!/usr/bin/env bash
# Runs the cross-built Windows host tests (core/cross/host.cmake) under Wine:
#   run_host_tests.sh <cross build dir>
# Exits 77 (ctest: skipped) with the reason when Wine is not installed; any failure fails.
# Wine keeps no real owners or ACLs: these runs prove the Win32 pipeline, not Windows' checks.
set -euo pipefail
out=$1
source "$(dirname "$0")/../../plugins/windows/cross/wine_env.sh"
sbx_wine_env "$out" "the Windows host tests"
exe="$out/sbx_host_windows_tests.exe"
[[ -f "$exe" ]] || { echo "run_host_tests: $exe was not built" >&2; exit 1; }
cd "$out"
"$wine" "$exe" --gtest_color=no
