#!/usr/bin/env bash
# The packages, end to end (tests/package/CMakeLists.txt runs one STEP per ctest test):
#   build     cpack the build tree: four .debs (sbx, libsbx<soversion>, libsbx-dev, sbx-sdk) and
#             a .tar.gz
#   deb       the .debs' control fields and file lists (Depends, shlibs and the ldconfig
#             trigger, FHS places with the multiarch libdir, which file in which package,
#             root-owned dirs)
#   lintian   lintian reports no error and no warning (skipped, with the reason, without lintian)
#   tgz       the tarball holds the same tree, relocatable (sbx --version runs from it)
#   extract   dpkg -x the .deb into a private root (the steps below but `install` use it)
#   probe     `sbx backends --probe --json` from the extracted package
#   exec      a sandboxed write inside the workspace passes, one outside is denied
#   install   dpkg -i of the .debs (root only; skipped where an sbx is installed already), then
#             the same probe and exec checks from /usr, `man sbx`, the README's snippet through
#             pkg-config and CMake (prefix_test.sh system), the Python and Node bindings finding
#             libsbx with nothing set, dpkg --purge, and nothing left
#   c         a C consumer built with `pkg-config --cflags --libs sbx` against the package
#   cxx       a C++ consumer built with find_package(sbx) against the package
#   python    the Python binding (bindings/python/src) finding the package's libsbx in its
#             prefix (sbx.find_library(prefix)), then a sandboxed write inside the workspace
#   node      the Node package (npm-installed by ctest node.install) loading the package's libsbx
#             (SBX_LIBRARY), then a sandboxed write inside the workspace through it
# usage: package_test.sh STEP BUILD_DIR WORK_DIR DEB_ROOT SOURCE_DIR LIBDIR
set -euo pipefail
step=$1 build=$2 work=$3 root=$4 source=$5 libdir=$6
out="$work/out"
usr="$root/usr"
# Where the "outside" writes go: a directory this script can write, outside the workspace and
# outside /tmp and $TMPDIR, which the workspace-write preset leaves writable (the build tree
# itself may be under /tmp, e.g. a clone there). Next to the extracted package, under the
# test prefix.
denied="$root-outside"

fail() { echo "FAIL: $*" >&2; exit 1; }
# The .deb of binary package $1 (default sbx).
deb_file() {
  local f
  f=$(ls "$out/${1:-sbx}"_*.deb 2>/dev/null | head -n1) || true
  [[ -n "$f" ]] || fail "no ${1:-sbx} .deb in $out (did package.build pass?)"
  echo "$f"
}
# Every binary package, in dependency order.
packages() { echo "$(library_package) sbx-sdk libsbx-dev sbx"; }
library_package() {
  local f
  f=$(ls "$out"/libsbx[0-9]*_*.deb 2>/dev/null | head -n1) || true
  [[ -n "$f" ]] || fail "no libsbx<soversion> .deb in $out"
  dpkg-deb -f "$f" Package
}
all_debs() { local p; for p in $(packages); do deb_file "$p"; done; }

