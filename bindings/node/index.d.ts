// Types of the `sbx-sandbox` package (index.js). Policies are those of README.md "Policies"
// (the model is documented in core/include/sbx/core/policy.hpp); reports are those of
// `sbx ... --json`, generated from their JSON Schemas (reports.d.ts).

export type Access = 'read' | 'write' | 'deny';
export type PresetName = 'read-only' | 'workspace-write' | 'danger-full-access' | 'external-sandbox';
export type Preference = 'auto' | 'require' | 'forbid';
export type NetworkMode = 'restricted' | 'enabled' | 'proxy';

/** A path entry (absolute, "~/...", or ":root", ":cwd", ":cwd/sub", ":tmpdir", ":slash_tmp", ":minimal", ":caches" (write only: the toolchain caches)). */
export interface PathEntry { path: string; access: Access; }
/** A deny-only glob entry, e.g. {"glob": "**\/*.pem", "access": "deny"}. */
export interface GlobEntry { glob: string; access: 'deny'; }

export interface FilesystemSpec {
  kind?: 'restricted' | 'unrestricted' | 'external';
  entries?: Array<PathEntry | GlobEntry>;
  /** Plain names (no '/') kept read-only at the top of every writable root. */
  protected_names?: string[];
}

export interface NetworkPolicy {
  mode: NetworkMode;
  /** network mode proxy: "host", "*.host", "host:port". */
  allowed_domains?: string[];
  denied_domains?: string[];
  /** Host unix sockets a command may connect to (an allow-list, every mode). */
  unix_sockets?: string[];
  allow_local_binding?: boolean;
  proxy_ports?: number[];
}

export interface Limits {
  processes?: number | null;
  open_files?: number | null;
  file_size_bytes?: number | null;
  address_space_bytes?: number | null;
  memory_bytes?: number | null;
  cpu_seconds?: number | null;
  timeout_seconds?: number | null;
  timeout_grace_seconds?: number;
}

export interface EnvironmentPolicy {
  inherit?: 'all' | 'core' | 'none';
  keep?: string[];
  exclude?: string[];
  include_only?: string[];
  set?: Record<string, string>;
}

/** The full form. */
export interface FullPolicy {
  version: 1;
  filesystem?: FilesystemSpec;
  network?: NetworkPolicy;
  limits?: Limits;
  environment?: EnvironmentPolicy;
}

/** The short form: a preset and its options. */
export interface ShortPolicy {
  version: 1;
  preset: PresetName;
  writable_roots?: string[];
  network_access?: boolean;
  exclude_tmpdir_env_var?: boolean;
  exclude_slash_tmp?: boolean;
  limits?: Limits;
  environment?: EnvironmentPolicy;
}

/** A policy object, or its JSON text (parsed strictly by libsbx). */
export type Policy = FullPolicy | ShortPolicy | string;

// ---- reports ------------------------------------------------------------------------------
// Generated from the report schemas (core/schema/, `sbx schema NAME`) into reports.d.ts by
// cmake/scripts/gen_report_types.py: every key, with null where libsbx writes null.
import type { BackendsReport, ContextReport, Decision, Denial, ExecReport, Explanation, Plan } from './reports';
export * from './reports';

/** approve: recorded false means "nothing recorded" (keep earlier grants), not a refusal. */
export interface Approval { recorded: boolean; policy: FullPolicy | null; dropped: string[]; }

// ---- the API -------------------------------------------------------------------------------

/**
 * What sort of failure an SbxError is: the C API's sbx_error_kind, the CLI's --json
 * "error_kind" and the Python binding's, spelled the same.
 */
export type ErrorKindName =
    |'invalid_input'    // the caller's input is wrong: a malformed policy, a bad argument
    |'refused'          // a lock, setting or policy rule forbids it
    |'unavailable'      // no backend on this host can enforce what was asked
    |'backend_failure'  // a backend plugin failed to plan or run the sandbox
    |'host_failure'     // the host failed: a file, a syscall, libsbx or koffi missing
    |'timed_out'        // a deadline passed
    |'cancelled';       // the caller cancelled
export const ErrorKind: Readonly<{
  INVALID_INPUT: 'invalid_input'; REFUSED: 'refused'; UNAVAILABLE: 'unavailable';
  BACKEND_FAILURE: 'backend_failure';
  HOST_FAILURE: 'host_failure';
  TIMED_OUT: 'timed_out';
  CANCELLED: 'cancelled';
}>;

/**
 * An error reported by libsbx, or a bad argument to it (kind invalid_input); `message` says
 * what was wrong and what to do.
 */
