#!/usr/bin/env bash
# The house style, checked (ctest: style.format, style.tidy; label style).
#   check_style.sh format            clang-format --dry-run -Werror on every C/C++ file in git
#   check_style.sh tidy <build-dir>  clang-tidy (.clang-tidy) on every product translation unit
#                                    of <build-dir>/compile_commands.json, one per CPU, at low
#                                    priority; clean results are cached by content in
#                                    <build-dir>/tidy-cache (cmake/scripts/tidy_run.py)
# Exits non-zero on any finding. Fix a format finding with
#   bash cmake/scripts/check_style.sh patterns | tr '\n' '\0' | xargs -0 git ls-files -z -- |
#     xargs -0 clang-format -i
# Files are listed by git patterns, not folder names, so moved or new folders are checked too.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

# Every C/C++ source and header in git, except tests/fixtures (frozen copies of old SDK headers
# and test plugins pinned byte for byte) and tests/golden (expected outputs).
patterns=('*.c' '*.cc' '*.cpp' '*.h' '*.hpp' ':!:tests/fixtures/**' ':!:tests/golden/**')
# Product code for clang-tidy: what is shipped or linked into what is shipped; tests and
# benchmarks are left to the compilers' -Werror (gtest macros make most checks noisy there).
product_dirs='core|plugins|sdk|bindings|linux|stage2'

case "${1:-}" in
  patterns)
    printf '%s\n' "${patterns[@]}"
    ;;
  format)
    clang_format=$(command -v clang-format-14 || command -v clang-format) ||
      { echo "check_style: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
    mapfile -d '' files < <(git ls-files -z -- "${patterns[@]}")
    echo "check_style: $("$clang_format" --version), ${#files[@]} files"
    # xargs exits 123 if any file needs formatting; every finding is printed first.
    printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$clang_format" --dry-run -Werror
    echo "check_style: format clean"
    ;;
  tidy)
    build=$(cd "${2:?usage: check_style.sh tidy <build-dir>}" && pwd)
    SBX_CLANG_TIDY=$(command -v clang-tidy-14 || command -v clang-tidy) ||
      { echo "check_style: clang-tidy not found (apt-get install clang-tidy)" >&2; exit 1; }
    export SBX_CLANG_TIDY
    db_dir=$(mktemp -d)
    trap 'rm -rf "$db_dir"' EXIT
    python3 "$root/cmake/scripts/tidy_compile_db.py" "$root" "$build/compile_commands.json" \
      "$product_dirs" >"$db_dir/compile_commands.json"
    # Each file's findings are printed together; any finding fails (.clang-tidy sets
    # WarningsAsErrors: '*'). Headers are checked where they are included: the filter keeps
    # findings in sbx's own headers and drops those in Boost, CLI11, ...
    # -w: the compiler's own warnings are GCC's job (-Werror in the ci build); clang's differ
    # (libseccomp's SCMP_A* macros are C99 compound literals to clang -Wpedantic).
    python3 "$root/cmake/scripts/tidy_run.py" "$db_dir" "$build" "$(nproc)" \
      -quiet -header-filter="^$root/($product_dirs)/" -extra-arg=-w
    echo "check_style: tidy clean"
    ;;
  *)
    echo "usage: check_style.sh format | tidy <build-dir> | patterns" >&2
    exit 2
    ;;
esac