# A vendor's plugin package depending on the plugin ABI (sdk/README.md, "Versions"), installed
# after the packages: accepted when it asks for this ABI or an older minor, refused (dpkg's own
# dependency check) when it asks for a newer minor. Removed again.
vendor_check() {
  local major minor dir
  major=$(sed -n 's/^#define SBX_ABI_MAJOR \([0-9]*\)$/\1/p' "$source/sdk/include/sbx/sdk/abi.h")
  minor=$(sed -n 's/^#define SBX_ABI_MINOR \([0-9]*\)$/\1/p' "$source/sdk/include/sbx/sdk/abi.h")
  for depends in "sbx-plugin-abi-$major (>= $major.$minor)" "sbx-plugin-abi-$major.0" \
                 "sbx-plugin-abi-$major (>= $major.$((minor + 1)))"; do
    dir="$work/vendor" && rm -rf "$dir" && mkdir -p "$dir/DEBIAN"
    printf '%s\n' "Package: sbx-test-vendor-plugin" "Version: 1.0" "Architecture: all" \
      "Maintainer: sbx tests <tests@invalid>" "Depends: $depends" \
      "Description: a vendor plugin's package (test)" >"$dir/DEBIAN/control"
    dpkg-deb --root-owner-group --build "$dir" "$work/vendor.deb" >/dev/null
    if dpkg -i "$work/vendor.deb"; then
      [[ "$depends" != *"$((minor + 1)))" ]] || fail "dpkg installed a plugin needing $depends"
      echo "a vendor package with Depends: $depends installs"
    else
      [[ "$depends" == *"$((minor + 1)))" ]] || fail "dpkg refused a plugin needing $depends"
      echo "a vendor package with Depends: $depends is refused"
    fi
    dpkg --purge sbx-test-vendor-plugin >/dev/null
  done
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
# The Python binding (from the source tree: pure Python) loads libsbx and runs a sandboxed write
# inside a fresh workspace; prints the libsbx file the process mapped. $1: the prefix to find
# libsbx in (sbx.find_library(prefix)), or "" for find_library()'s own search; $2 names the work
# subdirectory.
python_run() {
  local ws="$work/$2-python-ws"
  rm -rf "$ws" && mkdir -p "$ws"
  env -u SBX_LIBRARY -u SBX_PREFIX PYTHONPATH="$source/bindings/python/src" \
    python3 - "$1" "$ws" <<'PY'
import sys
import sbx
prefix, ws = sys.argv[1], sys.argv[2]
with sbx.Sbx(sbx.find_library(prefix or None)) as s:
    report = s.exec({"version": 1, "preset": "workspace-write"},
                    ["sh", "-c", "echo hi > from-python.txt"], cwd=ws, preference="require")
print(report, file=sys.stderr)
if report["exit"]["code"] != 0 or open(ws + "/from-python.txt").read() != "hi\n":
    sys.exit("FAIL: the sandboxed write through the Python binding did not pass")
maps = open("/proc/self/maps").read().splitlines()
print(next(l[l.index("/"):] for l in maps if l.split("/")[-1].startswith("libsbx.so")))
PY
}
# The Node package ($SBX_NODE_PACKAGE, as ctest node.install put it) loads libsbx (by its
# SONAME through the dynamic linker, or the file $SBX_LIBRARY names) and runs a sandboxed write
# inside a fresh workspace; prints the libsbx file the process mapped. $1 names the work
# subdirectory.
node_run() {
  local ws="$work/$1-node-ws"
  rm -rf "$ws" && mkdir -p "$ws"
  node -e '
    const sbx = require(process.argv[1]);
    const fs = require("fs");
    const ws = process.argv[2];
    new sbx.Sbx().exec({version: 1, preset: "workspace-write"},
                       ["sh", "-c", "echo hi > from-node.txt"], {cwd: ws, preference: "require"})
      .then((r) => {
        console.error(JSON.stringify(r));
        if (r.exit.code !== 0 || fs.readFileSync(ws + "/from-node.txt", "utf8") !== "hi\n")
          process.exit(1);
        const maps = fs.readFileSync("/proc/self/maps", "utf8").split("\n");
        const line = maps.find((l) => /\/libsbx\.so[.\d]*$/.test(l));
        console.log(line.slice(line.indexOf("/")));
      }, (e) => { console.error(e); process.exit(1); });' "$SBX_NODE_PACKAGE" "$ws"
}
# Whether the Node package ctest node.install makes is there to test; says why not.
node_package_ready() {
  command -v node >/dev/null || { echo "node is not installed"; return 1; }
  [[ -n "${SBX_NODE_PACKAGE:-}" && -f "$SBX_NODE_PACKAGE/index.js" ]] ||
    { echo "no installed Node package at '${SBX_NODE_PACKAGE:-}' (ctest node.install makes it)"; return 1; }
}

case "$step" in
build)
  rm -rf "$out"
  mkdir -p "$out"
  cpack --config "$build/CPackConfig.cmake" -B "$out" -G "DEB;TGZ"
  ls -l "$out"/sbx_*.deb "$out"/sbx-*.tar.gz
  ;;
