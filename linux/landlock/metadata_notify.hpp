// Landlock mode's guard for what Landlock has no right for: metadata changes (chmod, chown,
// file times, extended attributes) and the peer of a pseudo-terminal (plugins/landlock/README.md).
//
// Landlock restricts opening, creating, removing and truncating, but not chmod, chown, utimes
// or setxattr: a command could make any file it owns (as root: any file) outside its writable
// roots setuid or world-writable. So the command's child installs, besides the normal filter,
// a second seccomp filter (metadata_filter.hpp, precompiled) whose listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER) goes to the supervisor, which hands it to the emulator
// (sbx-stage2 --metadata-guard, run_metadata_guard in landlock_launch.hpp; called "the supervisor"
// below) on the first call; it stays outside the Landlock domain and EMULATES each call:
//
//   - the call's arguments are read from the caller's memory (/proc/TID/mem) and the
//     notification is checked to be still valid afterwards (the TID was not reused);
//   - the object is opened O_PATH by the supervisor the way the call names it (AT_FDCWD from
//     /proc/TID/cwd, a dirfd or fd from /proc/TID/fd/N, O_NOFOLLOW where the call does not
//     follow symlinks);
//   - the decision is taken on the OPENED object: its path (readlink of /proc/self/fd/M) must
//     lie, component-wise, inside one of the writable roots (as they are named now, read from
//     descriptors opened when the run started); anything else, and anything unexpected, is
//     EPERM;
//   - the operation is then done on that descriptor, never again by path, and its result or
//     errno is the caller's. SECCOMP_USER_NOTIF_FLAG_CONTINUE is never used: the kernel would
//     re-read the arguments after the check (time-of-check/time-of-use).
//
// The supervisor acts with the caller's credentials: it has dropped every capability, and a
// call from a task whose fsuid/fsgid differ from its own is refused. So inside the writable
// roots the kernel's own owner checks apply as they would to the command; security.capability
// (file capabilities) and trusted.* attributes need capabilities neither has. Modes with the
// set-user-ID or set-group-ID bit are refused everywhere.
//
// ioctl(TIOCGPTPEER) is emulated too: Landlock checks the open of /dev/pts/N that it does in
// the caller's domain, and granting /dev/pts would expose every other terminal of the user.
// The supervisor takes the caller's master (pidfd_getfd), checks it is /dev/ptmx's, opens the
// peer itself (O_NOCTTY forced) and installs it in the caller (SECCOMP_IOCTL_NOTIF_ADDFD).
//
// Unix datagram sockets (socket() and socketpair() of AF_UNIX with a type other than stream and
// seqpacket; net/unix/af_unix.c unix_create() maps SOCK_RAW to SOCK_DGRAM): a datagram socket
// may name any bound path as a destination on every send (sendmsg's msg_name, which no seccomp
// filter can read), host sockets included. socket() is refused (EPERM) and named in the run's
// network_refusals; socketpair() is answered with a SOCK_SEQPACKET pair the supervisor makes
// (the caller's SOCK_NONBLOCK and SOCK_CLOEXEC kept), installed in the caller
// (SECCOMP_IOCTL_NOTIF_ADDFD) and its numbers written to the caller's sv[2] through
// /proc/TID/mem: a seqpacket socket ignores a destination (unix_seqpacket_sendmsg() clears
// msg_namelen) and a connected pair cannot connect again, so the pair carries messages, with
// their boundaries, only between its two ends. Nothing is decided on the caller's memory. The
// pair belongs to the supervisor's network namespace, which is the command's own (Landlock
// mode has no namespaces): its interface ioctls (SIOCGIFCONF...) and abstract names (autobind)
// reach nothing the command's own stream socketpair does not, unlike under bwrap, whose
// supervisor makes such pairs in an empty namespace of their own.
// SO_PEERCRED on it names the supervisor's pid (same uid and gid as the command).
//
// Refused outright (EPERM) by the same filter, being metadata changes the supervisor does not
// emulate: the FS_IOC_SETFLAGS / FS_IOC_FSSETXATTR (chattr), FS_IOC_SETVERSION,
// FS_IOC_ENABLE_VERITY and FS_IOC_SET_ENCRYPTION_POLICY ioctls. ENOSYS for setxattrat,
// removexattrat and file_setattr, so that programs fall back to the emulated calls.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "unix_connect_notify.hpp"

namespace sbx::stage2 {

// Pure decision: true if `object` (a canonical absolute path as the kernel reports it for an
// open descriptor) is one of `roots` or lies beneath one, compared component by component
// (/work/ws2 is not inside /work/ws). Fails closed: a path that is not absolute, not canonical
// (empty, '.', '..' components, '//', a trailing '/'), or marked " (deleted)" is never inside.
bool within_writable_roots(std::string_view object, const std::vector<std::string>& roots);

// In the command's child, after no_new_privs: installs the metadata filter (precompiled,
// metadata_filter.hpp) and sends its listener over `socket` (SCM_RIGHTS), then closes both; the
// command never holds the listener. 0, or the errno of the step that failed. Async-signal-safe:
// it runs between the clone of the command's child and its execve.
// `metadata` false: the unix datagram guard instead (unrestricted filesystem). `connects`: the
// program's connect variant (the network enabled: unix_connect_notify.hpp).
int install_metadata_guard(int socket, bool metadata = true, bool connects = false) noexcept;

// Receives the listener sent by install_metadata_guard(); Error on EOF (the child died or
// failed before sending) or anything else.
Result<int> receive_metadata_listener(int socket);

// The supervisor's side: emulates the calls the listener reports.
class MetadataEmulator {
 public:
  // Opens the writable roots (O_PATH) to follow them if renamed, and records the supervisor's
  // fsuid/fsgid. Call after the supervisor dropped its capabilities.
  static Result<MetadataEmulator> open(const std::vector<std::string>& writable_roots);
  // The same over roots already opened (O_PATH), which it then owns.
  static MetadataEmulator adopt(std::vector<int> root_fds);
  MetadataEmulator(MetadataEmulator&& other) noexcept;
  MetadataEmulator& operator=(MetadataEmulator&&) = delete;
  MetadataEmulator(const MetadataEmulator&) = delete;
  ~MetadataEmulator();

  // Receives and answers one notification from `listener` (call when poll() reports POLLIN).
  // Never blocks on a caller that died meanwhile: its notification simply is no longer valid.
  void serve_one(int listener) const;

  // Where a refused unix datagram socket() is named, one line each ("socket(AF_UNIX,
  // SOCK_DGRAM)\n"), and a refused connect (its path, or "@name"), before the call is
  // answered: a non-blocking pipe to the run's caller.
  void report_refusals_to(int fd) { refusal_fd_ = fd; }

  // The writable roots as they are named now (a root whose descriptor no longer resolves to
  // an absolute path is left out).
  std::vector<std::string> current_roots() const;

 private:
  MetadataEmulator() = default;
  std::vector<int> root_fds_;
  // connect() and bind(), reported with the network enabled (unix_connect_notify.hpp).
  std::shared_ptr<UnixConnectGuard> connects_ = std::make_shared<UnixConnectGuard>();
  uid_t fsuid_ = 0;
  gid_t fsgid_ = 0;
  int refusal_fd_ = -1;
};

}  // namespace sbx::stage2
