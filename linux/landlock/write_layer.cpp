// See write_layer.hpp.
#include "write_layer.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include "landlock_ruleset.hpp"

namespace sbx::stage2 {
namespace {

// The descriptors 0-2 open for writing on a regular file or a character device (a terminal),
// as /proc/self/fd/N: the rule is attached to the file it names. Such a file may lie outside
// every writable root (the caller's `> out.txt`, its terminal on the host's devpts), and a
// program reopening /dev/stdout would otherwise be refused what it can already do through the
// descriptor. Pipes and sockets need no rule (Landlock exempts pseudo filesystems,
// fs.c is_nouser_or_private()), and a read-only descriptor gets none (that would add a right).
std::vector<std::string> writable_standard_descriptors() {
  std::vector<std::string> out;
  for (int fd = 0; fd <= 2; ++fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) continue;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) continue;
    out.push_back("/proc/self/fd/" + std::to_string(fd));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& write_layer_device_files() {
  // bwrap's --dev (bubblewrap.c, setup_newroot(): devnodes[]) binds these from the host; /proc
  // is the sandbox's own procfs.
  static const std::vector<std::string> paths = {
      "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/proc"};
  return paths;
}

const std::vector<std::string>& write_layer_sandbox_dirs() {
  // bwrap's --dev: a devpts instance of the sandbox's own (ptmx links into it) and /dev/shm,
  // a directory in the sandbox's /dev tmpfs (POSIX shared memory, shm_open(3)).
  static const std::vector<std::string> paths = {"/dev/pts", "/dev/shm"};
  return paths;
}

Status apply_write_layer(const std::vector<std::string>& writable_roots) {
  if (landlock_abi() < kWriteLayerMinAbi) return {};
  LandlockSpec spec;
  spec.min_abi = kWriteLayerMinAbi;
  spec.writes_only = true;
  // The scope rides in this domain (write_layer.hpp: one domain, or every reparenting is EXDEV);
  // build_landlock_ruleset scopes signals in every ruleset of ABI 6+.
  spec.scope_abstract_unix = true;
  spec.write = writable_roots;
  spec.write.insert(spec.write.end(), write_layer_sandbox_dirs().begin(),
                    write_layer_sandbox_dirs().end());
  spec.dev = write_layer_device_files();
  const std::vector<std::string> descriptors = writable_standard_descriptors();
  spec.dev.insert(spec.dev.end(), descriptors.begin(), descriptors.end());
  return apply_landlock(spec);
}

}  // namespace sbx::stage2