deb)
  # Libraries, plugins, sbx.pc and the CMake packages in Debian's multiarch directory, as a
  # distribution's packaging build puts them (and lintian wants sbx.pc:
  # pkg-config-unavailable-for-cross-compilation).
  triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  [[ "$libdir" == "lib/$triplet" ]] ||
    fail "the .debs install to /usr/$libdir, not /usr/lib/$triplet: configure with" \
         "-DSBX_MULTIARCH_LIBDIR=ON (the ci and dev presets do) or -DCMAKE_INSTALL_PREFIX=/usr"
  lib=$(library_package)
  # Debian policy 8.1: the library's package is named after its SONAME.
  rm -rf "$work/lib" && mkdir -p "$work/lib" && dpkg -x "$(deb_file "$lib")" "$work/lib"
  soname=$(readelf -d "$work/lib/usr/$libdir"/libsbx.so.*.*.* |
           sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [[ "$lib" == "$(echo "$soname" | sed -E 's/^lib(.*)\.so\.(.*)$/lib\1\2/')" ]] ||
    fail "package $lib does not match the SONAME $soname"
  printf 'Source: sbx-depends-check\n\nPackage: sbx-depends-check\nArchitecture: any\n' \
    >"$work/control"
  check_depends() {  # package, then the names its Depends must list
    local depends needed
    depends=$(dpkg-deb -f "$(deb_file "$1")" Depends)
    echo "$1 Depends: $depends"
    for needed in "${@:2}"; do
      [[ ", $depends" == *", $needed"* ]] || fail "$1: Depends does not name $needed"
    done
    # Every declared dependency not built here is satisfied on this machine, as dpkg -i checks.
    depends=$(echo "$depends" | tr ',' '\n' | { grep -v -E '^ *(sbx|sbx-sdk|libsbx[^ ]*) ' || true; } |
              paste -sd,)
    [[ -z "$depends" ]] || dpkg-checkbuilddeps -d "$depends" "$work/control" ||
      fail "$1: Depends is not satisfied here"
  }
  check_depends sbx bubblewrap libc6
  check_depends "$lib" libc6 libstdc++6 libboost-json
  check_depends libsbx-dev "$lib (= " "sbx-sdk (= "
  # The plugin ABI as virtual packages (issue #39 pt 3): a vendor's plugin package depends on
  # sbx-plugin-abi-MAJOR (>= MAJOR.MINOR) or sbx-plugin-abi-MAJOR.MINOR; both packages that load
  # plugins provide it, at the version of abi.h, and every minor they load.
  abi_major=$(sed -n 's/^#define SBX_ABI_MAJOR \([0-9]*\)$/\1/p' "$source/sdk/include/sbx/sdk/abi.h")
  abi_minor=$(sed -n 's/^#define SBX_ABI_MINOR \([0-9]*\)$/\1/p' "$source/sdk/include/sbx/sdk/abi.h")
  [[ -n "$abi_major" && -n "$abi_minor" ]] || fail "no SBX_ABI_MAJOR/MINOR in abi.h"
  for p in sbx "$lib"; do
    provides=$(dpkg-deb -f "$(deb_file "$p")" Provides)
    echo "$p Provides: $provides"
    [[ ", $provides," == *", sbx-plugin-abi-$abi_major (= $abi_major.$abi_minor),"* ]] ||
      fail "$p: Provides lacks sbx-plugin-abi-$abi_major (= $abi_major.$abi_minor)"
    for ((m = 0; m <= abi_minor; m++)); do
      [[ ", $provides," == *", sbx-plugin-abi-$abi_major.$m,"* ]] ||
        fail "$p: Provides lacks sbx-plugin-abi-$abi_major.$m"
    done
  done
  # libsbx enters the dynamic linker's cache through the ldconfig trigger (policy 8.1.1), not
  # through maintainer scripts; its shlibs entry names the package.
  dpkg-deb -I "$(deb_file "$lib")" triggers | grep -qx 'activate-noawait ldconfig' ||
    fail "$lib has no ldconfig trigger"
  ! dpkg-deb -I "$(deb_file "$lib")" postinst >/dev/null 2>&1 || fail "$lib has a postinst"
  dpkg-deb -I "$(deb_file "$lib")" shlibs | grep -q "^libsbx .* $lib " ||
    fail "no shlibs entry for libsbx naming $lib"
  # Which file in which package.
  for p in $(packages); do
    listing=$(dpkg-deb -c "$(deb_file "$p")")
    echo "== $p"
    echo "$listing"
    # Owned by root, nothing (but symbolic links) group- or world-writable.
    if echo "$listing" | awk '$2 != "root/root" {exit 1}'; then :; else
      fail "a file in $p is not owned by root/root"
    fi
    if echo "$listing" | awk '$1 !~ /^l/ && (substr($1,6,1) == "w" || substr($1,9,1) == "w") {exit 1}'; then :; else
      fail "a file in $p is group- or world-writable"
    fi
    case $p in
    sbx) want="./usr/bin/sbx ./usr/$libdir/sbx/backends/ ./usr/$libdir/sbx/backends/sbx-backend-bwrap.so
               ./usr/$libdir/sbx/backends/sbx-backend-landlock.so ./usr/libexec/sbx/sbx-stage2
               ./usr/libexec/sbx/sbx-verify-attack
               ./usr/share/man/man1/sbx.1.gz ./usr/share/man/man1/sbx-exec.1.gz
               ./usr/share/bash-completion/completions/sbx" ;;
    libsbx-dev) want="./usr/include/sbx/sbx.h ./usr/include/sbx/core/policy.hpp
               ./usr/$libdir/libsbx.so ./usr/$libdir/pkgconfig/sbx.pc
               ./usr/$libdir/cmake/sbx/sbx-config.cmake" ;;
    sbx-sdk) want="./usr/include/sbx/sdk/abi.h ./usr/$libdir/cmake/sbx-sdk/sbx-sdk-config.cmake" ;;
    *) want="./usr/$libdir/$soname" ;;
    esac
    for path in $want ./usr/share/doc/$p/copyright ./usr/share/doc/$p/changelog.gz; do
      echo "$listing" | awk '{print $6}' | grep -qx -- "$path" || fail "$p lacks $path"
    done
    ! echo "$listing" | grep -E '/man/man[0-9]/[^ ]*\.[0-9]$' || fail "$p has uncompressed man pages"
  done
  echo "$(dpkg-deb -c "$(deb_file sbx)")" | grep -E " \./usr/$libdir/sbx/backends/\$" |
    grep -q '^drwxr-xr-x root/root' || fail "the plugin directory is not drwxr-xr-x root/root"
  ;;
