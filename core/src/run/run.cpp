// One run, from the policy to the report (see sbx/core/run.hpp).
#include "sbx/core/run.hpp"

#ifndef _WIN32
#include <unistd.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plugins/probe_store.hpp"
#include "run/git_config.hpp"
#include "run/standard_fds.hpp"
#include "run/state_guard.hpp"
#include "sbx/core/command_patterns.hpp"
#include "sbx/core/created_names.hpp"
#include "sbx/core/denial.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/exit_codes.hpp"
#include "sbx/core/logging.hpp"
#include "sbx/core/program_grammar.hpp"
#include "sbx/core/program_trust.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/spawn.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {
namespace {

// What the steps before the run produce: the plan and what must live as long as the command.
struct PlannedRun {
  const Manager* manager = nullptr;    // the manager of `backend`
  std::optional<std::string> backend;  // nullopt: the plan runs without a sandbox
  ExecPlan plan;
  // Network mode proxy: sbx's proxy for this run; it serves the command only while it lives.
  std::unique_ptr<proxy::RunProxy> proxy;
  CgroupSupport cgroups;  // probed once per run: checked in prepare(), used by the run
#ifndef _WIN32
  // The copy-on-write caches' layers this run holds (caches::make_overlay_layers): until the
  // run has ended, no other run of the project mounts them.
  std::vector<UniqueFd> cache_locks;
#endif
};

// The toolchain caches copy-on-write for a run on a backend that mounts them (`copies`: its
// probe passes kCacheOverlayCheck): nullopt without ":caches" or such a backend, whose tools
// are then pointed at the project's cache (caches::apply_environment).
std::optional<caches::CopyOnWrite> copy_on_write(const std::optional<caches::CachePlan>& plan,
                                                 const ResolvedPolicy& resolved, bool copies) {
#ifdef _WIN32
  (void)plan;
  (void)resolved;
  (void)copies;
  return std::nullopt;
#else
  if (!plan || !copies) return std::nullopt;
  return caches::plan_copy_on_write(*plan, resolved, caches::existing_directory);
#endif
}

// The caches to mount, and sbx's state below one of them kept read-only: a read rule, which the
// backend mounts over the overlay (the policy, sorted by depth then path, gains it).
void add_copy_on_write(const caches::CopyOnWrite& cow, TransformRequest& request) {
  request.cache_overlays = cow.overlays;
  std::vector<PathRule>& rules = request.policy.rules;
  for (const std::string& path : cow.read_only) {
    if (std::none_of(rules.begin(), rules.end(),
                     [&](const PathRule& rule) { return rule.path == path; }))
      rules.push_back(PathRule{path, Access::kRead});
  }
  const auto depth = [](const std::string& path) {
    return path == "/" ? 0 : std::count(path.begin(), path.end(), '/');
  };
  std::stable_sort(rules.begin(), rules.end(), [&](const PathRule& a, const PathRule& b) {
    return depth(a.path) != depth(b.path) ? depth(a.path) < depth(b.path) : a.path < b.path;
  });
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    const std::string quoted = "'" + item + "'";
    if (out.find(quoted) == std::string::npos) out += (out.empty() ? "" : ", ") + quoted;
  }
  return out;
}

// An excluded command that matched: the programs it runs, verified (program_trust.hpp).
struct Exclusion {
  std::vector<std::string> matched;  // the pattern of each part; empty: no exclusion applies
  std::string program;               // the absolute path argv[0] runs by, never looked up again
  std::string path_env;              // the PATH it gets: the entries the lookup searched
  std::string refused;               // a match whose programs were refused: why
  // The environment it runs with (reset_environment, PATH still to be replaced by path_env)
  // and the names the reset dropped.
  std::vector<std::string> env;
  std::vector<std::string> dropped;
};

std::string env_path(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) return entry.substr(5);
  }
  return "/usr/bin:/bin";  // as resolve_command (spawn.cpp)
}

std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=')
      return entry.substr(name.size() + 1);
  }
  return std::nullopt;
}

// realpath(3) of `path`, nullopt when it cannot be resolved (missing).
std::optional<std::string> real_directory(const std::string& path) {
#ifdef _WIN32
  (void)path;
  return std::nullopt;
#else
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return std::nullopt;
  std::string out(real);
  std::free(real);
  return out;
#endif
}

// A file a shell reads before the script (its startup file): refused when missing in a place
// the sandbox could create it, or when any step to it is plantable.
std::optional<std::string> startup_file_refusal(const std::string& what, const std::string& path,
                                                const ResolvedPolicy& resolved,
                                                const HostUser& user) {
  // The path comes from the caller's HOME: only an absolute one without `$` or a backtick is
  // judged (a relative one would be read relative to wherever the shell starts).
  if (path.empty() || path.front() != '/' || path.find_first_of("$`") != std::string::npos)
    return what + " '" + path + "' cannot be verified";
  Result<std::vector<PathStep>> steps = walk_path(path);
  if (!steps.ok()) {
    const std::size_t slash = path.rfind('/');
    steps = walk_path(slash == 0 ? "/" : path.substr(0, slash));
    if (!steps.ok()) return what + " " + path + ": " + steps.error();
  }
  if (std::optional<std::string> why = first_plantable(*steps, resolved, user))
    return what + " " + path + " could have been planted by a sandboxed command: " + *why;
  return std::nullopt;
}

