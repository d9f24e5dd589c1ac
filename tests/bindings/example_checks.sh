#!/usr/bin/env bash
# What the example agent loops (bindings/*/examples/agent_loop.*) must have told the model and
# left on disk: sourced by node_example.sh and python_example.sh with $said (their output),
# $ws (the workspace) and $outside (the directory granted on the re-run).
fail() { echo "example: $1" >&2; exit 1; }
grep -qx -- "--- build" "$said" && grep -qx "built" "$said" || fail "the build call's output is missing"
grep -qx "\[output truncated\]" "$said" || fail "the chatty call was not capped"
grep -qx "\[timed out\]" "$said" || fail "the slow call did not time out"
sed -n "/^--- streamed/,+1p" "$said" | grep -qx "tick" || fail "nothing was streamed"
grep -q "^\[the sandbox refused: " "$said" || fail "the denied write was not explained"
sed -n "/^--- write, granted/,\$p" "$said" | grep -qx "\[exit 0\]" || fail "the granted re-run did not succeed"
[[ "$(cat "$outside/note.txt")" == hello ]] || fail "the granted write did not reach $outside"
[[ "$(cat "$ws/out.txt")" == built ]] || fail "the build's file is not in the workspace"
echo "example: every tool call told the model what happened"
