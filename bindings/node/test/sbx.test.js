'use strict';
// The Node binding against a real libsbx (ctest runs the package `npm install` put in place
// against the installed tree: libsbx is found through LD_LIBRARY_PATH). Real sandboxed runs: a write inside passes, one
// outside is denied and classified, the proxy refuses an unlisted host. run() and spawn():
// run.test.js.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const childProcess = require('node:child_process');
const { sbx, PACKAGE, WORKSPACE, FULL, workspace, skipNoBackend, backendOrSkip, invalidInput } =
    require('./common');

const DENY_SSH = { version: 1, filesystem: { kind: 'restricted', entries: [
  { path: ':root', access: 'read' }, { path: ':cwd', access: 'write' },
  { path: '~/.ssh', access: 'deny' }] } };

// The libsbx this process loaded (its mapping in /proc/self/maps), or null.
function loadedLibsbx(maps) {
  const line = maps.split('\n').find((l) => /\/libsbx\.so[.\d]*$/.test(l));
  return line ? line.slice(line.indexOf('/')) : null;
}

// Loads the package in a child node with `env`: what require() threw ({name, code, kind,
// message}), or {loaded: the libsbx file mapped}.
function loadInChild(env) {
  const script = `
    try {
      require(${JSON.stringify(PACKAGE)}).version();
      const maps = require('fs').readFileSync('/proc/self/maps', 'utf8');
      const line = maps.split('\\n').find((l) => /\\/libsbx\\.so[.\\d]*$/.test(l));
      console.log(JSON.stringify({ loaded: line.slice(line.indexOf('/')) }));
    } catch (e) {
      console.log(JSON.stringify({ name: e.name, code: e.code, kind: e.kind, message: e.message }));
    }`;
  const out = childProcess.execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
  return JSON.parse(out);
}