// What a shell given `-c` reads before the script, in the reset environment (BASH_ENV, ENV,
// ZDOTDIR and SSH_CLIENT are dropped): bash(1) INVOCATION, a non-interactive bash started
// over the network reads ~/.bashrc; zsh(1) STARTUP/SHUTDOWN FILES, every zsh sources
// $ZDOTDIR/.zshenv, ZDOTDIR defaulting to HOME. dash and ksh read $ENV only when interactive.
std::optional<std::string> shell_startup_refusal(const std::vector<std::string>& argv,
                                                 const std::vector<std::string>& env,
                                                 const ResolvedPolicy& resolved,
                                                 const HostUser& user) {
  const std::string& shell = argv[0];
  const std::string name = shell.substr(shell.rfind('/') + 1);
  if (name != "bash" && name != "zsh") return std::nullopt;
  std::optional<std::string> home = env_value(env, "HOME");
  if (!home || home->empty())
    return name + " could read its startup file from an unknown directory (no HOME)";
  // bash's shell.c run_startup_files(): a non-interactive `bash -c` whose stdin is a socket
  // (isnetconn) reads ~/.bashrc when SHLVL < 2. Whether that holds depends on how the caller
  // started sbx (Node agents pass a socket as stdin), so ~/.bashrc is checked always.
  if (name == "bash")
    return startup_file_refusal("bash's startup file", *home + "/.bashrc", resolved, user);
  return startup_file_refusal("zsh's startup file", *home + "/.zshenv", resolved, user);
}

// How many entries of one directory above the cwd an exclusion checks before it gives up (the
// command runs sandboxed): the ancestors of a project hold few.
constexpr std::size_t kMaxEntriesBeside = 5000;

// An excluded program acts with the host's full power on everything it reads, and what it reads
// first is its working directory: git's discovery takes any directory at or above the cwd that
// holds HEAD, objects/ and refs/ as the repository (gitrepository-layout(5); setup.c
// is_git_directory) and runs its core.fsmonitor; make reads ./Makefile, `npm run` ./package.json.
// So the cwd and every directory above it must be ones no sandbox could have written (the walk
// of find_trusted_program, for the directory instead of a program).
std::optional<std::string> working_directory_refusal(const std::string& cwd,
                                                     const ResolvedPolicy& resolved,
                                                     const HostUser& user) {
  Result<std::vector<PathStep>> steps = walk_path(cwd);
  if (!steps.ok()) return "the working directory cannot be verified: " + steps.error();
  std::optional<std::string> why = first_plantable_directory(*steps, resolved, user);
  // What lies beside the walk is discovered too: a user-owned /work/.git above /work/proj.
  if (!why) why = first_plantable_beside(*steps, resolved, user, kMaxEntriesBeside);
  if (!why) return std::nullopt;
  return "the working directory " + cwd + " could have been written by a sandboxed command (" +
         *why + "): what the excluded program reads there could have been planted; to run it " +
         "without a sandbox anyway, ask for that run explicitly (sbx exec --sandbox forbid)";
}

// An excluded program reads the user's configuration as well: git ~/.gitconfig and
// $XDG_CONFIG_HOME/git/config (git-config(1) FILES; core.fsmonitor, core.pager and `!` aliases
// run commands), npm ~/.npmrc, ssh ~/.ssh/config, ... A home or configuration directory the
// sandbox could write (any dotfile could be planted there) refuses the match like the cwd.
std::optional<std::string> configuration_refusal(const std::vector<std::string>& env,
                                                 const ResolvedPolicy& resolved,
                                                 const HostUser& user) {
  std::optional<std::string> home = env_value(env, "HOME");
  if (!home || home->empty() || home->front() != '/')
    return "the home directory (HOME) is not an absolute path, so the configuration the "
           "excluded program reads there cannot be verified";
  std::optional<std::string> config = env_value(env, "XDG_CONFIG_HOME");
  if (!config || config->empty() || config->front() != '/') config = *home + "/.config";
  for (const std::string& dir : {*home, *config}) {
    Result<std::vector<PathStep>> steps = walk_path(dir);
    if (!steps.ok()) {
      // A missing directory could be created where its parent is plantable.
      const std::size_t slash = dir.rfind('/');
      steps = walk_path(slash == 0 ? "/" : dir.substr(0, slash));
      if (!steps.ok()) return "the configuration directory " + dir + ": " + steps.error();
    }
    if (std::optional<std::string> why = first_plantable_directory(*steps, resolved, user))
      return "the configuration directory " + dir +
             " could have been written by a sandboxed command (" + *why +
             "): the excluded program's configuration there (~/.gitconfig, ~/.npmrc, ...) "
             "could have been planted";
  }
  return std::nullopt;
}

// The directories an excluded program reads its inputs from, named for messages: the working
// directory, HOME and XDG_CONFIG_HOME (else ~/.config).
std::vector<std::pair<std::string, std::string>> excluded_program_inputs(
    const std::string& cwd, const std::vector<std::string>& env) {
  std::vector<std::pair<std::string, std::string>> inputs{{"working directory", cwd}};
  const std::optional<std::string> home = env_value(env, "HOME");
  if (home && !home->empty()) inputs.emplace_back("home directory", *home);
  std::optional<std::string> config = env_value(env, "XDG_CONFIG_HOME");
  if ((!config || config->empty() || config->front() != '/') && home && !home->empty())
    config = *home + "/.config";
  if (config) inputs.emplace_back("configuration directory", *config);
  return inputs;
}

// The walks above go upward only: a writable root *below* the cwd, HOME or XDG_CONFIG_HOME is
// never on them, yet what the excluded program reads there could have been planted: cargo's
// build scripts in :cwd/target, git's $XDG_CONFIG_HOME/git/config (core.fsmonitor), pip's
// ~/.local (usercustomize.py). So no write rule of the policy may lie inside any of them.
std::optional<std::string> inner_writable_root_refusal(const std::string& cwd,
                                                       const std::vector<std::string>& env,
                                                       const ResolvedPolicy& resolved) {
  const std::vector<std::pair<std::string, std::string>> inputs = excluded_program_inputs(cwd, env);
  for (const PathRule& rule : resolved.rules) {
    if (rule.access != Access::kWrite) continue;
    for (const auto& [what, dir] : inputs) {
      // The rules are symlink-free; HOME and XDG_CONFIG_HOME may not be.
      const std::optional<std::string> real = real_directory(dir);
      const std::string& compared = real ? *real : dir;
      if (path_is_within(rule.path, compared) || path_is_within(rule.path, dir))
        return "the policy makes " + rule.path + " writable, inside the " + what + " " + dir +
               ": what the excluded program reads below it could have been planted";
    }
  }
  return std::nullopt;
}

