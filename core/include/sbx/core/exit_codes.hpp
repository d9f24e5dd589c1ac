// The exit statuses sbx itself gives, defined once for the CLI, the core and the reports that
// recognise them. Every other status of a run is the command's own (128+N for signal N). They
// follow env(1) and timeout(1), so that a caller can tell sbx's failures from the command's
// without parsing text.
#pragma once

namespace sbx {

// `sbx policy check|widen|approve`: the policy does not validate (or, for check, a run would
// refuse it here). `sbx exec` refuses the same policy with kExitSbxFailure: any status below
// 125 from exec is the command's own, and a command may well exit 2.
inline constexpr int kExitInvalidPolicy = 2;
// sbx itself failed or refused; the command did not run (or may not have completed).
inline constexpr int kExitSbxFailure = 125;
// The command exists but cannot be executed.
inline constexpr int kExitNotExecutable = 126;
// The command was not found.
inline constexpr int kExitNotFound = 127;

}  // namespace sbx
