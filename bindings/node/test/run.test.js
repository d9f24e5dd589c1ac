'use strict';
// Sbx.run() and Sbx.spawn() (sbx_run_start and its handle) against a real libsbx and backend,
// each point checked so that it fails when the point does not hold:
//  - stdout and stderr captured apart (Buffers, strings with `encoding`), and a capped stream
//    marked truncated;
//  - the command's stdout is this process's own ('inherit') although Node marks its 0-2
//    close-on-exec: a child node runs `echo hi > inside.txt && cat inside.txt` (the original
//    bug: the command started without a stdout);
//  - stdin from a string or Buffer; per-call env added and removed, the policy's scrub winning;
//  - timeoutMs, an AbortSignal and kill() end the whole run (no process of it is left) and the
//    report says so;
//  - spawn's stdout is read while the command still runs (it waits for our stdin);
//  - 4 runs on one Sbx go on at once (each sees all 4 started before it ends); more runs than
//    libuv's pool has threads go on at once and leave the pool free (fs and dns answer meanwhile);
//  - a run still going on when the process exits is ended with it;
//  - bad arguments reject (run) or throw (spawn) SbxError of kind invalid_input.
const test = require('node:test');
const assert = require('node:assert');
const childProcess = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { sbx, PACKAGE, WORKSPACE, FULL, workspace, backendOrSkip, invalidInput } = require('./common');

