// POLICY options: where the policy comes from (--policy FILE | --preset NAME), the cwd it is
// resolved against, and the command-line additions (--writable-root, --deny, --network).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "sbx/core/resolve.hpp"

namespace sbx::cli {
namespace {

constexpr std::string_view kDefaultPreset = "workspace-write";

// Reads at most one byte more than the parser accepts, so an oversized file is reported by
// parse_policy without being read whole.
Result<std::string> read_policy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{"cannot read policy file '" + path + "': " + std::strerror(errno) +
                 "; check the path given to --policy"};
  }
  std::string text(kMaxPolicyBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

Result<Policy> base_policy(const PolicyOptions& options) {
  if (!options.policy_file.empty()) {
    Result<std::string> text = read_policy_file(options.policy_file);
    if (!text.ok()) return Error{text.error()};
    Result<Policy> policy = parse_policy(*text);
    if (!policy.ok()) {
      return Error{"invalid policy in '" + options.policy_file + "': " + policy.error() +
                   "; fix the file (sbx policy check --policy FILE validates it)"};
    }
    return policy;
  }
  const std::string_view name = options.preset.empty() ? kDefaultPreset : options.preset;
  Result<Policy> policy = preset_policy(name);
  if (!policy.ok()) return Error{policy.error() + "; pick one with --preset NAME"};
  return policy;
}

bool has_glob_metacharacter(std::string_view value) {
  return value.find_first_of("*?[{") != std::string_view::npos;
}

// Command-line paths may be relative (to --cwd); policy paths must be absolute, "~/..." or
// special (":cwd", ...), so relative ones are made absolute here.
std::string policy_path(const std::string& value, const std::string& cwd) {
  if (value.empty() || value.front() == '/' || value.front() == ':' || value == "~" ||
      value.rfind("~/", 0) == 0) {
    return value;
  }
  return (std::filesystem::path(cwd) / value).lexically_normal().string();
}

Result<NetworkMode> parse_network(std::string_view text) {
  if (text == "restricted") return NetworkMode::kRestricted;
  if (text == "enabled") return NetworkMode::kEnabled;
  if (text == "proxy") return NetworkMode::kProxy;
  return Error{"--network '" + std::string(text) + "' is not a network mode; use one of " +
               "restricted, enabled, proxy"};
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
  if (!options.network.empty()) {
    Result<NetworkMode> mode = parse_network(options.network);
    if (!mode.ok()) return Error{mode.error()};
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
                            ->type_name("NAME")
                            ->group(group);
  file->excludes(preset);
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
  app.add_option("--network", options.network, "Override the policy's network mode")
      ->check(CLI::IsMember({"restricted", "enabled", "proxy"}))
      ->type_name("MODE")
      ->group(group);
}

Result<std::string> effective_cwd(const PolicyOptions& options) {
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
                 "; pass a directory that exists"};
  }
  return canonical.string();
}

Result<Policy> build_policy(const PolicyOptions& options, const std::string& cwd) {
  Result<Policy> policy = base_policy(options);
  if (!policy.ok()) return policy;
  const bool has_additions =
      !options.writable_roots.empty() || !options.denies.empty() || !options.network.empty();
  if (!has_additions) return policy;
  if (Status applied = apply_additions(options, cwd, *policy); !applied.ok()) {
    return Error{applied.error()};
  }
  // The additions bypass the JSON parser, so the combined policy goes through it again: the
  // same strict checks apply whatever the source of an entry.
  Result<Policy> checked = parse_policy(policy_to_json(*policy));
  if (!checked.ok()) {
    return Error{"the policy with the --writable-root/--deny/--network additions is invalid: " +
                 checked.error() + "; fix the values given on the command line"};
  }
  return checked;
}

Result<PolicyInput> load_policy(const PolicyOptions& options) {
  Result<std::string> cwd = effective_cwd(options);
  if (!cwd.ok()) return Error{cwd.error()};
  Result<Policy> policy = build_policy(options, *cwd);
  if (!policy.ok()) return Error{policy.error()};
  Result<ResolveContext> context = current_resolve_context();
  if (!context.ok()) {
    return Error{"cannot read this process's environment (" + context.error() +
                 "); check $HOME and the current directory"};
  }
  context->cwd = *cwd;
  std::string policy_file;
  struct stat st {};
  // The file just read, by its real path: resolution keeps it read-only in the sandbox. A pipe
  // (`--policy <(...)`, /dev/stdin) or a device has no file on disk a command could rewrite.
  if (!options.policy_file.empty() &&
      (::stat(options.policy_file.c_str(), &st) != 0 || S_ISREG(st.st_mode))) {
    std::error_code error;
    policy_file = std::filesystem::canonical(options.policy_file, error).string();
    if (error) {
      return Error{"cannot find the real path of the policy file '" + options.policy_file +
                   "' (" + error.message() + ") to keep it read-only in the sandbox"};
    }
    context->policy_file = policy_file;
  }
  Result<ResolvedPolicy> resolved = resolve_policy(*policy, *context);
  if (!resolved.ok()) {
    return Error{"the policy cannot be applied here: " + resolved.error() +
                 "; fix the policy or choose another --cwd"};
  }
  return PolicyInput{std::move(*policy), *cwd, std::move(*resolved), std::move(policy_file)};
}

}  // namespace sbx::cli