// How many entries below the cwd, HOME and XDG_CONFIG_HOME an exclusion checks before it gives
// up (and the command runs sandboxed): enough for a small project or a home of dotfiles, not
// a large repository's objects.
constexpr std::size_t kMaxEntriesBelow = 20000;

// The upward walks see a directory's own owner and mode, not what it holds: a user-owned
// Makefile, .git/config or ~/.gitconfig inside a directory the user does not own could have been
// rewritten by an earlier, wider run. So every entry below the cwd, HOME and XDG_CONFIG_HOME
// (each that exists) must be unplantable too (first_plantable_below).
std::optional<std::string> entries_below_refusal(const std::string& cwd,
                                                 const std::vector<std::string>& env,
                                                 const ResolvedPolicy& resolved,
                                                 const HostUser& user) {
  const std::vector<std::pair<std::string, std::string>> inputs = excluded_program_inputs(cwd, env);
  for (const auto& [what, dir] : inputs) {
    const std::optional<std::string> real = real_directory(dir);
    if (!real) continue;  // missing: its parent was judged by configuration_refusal
    if (std::optional<std::string> why =
            first_plantable_below(*real, resolved, user, kMaxEntriesBelow))
      return "below the " + what + " " + dir + ", " + *why +
             ": what the excluded program reads there could have been planted";
  }
  return std::nullopt;
}

// git reads the whole repository from any directory inside it (its work tree, .git, the
// submodules `git status` recurses into), not only what lies below the cwd: a user-owned
// submodule beside the cwd ran its planted core.fsmonitor. So for a command that runs git,
// everything below the repository's top is judged like the cwd's entries.
std::optional<std::string> repository_refusal(const std::vector<std::string>& programs,
                                              const std::string& cwd,
                                              const ResolvedPolicy& resolved,
                                              const HostUser& user) {
  const bool runs_git = std::any_of(programs.begin(), programs.end(), [](const std::string& p) {
    return p.substr(p.rfind('/') + 1) == "git";
  });
  if (!runs_git) return std::nullopt;
  const RepositoryTop repository = repository_top(cwd);
  if (!repository.refused.empty()) return repository.refused;
  if (!repository.top) return std::nullopt;
  if (std::optional<std::string> why =
          first_plantable_below(*repository.top, resolved, user, kMaxEntriesBelow))
    return "below the repository " + *repository.top + ", which git reads whole, " + *why +
           ": what git reads there could have been planted";
  return std::nullopt;
}

// The configuration every unsandboxed git gets last (verify_exclusion).
std::vector<std::string> git_overrides() {
  const std::pair<const char*, const char*> settings[] = {{"core.fsmonitor", "false"},
                                                          {"core.hooksPath", "/dev/null"},
                                                          {"protocol.allow", "never"},
                                                          {"log.showSignature", "false"}};
  std::vector<std::string> env{"GIT_CONFIG_COUNT=" + std::to_string(std::size(settings))};
  for (std::size_t i = 0; i < std::size(settings); ++i) {
    env.push_back("GIT_CONFIG_KEY_" + std::to_string(i) + "=" + settings[i].first);
    env.push_back("GIT_CONFIG_VALUE_" + std::to_string(i) + "=" + settings[i].second);
  }
  return env;
}

