// A tool-call loop: parallel calls, capped or streamed output, a time-out, a denial, a grant.
import { Sbx, Policy, RunResult } from 'sbx-sandbox';
declare const console: { log(...values: unknown[]): void };  // es2020 lib, no @types/node
declare const process: { argv: string[]; exitCode?: number };

const [workspace, outside] = process.argv.slice(2);
const sbx = new Sbx();
let policy: Policy = { version: 1, preset: 'workspace-write' };

// What goes back to the model: the output (capped), how the call ended and why sbx refused.
function forModel(r: RunResult<string>): string {
  const lines = [(r.stdout ?? '') + (r.stderr ?? '')].concat(r.truncated ? ['[output truncated]'] : []);
  if (r.report.error_kind === 'timed_out') lines.push('[timed out]');
  else if (r.report.error) lines.push(`[sbx: ${r.report.error}]`);
  const denial = r.report.denial;
  if (denial?.likely_sandbox_denial) lines.push(`[the sandbox refused: ${denial.evidence}]`);
  for (const refusal of r.report.network_refusals) lines.push(`[network refused: ${JSON.stringify(refusal)}]`);
  return lines.concat(`[exit ${r.exitCode ?? 'none'}]`).join('\n');
}

function tool(argv: string[], timeoutMs = 20000): Promise<RunResult<string>> {
  return sbx.run(policy, argv, { cwd: workspace, timeoutMs, maxOutputBytes: 256, encoding: 'utf8' });
}

// Output streamed as it comes, up to `cap` characters; then the whole sandbox is ended.
async function streamed(argv: string[], cap: number): Promise<string> {
  const child = sbx.spawn(policy, argv, { cwd: workspace });
  let text = '';
  for await (const chunk of child.stdout!) if ((text += String(chunk)).length >= cap) break;
  child.kill();  // ends the whole sandbox
  await child.exited;
  return text.slice(0, cap);
}

// A person's answer to "may it write there?": only the one directory asked for.
const askUser = (dir: string): Policy => ({ version: 1, filesystem: { entries: [{ path: dir, access: 'write' }] } });

async function main(): Promise<void> {
  const [build, chatty, slow, write, log] = await Promise.all([
    tool(['sh', '-c', 'echo built > out.txt && cat out.txt']),
    tool(['sh', '-c', 'yes | head -c 100000']),
    tool(['sleep', '30'], 300),
    tool(['sh', '-c', `echo hello > ${outside}/note.txt`]),
    streamed(['sh', '-c', 'while :; do echo tick; sleep 0.05; done'], 20),
  ]);
  for (const [name, r] of [['build', build], ['chatty', chatty], ['slow', slow], ['write', write]] as const)
    console.log(`--- ${name}\n${forModel(r)}`);
  console.log(`--- streamed\n${log}`);
  if (write.exitCode !== 0 && write.report.denial?.likely_sandbox_denial) {
    // The agent asks for the directory; the person's grant is recorded and widens the policy.
    const requested: Policy = askUser(outside);
    const approval = sbx.approve(requested, askUser(outside));
    if (approval.recorded && approval.policy) policy = sbx.widen(policy, approval.policy);
    console.log(`--- write, granted ${outside}\n${forModel(await tool(['sh', '-c', `echo hello > ${outside}/note.txt`]))}`);
  }
  sbx.close();
}

main().catch((e: unknown) => { console.log(`failed: ${String(e)}`); process.exitCode = 1; });
