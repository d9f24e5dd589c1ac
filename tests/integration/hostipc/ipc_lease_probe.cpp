// sbx_ipc_lease_probe OP [ARG]: one attempt, from inside the sandbox, on a host SysV IPC object
// or POSIX message queue (by id or name), a file lease on a host file, or a lock on a workspace
// file. Prints "SUCCEEDED" (exit 0) or "BLOCKED: <errno text>" (exit 1); exit 2 for a bad call.
// host_ipc_lease_test.cpp checks the host afterwards.
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/syscall.h>
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

long read_shm(int id) {
  void* at = ::shmat(id, nullptr, SHM_RDONLY);
  if (at == reinterpret_cast<void*>(-1)) return -1;
  return ::shmdt(at);
}

long receive_msg(int id) {
  struct {
    long type;
    char text[64];
  } message{};
  return ::msgrcv(id, &message, sizeof message.text, 0, IPC_NOWAIT);
}

// A queue of the run's own: made and removed again (a success under Landlock would be a host
// object; removing it keeps the host clean while the test reports the success).
long private_msg() {
  const int id = ::msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  if (id < 0) return -1;
  return ::msgctl(id, IPC_RMID, nullptr);
}

long lower_sem(int id) {
  sembuf op{0, -1, IPC_NOWAIT};
  return ::semop(id, &op, 1);
}

long open_mq(const char* name) {
  const mqd_t queue = ::mq_open(name, O_RDONLY | O_NONBLOCK);
  if (queue == static_cast<mqd_t>(-1)) return -1;
  return ::mq_close(queue);
}

// The system call itself: glibc's mq_unlink() turns EPERM into EACCES (mq_unlink(3)), which
// would hide whose refusal it was. The kernel takes the name without its leading '/'.
long raw_mq_unlink(const char* name) {
  return ::syscall(SYS_mq_unlink, name[0] == '/' ? name + 1 : name);
}

long own_mq(const char* name) {
  const mqd_t queue = ::mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, nullptr);
  if (queue == static_cast<mqd_t>(-1)) return -1;
  ::mq_close(queue);
  return ::mq_unlink(name);
}

// A read lease from a read-only descriptor. When it was granted it is kept until the host's
// writer has been held by it: the kernel tells the holder of each breaker with SIGIO (fcntl(2),
// "Leases": sent even when the breaker's open() was O_NONBLOCK and failed with EWOULDBLOCK), so
// the host's count of held opens is then certain to show it. Ten seconds at most.
long read_lease(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  sigset_t io;
  sigemptyset(&io);
  sigaddset(&io, SIGIO);
  ::sigprocmask(SIG_BLOCK, &io, nullptr);
  const long rc = ::fcntl(fd, F_SETLEASE, F_RDLCK);
  const int error = errno;
  if (rc == 0) {
    const timespec ten_seconds{10, 0};
    ::sigtimedwait(&io, nullptr, &ten_seconds);
  }
  ::close(fd);
  errno = error;
  return rc;
}

int open_for_lock(const char* path) { return ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644); }

long exclusive_flock(const char* path) {
  const int fd = open_for_lock(path);
  if (fd < 0) return -1;
  const long rc = ::flock(fd, LOCK_EX | LOCK_NB);
  ::close(fd);
  return rc;
}

long write_lock(const char* path, int command) {
  const int fd = open_for_lock(path);
  if (fd < 0) return -1;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  const long rc = ::fcntl(fd, command, &lock);
  ::close(fd);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string op = argv[1];
  const char* arg = argc > 2 ? argv[2] : "";
  const int id = std::atoi(arg);
  if (op == "shm_read") return report(read_shm(id));
  if (op == "shm_rmid") return report(::shmctl(id, IPC_RMID, nullptr));
  if (op == "msg_receive") return report(receive_msg(id));
  if (op == "msg_rmid") return report(::msgctl(id, IPC_RMID, nullptr));
  if (op == "msg_private") return report(private_msg());
  if (op == "sem_lower") return report(lower_sem(id));
  if (op == "sem_rmid") return report(::semctl(id, 0, IPC_RMID));
  if (op == "mq_open") return report(open_mq(arg));
  if (op == "mq_unlink") return report(raw_mq_unlink(arg));
  if (op == "mq_own") return report(own_mq(arg));
  if (op == "lease") return report(read_lease(arg));
  if (op == "flock") return report(exclusive_flock(arg));
  if (op == "setlk") return report(write_lock(arg, F_SETLK));
  if (op == "ofd_setlk") return report(write_lock(arg, F_OFD_SETLK));
  return 2;
}
