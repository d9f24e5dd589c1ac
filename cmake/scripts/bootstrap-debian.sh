#!/usr/bin/env bash
# Installs every Debian 12 package sbx needs to build, test and run. Idempotent: when all are
# present it only checks (about a second) and installs nothing.
#   bootstrap-debian.sh          everything
#   bootstrap-debian.sh build    what building every preset and running the unit tests need
#   bootstrap-debian.sh tests    the rest: what only the integration and end-to-end tests of the
#                                ci preset run (test.sh installs these while the ASan build runs:
#                                the download and unpacking overlap the compiler's work)
set -euo pipefail
group=${1:-all}

build_packages=(
  build-essential cmake ninja-build pkg-config git python3
  # libboost-json/-container: their .a archives too, the sbx executable links them statically
  libboost1.81-dev libboost-json1.81-dev libboost-container1.81-dev
  libspdlog-dev libfmt-dev libcli11-dev
  libseccomp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libtoml11-dev  # `sbx policy import --from codex` reads config.toml
  clang libclang-rt-14-dev  # the libFuzzer targets
  bubblewrap util-linux procps  # unit tests start real bwrap
)
test_packages=(
  firejail  # the SDK example backend confines commands with it
  iproute2
  clang-format clang-tidy  # the style.format and style.tidy tests (cmake/scripts/check_style.sh)
  strace  # tests/integration/cli_start: what a run looks up, counted from its system calls
  curl  # the proxy end-to-end tests (tests/integration/proxy) run it inside the sandbox
  openssh-client  # ... and ssh, through git's GIT_SSH_COMMAND (git over ssh in proxy mode)
  jq  # docs.samples: documentation samples show parts of sbx's JSON through it
  python3-jsonschema man-db zsh fish  # tests/cli/extras_test.py: schema, man pages, completions
  mingw-w64 wine64  # the Windows cross build and its tests under wine
  dpkg-dev  # cpack's .deb: dpkg-shlibdeps declares the shared libraries (tests/package)
  lintian  # package.lintian: the .debs draw no lintian error or warning (tests/package)
  python3-pip python3-venv python3-pytest  # bindings/python: pip install into a venv, pytest
  nodejs node-typescript       # bindings/node: node --test, tsc checks index.d.ts
)
# npm packs and installs bindings/node in the tests (koffi comes from the npm registry). Debian's
# nodejs has no npm (the npm package does); a nodejs that ships its own (e.g. NodeSource's, which
# conflicts with Debian's npm package) needs nothing more.
if ! command -v npm >/dev/null; then
  test_packages+=(npm)
fi

case "$group" in
  all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  build) packages=("${build_packages[@]}") ;;
  tests) packages=("${test_packages[@]}") ;;
  *) echo "bootstrap: unknown group '$group' (expected all, build or tests)" >&2; exit 2 ;;
esac

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "bootstrap: all ${#packages[@]} packages ($group) present"
  exit 0
fi

echo "bootstrap: installing ($group) ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "bootstrap: run as root or install sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