// Every program the matched command runs must be one no sandbox could have planted, and so must
// its working directory and configuration directories: else the match is refused and the
// command runs sandboxed (Exclusion::refused says why).
Exclusion verify_exclusion(std::vector<std::string> matched,
                           const std::vector<std::string>& command, const ResolvedPolicy& resolved,
                           const std::string& cwd, const std::vector<std::string>& env) {
  Exclusion out;
  std::string doubt;
  std::optional<std::vector<std::string>> programs = settings::programs_of(command, &doubt);
  if (!programs) {
    out.refused = doubt;
    return out;
  }
  const HostUser user = current_host_user();
  const std::string path_env = env_path(env);
  // The program runs with a reset environment (reset_environment: a denylist of variables
  // that load code cannot be complete), so what follows judges that one.
  ResetEnvironment reset = reset_environment(env, cwd);
  std::string git, git_path_env;  // the git it runs, if any, and the PATH it gets
  for (std::size_t i = 0; i < programs->size(); ++i) {
    const std::string& name = (*programs)[i];
    TrustedProgram found = find_trusted_program(name, cwd, path_env, resolved, user);
    if (!found.path) {
      out.refused = found.refused;
      return out;
    }
    // The arguments were checked for the program the name says; the file must be that program
    // (`editor`, `pager` and /etc/alternatives links lead to vim or less; a link named ls could).
    const std::string real_name = found.real_path.substr(found.real_path.rfind('/') + 1);
    if (!settings::is_file_of(name, real_name)) {
      out.refused = "'" + name + "' is the file " + found.real_path + ", not the program '" +
                    name.substr(name.rfind('/') + 1) + "' whose arguments sbx checked";
      return out;
    }
    if (i == 0) {
      out.program = *found.path;
      out.path_env = found.trusted_path_env;
    }
    if (real_name == "git" && git.empty()) {
      git = *found.path;
      git_path_env = found.trusted_path_env;
    }
  }
  if (settings::is_shell_script(command)) {
    if (std::optional<std::string> why =
            shell_startup_refusal(command, reset.env, resolved, user)) {
      out.refused = *why;
      return out;
    }
  }
  if (std::optional<std::string> why = working_directory_refusal(cwd, resolved, user)) {
    out.refused = *why;
    return out;
  }
  if (std::optional<std::string> why = configuration_refusal(reset.env, resolved, user)) {
    out.refused = *why;
    return out;
  }
  if (std::optional<std::string> why = inner_writable_root_refusal(cwd, reset.env, resolved)) {
    out.refused = *why;
    return out;
  }
  if (std::optional<std::string> why = entries_below_refusal(cwd, reset.env, resolved, user)) {
    out.refused = *why;
    return out;
  }
  if (std::optional<std::string> why = repository_refusal(*programs, cwd, resolved, user)) {
    out.refused = *why;
    return out;
  }
  // What git's configuration names, wherever it lies (git_config.hpp).
  if (!git.empty()) {
    std::vector<std::string> git_env = reset.env;
    std::erase_if(git_env, [](const std::string& entry) { return entry.rfind("PATH=", 0) == 0; });
    git_env.push_back("PATH=" + git_path_env);
    std::vector<std::string> dirs{cwd};
    const RepositoryTop repository = repository_top(cwd);
    dirs.insert(dirs.end(), repository.gitfile_dirs.begin(), repository.gitfile_dirs.end());
    if (std::optional<std::string> why = git_configuration_refusal(
            git, dirs, repository.top.value_or(""), git_env, git_path_env, resolved, user)) {
      out.refused = *why;
      return out;
    }
  }
  // git pages its output through less when stdout is a terminal, and less runs `!CMD` typed
  // into it (git-config(1) core.pager: GIT_PAGER comes first; "cat" means no pager).
  reset.env.emplace_back("GIT_PAGER=cat");
  // And, whatever the judged configuration says (a second wall behind git_config.cpp): no
  // fsmonitor hook, no hooks, no transport (a lazy fetch), no gpg for signatures. Settings given
  // this way come after every file (git-config(1) ENVIRONMENT: GIT_CONFIG_COUNT, git >= 2.31).
  for (const std::string& entry : git_overrides()) reset.env.push_back(entry);
  out.matched = std::move(matched);
  out.env = std::move(reset.env);
  out.dropped = std::move(reset.dropped);
  return out;
}

// Question 1, then the excluded commands of the settings: `exclusion` says what runs without a
// sandbox for that reason, or why a match was refused.
Result<SandboxDecision> decide_sandbox(const Policy& policy, SandboxPreference preference,
                                       const std::vector<std::string>& command,
                                       const SettingsSummary& settings,
                                       const ResolvedPolicy& resolved, const std::string& cwd,
                                       const std::vector<std::string>& env, Exclusion& exclusion) {
  Result<SandboxDecision> decision = should_sandbox(policy, preference);
  // A preference that came from a settings file says so: the reason names the flag it stands
  // for, which the caller did not give.
  const std::string& from = settings.sandbox_scope;
  if (decision.ok() && from != "built-in" && from != "command line")
    decision->reason +=
        " (sandbox: " + std::string(to_string(preference)) + " in the " + from + " settings)";
  if (!decision.ok() || !decision->sandbox) return decision;
  std::optional<std::vector<std::string>> matched =
      excluded_command(policy, preference, command, settings);
  if (!matched) return decision;
  const std::string patterns = quoted_list(*matched);
  exclusion = verify_exclusion(std::move(*matched), command, resolved, cwd, env);
  if (!exclusion.refused.empty()) {
    decision->reason += "; the excluded command (settings excluded_commands: " + patterns +
                        ") runs sandboxed: " + exclusion.refused;
    return decision;
  }
  return SandboxDecision{false,
                         "the command is an excluded command (settings "
                         "excluded_commands: " +
                             patterns + ")"};
}

