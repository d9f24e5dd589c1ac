#!/usr/bin/env bash
# The packages, end to end (tests/package/CMakeLists.txt runs one STEP per ctest test):
#   build     cpack the build tree: a .deb and a .tar.gz
#   deb       the .deb's control fields and file list (Depends, FHS places, root-owned dirs)
#   tgz       the tarball holds the same tree, relocatable (sbx --version runs from it)
#   extract   dpkg -x the .deb into a private root (the steps below but `install` use it)
#   probe     `sbx backends --probe --json` from the extracted package
#   exec      a sandboxed write inside the workspace passes, one outside is denied
#   install   dpkg -i of the .deb (root only; skipped where an sbx is installed already), then
#             the same probe and exec checks from /usr, `man sbx`, and dpkg --purge
#   c         a C consumer built with `pkg-config --cflags --libs sbx` against the package
#   cxx       a C++ consumer built with find_package(sbx) against the package
#   node      bindings/node built standalone (what `npm install` runs) against the package, then
#             a sandboxed write inside the workspace through it
# usage: package_test.sh STEP BUILD_DIR WORK_DIR DEB_ROOT SOURCE_DIR
set -euo pipefail
step=$1 build=$2 work=$3 root=$4 source=$5
out="$work/out"
usr="$root/usr"
# Where the "outside" writes go: a directory this script can write, outside the workspace and
# outside /tmp and $TMPDIR, which the workspace-write preset leaves writable (the build tree
# itself may be under /tmp, e.g. a clone there). Next to the extracted package, under the
# test prefix.
denied="$root-outside"

fail() { echo "FAIL: $*" >&2; exit 1; }
deb_file() {
  local f
  f=$(ls "$out"/sbx_*.deb 2>/dev/null | head -n1) || true
  [[ -n "$f" ]] || fail "no .deb in $out (did package.build pass?)"
  echo "$f"
}

# The probe of the sbx under $1 (a /usr tree) loads bwrap and landlock from that tree, rejects
# nothing, and at least one of them is available.
probe_check() {
  local usr=$1
  json=$("$usr/bin/sbx" backends --probe --json)
  echo "$json"
  python3 - "$json" "$usr" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
usr = sys.argv[2]
names = {b["name"]: b for b in report["backends"]}
if report["rejected"]:
    sys.exit(f"FAIL: plugins rejected: {report['rejected']}")
for name in ("bwrap", "landlock"):
    if name not in names:
        sys.exit(f"FAIL: {name} not loaded from the package")
    if not names[name].get("path", usr).startswith(usr):
        sys.exit(f"FAIL: {name} loaded from {names[name]['path']}, not the package")
available = [n for n, b in names.items() if b.get("available")]
print("available:", available)
if "bwrap" not in available and "landlock" not in available:
    sys.exit("FAIL: no Linux backend is available from the package")
PY
}
# Through the sbx under $1: a sandboxed write inside the workspace passes, one outside is denied
# by the sandbox. $2 names the work subdirectory.
exec_check() {
  local usr=$1 ws="$work/$2-ws" outside="$denied/$2" code
  rm -rf "$ws" "$outside" && mkdir -p "$ws" "$outside"
  "$usr/bin/sbx" exec --preset workspace-write --sandbox require --cwd "$ws" -- \
      sh -c 'echo hello > inside.txt'
  [[ "$(cat "$ws/inside.txt")" == hello ]] || fail "the write inside the workspace did not pass"
  set +e
  "$usr/bin/sbx" exec --preset workspace-write --sandbox require --cwd "$ws" -- \
      sh -c "echo x > '$outside/denied.txt'" 2>"$work/$2-stderr"
  code=$?
  set -e
  cat "$work/$2-stderr"
  [[ $code -ne 0 && ! -e "$outside/denied.txt" ]] || fail "the write outside was not denied"
  grep -q "Read-only file system\|Permission denied" "$work/$2-stderr" ||
    fail "the refusal is not the sandbox's"
}

case "$step" in
build)
  rm -rf "$out"
  mkdir -p "$out"
  cpack --config "$build/CPackConfig.cmake" -B "$out" -G "DEB;TGZ"
  ls -l "$out"/sbx_*.deb "$out"/sbx-*.tar.gz
  ;;
