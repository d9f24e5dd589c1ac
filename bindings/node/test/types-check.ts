// Type-checked by `tsc --noEmit --strict` (ctest node.types): index.d.ts describes the API as
// an agent uses it, and rejects what libsbx would refuse where the types can tell.
import {approve, classify, context, Denial, ErrorKind, ErrorKindName, ExecReport, Policy, Sbx, SbxError, shouldSandbox, widen} from '..';

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

// README.md's "run a tool call" loop, verbatim (so the example stays true to the types).
namespace readme {
const s = new Sbx();
let policy: Policy = { version: 1, preset: 'workspace-write' };
async function runToolCall(argv: string[], cwd: string,
                           askUser: (why: string) => Promise<Policy | null>): Promise<ExecReport> {
  const report = await s.exec(policy, argv, { cwd, captureStderr: true });
  if (report.exit === null) throw new SbxError(report.error ?? 'refused');        // no sandbox here
  if (report.exit.code !== 0 && report.denial?.likely_sandbox_denial) {
    const grant = await askUser(report.denial.evidence);                            // a person decides
    if (grant) { policy = s.widen(policy, grant); return runToolCall(argv, cwd, askUser); }
  }
  return report;
}
void runToolCall;
}