// Every variable of the caller's environment an excluded command does not get, by name (never
// its value): what the reset dropped (verify_exclusion), then what the policy's /environment
// removed before it (`removed`: filter_environment, with the names a front end withheld and
// an empty name), each once. Empty when no exclusion applies.
std::vector<std::string> environment_dropped(const Exclusion& exclusion,
                                             const std::vector<std::string>& removed) {
  if (exclusion.matched.empty()) return {};
  std::vector<std::string> out = exclusion.dropped;
  for (const std::string& name : removed)
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

bool stop(RunOutcome& out, RunStop why, Error error) {
  out.stop = why;
  out.error = std::move(error.message);
  out.kind = error.kind;
  return false;
}

// Question 2: the preferred backend of the default order alone when it is available and can
// enforce the policy (Linux only: elsewhere the first loaded one differs by platform), else
// every backend the caller allows, in its order. nullptr when the plugins cannot be loaded.
const Manager* choose_backend(const RunRequest& request, RunBackends& backends, RunOutcome& out) {
#ifdef __linux__
  const std::string preferred(kDefaultBackendOrder[0]);
  if (const Manager* only = backends.only(preferred)) {
    BackendChoice choice = only->available_backend(request.resolved);
    if (choice.backend == preferred) {
      out.choice = std::move(choice);
      return only;
    }
  }
#endif
  Result<const Manager*> all = backends.all();
  if (!all.ok()) {
    stop(out, RunStop::kBackendsUnavailable, all.failure());
    return nullptr;
  }
  out.choice = (*all)->available_backend(request.resolved);
  return *all;
}

ExecPlan direct_plan(const RunRequest& request, std::vector<std::string> argv,
                     std::vector<std::string> env, const std::string& reason) {
  return ExecPlan{std::move(argv), std::move(env), request.cwd, {"not sandboxed: " + reason}};
}

// Question 2 said "none". Only an explicit override runs the command without a sandbox, and
// never for a policy that only a sandbox can honour.
bool none_available(const RunRequest& request, std::vector<std::string> argv,
                    std::vector<std::string> env, RunOutcome& out, PlannedRun& prepared) {
  const BareVerdict bare = may_run_unsandboxed(
      request.policy, request.allow_unsandboxed ? BareIntent::kOverride : BareIntent::kNoBackend);
  out.never_unsandboxed = never_unsandboxed(request.policy);
  // No backend here can enforce the policy: unavailable; refused when the caller's override
  // was given but the policy may never run unsandboxed.
  if (!bare.allowed)
    return stop(out, RunStop::kNoBackend,
                Error{out.choice.reason,
                      request.allow_unsandboxed ? ErrorKind::refused : ErrorKind::unavailable});
  if (request.on_unsandboxed_override)
    request.on_unsandboxed_override(out.report.reason, out.choice);
  out.report.allow_unsandboxed_used = true;
  prepared.plan = direct_plan(request, std::move(argv), std::move(env), out.report.reason);
  return true;
}

// Everything before the run: question 1, argv[0], question 2, the plan (and its proxy).
// false when the run stops (`out` says why).
bool prepare(RunRequest& request, RunBackends& backends, RunOutcome& out, PlannedRun& prepared) {
  prepared.cgroups = probe_cgroups();
  if (Status runnable =
          check_policy_runnable(request.policy, request.preference, prepared.cgroups,
                                request.limit_signals == LimitedRun::Signals::kRunOnly);
      !runnable.ok())
    return stop(out, RunStop::kInvalidRequest, runnable.failure());
  // The policy's /environment (secrets dropped by default) on every path, sandboxed or not;
  // sbx's own proxy variables are added by plan_run.
  FilteredEnvironment filtered =
      filter_environment(request.policy.environment, request.environment);
  std::vector<std::string> env = std::move(filtered.env);
  if (kHostPathStyle == PathStyle::kPosix)
    point_pwd_at_working_directory(env, request.policy.environment, request.cwd);
  Exclusion exclusion;
  Result<SandboxDecision> decision =
      decide_sandbox(request.policy, request.preference, request.command, request.settings,
                     request.resolved, request.cwd, env, exclusion);
  if (!decision.ok()) return stop(out, RunStop::kInvalidRequest, decision.failure());
  out.report.should_sandbox = decision->sandbox;
  out.report.reason = decision->reason;
  out.report.excluded_by = exclusion.matched;
  out.report.environment_dropped = environment_dropped(exclusion, filtered.removed);
  if (request.command.empty())
    return stop(out, RunStop::kInvalidRequest, Error{"no command given", ErrorKind::invalid_input});
  std::vector<std::string> argv = request.command;
  if (!exclusion.matched.empty()) {
    // Run by the path that was verified, in the reset environment, with the PATH that was
    // searched: nothing is looked up again, and what the command looks up agrees with the
    // lookup that verified it.
    argv[0] = exclusion.program;
    env = std::move(exclusion.env);
    std::erase_if(env, [](const std::string& entry) { return entry.rfind("PATH=", 0) == 0; });
    env.push_back("PATH=" + exclusion.path_env);
    prepared.plan = direct_plan(request, std::move(argv), std::move(env), decision->reason);
    return true;
  }
  Result<std::string> path = resolve_command(request.command[0], request.cwd, env);
  if (!path.ok())
    return stop(out, RunStop::kCommandNotFound, path.failure().as(ErrorKind::invalid_input));
  argv[0] = *path;
  if (!decision->sandbox) {
    prepared.plan = direct_plan(request, std::move(argv), std::move(env), decision->reason);
    return true;
  }
  const Manager* manager = choose_backend(request, backends, out);
  if (manager == nullptr) return false;
  out.report.backend = out.choice.backend;
  if (!out.choice.backend)
    return none_available(request, std::move(argv), std::move(env), out, prepared);
  const std::string& backend = *out.choice.backend;
  // Sandboxed only: without a sandbox the host's caches are the command's to write anyway.
  const auto probe = std::find_if(out.choice.probes.begin(), out.choice.probes.end(),
                                  [&](const auto& entry) { return entry.first == backend; });
  std::optional<caches::CopyOnWrite> cow =
      copy_on_write(request.caches, request.resolved,
                    probe != out.choice.probes.end() && passes_cache_overlay(probe->second));
#ifndef _WIN32
  if (cow) {
    Result<std::vector<UniqueFd>> locks = caches::make_overlay_layers(*cow);
    if (!locks.ok())
      return stop(out, RunStop::kPlanRefused,
                  locks.failure().prefixed("cannot keep the toolchain caches: "));
    prepared.cache_locks = std::move(*locks);
  }
#endif
  if (request.caches) caches::apply_environment(*request.caches, env, cow ? &*cow : nullptr);
  TransformRequest transform{std::move(argv), request.cwd, std::move(env), request.resolved};
  if (cow) add_copy_on_write(*cow, transform);
  Result<SandboxedRun> planned =
      manager->plan_run(backend, std::move(transform), request.on_refusal);
  if (!planned.ok()) return stop(out, RunStop::kPlanRefused, planned.failure());
  out.report.final = backend;
  prepared.manager = manager;
  prepared.backend = backend;
  prepared.plan = std::move(planned->plan);
  prepared.proxy = std::move(planned->proxy);
  return true;
}

// How the created names were found, as a debug line: whoever checks a case from outside can
// tell the fanotify events from the walk (outside review round 3).
std::string created_names_method(std::size_t roots, std::size_t watched,
                                 const std::string& fell_back) {
  std::string line = "created names: " + std::to_string(roots) + " writable root(s), " +
                     std::to_string(watched) + " watched by fanotify events";
  if (watched > 0)
    line += fell_back.empty() ? ", which answered for them"
                              : ", which could not answer (" + fell_back + "): walked";
  if (watched < roots) line += "; the others read while the command ran and walked after it";
  return line;
}

// Protected names the command created below the top of its writable roots, where no backend
// keeps them (created_names.hpp), from the scan started with the run.
void record_created_names(CreatedNamesScan& scan, std::size_t roots, RunReport& report) {
  CreatedNames created = scan.finish();
  if (roots > 0)
    log_debug(created_names_method(roots, scan.event_roots(), scan.events_fell_back()));
  report.protected_names_created = std::move(created.paths);
  report.protected_names_truncated = created.truncated;
  report.protected_names_unreadable = std::move(created.unreadable);
}

// The run's stdio: the front end's, or for capture_stderr this process's own with stderr copied
// through a pipe for its tail; null for this process's own. Error: nothing ran.
Result<std::shared_ptr<RunStdio>> stdio_for(const RunRequest& request) {
  if (request.stdio || !request.capture_stderr) return request.stdio;
  std::array<StdioSpec, 3> specs{};
  specs[2].tail = true;
  Result<std::unique_ptr<RunStdio>> opened = RunStdio::open(std::move(specs));
  if (!opened.ok()) return opened.failure();
  return std::shared_ptr<RunStdio>(std::move(*opened));
}

// Stops the run for its control: the caller cancelled it or its time-out passed.
// `failure`: how the backend's exec() failed meanwhile, if it did (a third-party plugin that did
// not end its exec in time, plugins/call_isolation.cpp): said too.
bool ended_early(RunOutcome& out, RunEnd end, const RunControl& control,
                 const std::string& failure = {}) {
  const std::string also = failure.empty() ? std::string() : "; " + failure;
  if (end == RunEnd::kCancelled)
    return stop(
        out, RunStop::kEndedEarly,
        Error{"the run was cancelled by the caller and ended" + also, ErrorKind::cancelled});
  const auto ms = control.timeout().value_or(std::chrono::milliseconds(0)).count();
  return stop(out, RunStop::kEndedEarly,
              Error{"the run timed out after " + std::to_string(ms) + " ms and was ended" + also,
                    ErrorKind::timed_out});
}

// What the run's stdio kept, in the report.
void record_stdio(const RunStdio& stdio, RunReport& report) {
  report.stderr_tail = stdio.stderr_tail();
  const auto summary = [](const CapturedOutput* captured) -> std::optional<RunReport::Capture> {
    if (captured == nullptr) return std::nullopt;
    return RunReport::Capture{captured->bytes.size(), captured->dropped};
  };
  report.stdout_capture = summary(stdio.captured(1));
  report.stderr_capture = summary(stdio.captured(2));
}

// The run: its resource limits hold from the first process the backend starts until finish()
// has killed whatever is left of it; the command's stdio is the request's (RunStdio), and its
// control may end it early.
void run_prepared(const RunRequest& request, PlannedRun& prepared, RunOutcome& out) {
  // Only a sandboxed run is watched for protected names created deep in its writable roots.
  CreatedNamesWatch watch = prepared.backend ? created_names_watch(request.policy, request.resolved)
                                             : CreatedNamesWatch{};
  // The project's cache is sbx's own state, which no git or agent on the host works in, and it
  // may hold hundreds of thousands of files: not walked.
  if (request.caches) std::erase(watch.roots, request.caches->data);
  // Where sbx may (root), the writable roots' filesystems are watched with fanotify from now
  // on, before the command starts, and only what changed is examined after the run; elsewhere
  // the roots are read while the command runs and checked after it (most of the walk off the
  // run's critical path). The clock now, so that everything is judged against a start no later
  // than the command's. The scan and the events' reading thread start once the backend says
  // the sandbox's first process exists (RunServices below): their set-up then overlaps the
  // sandbox's, and the spawned child copies none of the scan's descriptors. A backend that
  // never says so leaves it to finish(), which then walks the scanned roots and reads the
  // events' queue after the run (created_names.hpp).
  std::optional<CreatedNamesScan> scan;
  if (prepared.backend)
    scan.emplace(watch, created_names_clock(), CreatedNamesLimits{}, CreatedNamesScan::Deferred{});
  Result<std::unique_ptr<LimitedRun>> limited =
      LimitedRun::start(request.policy.limits, request.limit_signals, prepared.cgroups);
  if (!limited.ok()) {
    stop(out, RunStop::kLimitsUnavailable, limited.failure());
    return;
  }
  Result<std::shared_ptr<RunStdio>> stdio = stdio_for(request);
  if (!stdio.ok()) {
    stop(out, RunStop::kCaptureUnavailable, stdio.failure());
    return;
  }
  // Cancelled or timed out while it planned: the command never starts.
  if (request.control && request.control->ended() != RunEnd::kNone) {
    ended_early(out, request.control->ended(), *request.control);
    return;
  }
  // A sandboxed command may chmod the directories above sbx's state directories that its
  // writable roots hold, or repoint a symlink on the way: set back after it (state_guard.hpp).
  std::optional<StateModeGuard> state_guard;
  if (prepared.backend)
    state_guard.emplace(
        chmodable_state_ancestors(request.resolved, kept_probe::state_directories()),
        chmodable_state_ancestors(request.resolved, kept_probe::state_directory_names()));
  Result<ExitStatus> status = Error{"not run"};
  RunEnd end = RunEnd::kNone;
  {
    // The run's context: what the backend's sandbox refuses goes to this run's report, its
    // start starts the scan, and what it spawns goes under this run's limits, with the run's
    // stdio and its end.
    RunServices services(
        &out.report.network_refusals.backend,
        [&scan] {
          if (scan) scan->start();
        },
        limited->get());
    if (*stdio) services.set_stdio((*stdio)->child_fds(), (*stdio)->own_stdio());
    if (request.control) services.set_cancel_fd(request.control->fd());
    services.set_forward_signals(request.forward_signals);
    status = prepared.backend ? prepared.manager->exec(*prepared.backend, prepared.plan, services)
                              : spawn_and_wait(prepared.plan, &services);
    // Seen as the run ended: a cancel that comes later changes nothing of this report.
    if (request.control) end = request.control->ended();
  }
  out.report.limit_hit = (*limited)->finish(status.ok() ? status->shell_code() : -1);
  // Once nothing of the command is left (finish() ended what its cgroup still held).
  if (state_guard) state_guard->finish();
  // Everything of the run is gone now (the sandbox, the run's cgroup): what it wrote is in the
  // pipes.
  if (*stdio) {
    (*stdio)->finish();
    record_stdio(**stdio, out.report);
  }
  if (status.ok()) out.report.exit = *status;
  if (end != RunEnd::kNone) {
    // sbx ended the run with SIGKILL to its whole tree (the caller's cancel or the time-out).
    // A launcher that is killed with the command (bwrap's waiter, the Landlock launcher's
    // supervisor) leaves only its parent's folded 128 + SIGKILL: the death is sbx's SIGKILL,
    // reported as the signal it was (issue #33: signal deaths are signals).
#ifndef _WIN32
    if (out.report.exit && out.report.exit->signal == 0 &&
        out.report.exit->exit_code == 128 + SIGKILL)
      out.report.exit = ExitStatus{0, SIGKILL};
#endif
    ended_early(out, end, *request.control, status.ok() ? std::string() : status.error());
  } else if (!status.ok()) {
    stop(out, RunStop::kRunFailed, status.failure());
  }
  if (scan) record_created_names(*scan, watch.roots.size(), out.report);
  if (prepared.proxy) out.report.network_refusals.proxy = prepared.proxy->proxy().refusal_log();
}

RunOutcome new_outcome(bool dry_run) {
  RunOutcome out;
  out.report.dry_run = dry_run;
  return out;
}

}  // namespace