deb)
  deb=$(deb_file)
  depends=$(dpkg-deb -f "$deb" Depends)
  echo "Depends: $depends"
  for needed in bubblewrap libc6 libstdc++6 libboost-json; do
    [[ ", $depends" == *", $needed"* ]] || fail "Depends does not name $needed"
  done
  # Every declared dependency (versions and virtual packages included) is satisfied on this
  # machine, as dpkg -i would check: dpkg-checkbuilddeps evaluates a Depends-style list.
  printf 'Source: sbx-depends-check\n\nPackage: sbx-depends-check\nArchitecture: any\n' \
    >"$work/control"
  dpkg-checkbuilddeps -d "$depends" "$work/control" || fail "Depends is not satisfied here"
  # libsbx enters the dynamic linker's cache on install (ctypes.util.find_library finds it).
  # (CPack writes it as a postinst running ldconfig, or as an ldconfig trigger.)
  { dpkg-deb -I "$deb" postinst 2>/dev/null; dpkg-deb -I "$deb" triggers 2>/dev/null || true; } |
    grep -q 'ldconfig' || fail "the .deb does not run ldconfig on install"
  dpkg-deb -I "$deb" shlibs | grep -q '^libsbx ' || fail "no shlibs entry for libsbx"
  listing=$(dpkg-deb -c "$deb")
  echo "$listing"
  # Owned by root, nothing (but symbolic links) group- or world-writable.
  if echo "$listing" | awk '$2 != "root/root" {exit 1}'; then :; else
    fail "a file in the .deb is not owned by root/root"
  fi
  if echo "$listing" | awk '$1 !~ /^l/ && (substr($1,6,1) == "w" || substr($1,9,1) == "w") {exit 1}'; then :; else
    fail "a file in the .deb is group- or world-writable"
  fi
  for path in ./usr/bin/sbx ./usr/lib/sbx/backends/ ./usr/lib/sbx/backends/sbx-backend-bwrap.so \
              ./usr/lib/sbx/backends/sbx-backend-landlock.so ./usr/libexec/sbx/sbx-stage2 \
              ./usr/include/sbx/sbx.h ./usr/include/sbx/core/policy.hpp \
              ./usr/include/sbx/sdk/abi.h ./usr/lib/pkgconfig/sbx.pc \
              ./usr/lib/cmake/sbx/sbx-config.cmake ./usr/lib/cmake/sbx-sdk/sbx-sdk-config.cmake \
              ./usr/share/doc/sbx/LICENSE; do
    echo "$listing" | awk '{print $6}' | grep -qx -- "$path" || fail "the .deb lacks $path"
  done
  echo "$listing" | grep -E ' \./usr/lib/sbx/backends/$' | grep -q '^drwxr-xr-x root/root' ||
    fail "the plugin directory is not drwxr-xr-x root/root"
  echo "$listing" | grep -E ' \./usr/lib/libsbx\.so\.[0-9.]+$' >/dev/null ||
    fail "the .deb lacks the versioned libsbx"
  ;;
tgz)
  tgz=$(ls "$out"/sbx-*.tar.gz | head -n1)
  rm -rf "$work/tgz" && mkdir -p "$work/tgz"
  tar -C "$work/tgz" -xzf "$tgz"
  top=$(ls -d "$work/tgz"/sbx-*)
  for path in bin/sbx lib/sbx/backends/sbx-backend-bwrap.so libexec/sbx/sbx-stage2 \
              include/sbx/sbx.h lib/pkgconfig/sbx.pc lib/cmake/sbx/sbx-config.cmake; do
    [[ -e "$top/$path" ]] || fail "the tarball lacks $path"
  done
  version=$("$top/bin/sbx" --version)
  echo "$version"
  [[ "$version" == *"$(dpkg-deb -f "$(deb_file)" Version)"* ]] || fail "sbx --version: $version"
  # sbx.pc finds its prefix from its own place, and links programs with an rpath to it.
  libs=$(PKG_CONFIG_PATH="$top/lib/pkgconfig" pkg-config --libs sbx | sed 's/ *$//')
  lib="$top/lib/pkgconfig/../../lib"
  [[ "$libs" == "-L$lib -Wl,-rpath,$lib -lsbx" ]] || fail "pkg-config --libs sbx: $libs"
  ;;