test('the package under test is the one npm installed, with nothing compiled', (t) => {
  if (!process.env.SBX_NODE_PACKAGE) {
    t.skip('SBX_NODE_PACKAGE is unset: testing the source tree (ctest sets it, node.install)');
    return;
  }
  const installed = fs.realpathSync(process.env.SBX_NODE_PACKAGE);
  assert.ok(installed.split(path.sep).includes('node_modules'), installed);
  assert.strictEqual(path.dirname(require.resolve(PACKAGE)), installed);
  // koffi, from the registry, beside it; no addon of this package's own anywhere in it.
  const koffi = require.resolve('koffi', { paths: [installed] });
  assert.ok(koffi.startsWith(path.dirname(installed)), koffi);
  const files = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap(
      (e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  const compiled = files(installed).filter((f) => /\.(node|cpp|cc|o|so)$|CMakeLists\.txt$/.test(f));
  assert.deepStrictEqual(compiled, []);
  // The libsbx loaded is the installed test tree's, found through LD_LIBRARY_PATH.
  const loaded = loadedLibsbx(fs.readFileSync('/proc/self/maps', 'utf8'));
  const libDir = (process.env.LD_LIBRARY_PATH || '').split(':')[0];
  assert.ok(loaded && libDir && loaded.startsWith(`${libDir}/`), `${loaded} (LD_LIBRARY_PATH ${libDir})`);
});

test('libsbx is found as the dynamic linker finds it, or named by SBX_LIBRARY', () => {
  const here = loadedLibsbx(fs.readFileSync('/proc/self/maps', 'utf8'));
  assert.ok(here, 'this process has libsbx loaded');
  const { LD_LIBRARY_PATH, SBX_LIBRARY, ...bare } = process.env;
  // SBX_LIBRARY names the file; nothing else has to find it.
  assert.deepStrictEqual(loadInChild({ ...bare, SBX_LIBRARY: here }), { loaded: here });
  // A missing library is an SbxError of kind host_failure at require(), saying what to do.
  const missing = loadInChild({ ...bare, SBX_LIBRARY: '/nonexistent/libsbx.so.0.1' });
  assert.strictEqual(missing.name, 'SbxError', JSON.stringify(missing));
  assert.strictEqual(missing.code, 'SBX_ERROR');
  assert.strictEqual(missing.kind, 'host_failure');
  assert.match(missing.message, /cannot load libsbx \(\/nonexistent\/libsbx\.so\.0\.1\).*SBX_LIBRARY/s);
  // Without either, the dynamic linker's own search (ld.so.cache, the default directories):
  // the test tree's libsbx is not there, unless sbx is also installed on this host.
  const system = childProcess.execFileSync('/sbin/ldconfig', ['-p'], { encoding: 'utf8' });
  const found = loadInChild(bare);
  if (/\blibsbx\.so\.0\.1\b/.test(system)) {
    assert.ok(found.loaded, JSON.stringify(found));
  } else {
    assert.strictEqual(found.kind, 'host_failure', JSON.stringify(found));
    assert.match(found.message, /cannot load libsbx \(libsbx\.so\.0\.1\).*ld\.so\.cache or LD_LIBRARY_PATH/s);
  }
});

test('version and the pure questions', () => {
  assert.match(sbx.version(), /^\d+\.\d+\.\d+$/);
  const decision = sbx.shouldSandbox(WORKSPACE);
  assert.strictEqual(decision.sandbox, true);
  assert.ok(decision.reason.length > 0);
  assert.strictEqual(sbx.shouldSandbox(FULL).sandbox, false);
  assert.strictEqual(sbx.shouldSandbox('{"version":1,"preset":"read-only"}').sandbox, true);
});

test(
    'errors are SbxError carrying libsbx message and kind; bad arguments are invalid_input', () => {
      assert.throws(
          () => sbx.shouldSandbox(DENY_SSH, 'forbid'),
          (e) => e instanceof sbx.SbxError && e.code === 'SBX_ERROR' &&
              e.kind === sbx.ErrorKind.REFUSED && /forbid/.test(e.message));
      assert.throws(
          () => sbx.shouldSandbox({version: 1, filesystem: {kind: 'nope'}}),
          (e) => invalidInput(e) && e.message.includes('/filesystem/kind'));
      const s = new sbx.Sbx();
      try {
        assert.throws(
            () => s.transform(FULL, []), (e) => invalidInput(e) && /argv/.test(e.message));
        assert.throws(() => s.transform(FULL, ['true', 42]), invalidInput);
      } finally {
        s.close();
      }
      assert.throws(() => s.explain(WORKSPACE), invalidInput, 'a closed handle');
    });

test('each kind libsbx reports reaches SbxError.kind', () => {
  // unavailable: a sandbox is wanted and the only backend allowed does not exist.
  const none = new sbx.Sbx({backends: 'no-such-backend'});
  try {
    assert.throws(
        () => none.transform(WORKSPACE, ['true']),
        (e) => e.kind === sbx.ErrorKind.UNAVAILABLE && /no backend/.test(e.message));
  } finally {
    none.close();
  }
  // refused: a policy with deny entries never runs unsandboxed.
  assert.throws(() => sbx.shouldSandbox(DENY_SSH, 'forbid'), (e) => e.kind === 'refused');
  // invalid_input: an unknown preference.
  assert.throws(() => sbx.shouldSandbox(WORKSPACE, 'sometimes'), invalidInput);
  // The kinds, as every boundary spells them; an unknown one reads as host_failure.
  assert.deepStrictEqual(Object.values(sbx.ErrorKind).sort(), [
    'backend_failure', 'cancelled', 'host_failure', 'invalid_input', 'refused', 'timed_out',
    'unavailable'
  ]);
  assert.strictEqual(new sbx.SbxError('x').kind, 'host_failure');
  assert.strictEqual(new sbx.SbxError('x', 'from-the-future').kind, 'host_failure');
});

test('exec rejects with SbxError carrying libsbx message', async () => {
  const s = new sbx.Sbx();
  try {
    await assert.rejects(
        s.exec({version: 1, preset: 'no-such-preset'}, ['true']),
        (e) => invalidInput(e) && e.message.includes('preset'));
  } finally {
    s.close();
  }
});

test('widen and approve', () => {
  const extra = { version: 1, filesystem: { entries: [{ path: '/srv/data', access: 'write' }] } };
  const wide = sbx.widen({ version: 1, preset: 'read-only' }, extra);
  const access = Object.fromEntries(wide.filesystem.entries.map((e) => [e.path, e.access]));
  assert.strictEqual(access[':root'], 'read');
  assert.strictEqual(access['/srv/data'], 'write');
  const granted = sbx.approve(wide, { version: 1, filesystem: { entries: [
    { path: '/srv/data/sub', access: 'write' }] } });
  assert.strictEqual(granted.recorded, true);
  const nothing = sbx.approve(extra, { version: 1, filesystem: { entries: [
    { path: '/elsewhere', access: 'write' }] } });
  assert.strictEqual(nothing.recorded, false);
  assert.strictEqual(nothing.policy, null);
});

test('context as text and JSON', () => {
  const ws = workspace();
  const text = sbx.context(DENY_SSH, { cwd: ws });
  assert.ok(text.includes('Writing is allowed only in:') && text.includes(ws), text);
  const data = sbx.context(DENY_SSH, { cwd: ws, json: true });
  assert.deepStrictEqual(data.filesystem.writable_roots, [ws]);
  // The function: any host, every backend labelled, nothing probed.
  assert.strictEqual(data.backend, null);
  assert.ok(sbx.context(WORKSPACE, { cwd: ws, json: true }).network.limits[0].includes('under Landlock'));
});

test('Sbx#context describes the backend that will run it here', () => {
  const ws = workspace();
  const s = new sbx.Sbx();
  try {
    const data = s.context(DENY_SSH, { cwd: ws, json: true });
    assert.strictEqual(data.backend, s.explain(DENY_SSH, { cwd: ws }).available_backend);
    assert.strictEqual(data.sandboxed, true);
    const anywhere = s.context(WORKSPACE, { cwd: ws, json: true, anyBackend: true });
    assert.strictEqual(anywhere.backend, null);
    const forbidden = s.context(WORKSPACE, { cwd: ws, json: true, preference: 'forbid' });
    assert.strictEqual(forbidden.sandboxed, false);
    assert.strictEqual(forbidden.backend, null);
    assert.ok(s.context(WORKSPACE, { cwd: ws }).startsWith('Sandbox policy for the commands'));
    assert.throws(() => s.context(WORKSPACE, { cwd: ws, anyBackends: true }),
                  (e) => e.kind === 'invalid_input' && e.message.includes("unknown option 'anyBackends'"));
  } finally {
    s.close();
  }
});

test('classify', () => {
  const denied = sbx.classify({ exitCode: 1, stderr: 'sh: 1: cannot create /usr/x: Read-only file system\n',
                                backend: 'bwrap' });
  assert.strictEqual(denied.likely_sandbox_denial, true);
  assert.strictEqual(denied.kind, 'filesystem');
  assert.strictEqual(sbx.classify({ exitCode: 0, signal: 31, backend: 'bwrap' }).kind,
                     'syscall_filter');
  // A plain exit 159 is the command's own code (every backend reports a signal as a signal).
  assert.strictEqual(sbx.classify({ exitCode: 159, backend: 'bwrap' }).kind, 'none');
  assert.strictEqual(sbx.classify({ exitCode: 1, stderr: Buffer.from('Permission denied\n') })
    .likely_sandbox_denial, false);
});

test('backends, explain, transform', () => {
  const s = new sbx.Sbx();
  try {
    const names = s.backends().backends.map((b) => b.name);
    assert.ok(names.includes('bwrap') && names.includes('landlock'), names.join(','));
    const plan = s.transform(FULL, ['true'], { cwd: workspace() });
    assert.strictEqual(plan.backend, null);
    assert.ok(plan.argv[0].endsWith('/true'));
  } finally {
    s.close();
  }
});

test('exec: a write inside the workspace passes', async (t) => {
  const s = new sbx.Sbx();
  try {
    const ws = workspace();
    const backend = backendOrSkip(t, s, ws);
    if (!backend) return;
    const report = await s.exec(WORKSPACE, ['sh', '-c', 'echo hello > inside.txt'], { cwd: ws });
    assert.strictEqual(report.exit.code, 0, JSON.stringify(report));
    assert.strictEqual(report.final, backend);
    assert.strictEqual(fs.readFileSync(path.join(ws, 'inside.txt'), 'utf8'), 'hello\n');
  } finally {
    s.close();
  }
});

test('exec: a write outside is denied and classified', async (t) => {
  const s = new sbx.Sbx();
  let outsideDir = null;
  try {
    const ws = workspace();
    const backend = backendOrSkip(t, s, ws);
    if (!backend) return;
    // A directory this process can write (only the sandbox can stop the write), outside the
    // workspace, /tmp and $TMPDIR: $SBX_TEST_OUTSIDE_PARENT (ctest: next to the installed test
    // tree), else the current directory.
    const parent = process.env.SBX_TEST_OUTSIDE_PARENT || process.cwd();
    fs.mkdirSync(parent, { recursive: true });
    outsideDir = fs.mkdtempSync(path.join(parent, 'sbx-node-outside-'));
    const target = path.join(fs.realpathSync(outsideDir), 'denied.txt');
    const report = await s.exec(WORKSPACE, ['sh', '-c', `echo x > '${target}'`],
                                { cwd: ws, captureStderr: true });
    assert.notStrictEqual(report.exit.code, 0);
    assert.strictEqual(report.final, backend);
    assert.strictEqual(fs.existsSync(target), false);
    assert.strictEqual(report.denial.likely_sandbox_denial, true);
    assert.strictEqual(report.denial.kind, 'filesystem');
    assert.ok(report.stderr_tail.includes(target), report.stderr_tail);
  } finally {
    if (outsideDir) fs.rmSync(outsideDir, { recursive: true, force: true });
    s.close();
  }
});

test('exec does not block the event loop', async (t) => {
  const s = new sbx.Sbx();
  try {
    const ws = workspace();
    if (!backendOrSkip(t, s, ws)) return;
    let ticks = 0;
    const timer = setInterval(() => { ticks += 1; }, 10);
    const report = await s.exec(WORKSPACE, ['sleep', '1'], { cwd: ws });
    clearInterval(timer);
    assert.strictEqual(report.exit.code, 0);
    assert.ok(ticks >= 20, `the event loop ran ${ticks} timer ticks during a 1 s exec`);
  } finally {
    s.close();
  }
});

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

// Runs inside the sandbox: fetches each URL through the proxy sbx names in HTTP_PROXY.
const FETCH = `
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener()
with open("out", "w") as out:
    for url in sys.argv[1:]:
        try:
            with opener.open(url, timeout=20) as reply:
                out.write(f"{reply.status} {reply.read().decode()}\\n")
        except urllib.error.HTTPError as e:
            out.write(f"{e.code}\\n")
        except Exception as e:
            out.write(f"failed {type(e).__name__}\\n")
`;

test('the proxy refuses an unlisted host (the servers answer from this event loop)', async (t) => {
  const seen = { allowed: [], unlisted: [] };
  const serve = (name) => http.createServer((req, res) => {
    seen[name].push(req.url);
    res.end(`hello ${req.url}`);
  });
  const allowed = serve('allowed');
  const unlisted = serve('unlisted');
  const allowedPort = await listen(allowed);
  const unlistedPort = await listen(unlisted);
  const s = new sbx.Sbx();
  try {
    const ws = workspace();
    const policy = { version: 1,
      filesystem: { kind: 'restricted', protected_names: [], entries: [
        { path: ':root', access: 'read' }, { path: ':cwd', access: 'write' }] },
      network: { mode: 'proxy', allowed_domains: [`127.0.0.1:${allowedPort}`] } };
    const explained = s.explain(policy, { cwd: ws });
    if (explained.final === 'none') {
      skipNoBackend(t, `none here runs network mode proxy: ${explained.available_reason}`);
      return;
    }
    const report = await s.exec(policy, ['/usr/bin/python3', '-c', FETCH,
      `http://127.0.0.1:${allowedPort}/ok`, `http://127.0.0.1:${unlistedPort}/no`], { cwd: ws });
    assert.strictEqual(report.exit.code, 0, JSON.stringify(report));
    const lines = fs.readFileSync(path.join(ws, 'out'), 'utf8').trim().split('\n');
    assert.deepStrictEqual(lines, ['200 hello /ok', '403']);
    assert.deepStrictEqual(seen, { allowed: ['/ok'], unlisted: [] });
    assert.deepStrictEqual(report.network_refusals.map((r) => [r.host, r.port]),
                           [['127.0.0.1', unlistedPort]]);
  } finally {
    s.close();
    allowed.close();
    unlisted.close();
  }
});


test('close() during a running exec frees the manager only after it', async () => {
  // Freeing the manager under a running call was a heap use-after-free in the C API (issue
  // #32); here the exec's promise still resolves with a whole report, the command finished.
  const s = new sbx.Sbx({ backends: 'no-such-backend' });
  const ws = workspace();
  const finished = path.join(ws, 'finished');
  const running = s.exec(FULL, ['sh', '-c', `sleep 1; touch ${finished}`], { cwd: ws });
  s.close();
  assert.throws(() => s.explain(FULL, {cwd: ws}), invalidInput, 'closed at once for new calls');
  const report = await running;
  assert.strictEqual(report.exit.code, 0);
  assert.ok(fs.existsSync(finished));
  fs.rmSync(ws, { recursive: true, force: true });
});

test('an embedded NUL is an SbxError (invalid_input), never a truncation', async () => {
  const s = new sbx.Sbx({ backends: 'no-such-backend' });
  const ws = workspace();
  const marker = path.join(ws, 'ran');
  try {
    await assert.rejects(
        s.exec(FULL, ['sh', '-c', `touch ${marker}\0; echo checked-by-agent`], {cwd: ws}),
        (e) => invalidInput(e) && /argv\[2\] contains a NUL character/.test(e.message));
    assert.ok(!fs.existsSync(marker), 'the command ran cut at the NUL');
    assert.throws(
        () => s.transform(FULL, ['echo', 'checked-by-agent\0; rm -rf ~'], {cwd: ws}),
        (e) => invalidInput(e) && /argv\[1\] contains a NUL/.test(e.message));
    await assert.rejects(
        s.exec(FULL, ['true'], {cwd: '/tmp/safe\0/../etc'}),
        (e) => invalidInput(e) && /cwd contains a NUL/.test(e.message));
    assert.throws(
        () => s.explain(WORKSPACE, {cwd: ws, preference: 'auto\0forbid'}),
        (e) => invalidInput(e) && /preference contains a NUL/.test(e.message));
    assert.throws(
        () => sbx.shouldSandbox('{"version":1,"preset":"read-only"}\0x'),
        (e) => invalidInput(e) && /policy contains a NUL/.test(e.message));
    assert.throws(
        () => sbx.context(WORKSPACE, {cwd: '/tmp/safe\0/../etc'}),
        (e) => invalidInput(e) && /cwd contains a NUL/.test(e.message));
    assert.throws(
        () => new sbx.Sbx({backends: 'bwrap\0,landlock'}),
        (e) => invalidInput(e) && /backends contains a NUL/.test(e.message));
    // An object travels as JSON, the NUL escaped ("\u0000"): libsbx refuses it naming the entry.
    const nulPath = { version: 1, filesystem: { kind: 'restricted', entries: [
      { path: ':root', access: 'read' }, { path: '/tmp/safe\0/../etc', access: 'write' }] } };
    assert.throws(() => sbx.shouldSandbox(nulPath),
                  (e) => e instanceof sbx.SbxError &&
                         e.message.includes('/filesystem/entries/1/path: a string contains a NUL byte'));
    // classify's stderr is passed with its length: NUL bytes there are data.
    const verdict = sbx.classify({ exitCode: 1, stderr: 'a\0b: Permission denied' });
    assert.strictEqual(typeof verdict.likely_sandbox_denial, 'boolean');
  } finally {
    s.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});