export class SbxError extends Error {
  constructor(message: string, kind?: ErrorKindName);
  readonly name: 'SbxError';
  readonly code: 'SBX_ERROR';
  readonly kind: ErrorKindName;
}

export interface SbxOptions {
  /** Preference order, e.g. "bwrap,landlock" (default: every trusted plugin). */
  backends?: string;
  /** Use the settings scopes and the administrator's locks as the `sbx` command does. */
  settings?: boolean;
  /** Where the project's .sbx/settings.json is looked up from (with settings; as you name it,
   * symlinks kept). Every call's cwd must then be this directory (or omitted for the current
   * one), else it throws: one Sbx per working directory. */
  settingsCwd?: string;
  /** The caller's own settings scope, merged last (implies settings). */
  settingsJson?: Record<string, unknown> | string;
}

export interface RunOptions { cwd?: string; preference?: Preference; }
export interface ExecOptions extends RunOptions {
  /** Run without a sandbox when none is available (never for a policy with deny entries). */
  allowUnsandboxed?: boolean;
  /** Copy stderr through and keep its tail for the classification (report.denial,
   * stderr_tail); run() does so whenever it captures stderr. */
  captureStderr?: boolean;
}
export interface Failure {
  exitCode: number;
  signal?: number;
  stderr?: string | Uint8Array;
  /** The backend it ran under (null/undefined or "none": no sandbox). */
  backend?: string | null;
}

// ---- run and spawn -------------------------------------------------------------------------
// Written without @types/node (the package has no dependencies): where Node's own types are
// there, Bytes is their Buffer; the streams and the signal are described by what they offer.

/** The bytes of a captured stream: a Buffer (Node's own type when @types/node is loaded). */
export type Bytes = typeof globalThis extends { Buffer: { alloc(size: number): infer B } } ? B : Uint8Array;

