#!/usr/bin/env bash
# sbx.pc and the CMake package from each kind of prefix (tests/package/CMakeLists.txt runs one
# STEP per ctest test; cmake/packaging/install_pc.cmake and sbx-config.cmake.in are under test):
#   opt      the installed test tree (`cmake --install --prefix`, as demo.sh does for /opt/sbx):
#            sbx.pc relative to itself with an rpath; the README's embedding snippet, built with
#            the README's `cc agent.c $(pkg-config --cflags --libs sbx)`, runs without
#            LD_LIBRARY_PATH and runs a command
#   usr      DESTDIR installs with --prefix /usr and /usr/local: absolute paths, so pkg-config
#            prints no system -I/-L for /usr and no `..`; an rpath for /usr/local only
#   cmake    the same snippet as a CMake project (find_package(sbx) -> sbx::sbx) against the
#            installed test tree: the built and the installed program run without LD_LIBRARY_PATH
#   system   with PREFIX /usr, from the installed .debs (package_test.sh install runs it): both
#            ways, with nothing set, no rpath at all, libsbx from /usr
# usage: prefix_test.sh STEP BUILD_DIR WORK_DIR PREFIX SOURCE_DIR LIBDIR
set -euo pipefail
step=$1 build=$2 work=$3 prefix=$4 source=$5 libdir=$6
unset LD_LIBRARY_PATH PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR

fail() { echo "FAIL: $*" >&2; exit 1; }
# Which sbx.pc pkg-config reads: only the one in $1.
pc() { PKG_CONFIG_LIBDIR="$1" pkg-config "${@:2}" sbx | sed 's/ *$//'; }

