'use strict';
// What the Node binding's test files share: the package, the policies, a workspace, and the skip
// for want of a sandbox backend (exit 77, ctest's Skipped).
const fs = require('node:fs');
const path = require('node:path');

// The package under test: the one `npm install` put in place (ctest node.install, which sets
// SBX_NODE_PACKAGE), else this source tree (with the node_modules of a developer's npm install).
const PACKAGE = process.env.SBX_NODE_PACKAGE || path.join(__dirname, '..');
const sbx = require(PACKAGE);

const WORKSPACE = { version: 1, preset: 'workspace-write' };
const FULL = { version: 1, preset: 'danger-full-access' };

function workspace() {
  return fs.realpathSync(fs.mkdtempSync(path.join('/tmp', 'sbx-node-test-')));
}

// A test skipped for want of a sandbox backend makes the run exit 77 when nothing failed, which
// ctest reports as Skipped (SKIP_RETURN_CODE, tests/bindings/CMakeLists.txt): a host without a
// backend does not show this suite as passed. Decided at exit, once node:test has set the code
// of any failure (1), which stays.
let skippedForNoBackend = 0;
process.on('exit', (code) => {
  if (code === 0 && skippedForNoBackend > 0) {
    console.log(`ctest: SKIPPED (exit 77), ${skippedForNoBackend} test(s) need a sandbox backend`);
    process.exitCode = 77;
  }
});
function skipNoBackend(t, why) {
  skippedForNoBackend += 1;
  t.skip(`no sandbox backend: ${why}`);
}

// The backend a workspace-write run uses here; the test is skipped (with the reason) without one.
function backendOrSkip(t, s, ws) {
  const explained = s.explain(WORKSPACE, { cwd: ws });
  if (explained.final === 'none') {
    skipNoBackend(t, `none is available here: ${explained.available_reason}`);
    return null;
  }
  return explained.final;
}

// A bad argument, or a policy that does not parse: SbxError of kind invalid_input.
function invalidInput(e) {
  return e instanceof sbx.SbxError && e.code === 'SBX_ERROR' && e.kind === 'invalid_input';
}

module.exports = { sbx, PACKAGE, WORKSPACE, FULL, workspace, skipNoBackend, backendOrSkip, invalidInput };