/** What run() and spawn() need of an AbortSignal (a real one fits). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A command's stdout or stderr under spawn(): a net.Socket over the pipe's read end. */
export interface SbxReadable extends AsyncIterable<Bytes | string> {
  setEncoding(encoding: string): this;
  on(event: 'data', listener: (chunk: Bytes | string) => void): this;
  on(event: 'end' | 'close', listener: () => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  once(event: 'data', listener: (chunk: Bytes | string) => void): this;
  once(event: 'end' | 'close', listener: () => void): this;
  once(event: 'error', listener: (error: Error) => void): this;
  pipe<T>(destination: T, options?: { end?: boolean }): T;
  pause(): this;
  resume(): this;
  destroy(error?: Error): this;
}

/** A command's stdin under spawn(): a net.Socket over the pipe's write end; end() is its EOF. */
export interface SbxWritable {
  write(chunk: string | Uint8Array, callback?: (error?: Error | null) => void): boolean;
  end(callback?: () => void): this;
  end(chunk: string | Uint8Array, callback?: () => void): this;
  on(event: 'drain' | 'finish' | 'close', listener: () => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  once(event: 'drain' | 'finish' | 'close', listener: () => void): this;
  once(event: 'error', listener: (error: Error) => void): this;
  destroy(error?: Error): this;
}

/** A stream of the command: 'pipe' (run: captured; spawn: a stream), this process's own
 * ('inherit'), or /dev/null ('ignore'). */
export type StreamMode = 'pipe' | 'inherit' | 'ignore';

export interface CommandOptions extends ExecOptions {
  /** Per-call environment on top of this process's: a string sets NAME, null (or undefined)
   * removes it. The policy's environment rules apply afterwards and win (a name it scrubs stays
   * scrubbed, its "set" replaces a value given here). */
  env?: Record<string, string | null | undefined>;
  /** 'inherit' (this process's stdin), 'ignore' (/dev/null), 'pipe' (spawn only: child.stdin),
   * or the bytes themselves: a string other than those names (as UTF-8) or a Buffer. */
  stdin?: StreamMode | string | Uint8Array;
  /** The command's stdin bytes, whatever they spell (instead of stdin). */
  input?: string | Uint8Array;
  stdout?: StreamMode;
  stderr?: StreamMode;
  /** Ends the whole run this many milliseconds after it started (0 or absent: never). */
  timeoutMs?: number;
  /** Aborting it ends the whole run (sbx_run_cancel); an already aborted one runs nothing. */
  signal?: AbortSignalLike;
}

export interface SbxRunOptions extends CommandOptions {
  /** The cap of each captured stream (default 1 MiB): the start is kept, the rest dropped and
   * counted (report.stdout_capture / stderr_capture, `truncated`). */
  maxOutputBytes?: number;
  /** Decode stdout and stderr into strings; absent or 'buffer': Bytes. */
  encoding?: TextEncoding | 'buffer';
}
/** Node's Buffer encodings that make text. */
export type TextEncoding =
    'utf8' | 'utf-8' | 'utf16le' | 'utf-16le' | 'ucs2' | 'ucs-2' | 'latin1' | 'binary' | 'ascii' |
    'base64' | 'base64url' | 'hex';
export interface SbxSpawnOptions extends CommandOptions {}

/** How run() ended. `exitCode`/`signal` are report.exit's (both null when the command did not
 * run: report.error says why, e.g. no sandbox here, a time-out before it started). */
export interface RunResult<Out = Bytes> {
  exitCode: number | null;
  signal: number | null;
  /** Captured (stdout 'pipe'), else null. */
  stdout: Out | null;
  stderr: Out | null;
  /** A captured stream was longer than maxOutputBytes. */
  truncated: boolean;
  /** error_kind 'timed_out' / 'cancelled' when timeoutMs / the signal ended the run. */
  report: ExecReport;
}

export interface ExitInfo { exitCode: number | null; signal: number | null; }

/** The command spawn() started (pid-less: the sandbox's processes are not this process's
 * children). Both promises reject with the same SbxError when libsbx fails the run. */
export class SbxChild {
  private constructor();
  /** null unless 'pipe'. */
  readonly stdin: SbxWritable | null;
  readonly stdout: SbxReadable | null;
  readonly stderr: SbxReadable | null;
  /** Ends the whole run (report.error_kind 'cancelled'); false once it had ended. */
  kill(): boolean;
  readonly exited: Promise<ExitInfo>;
  readonly report: Promise<ExecReport>;
}

export function version(): string;
export function shouldSandbox(policy: Policy, preference?: Preference): Decision;
/** A command line through this install's `sbx exec` (sbx_wrap): spawn `command` with `args`,
 * stdio[policyFd] carrying `policy` (ended after it) and the run's JSON report read from
 * stdio[reportFd]; the command's stdio is the spawned process's own. */
export interface Wrapped { command: string; args: string[]; policy: string; policyFd: 3; reportFd: 4; }
export function wrap(policy: Policy, argv: string[], options?: { cwd?: string }): Wrapped;
export function widen(base: Policy, extra: Policy): FullPolicy;
export function approve(requested: Policy, granted: Policy): Approval;
export function context(policy: Policy, options?: { cwd?: string; json?: false }): string;
export function context(policy: Policy, options: { cwd?: string; json: true }): ContextReport;
export function classify(failure: Failure): Denial;

export class Sbx {
  constructor(options?: SbxOptions);
  close(): void;
  version(): string;
  backends(options?: { probe?: boolean }): BackendsReport;
  reprobe(): void;
  shouldSandbox(policy: Policy, preference?: Preference): Decision;
  /** policy null/undefined: the settings' policy (a manager opened with settings). */
  explain(policy: Policy | null | undefined, options?: RunOptions): Explanation;
  transform(policy: Policy | null | undefined, argv: string[], options?: RunOptions): Plan;
  /** Runs off the event loop; resolves with the report, rejects with SbxError. */
  exec(policy: Policy | null | undefined, argv: string[], options?: ExecOptions): Promise<ExecReport>;
  /** Runs with captured output, off the event loop; rejects with SbxError. */
  run(policy: Policy | null | undefined, argv: string[],
      options: SbxRunOptions & { encoding: TextEncoding }): Promise<RunResult<string>>;
  run(policy: Policy | null | undefined, argv: string[],
      options?: SbxRunOptions & { encoding?: 'buffer' }): Promise<RunResult>;
  /** Starts a command with streams; throws SbxError for a bad argument or policy. */
  spawn(policy: Policy | null | undefined, argv: string[], options?: SbxSpawnOptions): SbxChild;
  widen(base: Policy, extra: Policy): FullPolicy;
  wrap(policy: Policy, argv: string[], options?: { cwd?: string }): Wrapped;
  approve(requested: Policy, granted: Policy): Approval;
  /** For a run on this manager: sandboxed or not, the backend that runs it here, its limits;
   * anyBackend: every backend labelled, nothing probed (as the function context()). */
  context(policy: Policy, options?: ContextOptions & { json?: false }): string;
  context(policy: Policy, options: ContextOptions & { json: true }): ContextReport;
  classify(failure: Failure): Denial;
}

export interface ContextOptions { cwd?: string; preference?: Preference; anyBackend?: boolean; }
