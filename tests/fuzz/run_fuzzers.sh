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
# The targets run side by side (each libFuzzer process is single-threaded): the wall time is one
# target's, not the sum. Each keeps its own log, printed after all have finished.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for target in "${targets[@]}"; do
  name=$(basename "$target")
  area=${name#sbx_fuzz_}
  area=${area%%_*}
  mkdir -p "$logs/$name.work"
  seeds=()
  [[ -d "tests/fuzz/$area/corpus" ]] && seeds=("tests/fuzz/$area/corpus")
  echo "run_fuzzers: $name for ${seconds}s"
  # A crashing input is written next to the log (not into the caller's directory) and printed
  # below, so a failure in CI can be reproduced from its log alone.
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$logs/$name." "$logs/$name.work" "${seeds[@]}" >"$logs/$name.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  name=$(basename "${targets[$i]}")
  rc=0
  wait "${pids[$i]}" || rc=$?
  echo "== $name"
  tail -n 12 "$logs/$name.log"
  if ((rc != 0)); then
    echo "run_fuzzers: $name failed (exit $rc); full log:" >&2
    cat "$logs/$name.log" >&2
    for artifact in "$logs/$name."{crash,leak,timeout,oom}-*; do
      [[ -f "$artifact" ]] || continue
      echo "run_fuzzers: input $(basename "$artifact"), base64 (reproduce with" \
        "base64 -d > input && $target input):" >&2
      base64 -w0 "$artifact" >&2
      echo >&2
    done
    failed=1
  fi
done
((failed == 0)) || exit 1
echo "run_fuzzers: ${#targets[@]} targets ran ${seconds}s each without a crash"
