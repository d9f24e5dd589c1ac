// The exit statuses sbx itself gives, defined once for the CLI, the core and the reports that
// recognise them. Every other status of a run is the command's own (128+N for signal N). They
// follow env(1) and timeout(1), so that a caller can tell sbx's failures from the command's
// without parsing text.
#pragma once

namespace sbx {

// Every verb but `exec`: the caller's input is wrong (ErrorKind::invalid_input: bad usage, a
// malformed policy or settings file, an unknown preset), and `sbx policy check|widen|approve`
// for a policy that does not validate (or, for check, one a run would refuse here). `sbx exec`
// gives kExitSbxFailure for the same input: any status below 125 from exec is the command's
// own, and a command may well exit 2; its --json report names the kind ("error_kind").
inline constexpr int kExitInvalidInput = 2;
inline constexpr int kExitInvalidPolicy = kExitInvalidInput;
// sbx itself failed or refused (every other ErrorKind: refused, unavailable, backend_failure,
// host_failure, ...); the command did not run (or may not have completed).
inline constexpr int kExitSbxFailure = 125;
// The command exists but cannot be executed.
inline constexpr int kExitNotExecutable = 126;
// The command was not found.
inline constexpr int kExitNotFound = 127;

}  // namespace sbx
