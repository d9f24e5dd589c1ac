// Type-checked by `tsc --noEmit --strict` (ctest node.types): index.d.ts describes the API as
// an agent uses it, and rejects what libsbx would refuse where the types can tell.
import {approve, AbortSignalLike, Bytes, classify, context, Denial, ErrorKind, ErrorKindName, ExecReport, Policy, RunResult, Sbx, SbxChild, SbxError, shouldSandbox, widen} from '..';

// The README's examples print with console; this check's lib (es2020, no @types/node) has none.
declare const console: { log(...values: unknown[]): void };

async function runToolCall(s: Sbx, argv: string[], cwd: string): Promise<string> {
  const policy: Policy = { version: 1, preset: 'workspace-write', network_access: false };
  const report: ExecReport = await s.exec(policy, argv, { cwd, captureStderr: true });
  if (report.exit === null) return `did not run: ${report.error ?? ''}`;
  const denial: Denial | null = report.denial;
  if (report.exit.code !== 0 && denial !== null && denial.likely_sandbox_denial) {
    const wider = widen(policy, { version: 1, filesystem: { entries: [{ path: '/srv', access: 'write' }] } });
    const granted = approve(wider, { version: 1, filesystem: { entries: [{ path: '/srv/x', access: 'write' }] } });
    return granted.recorded ? 'approved' : denial.kind;
  }
  return String(report.exit.code);
}

const s = new Sbx({ backends: 'bwrap,landlock' });
const text: string = context({ version: 1, preset: 'read-only' });
const data = context({ version: 1, preset: 'read-only' }, { json: true });
const sandboxed: boolean = shouldSandbox('{"version":1,"preset":"read-only"}').sandbox;
const kind: string = classify({ exitCode: 1, stderr: 'x', backend: null }).kind;
const plan = s.transform({ version: 1, filesystem: { kind: 'restricted', entries: [{ glob: '**/*.pem', access: 'deny' }] },
                           network: { mode: 'proxy', allowed_domains: ['example.com'] } }, ['true']);
const backend: string | null = plan.backend;
void runToolCall(s, ['true'], '/tmp').catch((e: unknown) => { if (e instanceof SbxError) throw e; });
void runToolCall(s, ['true'], '/tmp').catch((e: unknown) => {
  if (e instanceof SbxError && e.kind === ErrorKind.UNAVAILABLE) return 'no sandbox here';
  throw e;
});
const refusedKind: ErrorKindName|null = (await_free_report()).error_kind;
function await_free_report(): ExecReport {
  throw new SbxError('not called', 'host_failure');
}
// @ts-expect-error: not a kind
const badKind: ErrorKindName = 'oops';
void[refusedKind, badKind];
void [text, data, sandboxed, kind, backend];

// @ts-expect-error: an unknown preset is not a Policy
const badPreset: Policy = { version: 1, preset: 'everything' };
// @ts-expect-error: a glob entry can only deny
const badGlob: Policy = { version: 1, filesystem: { entries: [{ glob: '*.key', access: 'write' }] } };
// @ts-expect-error: version 2 does not exist
const badVersion: Policy = { version: 2, preset: 'read-only' };
void [badPreset, badGlob, badVersion];

// The reports are exactly what libsbx writes (reports.d.ts, generated from core/schema/): what
// was typed loosely by hand before and failed at run time is now a compile error.
async function readReports(s: Sbx): Promise<void> {
  const report = await s.exec({ version: 1, preset: 'read-only' }, ['true']);
  if (report.denial !== null) {
    // @ts-expect-error: evidence is null when the failure is no likely denial
    const evidence: string = report.denial.evidence;
    if (report.denial.likely_sandbox_denial) {
      const shown: string = report.denial.evidence;  // narrowed: a likely denial has evidence
      void shown;
    }
    void evidence;
  }
  for (const refusal of report.network_refusals) {
    // @ts-expect-error: only the proxy's refusals have a host (restricted mode: {kind: 'ip', address}, {kind: 'unix', path})
    const host: string = refusal.host;
    if (refusal.kind === 'proxy') {
      const where: string = `${refusal.host ?? '?'}:${refusal.port} (${refusal.rule})`;
      void where;
    } else if (refusal.kind === 'ip') {
      const address: string = refusal.address;
      void address;
    } else {
      const path: string = refusal.path;
      void path;
    }
    void host;
  }
  // @ts-expect-error: a report has no key the schema does not list
  void report.exit_code;
  const explained = await Promise.resolve(s.explain(null));
  const limits: Array<number | null> = explained.limits.map((limit) => limit.value);
  const probed = s.backends({ probe: true }).backends.map((b) => b.capabilities ?? []);
  void [limits, probed];
}
void readReports;