int RunOutcome::exit_code() const {
  if (stop == RunStop::kCommandNotFound) return kExitNotFound;
  if (stop != RunStop::kNone) return kExitSbxFailure;
  return report.exit ? report.exit->shell_code() : 0;
}

std::optional<std::string> never_unsandboxed(const Policy& policy) {
  // What the policy holds, whoever asks: the override is the strongest request there is.
  const BareVerdict bare = may_run_unsandboxed(policy, BareIntent::kOverride);
  if (bare.deny) {
    return "the policy denies " + *bare.deny +
           ": a policy with deny entries never runs unsandboxed";
  }
  if (bare.proxy) {
    return "the policy allows the network only through sbx's proxy: a policy with network mode "
           "proxy never runs unsandboxed";
  }
  return std::nullopt;
}

Status check_policy_runnable(const Policy& policy, SandboxPreference preference,
                             const CgroupSupport& cgroups, bool run_only) {
  if (Result<SandboxDecision> decision = should_sandbox(policy, preference); !decision.ok())
    return decision.failure();
  if (policy.network.mode == NetworkMode::kProxy && !policy.network.proxy_ports.empty())
    return Error{proxy::policy_ports_refusal(policy.network.proxy_ports), ErrorKind::refused};
#ifdef _WIN32
  const bool root = false;  // cgroups and rlimits do not exist there (plan_limits says so)
#else
  const bool root = ::geteuid() == 0;
#endif
  return check_limits_hold(plan_limits(policy.limits, cgroups, root, run_only));
}

