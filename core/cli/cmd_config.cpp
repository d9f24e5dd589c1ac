// `sbx config show [--cwd DIR] [--json]`: the merged settings (sbx/core/settings.hpp), every
// value with the scope that set it, the administrator's locks, the files read and the notes.
// `sbx config trust [DIR]`: marks DIR (default: the current directory) as a trusted project in
// the user settings, so that its .sbx/settings.json is used.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "sbx/core/settings.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

struct ShowOptions {
  std::string cwd;
  bool json = false;
};

std::string scope_words(settings::Scope scope) { return std::string(settings::to_string(scope)); }

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? std::string("(none)") : out;
}

template <typename T>
std::string optional_names(const std::optional<std::vector<T>>& items) {
  if (!items) return "(not locked)";
  std::vector<std::string> words;
  for (const T& item : *items) words.emplace_back(to_string(item));
  return list(words);
}

std::string optional_list(const std::optional<std::vector<std::string>>& items) {
  return items ? list(*items) : std::string("(not locked)");
}

std::string optional_flag(const std::optional<bool>& flag) {
  return flag ? (*flag ? "true" : "false") : "(not locked)";
}

void print_locks(const settings::Locks& locks) {
  std::cout << "locks (managed):\n";
  std::vector<std::vector<std::string>> rows = {
      {"presets:", optional_list(locks.presets)},
      {"filesystem_kinds:", optional_names(locks.filesystem_kinds)},
      {"network_modes:", optional_names(locks.network_modes)},
      {"writable_roots:", optional_list(locks.writable_roots)},
      {"allowed_domains:", optional_list(locks.allowed_domains)},
      {"deny:", list(locks.deny)},
      {"allow_unsandboxed:", optional_flag(locks.allow_unsandboxed)},
      {"require_backend_available:", optional_flag(locks.require_backend_available)}};
  std::cout << render_table(rows, "  ");
}

void print_text(const settings::Settings& loaded) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> from;
  for (settings::Scope scope : loaded.policy_scopes) from.push_back(scope_words(scope));
  rows.push_back({"policy:", loaded.policy ? "from " + list(from) + " (widened in that order)"
                                           : "workspace-write (built-in)"});
  rows.push_back({"sandbox:", std::string(to_string(loaded.sandbox.value)) + " (" +
                                  scope_words(loaded.sandbox.scope) + ")"});
  rows.push_back(
      {"allow_unsandboxed:", std::string(loaded.allow_unsandboxed.value ? "true" : "false") + " (" +
                                 scope_words(loaded.allow_unsandboxed.scope) +
                                 (loaded.locks.allow_unsandboxed == false ? ", locked)" : ")")});
  std::vector<std::string> patterns;
  for (const auto& pattern : loaded.excluded_commands)
    patterns.push_back("'" + pattern.value + "' (" + scope_words(pattern.scope) + ")");
  rows.push_back({"excluded_commands:", list(patterns)});
  rows.push_back({"trusted_projects:", list(loaded.trusted_projects)});
  std::vector<std::string> files;
  for (const auto& file : loaded.files)
    files.push_back(file.value + " (" + scope_words(file.scope) + ")");
  rows.push_back({"files read:", list(files)});
  rows.push_back({"project:", loaded.project_root
                                  ? *loaded.project_root +
                                        (loaded.project_trusted ? " (trusted)" : " (not trusted)")
                                  : "(none)"});
  std::cout << render_table(rows);
  print_locks(loaded.locks);
  for (const std::string& note : loaded.notes) std::cout << "note: " << printable(note) << '\n';
  if (loaded.policy)
    std::cout << "merged policy:\n" << policy_to_json(loaded.policy->value) << '\n';
}

int run_show(const ShowOptions& options) {
  PolicyOptions where;
  where.cwd = options.cwd;
  Result<std::string> cwd = effective_cwd(where);
  if (!cwd.ok()) return fail(cwd.failure());
  Result<settings::Settings> loaded = load_cli_settings(*cwd, options.cwd);
  if (!loaded.ok()) return fail(loaded.failure());
  if (options.json) {
    std::cout << settings::settings_to_json(*loaded) << '\n';
  } else {
    print_text(*loaded);
  }
  return 0;
}

int run_trust(const std::string& directory) {
  PolicyOptions where;
  where.cwd = directory;
  Result<std::string> dir = effective_cwd(where);
  if (!dir.ok()) return fail(dir.failure());
  const settings::Sources sources = settings::current_sources(*dir, [] {
    std::map<std::string, std::string> env;
    for (const std::string& entry : current_environment()) {
      const std::size_t eq = entry.find('=');
      if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    return env;
  }());
  if (Status trusted = settings::trust_project(sources.user_file, *dir); !trusted.ok())
    return fail(trusted.failure());
  std::cout << "trusted " << printable(*dir) << " (in " << printable(sources.user_file) << ")\n";
  return 0;
}

}  // namespace

std::vector<Command> register_config(CLI::App& app) {
  CLI::App* config = app.add_subcommand(
      "config", "Show the settings (managed, user, project) or trust a project's settings");
  config->require_subcommand(1);
  auto show_options = std::make_shared<ShowOptions>();
  CLI::App* show = config->add_subcommand(
      "show", "Print the merged settings, each value with the scope that set it, and the locks");
  show->add_option("--cwd", show_options->cwd,
                   "Where the project settings are looked for (default: the current directory)")
      ->type_name("DIR");
  show->add_flag("--json", show_options->json, "Print the same as JSON");
  auto trust_dir = std::make_shared<std::string>();
  CLI::App* trust = config->add_subcommand(
      "trust",
      "Trust the project at DIR (default: the current directory): its .sbx/settings.json is "
      "used from now on (recorded in the user settings' trusted_projects)");
  trust->add_option("dir", *trust_dir, "The project's root directory")->type_name("DIR");
  return {{show, [show_options] { return run_show(*show_options); }},
          {trust, [trust_dir] { return run_trust(*trust_dir); }}};
}

}  // namespace sbx::cli
