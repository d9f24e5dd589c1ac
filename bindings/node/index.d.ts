// Types of the `sbx` package (index.js). Policies are those of README.md "Policies" (the model
// is documented in core/include/sbx/core/policy.hpp); reports are those of `sbx ... --json`,
// generated from their JSON Schemas (reports.d.ts).

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
    |'host_failure'     // the host failed: a file, a syscall, the addon or libsbx missing
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
  /** Tee stderr and keep its tail for the classification (one capturing exec at a time). */
  captureStderr?: boolean;
}
export interface Failure {
  exitCode: number;
  signal?: number;
  stderr?: string | Uint8Array;
  /** The backend it ran under (null/undefined or "none": no sandbox). */
  backend?: string | null;
}

export function version(): string;
export function shouldSandbox(policy: Policy, preference?: Preference): Decision;
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
  widen(base: Policy, extra: Policy): FullPolicy;
  approve(requested: Policy, granted: Policy): Approval;
  context(policy: Policy, options?: { cwd?: string; json?: false }): string;
  context(policy: Policy, options: { cwd?: string; json: true }): ContextReport;
  classify(failure: Failure): Denial;
}
