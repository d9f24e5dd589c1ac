#!/usr/bin/env bash
# The README's test command (and all that CI runs): install what is missing, then
#   1. the ASan+UBSan preset builds and passes the unit tests,
#   2. every libFuzzer target runs for a fixed time without a crash,
#   3. the ci preset (-Werror) builds everything and passes every test (unit, integration,
#      end-to-end against the installed sbx, SDK consumer, Windows cross build, style); its
#      clang-tidy check (style.tidy) runs beside the other tests instead of in one of ctest's
#      slots (see below).
# Exits non-zero if anything fails. The last lines printed are the ci ctest summary and the
# clang-tidy result.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
stamp() { echo "== test.sh: $1 ($((SECONDS - start))s)"; }

# What the builds and the unit tests need first; the packages only the ci preset's tests use
# (wine, mingw-w64, node, ...) download and unpack in the background meanwhile: on a fresh
# machine that is minutes of mostly I/O, which would otherwise add to the compilers' time.
bash cmake/scripts/bootstrap-debian.sh build
test_packages_log=$(mktemp)
tidy_log=$(mktemp)
trap 'rm -f "$test_packages_log" "$tidy_log"' EXIT
bash cmake/scripts/bootstrap-debian.sh tests >"$test_packages_log" 2>&1 &
test_packages_pid=$!

stamp "asan: build the unit tests with ASan+UBSan"
cmake --preset asan >/dev/null
# Only what the unit tests need: their executables and the plugin modules some of them load.
mapfile -t asan_targets < <(cmake --build build/asan --target help |
  grep -oE '(sbx_unit_[a-z0-9_]+|sbx-backend-[a-z0-9-]+|sbx-stage2)' | sort -u)
cmake --build build/asan --target "${asan_targets[@]}"
stamp "asan: unit tests"
ctest --preset asan

stamp "fuzz: libFuzzer targets, 15 s each"
bash tests/fuzz/run_fuzzers.sh 15

stamp "ci: the test packages (installed in the background since the start)"
test_packages_rc=0
wait "$test_packages_pid" || test_packages_rc=$?
cat "$test_packages_log"
if ((test_packages_rc != 0)); then
  echo "test.sh: installing the test packages failed (exit $test_packages_rc)" >&2
  exit 1
fi

stamp "ci: build everything with -Werror"
cmake --preset ci >/dev/null
cmake --build --preset ci
# style.tidy is the longest test by far and mostly CPU, while many others mostly wait (for
# child processes, timeouts, sockets): it starts with them, below their priority (check_style.sh)
# and outside ctest's two slots, and takes the CPU they leave idle. It is exactly the command the
# style.tidy test runs.
stamp "ci: every test; style.tidy beside them"
bash cmake/scripts/check_style.sh tidy build/ci >"$tidy_log" 2>&1 &
tidy_pid=$!
ctest_rc=0
ctest --preset ci -E '^style\.tidy$' || ctest_rc=$?
stamp "ci: style.tidy (started with the tests)"
tidy_rc=0
wait "$tidy_pid" || tidy_rc=$?
cat "$tidy_log"
((tidy_rc == 0)) || echo "test.sh: style.tidy failed (exit $tidy_rc)" >&2
stamp "done"
((ctest_rc == 0 && tidy_rc == 0))
