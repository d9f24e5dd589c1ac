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
  curl  # the proxy end-to-end tests (tests/integration/proxy) run it inside the sandbox
  mingw-w64 wine64
)

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
