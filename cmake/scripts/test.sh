#!/usr/bin/env bash
# The README's test command: install what is missing, build with the ci preset (-Werror), and
# run every test. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash cmake/scripts/bootstrap-debian.sh
cmake --preset ci
cmake --build --preset ci
ctest --preset ci
