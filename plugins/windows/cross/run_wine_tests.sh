#!/usr/bin/env bash
# Runs the cross-built Windows tests under Wine: run_wine_tests.sh <cross build dir>
# Exits 77 (ctest: skipped) with the reason when Wine is not installed; any test failure fails.
set -euo pipefail
out=$1
wine=""
for candidate in wine64 /usr/lib/wine/wine64 wine; do
  if command -v "$candidate" >/dev/null; then wine=$(command -v "$candidate"); break; fi
done
if [[ -z "$wine" ]]; then
  echo "SKIP: Wine is not installed (Debian package wine64), so the Windows tests cannot run" \
       "here; the cross build itself is checked by windows_cross_build"
  exit 77
fi
# A prefix of our own inside the build tree: no state in $HOME, nothing shared between runs.
export WINEPREFIX="$out/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cd "$out"
"$wine" "$out/sbx_windows_tests.exe" --gtest_color=no
