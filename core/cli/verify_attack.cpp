// sbx-verify-attack: the system calls `sbx backends --verify` makes inside a sandbox that the
// shell cannot make (core/cli/verify.cpp, sdk/CAPABILITIES.md). One attack per run, named by
// the first argument. It prints one line and exits:
//   0  "done: ..."      the call the sandbox should have stopped succeeded;
//   1  "refused: ..."   the call failed (errno named);
//   2  "setup: ..."     something before the call failed, so the run says nothing either way;
//   3  "usage: ..."     unknown attack or arguments.
// Installed next to sbx-stage2 (<prefix>/libexec/sbx), never run by sbx outside the kit. Linux
// only; libc only, so that it runs under any policy granting reads of the system (":root").
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kDone = 0;
constexpr int kRefused = 1;
constexpr int kSetup = 2;
constexpr int kUsage = 3;

int report(int code, const char* what, int error = 0) {
  const char* word = code == kDone      ? "done"
                     : code == kRefused ? "refused"
                     : code == kSetup   ? "setup"
                                        : "usage";
  if (error != 0) {
    std::printf("%s: %s: %s (%s)\n", word, what, strerrorname_np(error), std::strerror(error));
  } else {
    std::printf("%s: %s\n", word, what);
  }
  return code;
}

// The result of the one call under attack: done when it returned `ok`, refused otherwise.
int outcome(bool ok, const char* what) {
  return ok ? report(kDone, what) : report(kRefused, what, errno);
}

bool inet_address(const char* host, unsigned port, sockaddr_storage& out, socklen_t& length) {
  std::memset(&out, 0, sizeof out);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (::inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof *v4;
    return true;
  }
  if (::inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof *v6;
    return true;
  }
  return false;
}

// A TCP connect (type SOCK_STREAM) or a UDP datagram (SOCK_DGRAM) to host:port.
int inet_attack(const char* host, const char* port_text, int type) {
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text, &end, 10);
  if (end == port_text || *end != '\0' || port > 65535) return report(kUsage, "not a port");
  sockaddr_storage address{};
  socklen_t length = 0;
  if (!inet_address(host, static_cast<unsigned>(port), address, length))
    return report(kUsage, "not an IP address");
  const int fd = ::socket(address.ss_family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return report(kRefused, "socket", errno);
  if (type == SOCK_STREAM)
    return outcome(::connect(fd, reinterpret_cast<sockaddr*>(&address), length) == 0, "connect");
  const char datagram[] = "sbx-verify";
  return outcome(::sendto(fd, datagram, sizeof datagram, 0, reinterpret_cast<sockaddr*>(&address),
                          length) >= 0,
                 "sendto");
}

// A unix stream connect to a pathname socket, or to an abstract one when `abstract`.
int unix_attack(const char* name, bool abstract) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(name);
  if (length + 2 > sizeof address.sun_path) return report(kUsage, "name too long");
  std::memcpy(address.sun_path + (abstract ? 1 : 0), name, length);
  const auto size =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length + (abstract ? 1 : 0));
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return report(kRefused, "socket", errno);
  return outcome(::connect(fd, reinterpret_cast<sockaddr*>(&address), size) == 0, "connect");
}

