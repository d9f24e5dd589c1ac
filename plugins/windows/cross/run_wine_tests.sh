#!/usr/bin/env bash
# Runs the cross-built Windows tests under Wine: run_wine_tests.sh <cross build dir>
# Exits 77 (ctest: skipped) with the reason when Wine is not installed; any test failure fails.
set -euo pipefail
out=$1
source "$(dirname "$0")/wine_env.sh"
sbx_wine_env "$out" "the Windows tests (the cross build itself is checked by windows_cross_build)"
cd "$out"
"$wine" "$out/sbx_windows_tests.exe" --gtest_color=no
