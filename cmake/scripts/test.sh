#!/usr/bin/env bash
# The README's test command (and all that CI runs): install what is missing, then
#   1. the ASan+UBSan preset builds and passes the unit tests,
#   2. every libFuzzer target runs for a fixed time without a crash,
#   3. the ci preset (-Werror) builds everything and passes every test (unit, integration,
#      end-to-end against the installed sbx, SDK consumer, Windows cross build, style).
# Two pieces of work run in the background at the lowest priority (nice 19), where they take the
# CPU the foreground leaves idle (the unit tests and many integration tests mostly wait for child
# processes, the file system, sockets and timeouts) and next to nothing else:
#   - the ci build, once the packages only the ci tests need are installed (from the start, at
#     normal priority: on a fresh machine that is minutes of mostly I/O), beside the ASan build,
#     the ASan unit tests and the fuzzers;
#   - the ci preset's clang-tidy check (style.tidy: exactly that ctest test's command), beside the
#     other ci tests, outside ctest's two slots.
# A background job's output is printed when the stage that waits for it ends. Exits non-zero if
# anything fails. The last lines printed are the ci ctest summary and the clang-tidy result.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
stamp() { echo "== test.sh: $1 ($((SECONDS - start))s)"; }

logs=$(mktemp -d)
declare -A job_pid=()
# Each background job has a process group of its own (set -m): an early exit ends it and all it
# started.
cleanup() {
  local pid
  for pid in "${job_pid[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT
start_job() {  # start_job NAME COMMAND...: runs COMMAND in the background, output to its log
  local name=$1
  shift
  set -m
  "$@" >"$logs/$name" 2>&1 &
  job_pid[$name]=$!
  set +m
}
finish_job() {  # finish_job NAME: waits for the job, prints its output, returns its status
  local rc=0
  wait "${job_pid[$1]}" || rc=$?
  unset "job_pid[$1]"
  cat "$logs/$1"
  return "$rc"
}

bash cmake/scripts/bootstrap-debian.sh build
# The ci configure needs the test packages (find_program: node, npm, tsc, dpkg-deb, ...).
start_job ci_build bash -c 'bash cmake/scripts/bootstrap-debian.sh tests &&
  cmake --preset ci >/dev/null && nice -n 19 cmake --build --preset ci'

stamp "asan: build the unit tests with ASan+UBSan (the ci build waits in the background)"
cmake --preset asan >/dev/null
# Only what the unit tests need: their executables and the plugin modules some of them load.
mapfile -t asan_targets < <(cmake --build build/asan --target help |
  grep -oE '(sbx_unit_[a-z0-9_]+|sbx-backend-[a-z0-9-]+|sbx-stage2)' | sort -u)
cmake --build build/asan --target "${asan_targets[@]}"
stamp "asan: unit tests"
ctest --preset asan

stamp "fuzz: libFuzzer targets, 15 s each"
bash tests/fuzz/run_fuzzers.sh 15

stamp "ci: the test packages and the -Werror build (in the background since the start)"
if ! finish_job ci_build; then
  echo "test.sh: installing the test packages or building the ci preset failed" >&2
  exit 1
fi

# style.tidy is the longest ci test and almost all CPU (check_style.sh runs clang-tidy at nice
# 19 in any case).
stamp "ci: every test, style.tidy beside them"
start_job tidy bash cmake/scripts/check_style.sh tidy build/ci
ctest_rc=0
ctest --preset ci -E '^style\.tidy$' || ctest_rc=$?
stamp "ci: style.tidy (started with the tests)"
tidy_rc=0
finish_job tidy || tidy_rc=$?
((tidy_rc == 0)) || echo "test.sh: style.tidy failed (exit $tidy_rc)" >&2
stamp "done"
((ctest_rc == 0 && tidy_rc == 0))