lintian)
  command -v lintian >/dev/null ||
    { echo "SKIPPED: lintian is not installed (apt-get install lintian)"; exit 0; }
  # shellcheck disable=SC2046
  report=$(lintian --fail-on none $(all_debs) 2>&1 | { grep -v '^running with root privileges' || true; })
  echo "$report"
  tags=$(echo "$report" | grep -E '^[EW]: ' || true)
  [[ -z "$tags" ]] || fail "lintian reports errors or warnings:
$tags"
  ;;
tgz)
  tgz=$(ls "$out"/sbx-*.tar.gz | head -n1)
  rm -rf "$work/tgz" && mkdir -p "$work/tgz"
  tar -C "$work/tgz" -xzf "$tgz"
  top=$(ls -d "$work/tgz"/sbx-*)
  for path in bin/sbx "$libdir/sbx/backends/sbx-backend-bwrap.so" libexec/sbx/sbx-stage2 \
              include/sbx/sbx.h "$libdir/pkgconfig/sbx.pc" "$libdir/cmake/sbx/sbx-config.cmake"; do
    [[ -e "$top/$path" ]] || fail "the tarball lacks $path"
  done
  version=$("$top/bin/sbx" --version)
  echo "$version"
  [[ "$version" == *"$(dpkg-deb -f "$(deb_file sbx)" Version)"* ]] || fail "sbx --version: $version"
  # sbx.pc finds its prefix from its own place, and links programs with an rpath to it.
  libs=$(PKG_CONFIG_PATH="$top/$libdir/pkgconfig" pkg-config --libs sbx | sed 's/ *$//')
  lib="$top/$libdir/pkgconfig/$(echo "$libdir/pkgconfig" | sed -E 's#[^/]+#..#g')/$libdir"
  [[ "$libs" == "-L$lib -Wl,-rpath,$lib -lsbx" ]] || fail "pkg-config --libs sbx: $libs"
  ;;