// run() and spawn(): captured output is Bytes, or string with a text encoding; the options are
// checked (a misspelt or mistyped one is a compile error, as it is an SbxError at run time).
async function runAndSpawn(s: Sbx, signal: AbortSignalLike): Promise<void> {
  const raw: RunResult = await s.run(null, ['ls'], { stdin: 'ignore', stdout: 'pipe', stderr: 'inherit' });
  const bytes: Bytes | null = raw.stdout;
  const text: RunResult<string> = await s.run({ version: 1, preset: 'read-only' }, ['ls'],
                                               { encoding: 'utf8', env: { A: '1', B: null }, signal });
  const out: string | null = text.stdout;
  const kind: ErrorKindName | null = text.report.error_kind;
  const fed = await s.run(null, ['cat'], { input: new Uint8Array([1, 2]), timeoutMs: 5, maxOutputBytes: 10 });
  const child: SbxChild = s.spawn(null, ['cat'], { stdin: 'pipe', timeoutMs: 1000, signal });
  if (child.stdin !== null) child.stdin.write('x', () => child.stdin?.end());
  child.stdout?.on('data', (chunk: Bytes | string) => void chunk);
  const killed: boolean = child.kill();
  const exit: number | null = (await child.exited).exitCode;
  const report: ExecReport = await child.report;
  void [bytes, out, kind, fed, killed, exit, report];
  // @ts-expect-error: without an encoding the output is bytes, not text
  const notText: string | null = raw.stdout;
  // @ts-expect-error: not a stream mode
  await s.run(null, ['ls'], { stdout: 'bogus' });
  // @ts-expect-error: the option is timeoutMs
  await s.run(null, ['ls'], { timeout: 5 });
  // @ts-expect-error: an env value is a string, or null to remove it
  await s.run(null, ['ls'], { env: { A: 1 } });
  // @ts-expect-error: not an encoding
  await s.run(null, ['ls'], { encoding: 'klingon' });
  // @ts-expect-error: spawn streams, it does not capture
  s.spawn(null, ['ls'], { maxOutputBytes: 10 });
  void notText;
}
void runAndSpawn;

// README.md's examples, verbatim (so that they stay true to the types).
namespace readmeRun {
const s = new Sbx();
const policy: Policy = { version: 1, preset: 'workspace-write' };
async function build(): Promise<void> {
  const r = await s.run(policy, ['make', 'test'], { cwd: '/work', timeoutMs: 600000, encoding: 'utf8' });
  console.log(r.exitCode, r.stdout, r.stderr, r.truncated, r.report.error_kind);  // 'timed_out' if ended
  const child = s.spawn(policy, ['python3', '-u', 'serve.py'], { cwd: '/work' });
  child.stdin!.end('input\n');                                     // the command's end of file
  for await (const chunk of child.stdout!) console.log(String(chunk));   // as it comes
  const { exitCode } = await child.exited;                         // child.kill() ends the sandbox
  console.log(exitCode);
}
void build;
}

namespace readme {
const s = new Sbx();
let policy: Policy = { version: 1, preset: 'workspace-write' };
async function runToolCall(argv: string[], cwd: string,
                           askUser: (why: string) => Promise<Policy | null>): Promise<string> {
  const r = await s.run(policy, argv, { cwd, timeoutMs: 120000, maxOutputBytes: 65536, encoding: 'utf8' });
  if (r.exitCode !== 0 && r.report.denial?.likely_sandbox_denial) {
    const grant = await askUser(r.report.denial.evidence);                          // a person decides
    if (grant) { policy = s.widen(policy, grant); return runToolCall(argv, cwd, askUser); }
  }
  const cut = r.truncated ? '\n[output truncated]' : '';
  return `${r.stdout ?? ''}${r.stderr ?? ''}${cut}\n[exit ${r.exitCode}${r.report.error ? `; ${r.report.error}` : ''}]`;
}
void runToolCall;
}
