// sbx-backend-landlock: the thin module around the pure translator. probe() asks the kernel;
// transform() gathers the host facts (the trusted stage-2 path, device filesystems mounted
// outside /dev, the directories a rule over them is split along) and runs the translator;
// exec() is the host spawn (stage 2 is the whole sandbox: no launcher, no host state to clean
// up) with sbx's pid added.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sbx/landlock/probe.hpp"
#include "sbx/landlock/translate.hpp"
#include "sbx/sdk/plugin.hpp"

namespace sbx::landlock {
namespace {

bool is_octal(char c) { return c >= '0' && c <= '7'; }

// A mount table path as the kernel escapes it (\040 for a space, \011, \012, \134).
std::string unescape_mount_path(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal(field[i + 1]) &&
        is_octal(field[i + 2]) && is_octal(field[i + 3])) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

struct Mount {
  std::string device;  // major:minor of the filesystem
  std::string point;
  std::string type;
};

// /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE ...".
bool read_mounts(std::vector<Mount>& mounts) {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point, word;
    if (!(fields >> id >> parent >> device >> root >> point)) return false;
    while (fields >> word && word != "-") {
    }
    std::string type;
    if (!(fields >> type)) return false;
    mounts.push_back({device, unescape_mount_path(point), type});
  }
  return in.eof();
}

// Device filesystems mounted outside /dev: devtmpfs and devpts anywhere, and /dev's own
// filesystem bound elsewhere (inside a container /dev may be a tmpfs). Each would open its
// device nodes to a rule that covers it.
void find_device_mounts(HostFacts& facts) {
  std::vector<Mount> mounts;
  if (!read_mounts(mounts)) return;  // mounts_known stays false: the translator refuses
  std::string dev_device;
  for (const Mount& m : mounts) {
    if (m.point == "/dev") dev_device = m.device;  // the last one is on top
  }
  for (const Mount& m : mounts) {
    if (path_is_within(m.point, "/dev")) continue;
    const bool device_fs = m.type == "devtmpfs" || m.type == "devpts";
    if (device_fs || (!dev_device.empty() && m.device == dev_device))
      facts.device_mounts.push_back(m.point);
  }
  facts.mounts_known = true;
}

// The entries of `dir` (names and whether each is a symlink), sorted so the plan is stable.
void list_directory(const std::string& dir_path, HostFacts& facts) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dir_path.c_str()), ::closedir);
  if (!dir) {
    facts.listing_error = "listing '" + dir_path + "' failed: " + std::strerror(errno);
    return;
  }
  std::vector<DirEntry> entries;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    // The directory's own entry type where the filesystem gives one: no stat, so a mount on
    // an entry (a network filesystem, say) is not touched here.
    bool symlink = entry->d_type == DT_LNK;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st {};
      // Gone since readdir: nothing to grant.
      if (::fstatat(::dirfd(dir.get()), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      symlink = S_ISLNK(st.st_mode);
    }
    entries.push_back({name, symlink});
  }
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  facts.listings[dir_path] = std::move(entries);
}

HostFacts gather_facts(const TransformRequest& request, std::string stage2_path) {
  HostFacts facts;
  facts.stage2_path = std::move(stage2_path);
  if (request.policy.filesystem_kind != FilesystemKind::kRestricted) return facts;
  find_device_mounts(facts);
  for (const std::string& dir : directories_to_list(request.policy, facts.device_mounts))
    list_directory(dir, facts);
  return facts;
}

class LandlockBackend final : public Backend {
 public:
  explicit LandlockBackend(HostServices host) : Backend(host) {}

  ProbeReport probe(const ProbeContext& /*context*/) override {
    return run_probe(std::string(host().stage2_path()));
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    try {
      Result<Translation> t =
          translate(request, gather_facts(request, std::string(host().stage2_path())));
      if (!t.ok()) return Error{t.error()};
      ExecPlan plan;
      plan.argv = std::move(t->argv);
      plan.cwd = request.cwd;
      // Stage 2 (static: no LD_* acts on it) runs with the command's environment and hands it
      // on (--env-environ); as arguments it would be world-readable in /proc.
      plan.env = std::move(t->env);
      plan.notes = std::move(t->notes);
      return plan;
    } catch (const std::exception& e) {
      return Error{std::string("landlock: transform failed: ") + e.what()};
    }
  }

  // Stage 2 learns which process started it, so that it can kill the command's whole tree when
  // that process dies (no pid namespace does it here). Added at exec, not in the plan: a plan
  // run by someone else has no such parent, and stage 2 then uses the parent it finds.
  Result<ExitStatus> exec(const ExecPlan& plan) override {
    ExecPlan tied = plan;
    if (!tied.argv.empty())
      tied.argv.insert(tied.argv.begin() + 1, {"--parent-pid", std::to_string(::getpid())});
    return host().spawn(tied);
  }
};

}  // namespace
}  // namespace sbx::landlock

SBX_DECLARE_BACKEND(sbx::landlock::LandlockBackend, "landlock", "0.1.0",
                    "Landlock + seccomp via sbx-stage2, no namespaces (Linux)")