std::optional<std::vector<std::string>> excluded_command(const Policy& policy,
                                                         SandboxPreference preference,
                                                         const std::vector<std::string>& command,
                                                         const SettingsSummary& settings) {
  // Only "auto" leaves the choice to sbx: "require" asked for a sandbox, and an excluded
  // command may never take away what only a sandbox can hold (deny entries, proxy rules).
  if (preference != SandboxPreference::kAuto || !settings.unsandboxed_permitted ||
      settings.escape_hatch_locked || settings.excluded_commands.empty() ||
      !may_run_unsandboxed(policy, BareIntent::kExcludedCommand).allowed)
    return std::nullopt;
  return settings::match_excluded_command(command, settings.excluded_commands);
}

RunOutcome run_command(RunRequest request, RunBackends& backends) {
  // From here to the end of the run nothing of sbx's takes a closed 0, 1 or 2 of this process
  // (a command that inherits them would get it: standard_fds.hpp).
  const StandardDescriptorHold standard_fds;
  RunOutcome out = new_outcome(false);
  PlannedRun prepared;
  bool ready = false;
  {
    const std::unique_lock<std::mutex> planning = backends.planning_lock();
    ready = prepare(request, backends, out, prepared);
  }
  if (ready) run_prepared(request, prepared, out);
  // Also when nothing ran: the caller's pipe ends see end of file.
  if (request.stdio) request.stdio->finish();
  return out;
}

// By value: prepare() completes the request for this plan (the caller's stays as given).
RunOutcome plan_command(RunRequest request,  // NOLINT(performance-unnecessary-value-param)
                        RunBackends& backends) {
  RunOutcome out = new_outcome(true);
  PlannedRun prepared;
  const std::unique_lock<std::mutex> planning = backends.planning_lock();
  if (prepare(request, backends, out, prepared))
    out.plan = proxy::redact_plan(std::move(prepared.plan), prepared.proxy.get());
  return out;
}

