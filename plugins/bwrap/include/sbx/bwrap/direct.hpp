// The direct bwrap launch: sbx -> bwrap -> the waiter -> command, no sbx-stage2 as PID 1
// (network modes restricted and enabled; proxy mode keeps stage 2, which runs the relay inside
// the sandbox).
//
// What stage 2 did inside the sandbox is done like this instead (plugins/bwrap/README.md, "The
// direct launch"):
//  * the seccomp filter: the precompiled programs in sealed memfds, --add-seccomp-fd; bwrap
//    installs them (with no_new_privs) in its PID 1 and, as its last step, in the command;
//  * the environment: bwrap is exec'd with an empty environment and "--args FD", a sealed
//    memfd holding every bwrap option, "--clearenv" and one "--setenv NAME VALUE" per
//    variable: no variable is in any argv, and LD_PRELOAD & co. never act on bwrap itself;
//  * the mount check (plugins/bwrap/checks/bwrap_checks.hpp) and the command check: the last setup
//    operation is "--ro-bind-data FD kPauseFile", FD a pipe sbx keeps open; when bwrap starts
//    reading it, every mount exists, and bwrap waits there until sbx closes the pipe. sbx
//    reads /proc/<pid>/mountinfo (mounts under /newroot), the network namespace (restricted:
//    a private one with only `lo`) and the command inside the new root; any failure kills the
//    sandbox before the command ran;
//  * statuses: --json-status-fd reports "exit-code" only when the command really ran (bwrap
//    0.8, measured): without it, bwrap failed (125). bwrap folds a death by signal N into
//    128+N there and in its own exit status, so bwrap runs `sbx-stage2 --waiter ... --
//    COMMAND` (stage2_main.cpp), which runs the command as its child and writes N on a pipe
//    (kWaiterStatusFd) before it exits with 128+N;
//  * signals: sent to the waiter, the child of bwrap's PID 1 whose NSpid is 2, pinned by a
//    pidfd, once it catches them; it passes them on to the command. bwrap's own PID 1 reaps
//    orphans and takes the namespace down with the waiter;
//  * the Landlock scope of abstract unix sockets and signals (ABI >= 6): entered by the child
//    sbx forks, before it execs bwrap, so bwrap and everything it starts are inside it;
//  * the write layer (linux/landlock/write_layer.hpp), when the plan has one: a Landlock domain
//    that handles filesystem rights forbids mounting, so it cannot be entered before bwrap
//    mounts; the waiter (`--waiter --write-layer [--write-root PATH]...`) enters it before it
//    forks the command (same environment).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bwrap_checks.hpp"
#include "sbx/bwrap/translate.hpp"
#include "sbx/sdk/result.hpp"
#include "seccomp_filter.hpp"

