#!/usr/bin/env bash
# ctest node.pack: `npm pack` of bindings/node, and what the tarball holds: the JavaScript, the
# types and the README, nothing to compile (no C or C++ source, no CMakeLists.txt, no
# binding.gyp, no prebuilt .node), and a package.json with no install-time script (npm runs
# preinstall, install and postinstall at install time, and prepare for a git dependency:
# npm help scripts), koffi a dependency pinned to its major version.
# usage: node_pack.sh NODE NPM BINDING_DIR OUT_DIR
set -euo pipefail
node=$1 npm=$2 binding=$3 out=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
(cd "$binding" && "$npm" pack --silent --pack-destination "$out" >/dev/null)
shopt -s nullglob
tarballs=("$out"/*.tgz)
((${#tarballs[@]} == 1)) || fail "npm pack made ${#tarballs[@]} tarballs in $out"
tarball=${tarballs[0]}
echo "packed $(basename "$tarball")"
tar -tzf "$tarball" | sort >"$out/files"
sed 's/^/  /' "$out/files"
if grep -E '\.(c|cc|cpp|cxx|h|hpp|node|o|so|gyp|gypi)$|(^|/)CMakeLists\.txt$|(^|/)(src|build)/' "$out/files"; then
  fail "the tarball holds something to compile or a build product (above)"
fi
expected=$(printf '%s\n' package/README.md package/index.d.ts package/index.js \
  package/lib/errors.js package/lib/ffi.js package/lib/native.js package/lib/waiter.js \
  package/package.json package/reports.d.ts | sort)
[[ "$(cat "$out/files")" == "$expected" ]] || {
  diff <(echo "$expected") "$out/files" || true; fail "the tarball's files are not the expected ones"; }
tar -xzOf "$tarball" package/package.json >"$out/package.json"
"$node" - "$out/package.json" <<'JS'
const manifest = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const fail = (why) => { console.error(`FAIL: package.json: ${why}`); process.exit(1); };
const scripts = manifest.scripts || {};
for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
  if (hook in scripts) fail(`has a "${hook}" script: ${scripts[hook]}`);
}
if (manifest.gypfile) fail('"gypfile" is set: npm would run node-gyp at install');
const koffi = (manifest.dependencies || {}).koffi;
if (!/^\^\d+\.\d+\.\d+$/.test(koffi || '')) fail(`koffi must be a dependency pinned to a major (^X.Y.Z), not ${koffi}`);
if (Object.keys(manifest.dependencies).length !== 1) fail('a dependency besides koffi');
console.log(`package.json: ${manifest.name}@${manifest.version}, dependencies ${JSON.stringify(manifest.dependencies)}, ` +
            `scripts ${JSON.stringify(scripts)}`);
JS
echo "node.pack: nothing to compile and no install script"