RunOutcome plan_for_backend(const Manager& manager, const std::string& backend,
                            const RunRequest& request) {
  RunOutcome out = new_outcome(true);
  if (request.command.empty()) {
    stop(out, RunStop::kInvalidRequest, Error{"no command given", ErrorKind::invalid_input});
    return out;
  }
  std::vector<std::string> env =
      filter_environment(request.policy.environment, request.environment).env;
  // As for a run (prepare), so that the plan shown is the plan run.
  if (kHostPathStyle == PathStyle::kPosix && plan_path_style(backend) == kHostPathStyle)
    point_pwd_at_working_directory(env, request.policy.environment, request.cwd);
  std::vector<std::string> argv = request.command;
  if (plan_path_style(backend) != kHostPathStyle) {
    // Another OS's plan: its command is never looked up on this host (this host's PATH names
    // other programs). A Windows drive path takes the generic form the backend reads; any other
    // command is passed as given, for the backend to accept or refuse.
    if (plan_path_style(backend) == PathStyle::kWindows &&
        policy::winpath::looks_windows(argv[0])) {
      Result<std::string> path = policy::winpath::normalize(argv[0]);
      if (!path.ok()) {
        stop(out, RunStop::kPlanRefused, path.failure().prefixed("argv[0]: "));
        return out;
      }
      argv[0] = *path;
    }
  } else if (kHostPathStyle == PathStyle::kWindows ? !policy::winpath::is_drive_absolute(argv[0])
                                                   : argv[0].empty() || argv[0].front() != '/') {
    // argv[0] must be absolute for a plan. Resolved on this host when possible; otherwise an
    // absolute path is taken as given.
    Result<std::string> path = resolve_command(argv[0], request.cwd, env);
    if (!path.ok()) {
      stop(out, RunStop::kCommandNotFound,
           Error{"'" + argv[0] + "': " + path.error() + "; give an absolute path",
                 ErrorKind::invalid_input});
      return out;
    }
    argv[0] = *path;
  }
  // Shown only: the layers a run makes are not made here.
  const std::optional<caches::CopyOnWrite> cow = copy_on_write(
      request.caches, request.resolved, request.caches && manager.copies_caches_on_write(backend));
  if (request.caches) caches::apply_environment(*request.caches, env, cow ? &*cow : nullptr);
  TransformRequest transform{std::move(argv), request.cwd, std::move(env), request.resolved};
  if (cow) add_copy_on_write(*cow, transform);
  Result<SandboxedRun> planned =
      manager.plan_run(backend, std::move(transform), request.on_refusal, PlanUse::kShowOnly);
  if (!planned.ok()) {
    stop(out, RunStop::kPlanRefused, planned.failure());
    return out;
  }
  out.report.final = backend;
  out.plan = proxy::redact_plan(std::move(planned->plan), planned->proxy.get());
  return out;
}

ExplainReport explain_run(const Policy& policy, const ResolvedPolicy& resolved,
                          SandboxPreference preference, const Manager& manager,
                          const std::vector<std::string>& environment,
                          const std::vector<std::string>& command,
                          const SettingsSummary& settings) {
  ExplainReport report;
  report.preference = preference;
  report.settings = settings;
  // The command's environment, for the lookup of an excluded command's programs.
  FilteredEnvironment filtered = filter_environment(policy.environment, environment);
  Exclusion exclusion;
  Result<SandboxDecision> decision = decide_sandbox(policy, preference, command, settings, resolved,
                                                    resolved.cwd, filtered.env, exclusion);
  report.excluded_by = exclusion.matched;
  report.environment_dropped = environment_dropped(exclusion, filtered.removed);
  if (decision.ok()) {
    report.decision = *decision;
  } else {
    report.decision_error = decision.error();
  }
  report.required = required_capabilities(resolved);
  report.policy = resolved;
  report.cgroups = probe_cgroups();
#ifdef _WIN32
  const bool root = false;  // cgroups and rlimits do not exist there (plan_limits says so)
#else
  const bool root = ::geteuid() == 0;
#endif
  report.limits = plan_limits(policy.limits, report.cgroups, root);
  report.environment = policy.environment;
  report.environment_removed = std::move(filtered.removed);
  // Question 2 is independent of question 1; explain answers both, a run only when it matters.
  report.choice = manager.available_backend(resolved);
  return report;
}

void explain_caches(ExplainReport& report, std::optional<caches::CachePlan> plan) {
  const std::string backend = explained_backend(report);
  const auto probe = std::find_if(report.choice.probes.begin(), report.choice.probes.end(),
                                  [&](const auto& entry) { return entry.first == backend; });
  report.copy_on_write =
      copy_on_write(plan, report.policy,
                    probe != report.choice.probes.end() && passes_cache_overlay(probe->second));
  report.caches = std::move(plan);
}

SandboxContext context_for_run(const PreparedRequest& input, const Manager* manager) {
  SandboxContext context = describe_sandbox(input.resolved);
  context.unsandboxed_locked = input.decided.escape_hatch_locked;
  // A refused preference (forbid with deny entries) runs nothing: the sandboxed description
  // is the one that holds for the runs that do happen.
  Result<SandboxDecision> decision = should_sandbox(input.policy, input.decided.sandbox.value);
  context.sandboxed = !decision.ok() || decision->sandbox;
  if (decision.ok() && !decision->sandbox) context.unsandboxed_reason = decision->reason;
  if (context.sandboxed && manager != nullptr) {
    const BackendChoice choice = manager->available_backend(input.resolved);
    if (choice.backend) {
      context.backend = *choice.backend;
      const auto probe =
          std::find_if(choice.probes.begin(), choice.probes.end(),
                       [&](const auto& entry) { return entry.first == *choice.backend; });
      context.caches_copy_on_write =
          input.caches && probe != choice.probes.end() && passes_cache_overlay(probe->second);
    } else {
      context.no_backend_reason = choice.reason;
    }
  }
  if (input.caches) {
    for (const caches::ToolCache& cache : input.caches->caches) {
      if (!cache.variable.empty() &&
          std::find(context.cache_tools.begin(), context.cache_tools.end(), cache.tool) ==
              context.cache_tools.end())
        context.cache_tools.push_back(cache.tool);
    }
  }
  return context;
}

}  // namespace sbx