# agent.c: the README's embedding snippet (the first C block of "## Embedding sbx in an agent")
# as written, in a function with the names it uses, and a main that checks it ran a command.
write_agent() {
  local snippet
  snippet=$(awk '/^## Embedding sbx in an agent/ {s=1} s && /^```c$/ {c=1; next}
                 c && /^```$/ {exit} c {print}' "$source/README.md")
  [[ -n "$snippet" ]] || fail "no C snippet under '## Embedding sbx in an agent' in README.md"
  cat >"$1" <<C
#include <sbx/sbx.h>
#include <stdio.h>
#include <unistd.h>

/* The README's snippet, verbatim. */
static int agent(const char* policy_json, const char* cwd, const char* const* argv) {
$snippet
  if (err) fprintf(stderr, "sbx: %s\n", sbx_error_message(err));
  return err == NULL;
}

int main(int argc, char** argv) {
  if (argc != 2 || chdir(argv[1]) != 0) return 2;
  const char* command[] = {"sh", "-c", "echo hello > made-by-agent.txt", NULL};
  if (!agent("{\"version\":1,\"preset\":\"workspace-write\"}", argv[1], command)) return 1;
  if (access("made-by-agent.txt", F_OK) != 0) return fprintf(stderr, "no file written\n"), 1;
  printf("libsbx %s ran a command\n", sbx_version());
  return 0;
}
C
}
# Runs program $1 in a fresh workspace $2 with no LD_LIBRARY_PATH; it must load libsbx from the
# prefix under test, found through its own RUNPATH (none for /usr: the linker searches it).
run_agent() {
  local program=$1 ws=$2
  if [[ $prefix == /usr ]]; then
    ! readelf -d "$program" | grep -E 'RUNPATH|RPATH' || fail "$program has an rpath"
  else
    readelf -d "$program" | grep -E 'RUNPATH|RPATH' || fail "$program has no RUNPATH"
  fi
  # (Compared resolved: with a merged /usr the linker may name /lib for /usr/lib.)
  local loaded
  loaded=$(ldd "$program" | awk '$1 ~ /^libsbx\.so/ {print $3}')
  echo "libsbx: $loaded"
  [[ -n "$loaded" && "$(realpath "$loaded")" == "$(realpath "$prefix")/"* ]] ||
    fail "$program does not load libsbx from $prefix"
  rm -rf "$ws" && mkdir -p "$ws"
  env -u LD_LIBRARY_PATH "$program" "$ws" || fail "$program failed"
}

case "$step" in
opt)
  pcdir="$prefix/$libdir/pkgconfig"
  up=$(echo "$libdir/pkgconfig" | sed -E 's#[^/]+#..#g')
  grep -qx "prefix=\${pcfiledir}/$up" "$pcdir/sbx.pc" || fail "sbx.pc is not relocatable"
  flags=$(pc "$pcdir" --cflags --libs)
  echo "pkg-config --cflags --libs sbx: $flags"
  rel="$pcdir/$up"
  [[ "$flags" == "-I$rel/include -L$rel/$libdir -Wl,-rpath,$rel/$libdir -lsbx" ]] ||
    fail "unexpected flags for a prefix outside /usr"
  rm -rf "$work/opt" && mkdir -p "$work/opt"
  cd "$work/opt"
  write_agent agent.c
  # The README's lines, as written (PKG_CONFIG_PATH is the step it documents for /opt/sbx).
  export PKG_CONFIG_PATH="$pcdir"
  # shellcheck disable=SC2046
  cc agent.c $(pkg-config --cflags --libs sbx)
  run_agent "$work/opt/a.out" "$work/opt/ws"
  ;;
usr)
  for p in /usr /usr/local; do
    stage="$work/stage${p//\//-}"
    rm -rf "$stage"
    DESTDIR="$stage" cmake --install "$build" --prefix "$p" --component devel >/dev/null
    file="$stage$p/$libdir/pkgconfig/sbx.pc"
    cat "$file"
    grep -qx "prefix=$p" "$file" || fail "$file: prefix is not $p"
    ! grep -q 'pcfiledir\|\.\.' "$file" || fail "$file is not absolute"
    flags=$(pc "$stage$p/$libdir/pkgconfig" --cflags --libs)
    echo "$p: pkg-config --cflags --libs sbx: $flags"
    if [[ $p == /usr ]]; then
      # pkg-config strips its system directories: nothing but the library is left.
      [[ "$flags" == "-lsbx" ]] || fail "$p: expected just -lsbx"
    else
      [[ "$flags" == "-I$p/include -L$p/$libdir -Wl,-rpath,$p/$libdir -lsbx" ]] ||
        fail "$p: unexpected flags"
    fi
  done
  ;;
system)
  [[ $prefix == /usr ]] || fail "step system takes the prefix /usr"
  flags=$(pkg-config --cflags --libs sbx | sed 's/ *$//')
  echo "pkg-config --cflags --libs sbx: $flags"
  [[ "$flags" == "-lsbx" ]] || fail "unexpected flags from /usr"
  rm -rf "$work" && mkdir -p "$work"
  cd "$work"
  write_agent agent.c
  # shellcheck disable=SC2046
  cc agent.c $(pkg-config --cflags --libs sbx)
  run_agent "$work/a.out" "$work/ws"
  cmake -S "$source/tests/package/consumer_cmake" -B "$work/build" -G Ninja \
        -DAGENT_SOURCE="$work/agent.c" -DCMAKE_INSTALL_PREFIX="$work/installed" >/dev/null
  cmake --build "$work/build"
  cmake --install "$work/build" >/dev/null
  run_agent "$work/installed/bin/agent" "$work/ws-cmake"
  ;;
cmake)
  rm -rf "$work/cmake" && mkdir -p "$work/cmake"
  write_agent "$work/cmake/agent.c"
  cmake -S "$source/tests/package/consumer_cmake" -B "$work/cmake/build" -G Ninja \
        -DCMAKE_PREFIX_PATH="$prefix" -DAGENT_SOURCE="$work/cmake/agent.c" \
        -DCMAKE_INSTALL_PREFIX="$work/cmake/installed" >/dev/null
  cmake --build "$work/cmake/build"
  run_agent "$work/cmake/build/agent" "$work/cmake/ws-build"
  # CMake drops its build-tree rpath on install; sbx::sbx's own link option keeps libsbx found.
  cmake --install "$work/cmake/build" >/dev/null
  run_agent "$work/cmake/installed/bin/agent" "$work/cmake/ws-installed"
  ;;
*)
  fail "unknown step $step"
  ;;
esac
echo "ok $step"
