# Sourced by the scripts that run cross-built programs under Wine (plugins/windows/cross/
# run_wine_tests.sh, core/cross/run_host_tests.sh, core/cross/run_cli_tests.sh):
#   sbx_wine_env <cross build dir> <what cannot run without Wine>
# Sets `wine` to the Wine loader and exports a prefix of our own inside the build tree (no
# state in $HOME, nothing shared with other builds), or exits 77 (ctest: skipped) saying why.
# The three tests share that prefix and hold ctest's RESOURCE_LOCK sbx_wine_prefix
# (tests/integration/windows), so a fresh prefix is never set up by two of them at once.
sbx_wine_env() {
  local out=$1 what=$2 candidate
  wine=""
  for candidate in wine64 /usr/lib/wine/wine64 wine; do
    if command -v "$candidate" >/dev/null; then wine=$(command -v "$candidate"); break; fi
  done
  if [[ -z "$wine" ]]; then
    echo "SKIP: Wine is not installed (Debian package wine64), so $what cannot run here"
    exit 77
  fi
  export WINEPREFIX="$out/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
}