extract)
  rm -rf "$root"
  # The plugin loader trusts only directory chains nobody but root can write: 0755 all the way.
  mkdir -p "$root" && chmod 0755 "$root"
  for deb in $(all_debs); do dpkg -x "$deb" "$root"; done
  chmod 0755 "$root"  # dpkg -x applies the archive's "./" entry to the root itself
  stat -c '%A %U %n' "$usr/$libdir/sbx/backends" "$usr/$libdir/sbx/backends"/*
  ;;
probe)
  probe_check "$usr"
  ;;
exec)
  exec_check "$usr" exec
  ;;
install)
  # A real installation: dpkg itself refuses a package if a declared dependency is missing.
  # Only as root, only where no sbx is installed already (never replace the machine's own), and
  # purged again whatever happens.
  [[ $(id -u) -eq 0 ]] || { echo "SKIPPED: dpkg -i needs root"; exit 0; }
  read -r -a pkgs <<<"$(packages)"
  for package in "${pkgs[@]}"; do
    if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" == installed ]]; then
      echo "SKIPPED: package $package is already installed here; not replacing it"
      exit 0
    fi
  done
  for path in /usr/bin/sbx /usr/include/sbx "/usr/$libdir/sbx"; do
    [[ ! -e $path ]] || { echo "SKIPPED: $path exists and is not packaged; not overwriting it"; exit 0; }
  done
  # Every file the packages hold (not the directories they share with the system).
  files=$(for deb in $(all_debs); do dpkg-deb -c "$deb"; done | awk '$1 !~ /^d/ {print substr($6, 2)}')
  trap 'dpkg --purge sbx-test-vendor-plugin "${pkgs[@]}" >/dev/null 2>&1 || true' EXIT
  # shellcheck disable=SC2046
  dpkg -i $(all_debs)
  for package in "${pkgs[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$package")" == installed ]] ||
      fail "dpkg did not leave $package installed"
  done
  [[ "$(stat -c '%U:%G %a' "/usr/$libdir/sbx/backends")" == "root:root 755" ]] ||
    fail "the installed plugin directory is not root-owned 0755"
  # The ldconfig trigger ran: libsbx is in the dynamic linker's cache, which holds the multiarch
  # directories (ld.so.conf.d). (With a merged /usr the cache may name /lib/<triplet>.)
  ldconfig -p | grep -E "=> (/usr)?/$libdir/libsbx\.so\." || fail "libsbx is not in ld.so.cache"
  probe_check /usr
  exec_check /usr installed
  vendor_check
  man -w sbx >/dev/null || fail "man sbx finds no page after the install"
  # The README's snippet built against /usr with pkg-config and with CMake: no rpath needed.
  bash "$source/tests/package/prefix_test.sh" system "$build" "$work/system" /usr "$source" "$libdir"
  # The bindings with nothing set find the installed libsbx: Python through ldconfig's cache
  # (ctypes.util.find_library), Node by its SONAME through the dynamic linker.
  loaded=$(python_run "" installed)
  echo "the Python binding loaded $loaded"
  [[ "$(realpath "$loaded")" == "$(realpath "/usr/$libdir")/libsbx.so"* ]] ||
    fail "the Python binding did not load the installed libsbx"
  if why=$(node_package_ready); then
    loaded=$(unset SBX_LIBRARY LD_LIBRARY_PATH; node_run installed)
    echo "the Node package loaded $loaded"
    [[ "$(realpath "$loaded")" == "$(realpath "/usr/$libdir")/libsbx.so"* ]] ||
      fail "the Node package did not load the installed libsbx"
  else
    echo "not checked: the Node package with nothing set ($why)"
  fi
  dpkg --purge "${pkgs[@]}"
  trap - EXIT
  for path in $files /usr/include/sbx "/usr/$libdir/sbx" /usr/libexec/sbx /usr/share/sbx \
              "/usr/$libdir/cmake/sbx" "/usr/$libdir/cmake/sbx-sdk"; do
    [[ ! -e $path && ! -L $path ]] || fail "purging the packages left $path behind"
  done
  for package in "${pkgs[@]}"; do
    [[ ! -e /usr/share/doc/$package ]] || fail "purging left /usr/share/doc/$package behind"
  done
  ! ldconfig -p | grep -F 'libsbx.so' || fail "libsbx is still in ld.so.cache after the purge"
  ;;
c)
  rm -rf "$work/c" && mkdir -p "$work/c/ws"
  # The .deb's sbx.pc names /usr, where dpkg -i puts it; the extracted root is its sysroot.
  export PKG_CONFIG_PATH="$usr/$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
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
        -DCMAKE_PREFIX_PATH="$usr" -DCMAKE_BUILD_RPATH="$usr/$libdir" -DCMAKE_CXX_STANDARD=20
  cmake --build "$work/cxx/build"
  # The library that ran is the package's.
  ldd "$work/cxx/build/consumer_cxx" | grep -F "$usr/$libdir/libsbx.so" ||
    fail "consumer_cxx is not linked to the package's libsbx"
  mkdir -p "$denied" && rm -f "$denied/cxx.txt"
  "$work/cxx/build/consumer_cxx" "$work/cxx/ws" "$denied/cxx.txt"
  ;;
python)
  # The Python binding finds libsbx in the extracted package's /usr (lib/<triplet>), as in any
  # prefix it is given, and runs a sandboxed write through it.
  loaded=$(python_run "$usr" python)
  echo "the Python binding loaded $loaded"
  [[ "$loaded" == "$usr/$libdir/libsbx.so"* ]] || fail "the Python binding did not load the package's libsbx"
  ;;
node)
  # The Node package as ctest node.install put it in place ($SBX_NODE_PACKAGE: npm install, no
  # compiler), told by SBX_LIBRARY to load the package's libsbx (the extracted root is not on
  # the dynamic linker's path), then a sandboxed write inside the workspace through it.
  why=$(node_package_ready) || { echo "SKIPPED: $why"; exit 0; }
  soname=$(readelf -d "$usr/$libdir"/libsbx.so.*.*.* | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  loaded=$(SBX_LIBRARY="$usr/$libdir/$soname" node_run node)
  echo "the Node package loaded $loaded"
  [[ "$loaded" == "$usr/$libdir/libsbx.so"* ]] || fail "the Node package did not load the package's libsbx"
  ;;
*)
  fail "unknown step $step"
  ;;
esac
echo "ok $step"
