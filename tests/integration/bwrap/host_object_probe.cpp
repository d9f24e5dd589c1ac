// sbx_host_object_probe OP ARG [VALUE]: one attempt on an object of the host (a sysctl, a sysfs
// or cgroupfs file, SysV/POSIX IPC, the kernel keyring, /proc/1) from inside the sandbox.
// Prints "SUCCEEDED" (exit 0) when the attempt worked, "BLOCKED: <errno text>" (exit 1) when the
// kernel refused it; exit 2 for a bad call. host_objects_test.cpp checks the host afterwards.
#include <fcntl.h>
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr long kKeySpecSessionKeyring = -3;  // KEY_SPEC_SESSION_KEYRING, keyctl(2)
constexpr long kKeyctlRevoke = 3;            // KEYCTL_REVOKE
constexpr long kKeyctlRead = 11;             // KEYCTL_READ

int report(long rc) {
  if (rc >= 0) {
    std::printf("SUCCEEDED\n");
    return 0;
  }
  std::printf("BLOCKED: %s\n", std::strerror(errno));
  return 1;
}

// open + write(value) of an existing file (a sysctl, a sysfs file, the host's file in /dev/shm);
// `create` also makes it when missing.
long write_file(const char* path, const std::string& value, bool create) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  if (fd < 0) return -1;
  const long n = ::write(fd, value.data(), value.size());
  const int error = errno;
  ::close(fd);
  errno = error;
  return n;
}

long read_file(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buffer[256];
  const long n = ::read(fd, buffer, sizeof buffer);
  const int error = errno;
  ::close(fd);
  errno = error;
  return n;
}

long open_read_write(const char* path) {
  const int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  return fd;
}

// The host's SysV objects by their key (ipc namespaces, ipc_namespaces(7)).
long write_sysv_shm(key_t key) {
  const int id = ::shmget(key, 0, 0);
  if (id < 0) return -1;
  void* at = ::shmat(id, nullptr, 0);
  if (at == reinterpret_cast<void*>(-1)) return -1;
  std::memcpy(at, "pwned", 6);
  return ::shmdt(at);
}

long send_sysv_msg(key_t key) {
  const int id = ::msgget(key, 0);
  if (id < 0) return -1;
  struct {
    long type;
    char text[8];
  } message{1, "pwned"};
  return ::msgsnd(id, &message, sizeof message.text, IPC_NOWAIT);
}

long raise_sysv_sem(key_t key) {
  const int id = ::semget(key, 0, 0);
  if (id < 0) return -1;
  sembuf op{0, 1, IPC_NOWAIT};
  return ::semop(id, &op, 1);
}

long send_posix_mq(const char* name) {
  const mqd_t queue = ::mq_open(name, O_WRONLY | O_NONBLOCK);
  if (queue == static_cast<mqd_t>(-1)) return -1;
  const long rc = ::mq_send(queue, "pwned", 5, 0);
  ::mq_close(queue);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string op = argv[1];
  const char* arg = argv[2];
  const std::string value = argc > 3 ? argv[3] : "";
  if (op == "write") return report(write_file(arg, value, false));
  if (op == "create") return report(write_file(arg, value, true));
  if (op == "read") return report(read_file(arg));
  if (op == "open_rw") return report(open_read_write(arg));
  if (op == "mkdir") return report(::mkdir(arg, 0755));
  if (op == "sethostname") return report(::sethostname(arg, std::strlen(arg)));
  if (op == "shm") return report(write_sysv_shm(static_cast<key_t>(std::atol(arg))));
  if (op == "msg") return report(send_sysv_msg(static_cast<key_t>(std::atol(arg))));
  if (op == "sem") return report(raise_sysv_sem(static_cast<key_t>(std::atol(arg))));
  if (op == "mq") return report(send_posix_mq(arg));
  if (op == "add_key")
    return report(::syscall(SYS_add_key, "user", arg, "pwned", 5, kKeySpecSessionKeyring));
  if (op == "keyctl_read") {
    char buffer[64];
    return report(::syscall(SYS_keyctl, kKeyctlRead, std::atol(arg), buffer, sizeof buffer));
  }
  if (op == "keyctl_revoke") return report(::syscall(SYS_keyctl, kKeyctlRevoke, std::atol(arg)));
  return 2;
}
