#!/usr/bin/env bash
# Runs the cross-built Windows host tests (core/cross/host.cmake) under Wine:
#   run_host_tests.sh <cross build dir>
# Exits 77 (ctest: skipped) with the reason when Wine is not installed; any failure fails.
# Wine keeps no real owners or ACLs: these runs prove the Win32 pipeline, not Windows' checks.
set -euo pipefail
out=$1
wine=""
for candidate in wine64 /usr/lib/wine/wine64 wine; do
  if command -v "$candidate" >/dev/null; then wine=$(command -v "$candidate"); break; fi
done
if [[ -z "$wine" ]]; then
  echo "SKIP: Wine is not installed (Debian package wine64), so the Windows host tests cannot" \
       "run here"
  exit 77
fi
exe="$out/sbx_host_windows_tests.exe"
[[ -f "$exe" ]] || { echo "run_host_tests: $exe was not built" >&2; exit 1; }
export WINEPREFIX="$out/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cd "$out"
"$wine" "$exe" --gtest_color=no
