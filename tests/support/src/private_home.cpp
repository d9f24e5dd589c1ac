#include "sbx_test/private_home.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace sbx::test {
namespace {

std::string make_private_parent() {
  const bool root = ::geteuid() == 0;
  std::string dir = "/var/lib/sbx-test-homes";
  if (!root) {
    const passwd* pw = ::getpwuid(::geteuid());
    if (pw == nullptr || pw->pw_dir == nullptr || pw->pw_dir[0] != '/')
      throw std::runtime_error("no home directory in passwd for a private test parent");
    dir = std::string(pw->pw_dir) + "/.sbx-test-homes";
  }
  const mode_t mode = root ? 0755 : 0700;
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    throw std::runtime_error(dir + " is not a directory of this user (nor a symlink)");
  // mkdir's mode went through the umask, and an older one may have another mode.
  if ((st.st_mode & 07777) != mode && ::chmod(dir.c_str(), mode) != 0)
    throw std::runtime_error("cannot chmod " + dir);
  return dir;
}

}  // namespace

const std::string& private_parent() {
  static const std::string parent = make_private_parent();
  return parent;
}

}  // namespace sbx::test
