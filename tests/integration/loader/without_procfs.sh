#!/bin/sh
# Runs a test executable ($1, further arguments passed on) with /proc hidden: a private mount
# namespace with an empty read-only tmpfs over /proc. SBX_EXPECT_LOADING_MODE=path tells the
# tests which loading mode the registry must report. Exit 77 (skip) where /proc cannot be
# hidden, with the reason on stdout.
set -u
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: hiding /proc needs root (unshare -m and mount); path_loading_test.cpp still runs"
  exit 77
fi
if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "SKIP: cannot create a private mount namespace here (unshare -m failed)"
  exit 77
fi
exec unshare --mount --propagation private sh -c '
  if ! mount -t tmpfs -o ro none /proc; then
    echo "SKIP: cannot mount a tmpfs over /proc here"
    exit 77
  fi
  SBX_EXPECT_LOADING_MODE=path exec "$@"
' sh "$@"