extract)
  rm -rf "$root"
  # The plugin loader trusts only directory chains nobody but root can write: 0755 all the way.
  mkdir -p "$root" && chmod 0755 "$root"
  dpkg -x "$(deb_file)" "$root"
  chmod 0755 "$root"  # dpkg -x applies the archive's "./" entry to the root itself
  stat -c '%A %U %n' "$usr/lib/sbx/backends" "$usr/lib/sbx/backends"/*
  ;;
probe)
  probe_check "$usr"
  ;;
exec)
  exec_check "$usr" exec
  ;;
install)
  # A real installation: dpkg itself refuses the package if a declared dependency is missing.
  # Only as root, only where no sbx is installed already (never replace the machine's own), and
  # purged again whatever happens.
  [[ $(id -u) -eq 0 ]] || { echo "SKIPPED: dpkg -i needs root"; exit 0; }
  deb=$(deb_file)
  package=$(dpkg-deb -f "$deb" Package)
  if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" == installed ]]; then
    echo "SKIPPED: package $package is already installed here; not replacing it"
    exit 0
  fi
  [[ ! -e /usr/bin/sbx ]] || { echo "SKIPPED: /usr/bin/sbx exists and is not packaged; not overwriting it"; exit 0; }
  trap 'dpkg --purge "$package" >/dev/null 2>&1 || true' EXIT
  dpkg -i "$deb"
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$package")" == installed ]] ||
    fail "dpkg did not leave $package installed"
  [[ "$(stat -c '%U:%G %a' /usr/lib/sbx/backends)" == "root:root 755" ]] ||
    fail "the installed plugin directory is not root-owned 0755"
  probe_check /usr
  exec_check /usr installed
  man -w sbx >/dev/null || fail "man sbx finds no page after the install"
  dpkg --purge "$package"
  trap - EXIT
  [[ ! -e /usr/bin/sbx && ! -e /usr/lib/sbx ]] || fail "purging $package left files behind"
  ;;
c)
  rm -rf "$work/c" && mkdir -p "$work/c/ws"
  # The .deb's sbx.pc names /usr, where dpkg -i puts it; the extracted root is its sysroot.
  export PKG_CONFIG_PATH="$usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
  flags=$(pkg-config --cflags --libs sbx)
  echo "pkg-config --cflags --libs sbx: $flags"
  libdir=$(pkg-config --variable=libdir sbx)
  # shellcheck disable=SC2086
  cc -std=c99 -Wall -Wextra -Werror -o "$work/c/consumer" "$source/tests/package/consumer_c/consumer.c" \
     $flags -Wl,-rpath,"$libdir"
  mkdir -p "$denied" && rm -f "$denied/c.txt"
  "$work/c/consumer" "$work/c/ws" "$denied/c.txt"
  ;;
cxx)
  rm -rf "$work/cxx" && mkdir -p "$work/cxx/ws"
  cmake -S "$source/tests/package/consumer_cxx" -B "$work/cxx/build" -G Ninja \
        -DCMAKE_PREFIX_PATH="$usr" -DCMAKE_BUILD_RPATH="$usr/lib" -DCMAKE_CXX_STANDARD=20
  cmake --build "$work/cxx/build"
  # The library that ran is the package's.
  ldd "$work/cxx/build/consumer_cxx" | grep -F "$usr/lib/libsbx.so" ||
    fail "consumer_cxx is not linked to the package's libsbx"
  mkdir -p "$denied" && rm -f "$denied/cxx.txt"
  "$work/cxx/build/consumer_cxx" "$work/cxx/ws" "$denied/cxx.txt"
  ;;
node)
  command -v node >/dev/null || { echo "SKIPPED: node is not installed"; exit 0; }
  rm -rf "$work/node" && mkdir -p "$work/node/ws"
  cmake -S "$source/bindings/node" -B "$work/node/build" -G Ninja -DCMAKE_PREFIX_PATH="$usr" \
        -DCMAKE_BUILD_TYPE=Release
  cmake --build "$work/node/build"
  [[ -f "$work/node/build/sbx.node" ]] || { echo "SKIPPED: no Node-API headers here"; exit 0; }
  SBX_NODE_ADDON="$work/node/build/sbx.node" node -e '
    const sbx = require(process.argv[1]);
    const fs = require("fs");
    const ws = process.argv[2];
    new sbx.Sbx().exec({version: 1, preset: "workspace-write"},
                       ["sh", "-c", "echo hi > from-node.txt"], {cwd: ws, preference: "require"})
      .then((r) => {
        console.log(JSON.stringify(r));
        if (r.exit.code !== 0 || fs.readFileSync(ws + "/from-node.txt", "utf8") !== "hi\n")
          process.exit(1);
      }, (e) => { console.error(e); process.exit(1); });' "$source/bindings/node" "$work/node/ws"
  ldd "$work/node/build/sbx.node" | grep -F "$usr/lib/libsbx.so" ||
    fail "the standalone addon is not linked to the package's libsbx"
  ;;
*)
  fail "unknown step $step"
  ;;
esac
echo "ok $step"
