// sbx_escape_probe OP [ARG...]: makes one forbidden attempt and reports it.
// Exit 0 and "SUCCEEDED" if the operation worked (an escape), exit 1 and "BLOCKED: <errno>" if
// the kernel refused it. Run inside the sandbox by the escape suites of every Linux backend.
// The moves (rename, link, rename_noreplace, rename_exchange OLD NEW: rename(2), link(2),
// renameat2(2) with RENAME_NOREPLACE or RENAME_EXCHANGE) are also made where they must work
// (integration/bwrap/reparent_test.cpp): "BLOCKED: Invalid cross-device link" is EXDEV.
// `i386_getpid` (x86_64 only) makes getpid through the i386 entry point: without a filter it
// prints "SUCCEEDED" on a kernel with IA-32 emulation; sbx's seccomp filter kills the process
// with SIGSYS for any call of another architecture (integration/denial/exit_report_test.cpp).
// Elsewhere it exits 2, like an unknown operation.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int report(long rc) {
  if (rc >= 0) {
    std::printf("SUCCEEDED\n");
    return 0;
  }
  std::printf("BLOCKED: %s\n", std::strerror(errno));
  return 1;
}

long connect_inet(int family, const char* addr, int port, int type) {
  const int fd = ::socket(family, type, 0);
  if (fd < 0) return -1;
  if (family == AF_INET) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, addr, &sa.sin_addr);
    if (type == SOCK_DGRAM)
      return ::sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    return ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET6, addr, &sa.sin6_addr);
  return ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
}

long connect_unix(const char* path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  return ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
}

// Valid arguments, so that without a sandbox (and with the privilege the call needs) each of
// these succeeds: a refusal then is the sandbox's, never an EFAULT or EINVAL of the probe's own.
long io_uring_setup() {
  io_uring_params params{};
  return ::syscall(SYS_io_uring_setup, 4, &params);
}
long bpf_map_create() {
  bpf_attr attr{};
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  return ::syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
}

// Tries to copy any of descriptors 0..63 of process `pid` into this one.
long steal_descriptor(int pid) {
  const long pidfd = ::syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) return -1;
  long last = -1;
  for (int fd = 0; fd < 64 && last < 0; ++fd) last = ::syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  return last;
}

#if defined(__x86_64__)
// getpid through the i386 entry point (number 20 there). No core file when the filter kills the
// process for it.
long i386_getpid() {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  long rc = 20;
  asm volatile("int $0x80" : "+a"(rc) : : "memory");
  return rc == ::getpid() ? 0 : -1;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string op = argv[1];
  const char* arg = argc > 2 ? argv[2] : "";
  const int port = argc > 3 ? std::atoi(argv[3]) : 0;
  if (op == "tcp4") return report(connect_inet(AF_INET, arg, port, SOCK_STREAM));
  if (op == "tcp6") return report(connect_inet(AF_INET6, arg, port, SOCK_STREAM));
  if (op == "udp4") return report(connect_inet(AF_INET, arg, port, SOCK_DGRAM));
  if (op == "unix") return report(connect_unix(arg));
  if (op == "netlink") return report(::socket(AF_NETLINK, SOCK_RAW, 0));
  if (op == "packet") return report(::socket(AF_PACKET, SOCK_RAW, 0));
  if (op == "ptrace") return report(::ptrace(PTRACE_ATTACH, std::atoi(arg), nullptr, nullptr));
  if (op == "io_uring") return report(io_uring_setup());
  if (op == "bpf") return report(bpf_map_create());
  if (op == "keyctl") return report(::syscall(SYS_keyctl, 0 /*GET_KEYRING_ID*/, -3, 0));
  if (op == "mount") return report(::mount("none", arg, "tmpfs", 0, nullptr));
  if (op == "kill") return report(::kill(std::atoi(arg), SIGKILL));
  if (op == "unshare") return report(::unshare(CLONE_NEWUSER));
  if (op == "pidfd_getfd") return report(steal_descriptor(std::atoi(arg)));
#if defined(__x86_64__)
  if (op == "i386_getpid") return report(i386_getpid());
#endif
  const char* to = argc > 3 ? argv[3] : "";
  if (op == "rename") return report(::rename(arg, to));
  if (op == "link") return report(::link(arg, to));
  if (op == "rename_noreplace")
    return report(::renameat2(AT_FDCWD, arg, AT_FDCWD, to, RENAME_NOREPLACE));
  if (op == "rename_exchange")
    return report(::renameat2(AT_FDCWD, arg, AT_FDCWD, to, RENAME_EXCHANGE));
  return 2;
}
