#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (preset "fuzz") and runs each one for a fixed time
# ($1 seconds, default 20) from its seed corpus. Fails if any target crashes or leaks.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
cmake --preset fuzz >/dev/null
# Build only the fuzz targets (and what they link), not the whole project again.
mapfile -t names < <(cmake --build build/fuzz --target help | grep -oE 'sbx_fuzz_[a-z0-9_]+' | sort -u)
if ((${#names[@]} == 0)); then
  echo "run_fuzzers: no fuzz targets are defined" >&2
  exit 1
fi
cmake --build build/fuzz --target "${names[@]}"
mapfile -t targets < <(find build/fuzz -maxdepth 4 -type f -perm -u+x -name 'sbx_fuzz_*' | sort)
if ((${#targets[@]} == 0)); then
  echo "run_fuzzers: no fuzz targets were built" >&2
  exit 1
fi
for target in "${targets[@]}"; do
  name=$(basename "$target")
  area=${name#sbx_fuzz_}
  area=${area%%_*}
  work=$(mktemp -d)
  seeds=()
  [[ -d "tests/fuzz/$area/corpus" ]] && seeds=("tests/fuzz/$area/corpus")
  echo "run_fuzzers: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "$work" "${seeds[@]}" 2>&1 | tail -n 12
  rc=${PIPESTATUS[0]}
  rm -rf "$work"
  if ((rc != 0)); then
    echo "run_fuzzers: $name failed (exit $rc)" >&2
    exit 1
  fi
done
echo "run_fuzzers: ${#targets[@]} targets ran ${seconds}s each without a crash"
