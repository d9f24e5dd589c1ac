// sbx-backend-landlock: the thin module around the pure translator. probe() asks the kernel;
// transform() gathers the host facts (the trusted stage-2 path, the entries of / when a rule
// covers /dev) and runs the translator; exec() is the default
// host spawn (stage 2 is the whole sandbox: no launcher, no host state to clean up).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "sbx/landlock/probe.hpp"
#include "sbx/landlock/translate.hpp"
#include "sbx/sdk/plugin.hpp"

namespace sbx::landlock {
namespace {

// The entries of / for a rule that covers /dev (translate.hpp): names and whether each is a
// symlink, sorted so the plan is stable.
void list_root(HostFacts& facts) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/"), ::closedir);
  if (!dir) {
    facts.root_error = std::strerror(errno);
    return;
  }
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
    facts.root_entries.push_back({name, symlink});
  }
  std::sort(facts.root_entries.begin(), facts.root_entries.end(),
            [](const RootEntry& a, const RootEntry& b) { return a.name < b.name; });
  facts.root_listed = true;
}

HostFacts gather_facts(const TransformRequest& request, std::string stage2_path) {
  HostFacts facts;
  facts.stage2_path = std::move(stage2_path);
  if (needs_root_entries(request.policy)) list_root(facts);
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
};

}  // namespace
}  // namespace sbx::landlock

SBX_DECLARE_BACKEND(sbx::landlock::LandlockBackend, "landlock", "0.1.0",
                    "Landlock + seccomp via sbx-stage2, no namespaces (Linux)")
