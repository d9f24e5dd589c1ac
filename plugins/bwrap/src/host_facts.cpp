// Path facts for the translator: what lstat() says, and where symlinks lead.
#include <pwd.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "sbx/bwrap/host.hpp"

namespace sbx::bwrap {

void gather_path_facts(const std::vector<std::string>& paths, HostFacts& facts) {
  for (const std::string& path : paths) {
    struct stat st {};
    PathKind kind = PathKind::kMissing;
    if (::lstat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode))
        kind = PathKind::kDirectory;
      else if (S_ISREG(st.st_mode))
        kind = PathKind::kFile;
      else if (S_ISLNK(st.st_mode))
        kind = PathKind::kSymlink;
      else
        kind = PathKind::kOther;
    }
    facts.paths[path] = kind;
    if (kind == PathKind::kDirectory && (st.st_mode & S_IWOTH) != 0)
      facts.shared_directories.insert(path);
    if (kind != PathKind::kSymlink) continue;
    const passwd* owner = ::getpwuid(st.st_uid);
    facts.symlink_owners[path] = (owner ? std::string(owner->pw_name) + ", " : std::string()) +
                                 "uid " + std::to_string(st.st_uid);
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) continue;  // dangling: nothing to mask
    const std::string target(resolved);
    facts.canonical[path] = target;
    if (facts.paths.count(target) == 0) {
      struct stat tst {};
      PathKind tkind = PathKind::kMissing;
      if (::lstat(target.c_str(), &tst) == 0)
        tkind = S_ISDIR(tst.st_mode) ? PathKind::kDirectory
                                     : (S_ISREG(tst.st_mode) ? PathKind::kFile : PathKind::kOther);
      facts.paths[target] = tkind;
    }
  }
}

}  // namespace sbx::bwrap