// The proxy of $HTTP_PROXY (http://[user:secret@]host:port): a TCP connect to it must work.
int proxy_attack() {
  const char* url = std::getenv("HTTP_PROXY");
  if (url == nullptr) return report(kSetup, "HTTP_PROXY is not set");
  std::string rest = url;
  if (const std::size_t scheme = rest.find("://"); scheme != std::string::npos)
    rest = rest.substr(scheme + 3);
  if (const std::size_t at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (const std::size_t slash = rest.find('/'); slash != std::string::npos)
    rest = rest.substr(0, slash);
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return report(kSetup, "HTTP_PROXY has no port");
  std::string host = rest.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  return inet_attack(host.c_str(), rest.substr(colon + 1).c_str(), SOCK_STREAM);
}

// Listening on a loopback port and connecting to it (network.allow_local_binding).
int listen_local_attack() {
  const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (server < 0) return report(kRefused, "socket", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(server, reinterpret_cast<sockaddr*>(&address), length) != 0)
    return report(kRefused, "bind", errno);
  if (::listen(server, 1) != 0) return report(kRefused, "listen", errno);
  if (::getsockname(server, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return report(kSetup, "getsockname", errno);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) return report(kRefused, "socket", errno);
  if (::connect(client, reinterpret_cast<sockaddr*>(&address), length) != 0)
    return report(kRefused, "connect", errno);
  return outcome(::accept4(server, nullptr, nullptr, SOCK_CLOEXEC) >= 0, "accept");
}

// PTRACE_ATTACH to a child of ours: allowed by the kernel under Yama scopes 0 and 1.
int ptrace_attack() {
  const pid_t child = ::fork();
  if (child < 0) return report(kSetup, "fork", errno);
  if (child == 0) {
    for (;;) ::pause();
  }
  const bool attached = ::ptrace(PTRACE_ATTACH, child, nullptr, nullptr) == 0;
  const int error = errno;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  errno = error;
  return outcome(attached, "ptrace(PTRACE_ATTACH)");
}

// TIOCSTI on a terminal of our own (a new pty made our controlling terminal): pushing input into
// a terminal's queue, which on an inherited terminal types commands into the user's shell.
int tiocsti_attack() {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return report(kSetup, "posix_openpt", errno);
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0) return report(kSetup, "unlockpt", errno);
  const char* name = ::ptsname(master);
  if (name == nullptr) return report(kSetup, "ptsname", errno);
  if (::setsid() < 0) return report(kSetup, "setsid", errno);
  const int terminal = ::open(name, O_RDWR | O_CLOEXEC);  // becomes the controlling terminal
  if (terminal < 0) return report(kSetup, "open the pty", errno);
  const char c = '#';
  return outcome(::ioctl(terminal, TIOCSTI, &c) == 0, "ioctl(TIOCSTI)");
}

int unshare_attack() { return outcome(::unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)"); }

// A key in our own process keyring (gone with the process): add_key itself is the attack.
int add_key_attack() {
  const long key = ::syscall(SYS_add_key, "user", "sbx-verify", "x", 1, KEY_SPEC_PROCESS_KEYRING);
  return outcome(key >= 0, "add_key");
}

int io_uring_attack() {
  unsigned char params[120] = {};  // struct io_uring_params (zeroed: defaults)
  const long fd = ::syscall(__NR_io_uring_setup, 1, params);
  return outcome(fd >= 0, "io_uring_setup");
}

// A new file created set-user-ID through open(O_CREAT) (the shell's chmod covers the chmod
// family).
int create_setuid_attack(const char* path) {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755);
  if (fd < 0) return report(kRefused, "open(O_CREAT, 04755)", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return report(kSetup, "fstat", errno);
  // The umask cannot clear S_ISUID; a filesystem mounted nosuid keeps the bit in the inode.
  if ((st.st_mode & S_ISUID) == 0) return report(kRefused, "open created the file without S_ISUID");
  return report(kDone, "open(O_CREAT, 04755)");
}

int usage() {
  std::printf(
      "usage: sbx-verify-attack connect-tcp|send-udp HOST PORT | connect-unix PATH | "
      "connect-abstract NAME | connect-proxy | listen-local | ptrace | tiocsti | unshare-user | "
      "add-key | io-uring | create-setuid PATH\n");
  return kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) return usage();
  const std::string attack = argv[1];
  if (argc == 4 && attack == "connect-tcp") return inet_attack(argv[2], argv[3], SOCK_STREAM);
  if (argc == 4 && attack == "send-udp") return inet_attack(argv[2], argv[3], SOCK_DGRAM);
  if (argc == 3 && attack == "connect-unix") return unix_attack(argv[2], false);
  if (argc == 3 && attack == "connect-abstract") return unix_attack(argv[2], true);
  if (argc == 3 && attack == "create-setuid") return create_setuid_attack(argv[2]);
  if (argc != 2) return usage();
  if (attack == "connect-proxy") return proxy_attack();
  if (attack == "listen-local") return listen_local_attack();
  if (attack == "ptrace") return ptrace_attack();
  if (attack == "tiocsti") return tiocsti_attack();
  if (attack == "unshare-user") return unshare_attack();
  if (attack == "add-key") return add_key_attack();
  if (attack == "io-uring") return io_uring_attack();
  return usage();
}
