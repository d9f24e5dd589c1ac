// sbx-backend-landlock: the thin module around the pure translator. probe() asks the kernel;
// transform() gathers the host facts (the trusted stage-2 path, device filesystems mounted
// outside /dev, the directories a rule over them is split along) and runs the translator;
// exec() runs the plan itself, inside sbx, with the launcher of core/stage2/landlock_launch.hpp:
// the plan's argv is `sbx-stage2 --landlock ...` (what a person or an SDK user would run by
// hand), but no helper is exec'd here: sbx builds the ruleset, forks the supervisor, and the
// command's child confines itself and execs the command.
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
#include "landlock_launch.hpp"
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

  // The plan is parsed exactly as sbx-stage2 would parse it, and run by the same launcher; the
  // run is tied to this process (the supervisor's parent-death signal), the command's
  // environment goes only into its execve, and the host's prepare_child (the run's cgroup and
  // rlimits) runs in the command's child.
  Result<ExitStatus> exec(const ExecPlan& plan) override {
    try {
      Result<stage2::LandlockLaunch> launch = stage2::parse_landlock_argv(plan.argv);
      if (!launch.ok()) return Error{"landlock: the plan is not a Landlock plan: " + launch.error()};
      if (!launch->env_environ) return Error{"landlock: the plan does not pass its environment"};
      stage2::LaunchOptions options;
      options.env = plan.env;
      options.cwd = plan.cwd;
      options.guard_program = std::string(host().stage2_path());
      hook_ = host().child_hook();
      options.prepare_child = &LandlockBackend::prepare_child;
      options.prepare_child_ctx = &hook_;
      return stage2::run_landlock(*launch, options);
    } catch (const std::exception& e) {
      return Error{std::string("landlock: exec failed: ") + e.what()};
    }
  }

 private:
  // Async-signal-safe: calls the host's hook, which is.
  static int prepare_child(void* ctx) { return (*static_cast<HostServices::ChildHook*>(ctx))(); }

  HostServices::ChildHook hook_;
};

}  // namespace
}  // namespace sbx::landlock

SBX_DECLARE_BACKEND(sbx::landlock::LandlockBackend, "landlock", "0.1.0",
                    "Landlock + seccomp, no namespaces (Linux)")
