#!/usr/bin/env bash
# Installs every Debian 12 package sbx needs to build, test and run. Idempotent: when all are
# present it only checks (about a second) and installs nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  # libboost-json/-container: their .a archives too, the sbx executable links them statically
  libboost1.81-dev libboost-json1.81-dev libboost-container1.81-dev
  libspdlog-dev libfmt-dev libcli11-dev
  libseccomp-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  bubblewrap firejail util-linux iproute2 procps
  strace  # tests/integration/cli_start: what a run looks up, counted from its system calls
  curl  # the proxy end-to-end tests (tests/integration/proxy) run it inside the sandbox
  libtoml11-dev  # `sbx policy import --from codex` reads config.toml
  python3-jsonschema man-db zsh fish  # tests/cli/extras_test.py: schema, man pages, completions
  mingw-w64 wine64
  dpkg-dev  # cpack's .deb: dpkg-shlibdeps declares the shared libraries (tests/package)
  python3-pip python3-venv python3-pytest  # bindings/python: pip install into a venv, pytest
  nodejs node-typescript       # bindings/node: node --test, tsc checks index.d.ts
)
# The Node-API headers: Debian's nodejs has none (libnode-dev does); a nodejs that ships its own
# (e.g. NodeSource's, /usr/include/node) conflicts with libnode-dev, so it is only added if missing.
if [[ ! -e /usr/include/node/node_api.h ]]; then
  packages+=(libnode-dev)
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "bootstrap: all ${#packages[@]} packages present"
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "bootstrap: run as root or install sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
