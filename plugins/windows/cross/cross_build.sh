#!/usr/bin/env bash
# Cross-builds the windows backend with mingw-w64 and checks the result:
#   cross_build.sh <source root> <build dir>
# (and libsbx's Windows host, sbx.exe and their tests: core/cross/host.cmake).
# Fails if the toolchain is missing, if anything warns (the build uses -Werror, and the log is
# checked for linker warnings too), if the module, the test program or sbx.exe is not PE32+, or
# if the module does not export sbx_plugin_entry_v2.
set -euo pipefail
src=$1
out=$2

if ! command -v x86_64-w64-mingw32-g++ >/dev/null; then
  echo "cross_build: x86_64-w64-mingw32-g++ not found: install Debian's mingw-w64" \
       "(cmake/scripts/bootstrap-debian.sh does)" >&2
  exit 1
fi

mkdir -p "$out"
cmake -S "$src/plugins/windows/cross" -B "$out" -G Ninja \
      -DCMAKE_TOOLCHAIN_FILE="$src/plugins/windows/cmake/mingw-w64-x86_64.cmake" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBX_WERROR=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" >"$out/configure.log" 2>&1 ||
  { cat "$out/configure.log" >&2; echo "cross_build: configure failed" >&2; exit 1; }

dll="$out/plugins/sbx-backend-windows.dll"
exe="$out/sbx_windows_tests.exe"
sbx_exe="$out/bin/sbx.exe"
# Compiler warnings cannot hide in old objects (-Werror fails them); removing the outputs
# forces the link steps to run again, so linker warnings show up in this log too.
rm -f "$dll" "$exe" "$sbx_exe"
set +e
cmake --build "$out" -j2 >"$out/build.log" 2>&1
rc=$?
set -e
cat "$out/build.log"
if ((rc != 0)); then echo "cross_build: build failed" >&2; exit 1; fi
if grep -qi "warning" "$out/build.log"; then
  echo "cross_build: the build printed warnings (see above)" >&2
  exit 1
fi

for f in "$dll" "$exe" "$sbx_exe"; do
  kind=$(x86_64-w64-mingw32-objdump -f "$f" | sed -n 's/.*file format //p')
  echo "cross_build: $f: $kind"
  [[ "$kind" == "pei-x86-64" ]] || { echo "cross_build: $f is not PE32+ x86-64" >&2; exit 1; }
  if command -v file >/dev/null; then file "$f"; fi
done
# The module exports its entry and nothing else (the loader looks up exactly this symbol).
exports=$(x86_64-w64-mingw32-objdump -p "$dll" |
          sed -n '/^\[Ordinal\/Name Pointer\] Table/,/^$/p' | sed -n 's/^\t\[ *[0-9]*\] //p')
echo "cross_build: exports: $exports"
[[ "$exports" == "sbx_plugin_entry_v2" ]] ||
  { echo "cross_build: expected only sbx_plugin_entry_v2 to be exported" >&2; exit 1; }
echo "cross_build: ok"