// Runs `body(s, ws, backend)` with a manager and a workspace; skipped without a backend.
async function withSandbox(t, body) {
  const s = new sbx.Sbx();
  const ws = workspace();
  try {
    const backend = backendOrSkip(t, s, ws);
    if (backend) await body(s, ws, backend);
  } finally {
    s.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

// A `sleep` duration of about 100 s that no other process on the host has in its command line.
let nextMark = 0;
function sleepMark() {
  nextMark += 1;
  return `100.${process.pid}${nextMark}`;
}

// The pids whose command line is `sleep <mark>`.
function sleepers(mark) {
  const needle = `sleep\0${mark}`;
  const found = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(needle)) found.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

// `promise`, or a failure naming `what` when it has not settled within 60 s: a run that should
// have been ended early (its commands sleep 100 s) fails the test instead of hanging it.
async function endsEarly(promise, what) {
  let timer;
  const late = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: the run was not ended`)), 60000);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

// Resolves once `file` exists (polled: the command signals that it runs).
async function fileAppears(file) {
  while (!fs.existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 20));
}

// Reads `stream` until `text` has come (or its end); what was read. The stream stays open,
// paused (an async iterator left early would destroy it).
function readUntil(stream, text) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const stop = () => {
      stream.off('data', onData).off('end', onEnd).off('error', onError);
      stream.pause();
    };
    const onData = (chunk) => {
      seen += chunk;
      if (seen.includes(text)) {
        stop();
        resolve(seen);
      }
    };
    const onEnd = () => { stop(); resolve(seen); };
    const onError = (error) => { stop(); reject(error); };
    stream.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

async function readAll(stream) {
  let all = '';
  for await (const chunk of stream) all += chunk;
  return all;
}

test('run: stdout and stderr are captured apart, as Buffers or strings', async (t) => {
  await withSandbox(t, async (s, ws, backend) => {
    const r = await s.run(WORKSPACE, ['sh', '-c', 'printf out; printf err >&2; exit 3'], { cwd: ws });
    assert.strictEqual(r.exitCode, 3, JSON.stringify(r.report));
    assert.strictEqual(r.signal, null);
    assert.ok(Buffer.isBuffer(r.stdout) && Buffer.isBuffer(r.stderr));
    assert.strictEqual(r.stdout.toString(), 'out');
    assert.strictEqual(r.stderr.toString(), 'err');
    assert.strictEqual(r.truncated, false);
    assert.strictEqual(r.report.final, backend);
    assert.strictEqual(r.report.error, null);
    assert.deepStrictEqual(r.report.stdout_capture, { bytes: 3, dropped_bytes: 0, truncated: false });
    // A captured stderr is the classification's evidence.
    assert.strictEqual(r.report.stderr_tail, 'err');
    const text = await s.run(WORKSPACE, ['sh', '-c', 'echo hi > inside.txt && cat inside.txt; echo é >&2'],
                             { cwd: ws, encoding: 'utf8' });
    assert.strictEqual(text.exitCode, 0);
    assert.strictEqual(text.stdout, 'hi\n');
    assert.strictEqual(text.stderr, 'é\n');
    assert.strictEqual(fs.readFileSync(path.join(ws, 'inside.txt'), 'utf8'), 'hi\n');
    const quiet = await s.run(WORKSPACE, ['sh', '-c', 'echo lost; echo lost >&2'],
                              { cwd: ws, stdout: 'ignore', stderr: 'ignore' });
    assert.strictEqual(quiet.exitCode, 0);
    assert.strictEqual(quiet.stdout, null);
    assert.strictEqual(quiet.stderr, null);
  });
});

test('run: a capped stream keeps its start and is marked truncated', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const r = await s.run(WORKSPACE,
                          ['sh', '-c', "head -c 300000 /dev/zero | tr '\\0' x; echo oops >&2"],
                          { cwd: ws, maxOutputBytes: 1000 });
    assert.strictEqual(r.exitCode, 0, JSON.stringify(r.report));
    assert.strictEqual(r.stdout.toString(), 'x'.repeat(1000));
    assert.strictEqual(r.truncated, true);
    assert.deepStrictEqual(r.report.stdout_capture, { bytes: 1000, dropped_bytes: 299000, truncated: true });
    assert.strictEqual(r.stderr.toString(), 'oops\n');
    assert.deepStrictEqual(r.report.stderr_capture, { bytes: 5, dropped_bytes: 0, truncated: false });
  });
});

// A child node whose own 0-2 are close-on-exec (asserted: the premise) runs commands whose
// stdio is its own: run() and spawn() with 'inherit', and exec(). Their output must reach the
// child's stdout, which this test reads.
test("the command's stdout is this process's own although Node marks it close-on-exec", async (t) => {
  await withSandbox(t, async (s, ws) => {
    const script = `
      const fs = require('fs');
      const sbx = require(${JSON.stringify(PACKAGE)});
      const flags = (fd) => parseInt(/flags:\\s*(\\d+)/.exec(
          fs.readFileSync('/proc/self/fdinfo/' + fd, 'utf8'))[1], 8);
      console.error('cloexec ' + [0, 1, 2].map((fd) => (flags(fd) & 0o2000000) !== 0).join(' '));
      (async () => {
        const s = new sbx.Sbx();
        const policy = ${JSON.stringify(WORKSPACE)};
        const cwd = ${JSON.stringify(ws)};
        const r = await s.run(policy, ['sh', '-c', 'echo hi > inside.txt && cat inside.txt'],
                              { cwd, stdout: 'inherit', stderr: 'inherit' });
        const c = s.spawn(policy, ['sh', '-c', 'read line; echo "spawn read $line"'],
                          { cwd, stdin: 'inherit', stdout: 'inherit', stderr: 'inherit' });
        const spawned = await c.exited;
        const e = await s.exec(policy, ['sh', '-c', 'echo exec too'], { cwd });
        console.error('exits ' + [r.exitCode, spawned.exitCode, e.exit.code].join(' '));
        s.close();
      })();`;
    const child = childProcess.spawn(process.execPath, ['-e', script], { stdio: 'pipe' });
    child.stdin.end('from the parent\n');
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    const [out, err, code] = await Promise.all([
      readAll(child.stdout), readAll(child.stderr),
      new Promise((resolve) => child.on('close', resolve))]);
    assert.match(err, /^cloexec true true true$/m, `the premise: Node marks its stdio close-on-exec\n${err}`);
    assert.strictEqual(out, 'hi\nspawn read from the parent\nexec too\n', err);
    assert.match(err, /^exits 0 0 0$/m, err);
    assert.strictEqual(code, 0, err);
  });
});

test('run: stdin from a string or a Buffer; none by default', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const text = await s.run(WORKSPACE, ['cat'], { cwd: ws, stdin: 'alpha\nbeta\n', encoding: 'utf8' });
    assert.strictEqual(text.stdout, 'alpha\nbeta\n');
    const bytes = Buffer.from([0, 255, 10, 1, 0]);
    assert.deepStrictEqual((await s.run(WORKSPACE, ['cat'], { cwd: ws, stdin: bytes })).stdout, bytes);
    const large = await s.run(WORKSPACE, ['wc', '-c'], { cwd: ws, stdin: Buffer.alloc(1 << 20, 'y') });
    assert.strictEqual(large.stdout.toString().trim(), '1048576');
    // `input` is always data, even a word that names a mode.
    assert.strictEqual((await s.run(WORKSPACE, ['cat'], { cwd: ws, input: 'ignore' })).stdout.toString(),
                       'ignore');
    const none = await s.run(WORKSPACE, ['cat'], { cwd: ws });
    assert.strictEqual(none.exitCode, 0);
    assert.strictEqual(none.stdout.length, 0);
  });
});

test("run: env adds and removes names per call; the policy's rules win", async (t) => {
  await withSandbox(t, async (s, ws) => {
    const show = ['sh', '-c', 'echo "a=${SBX_NODE_TEST_ADDED-none} r=${SBX_NODE_TEST_REMOVED-none} ' +
                  'p=${SBX_NODE_TEST_REPLACED-none} t=${SBX_NODE_TEST_TOKEN-none} ' +
                  'x=${SBX_NODE_TEST_EXCLUDED-none}"'];
    process.env.SBX_NODE_TEST_REMOVED = '1';
    process.env.SBX_NODE_TEST_REPLACED = 'old';
    try {
      const env = { SBX_NODE_TEST_ADDED: 'yes', SBX_NODE_TEST_REMOVED: null, SBX_NODE_TEST_REPLACED: 'new',
                    SBX_NODE_TEST_TOKEN: 'hunter2', SBX_NODE_TEST_EXCLUDED: 'x' };
      const before = await s.run(WORKSPACE, show, { cwd: ws, encoding: 'utf8' });
      assert.strictEqual(before.stdout, 'a=none r=1 p=old t=none x=none\n');
      // The token is a secret by name: the policy's default filter takes it away, per call or not.
      const excluding = { ...WORKSPACE, environment: { exclude: ['SBX_NODE_TEST_EXCLUDED'] } };
      const during = await s.run(excluding, show, { cwd: ws, env, encoding: 'utf8' });
      assert.strictEqual(during.stdout, 'a=yes r=none p=new t=none x=none\n', JSON.stringify(during.report));
      // The same call with a policy that keeps the token: it was passed, the policy decided.
      const keeping = { ...WORKSPACE, environment: { keep: ['SBX_NODE_TEST_TOKEN'] } };
      const kept = await s.run(keeping, show, { cwd: ws, env, encoding: 'utf8' });
      assert.strictEqual(kept.stdout, 'a=yes r=none p=new t=hunter2 x=x\n');
    } finally {
      delete process.env.SBX_NODE_TEST_REMOVED;
      delete process.env.SBX_NODE_TEST_REPLACED;
    }
  });
});

test('run: timeoutMs ends the whole run, and the report says so', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const mark = sleepMark();
    const r = await endsEarly(s.run(WORKSPACE, ['sh', '-c', `sleep ${mark} & sleep ${mark}; wait`],
                                    { cwd: ws, timeoutMs: 1000 }), 'timeoutMs');
    assert.strictEqual(r.report.error_kind, 'timed_out', JSON.stringify(r.report));
    assert.match(r.report.error, /timed out after 1000 ms/);
    assert.notStrictEqual(r.report.exit, null, 'the command ran');
    assert.deepStrictEqual(sleepers(mark), [], 'a process of the run survived it');
  });
});

test('run: an AbortSignal ends the whole run; one aborted before runs nothing', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const mark = sleepMark();
    const controller = new AbortController();
    const running = s.run(WORKSPACE, ['sh', '-c', `touch started; sleep ${mark} & sleep ${mark}; wait`],
                          { cwd: ws, signal: controller.signal });
    await Promise.race([fileAppears(path.join(ws, 'started')), running]);
    controller.abort();
    const r = await endsEarly(running, 'abort()');
    assert.strictEqual(r.report.error_kind, 'cancelled', JSON.stringify(r.report));
    assert.notStrictEqual(r.report.exit, null, 'the command ran');
    assert.deepStrictEqual(sleepers(mark), [], 'a process of the run survived it');

    const early = new AbortController();
    early.abort();
    const none = await s.run(WORKSPACE, ['touch', 'ran'], { cwd: ws, signal: early.signal });
    assert.strictEqual(none.report.error_kind, 'cancelled', JSON.stringify(none.report));
    // The cancel comes right after sbx_run_start; the command starts only if planning beat it,
    // which the report then says (exit set).
    if (none.report.exit === null) assert.ok(!fs.existsSync(path.join(ws, 'ran')));
  });
});

test('spawn: stdout is read while the command runs; stdin is a pipe', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const child = s.spawn(WORKSPACE, ['sh', '-c', 'echo first; echo apart >&2; read line; echo "got $line"'],
                          { cwd: ws });
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    // The command waits for its stdin: "first" can only come while it runs.
    assert.strictEqual(await readUntil(child.stdout, 'first\n'), 'first\n');
    child.stdin.end('hello\n');
    const [rest, err, exited, report] =
        await Promise.all([readAll(child.stdout), readAll(child.stderr), child.exited, child.report]);
    assert.strictEqual(rest, 'got hello\n');
    assert.strictEqual(err, 'apart\n');
    assert.deepStrictEqual(exited, { exitCode: 0, signal: null });
    assert.strictEqual(report.error, null);
    assert.strictEqual(report.stdout_capture, null);
  });
});

test('spawn: kill() ends the whole run', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const mark = sleepMark();
    const child = s.spawn(WORKSPACE, ['sh', '-c', `sleep ${mark} & echo ready; sleep ${mark}; wait`],
                          { cwd: ws, stdin: 'ignore', stderr: 'inherit' });
    assert.strictEqual(child.stdin, null);
    assert.strictEqual(child.stderr, null);
    child.stdout.setEncoding('utf8');
    assert.strictEqual(await readUntil(child.stdout, 'ready\n'), 'ready\n');
    assert.strictEqual(child.kill(), true);
    const report = await endsEarly(child.report, 'kill()');
    assert.strictEqual(await readAll(child.stdout), '', 'end of file once the run has ended');
    assert.strictEqual(report.error_kind, 'cancelled', JSON.stringify(report));
    assert.notStrictEqual((await child.exited).exitCode, 0);
    assert.strictEqual(child.kill(), false, 'the run had ended');
    assert.deepStrictEqual(sleepers(mark), [], 'a process of the run survived it');
  });
});

// Each run waits until all 4 have started: run one after the other, the first would wait alone
// and print "alone".
test('4 runs on one Sbx go on at once', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const script = (i) => `touch started-${i}; n=0; ` +
        'while [ "$(ls started-* | wc -l)" -lt 4 ]; do ' +
        'n=$((n+1)); if [ $n -ge 300 ]; then echo alone; exit 3; fi; sleep 0.1; done; echo together';
    const results = await Promise.all([0, 1, 2, 3].map(
        (i) => s.run(WORKSPACE, ['sh', '-c', script(i)], { cwd: ws, encoding: 'utf8' })));
    for (const r of results) {
      assert.strictEqual(r.stdout, 'together\n', JSON.stringify(r.report));
      assert.strictEqual(r.exitCode, 0);
    }
  });
});

// The runs wait on threads of their own, never libuv's pool (4 threads unless UV_THREADPOOL_SIZE
// says otherwise): with more runs waiting than the pool has threads, fs and dns, which need it,
// still answer. Each run waits for the file `go` that this test writes with fs.promises only
// after a dns lookup: were the pool held by the waits, neither would come and every run would
// give up ("stuck").
test("more runs at once than libuv's pool has threads, and the pool stays free", async (t) => {
  await withSandbox(t, async (s, ws) => {
    const count = Math.max(6, Number(process.env.UV_THREADPOOL_SIZE || 4) + 2);
    const script = (i) => `touch started-${i}; n=0; while [ ! -e go ]; do ` +
        'n=$((n+1)); if [ $n -ge 600 ]; then echo stuck; exit 3; fi; sleep 0.05; done; echo went';
    const runs = Promise.all([...Array(count).keys()].map(
        (i) => s.run(WORKSPACE, ['sh', '-c', script(i)], { cwd: ws, encoding: 'utf8' })));
    const allStarted = (async () => {
      for (let i = 0; i < count; ++i) await fileAppears(path.join(ws, `started-${i}`));
    })();
    await Promise.race([allStarted, runs]);
    const address = await endsEarly(require('node:dns').promises.lookup('localhost'), 'dns.lookup');
    assert.ok(address.address, JSON.stringify(address));
    await endsEarly(fs.promises.writeFile(path.join(ws, 'go'), 'go'), 'fs.promises.writeFile');
    for (const r of await runs) {
      assert.strictEqual(r.stdout, 'went\n', JSON.stringify(r.report));
      assert.strictEqual(r.exitCode, 0);
    }
  });
});

// A child node starts a run that would sleep 100 s and exits (process.exit) once it runs: the
// exit is prompt and no process of the run is left behind.
test('a run still going on when the process exits ends with it', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const mark = sleepMark();
    const script = `
      const fs = require('fs');
      const sbx = require(${JSON.stringify(PACKAGE)});
      const cwd = ${JSON.stringify(ws)};
      new sbx.Sbx().run(${JSON.stringify(WORKSPACE)},
                        ['sh', '-c', 'touch started; sleep ${mark} & sleep ${mark}; wait'], { cwd });
      setInterval(() => { if (fs.existsSync(cwd + '/started')) process.exit(0); }, 20);`;
    const child = childProcess.spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const [err, code] = await endsEarly(Promise.all([
      readAll(child.stderr.setEncoding('utf8')), new Promise((resolve) => child.on('close', resolve))]),
                                        'the exiting process');
    assert.strictEqual(code, 0, err);
    assert.ok(fs.existsSync(path.join(ws, 'started')), err);
    assert.deepStrictEqual(sleepers(mark), [], 'a process of the run survived the exit');
  });
});

test('a command libsbx cannot start rejects run() and both promises of spawn()', async () => {
  const s = new sbx.Sbx({ backends: 'no-such-backend' });
  const ws = workspace();
  try {
    const notFound = (e) => e instanceof sbx.SbxError && /command not found/.test(e.message);
    await assert.rejects(s.run(FULL, ['sbx-no-such-command'], { cwd: ws }), notFound);
    const child = s.spawn(FULL, ['sbx-no-such-command'], { cwd: ws });
    await assert.rejects(child.report, notFound);
    await assert.rejects(child.exited, notFound);
  } finally {
    s.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});

test('bad arguments are SbxError (invalid_input): run() rejects, spawn() throws', async () => {
  const s = new sbx.Sbx({ backends: 'no-such-backend' });
  const ws = workspace();
  const ran = path.join(ws, 'ran');
  const touch = ['touch', ran];
  try {
    const cases = [
      [[], {}, /argv must be a non-empty array/],
      ['touch', {}, /argv must be a non-empty array/],
      [touch, { stdout: 'bogus' }, /stdout must be 'pipe', 'inherit' or 'ignore'/],
      [touch, { stderr: 1 }, /stderr must be/],
      [touch, { stdin: 42 }, /stdin must be a string or a Buffer/],
      [touch, { timeoutMs: -1 }, /timeoutMs must be an integer >= 0/],
      [touch, { timeoutMs: 1.5 }, /timeoutMs must be an integer/],
      [touch, { maxOutputBytes: 0 }, /maxOutputBytes must be an integer >= 1/],
      [touch, { env: { X: 1 } }, /env.X must be a string/],
      [touch, { env: { 'A=B': 'x' } }, /is not a variable name/],
      [touch, { env: ['X=1'] }, /env must be an object/],
      [touch, { env: { X: 'a\0b' } }, /env.X contains a NUL/],
      [touch, { timeout: 5 }, /unknown option 'timeout'/],
      [touch, { signal: {} }, /signal must be an AbortSignal/],
      [touch, { encoding: 'klingon' }, /not a Buffer encoding/],
      [touch, { stdin: 'pipe' }, /stdin 'pipe' is spawn\(\)'s/],
      [touch, { stdin: 'x', input: 'y' }, /stdin or input/],
      [['touch', `${ran}\0; echo checked`], {}, /argv\[1\] contains a NUL/],
    ];
    for (const [argv, options, message] of cases) {
      await assert.rejects(s.run(FULL, argv, { cwd: ws, allowUnsandboxed: true, ...options }),
                           (e) => invalidInput(e) && message.test(e.message),
                           `${JSON.stringify(options)}`);
    }
    // libsbx's own check of the policy.
    await assert.rejects(s.run({ version: 2 }, touch, { cwd: ws }),
                         (e) => invalidInput(e) && /version/.test(e.message));
    assert.throws(() => s.spawn(FULL, [], { cwd: ws }), invalidInput);
    assert.throws(() => s.spawn(FULL, touch, { cwd: ws, maxOutputBytes: 10 }),
                  (e) => invalidInput(e) && /unknown option 'maxOutputBytes'/.test(e.message));
    assert.ok(!fs.existsSync(ran), 'a refused call ran its command');
  } finally {
    s.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});

// wrap (issue #33 point 3): a caller that spawns processes itself runs the command through the
// installed `sbx exec`: the policy on stdio[3] (a socket it ends), the report on stdio[4], the
// command's own stdout the child's. The policy holds: a read-only one keeps the write out.
test('wrap: the spawned sbx exec takes the policy on fd 3 and reports on fd 4', async (t) => {
  await withSandbox(t, async (s, ws) => {
    const readOnly = { version: 1, preset: 'read-only' };
    const w = s.wrap(readOnly, ['sh', '-c', 'echo out; touch made || echo refused >&2'], { cwd: ws });
    assert.strictEqual(w.policyFd, 3);
    assert.strictEqual(w.reportFd, 4);
    assert.ok(w.command.endsWith('/bin/sbx'), w.command);
    const child = childProcess.spawn(w.command, w.args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
    child.stdio[3].end(w.policy);
    const collect = (stream) => new Promise((resolve) => {
      const chunks = [];
      stream.on('data', (c) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks).toString()));
    });
    const [out, err, reportText, code] = await Promise.all([
      collect(child.stdout), collect(child.stderr), collect(child.stdio[4]),
      new Promise((resolve) => child.on('exit', resolve))]);
    assert.strictEqual(code, 0, err);
    assert.strictEqual(out, 'out\n');
    assert.match(err, /refused/);
    assert.ok(!fs.existsSync(path.join(ws, 'made')), 'the read-only policy did not hold');
    const report = JSON.parse(reportText);
    assert.strictEqual(report.should_sandbox, true);
    assert.strictEqual(report.exit.code, 0);
  });
  assert.throws(() => sbx.wrap(WORKSPACE, []), (e) => invalidInput(e));
});

test('close() during a run frees the manager only after it', async () => {
  const s = new sbx.Sbx({ backends: 'no-such-backend' });
  const ws = workspace();
  try {
    const running = s.run(FULL, ['sh', '-c', 'sleep 1; touch finished'], { cwd: ws });
    s.close();
    assert.throws(() => s.explain(FULL, { cwd: ws }), invalidInput, 'closed at once for new calls');
    await assert.rejects(s.run(FULL, ['true'], { cwd: ws }), invalidInput);
    const r = await running;
    assert.strictEqual(r.exitCode, 0, JSON.stringify(r.report));
    assert.ok(fs.existsSync(path.join(ws, 'finished')));
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
});