namespace sbx::bwrap {

// The descriptors bwrap gets in the direct launch (bind sources stay >= kFirstBindFd).
inline constexpr int kStatusFd = 3;        // --json-status-fd: child-pid, then exit-code
inline constexpr int kArgsFd = 4;          // --args: every bwrap option, NUL-separated
inline constexpr int kSeccompTableFd = 5;  // --add-seccomp-fd, installed first
inline constexpr int kSeccompRulesFd = 6;  // --add-seccomp-fd
inline constexpr int kPauseFd = 7;         // --ro-bind-data: the pause point
// (8: the confinement order's trace in checked builds, launch.hpp kTraceFd)
inline constexpr int kWaiterStatusFd = 9;  // passed on to the waiter: the command's signal
// Where the pause point's (meaningless) data ends up inside the sandbox: bwrap's own /dev.
inline constexpr const char* kPauseFile = "/dev/.sbx-setup";

// Right after `--proc /proc` the direct launch hides /proc/1 under an empty read-only tmpfs.
// Without --as-pid-1, PID 1 is bwrap's own init (do_init): it has the command's uid and stays
// dumpable (bwrap 0.8 never clears the flag, and the command's credentials are the same), so
// ptrace_may_access() (kernel/ptrace.c; proc(5), "/proc/pid/mem": PTRACE_MODE_ATTACH_FSCREDS)
// would let the command open its /proc/1/mem read-write and its environ, fd/N and map_files. A
// mount over the directory leaves no path to them: every path to PID 1's /proc files goes
// through /proc/1 (task/1 included), the command cannot unmount (no capability; umount2 is
// refused by the seccomp filter), mount a procfs of its own, ptrace or process_vm_writev, and
// pidfd_getfd is refused too. Stage 2 (proxy mode and the other fallbacks) does not need it: as
// PID 1 it clears its dumpable flag first, and it reads its own /proc/self (= /proc/1).
inline constexpr const char* kPidOneMask[] = {"--perms", "0555",         "--tmpfs",
                                              "/proc/1", "--remount-ro", "/proc/1"};

// The direct form of a typed plan (translate.hpp, BwrapPlan): what bwrap is given instead of
// running sbx-stage2. exec() puts the bind sources among `options` on descriptors (bind_fds.hpp)
// before it writes the --args block.
struct DirectPlan {
  std::string bwrap;  // bwrap's path
  // bwrap's options: the plan's without --as-pid-1, with kPidOneMask after `--proc /proc`, then
  // "--chdir DIR"
  std::vector<std::string> options;
  stage2::NetworkFilter filter = stage2::NetworkFilter::kOpen;
  std::vector<std::string> env;             // KEY=VALUE
  std::vector<std::string> command;         // absolute path first
  std::string stage2;                       // sbx-stage2's path (the waiter)
  bool write_layer = false;                 // the waiter enters the write layer
  std::vector<std::string> writable_roots;  // --write-root
};

// The direct form of `plan`, or nullopt when it keeps stage 2: network mode proxy (the relay
// runs inside the sandbox), a relative command or sbx-stage2 path, write roots without the write
// layer (stage 2 refuses them), or an environment without PWD set to the --chdir directory
// (bwrap 0.8 sets PWD to it unconditionally; only stage 2 gives the command exactly an
// environment without it). The write layer is kept only with `write_layer_supported` (Landlock
// ABI >= 2): below it the waiter would enter nothing (write_layer.hpp), and the plan's notes say
// what stays writable.
std::optional<DirectPlan> direct_plan(const BwrapPlan& plan, bool write_layer_supported);

// The --args block: "--json-status-fd 3 --add-seccomp-fd 5 --add-seccomp-fd 6 --clearenv",
// "--setenv NAME VALUE" per variable, the plan's options, "--ro-bind-data 7 kPauseFile", each
// ended by a NUL byte. Error if a variable has no '=' or an empty name, or anything holds a NUL.
Result<std::string> direct_args_block(const DirectPlan& plan);

// The items of an --args block, in order (each ended by a NUL byte).
std::vector<std::string> split_args_block(const std::string& block);

// bwrap's argv: {bwrap, "--args", "4", "--", stage2, "--waiter", ["--write-layer",
// ["--write-root", PATH]...], "--status-fd", "9", "--", command...} (bwrap 0.8 takes the command
// only from its argv). The command's own arguments are in its own /proc cmdline anyway.
std::vector<std::string> direct_argv(const DirectPlan& plan);

// The sandbox's mounts as they will be, from mountinfo read at the pause point: bwrap is then
// chrooted into its setup tmpfs, the sandbox's root is /newroot. Mounts at or below /newroot are
// kept with the prefix taken off; the others (the setup tmpfs, /oldroot: the host) are dropped,
// and so is the first mount at /newroot itself (bwrap's bind of that directory, which its
// second pivot_root detaches).
std::vector<stage2::ActualMount> mounts_in_new_root(const std::vector<stage2::ActualMount>& seen);

// What --json-status-fd wrote: the sandbox PID 1 ("child-pid") and the command's status
// ("exit-code", written only when the command ran).
struct JsonStatus {
  std::optional<pid_t> child_pid;
  std::optional<int> exit_code;
};
JsonStatus parse_json_status(std::string_view text);

// The interface names of a /proc/<pid>/net/dev text.
std::vector<std::string> net_dev_interfaces(std::string_view text);

// The pause-point check, on the sandbox's PID 1 (pinned by `pidfd`) while bwrap waits:
// `planned` against its mountinfo; with `private_network`, its network namespace is not sbx's
// and holds only `lo`; the command exists and is executable inside the new root. The verdict
// is the exit status to give when it fails (125; 127 for a missing command, 126 for one that
// cannot be executed) and the message.
struct PauseVerdict {
  int exit_code = 0;  // 0: the sandbox may go on
  std::string message;
};
PauseVerdict check_paused_sandbox(pid_t pid, int pidfd,
                                  const std::vector<stage2::PlannedMount>& planned,
                                  bool private_network, const std::string& command);

// The waiter's pid (in sbx's pid namespace) given the sandbox PID 1's: the child of that
// process whose innermost pid is 2 (bwrap's command, which execs the waiter). Pinned: on success
// `pidfd` holds a pidfd of it (verified after opening). nullopt while there is no such child
// yet.
std::optional<pid_t> find_sandbox_waiter(pid_t init, int& pidfd);

// A Landlock ruleset that handles nothing but scopes abstract unix sockets and signals, for the
// child to enter before it execs bwrap when the plan has no write layer (the layer scopes the
// same, and must be the only domain: linux/landlock/write_layer.hpp); -1 when the kernel's ABI
// is below 6 (nothing to scope with; the plan says so). Error only when an ABI-6 kernel refuses
// to create it.
Result<int> open_scope_ruleset();

}  // namespace sbx::bwrap
