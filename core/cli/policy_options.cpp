// POLICY options: where the policy comes from (--policy FILE | --policy-fd N | --preset NAME),
// the cwd it is
// resolved against, and the command-line additions (--writable-root, --deny, --network).
#include <sys/stat.h>
#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "sbx/core/bounded_read.hpp"
#include "sbx/core/request.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx::cli {
namespace {

// The presets the core knows (policy.hpp), for the parser's check, "did you mean" and the
// completions.
std::vector<std::string> preset_names() {
  return {std::begin(kPresetNames), std::end(kPresetNames)};
}

// Reads at most one byte more than the parser accepts, so an oversized file is reported by
// parse_policy without being read whole.
Result<std::string> read_policy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{"cannot read policy file '" + path + "': " + std::strerror(errno) +
                     "; check the path given to --policy",
                 ErrorKind::invalid_input};
  }
  return read_at_most(in, kMaxPolicyBytes + 1);
}

// --policy-fd N: the policy's text read from descriptor N to its end (a pipe or a memfd the
// caller filled), then closed. Why: a policy that no file holds cannot be rewritten by a
// sandboxed command for a later run (a wrapped command line, sbx.wrap in the bindings).
Result<std::string> read_policy_descriptor(int fd) {
  const std::string what = "--policy-fd " + std::to_string(fd);
#ifdef _WIN32
  return Error{what + ": descriptors are not supported on Windows; use --policy FILE",
               ErrorKind::invalid_input};
#else
  if (fd < 0 || ::fcntl(fd, F_GETFD) < 0)
    return Error{what + ": not an open descriptor; pass one the policy can be read from",
                 ErrorKind::invalid_input};
  std::string text;
  char buffer[65536];
  while (text.size() <= kMaxPolicyBytes) {
    const std::size_t want = std::min(sizeof buffer, kMaxPolicyBytes + 1 - text.size());
    const ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Error{what + ": cannot read it: " + std::strerror(error), ErrorKind::invalid_input};
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);  // never inherited by the command
  return text;
#endif
}

// The command line's own policy (--policy FILE, --policy-fd N or --preset NAME); nullopt when
// none is given, so that the settings decide. `preset` gets the preset it names, if any.
Result<std::optional<Policy>> command_line_policy(const PolicyOptions& options,
                                                  std::optional<std::string>& preset) {
  if (!options.policy_file.empty() || options.policy_fd >= 0) {
    const bool from_file = !options.policy_file.empty();
    Result<std::string> text = from_file ? read_policy_file(options.policy_file)
                                         : read_policy_descriptor(options.policy_fd);
    if (!text.ok()) return text.failure();
    Result<Policy> policy = parse_policy(*text);
    if (!policy.ok()) {
      const std::string source = from_file ? "'" + options.policy_file + "'"
                                           : "--policy-fd " + std::to_string(options.policy_fd);
      return Error{"invalid policy in " + source + ": " + policy.error() +
                       "; fix it (sbx policy check validates a policy file)",
                   policy.kind()};
    }
    preset = settings::preset_name(*text);
    return std::optional<Policy>(std::move(*policy));
  }
  if (options.preset.empty()) return std::optional<Policy>{};
  Result<Policy> policy = preset_policy(options.preset);
  if (!policy.ok()) return Error{policy.error() + "; pick one with --preset NAME", policy.kind()};
  preset = options.preset;
  return std::optional<Policy>(std::move(*policy));
}

