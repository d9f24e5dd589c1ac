#!/usr/bin/env bash
# The README's test command (and all that CI runs): install what is missing, then
#   1. the ASan+UBSan preset builds and passes the unit tests,
#   2. every libFuzzer target runs for a fixed time without a crash,
#   3. the ci preset (-Werror) builds everything and passes every test (unit, integration,
#      end-to-end against the installed sbx, SDK consumer, Windows cross build).
# Exits non-zero if anything fails. The ci ctest summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
stamp() { echo "== test.sh: $1 ($((SECONDS - start))s)"; }

bash cmake/scripts/bootstrap-debian.sh

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

stamp "ci: build everything with -Werror"
cmake --preset ci >/dev/null
cmake --build --preset ci
stamp "ci: every test"
ctest --preset ci
