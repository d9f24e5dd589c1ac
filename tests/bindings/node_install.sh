#!/usr/bin/env bash
# ctest node.install: `npm install` of the tarball node.pack made into a fresh project, with
# koffi (and its prebuilt binary, @koromix/koffi-<platform>) from the npm registry, and with a
# PATH holding node and sh alone (npm runs scripts with sh): no compiler, no make, no cmake, so a
# step that builds anything fails the install. koffi's own install script is allowed to run (npm 11 skips it unless allowed;
# older npm runs it): with --prebuild it only checks that the prebuilt binary loads. Then the
# installed package loads the installed libsbx (LD_LIBRARY_PATH, set by ctest).
# usage: node_install.sh NODE NPM TARBALL_DIR DEST
set -euo pipefail
node=$1 npm=$2 tarballs=$3 dest=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
shopt -s nullglob
found=("$tarballs"/*.tgz)
((${#found[@]} == 1)) || fail "no tarball in $tarballs (did node.pack pass?)"
tarball=${found[0]}
node_real=$(readlink -f "$node")
npm_cli=$(readlink -f "$npm")  # npm-cli.js, run with node itself (its #! looks node up in PATH)
rm -rf "$dest" && mkdir -p "$dest/bin"
ln -s "$node_real" "$dest/bin/node"
ln -s "$(readlink -f /bin/sh)" "$dest/bin/sh"
for tool in cc gcc g++ c++ clang make cmake ninja; do
  PATH="$dest/bin" command -v "$tool" >/dev/null && fail "$tool is on the install's PATH"
done
# allowScripts: npm 11's approval of a dependency's install script (npm help install-scripts).
cat >"$dest/package.json" <<'JSON'
{"name": "sbx-node-install-test", "version": "1.0.0", "private": true, "allowScripts": {"koffi": true}}
JSON
echo "npm install $(basename "$tarball") (PATH=$dest/bin)"
(cd "$dest" && PATH="$dest/bin" "$node_real" "$npm_cli" install --no-audit --no-fund \
   --no-update-notifier --foreground-scripts "$tarball")
package="$dest/node_modules/sbx-sandbox"
[[ -f "$package/lib/native.js" && -d "$dest/node_modules/koffi" ]] || fail "the install is incomplete"
find "$package" -name '*.node' | grep . && fail "the package holds a compiled addon"
version=$("$node" -e 'console.log(require(process.argv[1]).version())' "$package")
echo "node.install: $package loads libsbx $version"