std::map<std::string, std::string> environment_map() {
  std::map<std::string, std::string> env;
  for (const std::string& entry : current_environment()) {
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

bool has_glob_metacharacter(std::string_view value) {
  return value.find_first_of("*?[{") != std::string_view::npos;
}

// Command-line paths may be relative (to --cwd); policy paths must be absolute, "~/..." or
// special (":cwd", ...), so relative ones are made absolute here.
std::string policy_path(const std::string& value, const std::string& cwd) {
  if (value.empty() || value.front() == '/' || value.front() == ':' || value == "~" ||
      value.rfind("~/", 0) == 0 || policy::winpath::looks_windows(value)) {
    return value;
  }
  // A Windows cwd (a plan for Windows): joined lexically, the resolver normalises the result.
  if (policy::winpath::is_drive_absolute(cwd)) return cwd + "/" + value;
  return (std::filesystem::path(cwd) / value).lexically_normal().string();
}

Result<NetworkMode> parse_network(std::string_view text) {
  if (text == "restricted") return NetworkMode::kRestricted;
  if (text == "enabled") return NetworkMode::kEnabled;
  if (text == "proxy") return NetworkMode::kProxy;
  return Error{"--network '" + std::string(text) + "' is not a network mode; use one of " +
                   "restricted, enabled, proxy",
               ErrorKind::invalid_input};
}

Status apply_additions(const PolicyOptions& options, const std::string& cwd, Policy& policy) {
  for (const std::string& root : options.writable_roots) {
    policy.filesystem.entries.push_back({policy_path(root, cwd), "", Access::kWrite});
  }
  for (const std::string& deny : options.denies) {
    if (has_glob_metacharacter(deny)) {
      policy.filesystem.entries.push_back({"", deny, Access::kDeny});
    } else {
      policy.filesystem.entries.push_back({policy_path(deny, cwd), "", Access::kDeny});
    }
  }
  if (options.caches) policy.filesystem.entries.push_back({":caches", "", Access::kWrite});
  if (!options.network.empty()) {
    Result<NetworkMode> mode = parse_network(options.network);
    if (!mode.ok()) return mode.failure();
    policy.network.mode = *mode;
  }
  return {};
}

}  // namespace

void add_policy_options(CLI::App& app, PolicyOptions& options) {
  const std::string group = "Policy";
  CLI::Option* file =
      app.add_option("--policy", options.policy_file, "Policy file (JSON v1, either form)")
          ->type_name("FILE")
          ->group(group);
  CLI::Option* preset = app.add_option("--preset", options.preset,
                                       "Preset policy: read-only, workspace-write (the default), "
                                       "danger-full-access, external-sandbox")
                            ->check(CLI::IsMember(preset_names()))
                            ->type_name("NAME")
                            ->group(group);
  CLI::Option* descriptor =
      app.add_option("--policy-fd", options.policy_fd,
                     "Read the policy (JSON v1) from descriptor N to its end, e.g. a pipe: a "
                     "policy no file holds, which no sandboxed command can rewrite")
          ->type_name("N")
          ->check(CLI::NonNegativeNumber)
          ->group(group);
  file->excludes(preset);
  descriptor->excludes(file);
  descriptor->excludes(preset);
  app.add_option("--cwd", options.cwd,
                 "Working directory: what ':cwd' means and where the command runs "
                 "(default: the current directory)")
      ->type_name("DIR")
      ->group(group);
  app.add_option("--writable-root", options.writable_roots,
                 "Also allow writing under PATH (repeatable; relative to --cwd)")
      ->type_name("PATH")
      ->allow_extra_args(false)
      ->group(group);
  app.add_option("--deny", options.denies,
                 "Deny reading and writing PATH, or every path matching GLOB when the value has "
                 "* ? [ or { (repeatable)")
      ->type_name("PATH|GLOB")
      ->allow_extra_args(false)
      ->group(group);
  app.add_flag("--caches", options.caches,
               "Give the command the toolchain caches (npm, pip, cargo, go, gradle, maven, the "
               "XDG cache) through a cache of the project's own in sbx's state: the policy entry "
               "\":caches\"; the host's caches stay read-only and their credentials unreadable")
      ->group(group);
  app.add_option("--network", options.network, "Override the policy's network mode")
      ->check(CLI::IsMember({"restricted", "enabled", "proxy"}))
      ->type_name("MODE")
      ->group(group);
}

// True when the cwd is another OS's (a Windows one for `sbx debug windows` on POSIX): it is
// normalised lexically, and nothing of it is looked up on this host.
bool foreign_windows_cwd(const PolicyOptions& options) {
  return options.style == PathStyle::kWindows && kHostPathStyle != PathStyle::kWindows &&
         policy::winpath::looks_windows(options.cwd);
}

Result<std::string> effective_cwd(const PolicyOptions& options) {
  if (foreign_windows_cwd(options)) {
    Result<std::string> cwd = policy::winpath::normalize(options.cwd);
    // The path as given cannot be a working directory (UNC, device, drive-relative).
    if (!cwd.ok()) return cwd.failure().prefixed("--cwd: ").as(ErrorKind::invalid_input);
    return cwd;
  }
  std::error_code error;
  const std::filesystem::path given = options.cwd.empty() ? std::filesystem::current_path(error)
                                                          : std::filesystem::path(options.cwd);
  if (error) {
    return Error{"cannot determine the current directory (" + error.message() +
                 "); pass --cwd DIR"};
  }
  // Canonical, so ':cwd' never crosses a symlink by accident and the command runs in the same
  // directory the policy was resolved against.
  std::filesystem::path canonical = std::filesystem::canonical(given, error);
  if (error || !std::filesystem::is_directory(canonical, error)) {
    return Error{"--cwd '" + given.string() + "' is not an existing directory" +
                     (error ? " (" + error.message() + ")" : std::string()) +
                     "; pass a directory that exists",
                 ErrorKind::invalid_input};
  }
  // UTF-8 on every host (path::string() is the ANSI code page on Windows).
  const std::u8string utf8 = canonical.u8string();
  std::string text(utf8.begin(), utf8.end());
  // On a Windows host, the generic form ("C:/dir") that resolution and the windows backend read.
  if constexpr (kHostPathStyle == PathStyle::kWindows) return policy::winpath::normalize(text);
  return text;
}

// --cwd as given, absolute and with "." and ".." resolved lexically but symlinks kept: the
// logical working directory the settings check against the canonical one (Sources::logical_cwd).
std::string logical_cwd_of(const std::string& option) {
  if (option.empty() || kHostPathStyle == PathStyle::kWindows) return {};
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(option, error);
  if (error) return {};
  std::string text = absolute.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

Result<settings::Settings> load_cli_settings(const std::string& cwd,
                                             const std::string& cwd_option) {
  settings::Sources sources = settings::current_sources(cwd, environment_map());
  if (std::string logical = logical_cwd_of(cwd_option); !logical.empty())
    sources.logical_cwd = std::move(logical);
  Result<settings::Settings> loaded = settings::load_settings(sources);
  if (!loaded.ok()) return loaded.failure().prefixed("cannot use the settings: ");
  return loaded;
}

namespace {

// The command line's request: the settings read for `settings_cwd` (kept in `loaded`, which
// must outlive the request), --policy/--preset, --sandbox, --allow-unsandboxed and the
// additions, with the CLI's words around the core's.
Result<PolicyRequest> cli_request(const PolicyOptions& options, const std::string& cwd,
                                  const RunChoices& choices, const std::string& settings_cwd,
                                  std::optional<settings::Settings>& loaded) {
  Result<settings::Settings> read = settings_cwd.empty() || settings_cwd == cwd
                                        ? load_cli_settings(cwd, options.cwd)
                                        : load_cli_settings(settings_cwd);
  if (!read.ok()) return read.failure();
  loaded = std::move(*read);
  PolicyRequest request;
  request.settings = &*loaded;
  Result<std::optional<Policy>> given = command_line_policy(options, request.overrides.preset);
  if (!given.ok()) return given.failure();
  request.overrides.policy = std::move(*given);
  request.overrides.sandbox = choices.sandbox;
  request.overrides.allow_unsandboxed = choices.allow_unsandboxed;
  request.overrides.backends = choices.backends;
  if (!options.writable_roots.empty() || !options.denies.empty() || !options.network.empty() ||
      options.caches) {
    request.amend = [&options, cwd](Policy policy) -> Result<Policy> {
      if (Status applied = apply_additions(options, cwd, policy); !applied.ok()) {
        return applied.failure();
      }
      // The additions bypass the JSON parser, so the combined policy goes through it again:
      // the same strict checks apply whatever the source of an entry.
      Result<Policy> checked = parse_policy(policy_to_json(policy));
      if (!checked.ok()) {
        return Error{
            "the policy with the --writable-root/--deny/--network/--caches additions is "
            "invalid: " +
                checked.error() + "; fix the values given on the command line",
            checked.kind()};
      }
      return checked;
    };
  }
  request.locks_todo =
      "; ask for less, or ask the administrator (`sbx config show` shows the locks)";
  request.resolve_prefix = "the policy cannot be applied here: ";
  request.resolve_todo = "; fix the policy or choose another --cwd";
  return request;
}

// The context the policy is resolved against: this process's, at `cwd` (a foreign Windows one
// taken lexically), with the policy file just read by its real path.
Result<ResolveContext> cli_context(const PolicyOptions& options, const std::string& cwd) {
  Result<ResolveContext> context = current_resolve_context();
  if (!context.ok()) {
    return Error{"cannot read this process's environment (" + context.error() +
                 "); check $HOME and the current directory"};
  }
  context->cwd = cwd;
  if (foreign_windows_cwd(options)) context->style = PathStyle::kWindows;
  struct stat st {};
  // The file just read, by its real path: resolution keeps it read-only in the sandbox. A pipe
  // (`--policy <(...)`, /dev/stdin) or a device has no file on disk a command could rewrite.
  if (!options.policy_file.empty() &&
      (::stat(options.policy_file.c_str(), &st) != 0 || S_ISREG(st.st_mode))) {
    std::error_code error;
    context->policy_file = std::filesystem::canonical(options.policy_file, error).string();
    if (error) {
      return Error{"cannot find the real path of the policy file '" + options.policy_file + "' (" +
                   error.message() + ") to keep it read-only in the sandbox"};
    }
  }
  return context;
}

}  // namespace

Result<settings::Decided> decide_policy(const PolicyOptions& options, const std::string& cwd,
                                        const RunChoices& choices,
                                        const std::string& settings_cwd) {
  std::optional<settings::Settings> loaded;
  Result<PolicyRequest> request = cli_request(options, cwd, choices, settings_cwd, loaded);
  if (!request.ok()) return request.failure();
  return decide_request(*request);
}

Result<PreparedRequest> load_policy(const PolicyOptions& options, const RunChoices& choices) {
  Result<std::string> cwd = effective_cwd(options);
  if (!cwd.ok()) return cwd.failure();
  // The settings of a foreign cwd cannot be read here: the project settings are those of the
  // directory sbx runs in (with the user's and the system's, as always).
  std::string settings_cwd = *cwd;
  if (foreign_windows_cwd(options)) {
    Result<std::string> here = effective_cwd(PolicyOptions{});
    if (!here.ok()) return here.failure();
    settings_cwd = *here;
  }
  std::optional<settings::Settings> loaded;
  Result<PolicyRequest> request = cli_request(options, *cwd, choices, settings_cwd, loaded);
  if (!request.ok()) return request.failure();
  request->context = [&options, &cwd] { return cli_context(options, *cwd); };
  return prepare_request(std::move(*request));
}

}  // namespace sbx::cli
