// The settings as JSON (`sbx config show --json`) and `sbx config trust` (sbx/core/settings.hpp).
#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "report/json_render.hpp"
#include "sbx/core/settings.hpp"

namespace sbx::settings {
namespace {

namespace json = boost::json;

json::value scope_value(Scope scope) { return json::string(std::string(to_string(scope))); }

template <typename T>
json::value names(const std::optional<std::vector<T>>& items) {
  if (!items) return nullptr;
  json::array out;
  for (const T& item : *items) out.emplace_back(std::string(to_string(item)));
  return out;
}

json::value optional_strings(const std::optional<std::vector<std::string>>& items) {
  if (!items) return nullptr;
  return report::string_array(*items);
}

json::value optional_bool(const std::optional<bool>& value) {
  if (!value) return nullptr;
  return *value;
}

json::object locks_json(const Locks& locks) {
  json::object out;
  out["presets"] = optional_strings(locks.presets);
  out["filesystem_kinds"] = names(locks.filesystem_kinds);
  out["network_modes"] = names(locks.network_modes);
  out["writable_roots"] = optional_strings(locks.writable_roots);
  out["allowed_domains"] = optional_strings(locks.allowed_domains);
  out["deny"] = report::string_array(locks.deny);
  out["allow_unsandboxed"] = optional_bool(locks.allow_unsandboxed);
  out["require_backend_available"] = optional_bool(locks.require_backend_available);
  out["backend_order"] = optional_bool(locks.backend_order);
  out["plugin_dirs"] = optional_bool(locks.plugin_dirs);
  return out;
}

json::object policy_part(const Settings& settings) {
  json::object out;
  out["value"] = settings.policy ? json::value(policy::policy_json(settings.policy->value))
                                 : json::value(nullptr);
  out["scope"] = scope_value(settings.policy ? settings.policy->scope : Scope::kBuiltin);
  json::array scopes;
  for (Scope scope : settings.policy_scopes) scopes.push_back(scope_value(scope));
  out["merged_from"] = std::move(scopes);
  json::array presets;
  for (const auto& preset : settings.presets)
    presets.push_back(json::object{{"preset", preset.value}, {"scope", scope_value(preset.scope)}});
  out["presets"] = std::move(presets);
  return out;
}

Result<json::object> read_user_object(const std::string& user_file) {
  std::ifstream in(user_file, std::ios::binary);
  if (!in) return json::object{};
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<ScopeSettings> checked = parse_settings(text, Scope::kUser);
  if (!checked)
    return Error{"the user settings " + user_file + " are invalid: " + checked.error() +
                 "; fix them first"};
  Result<json::value> document = policy::strict::parse_strict(text, kMaxPolicyDepth + 1);
  if (!document) return document.failure();
  return document->get_object();
}

// Written next to the file and renamed over it, so a reader never sees half a file.
Status write_atomically(const std::string& path, const std::string& text) {
#ifdef _WIN32
  // MoveFileExW(MOVEFILE_REPLACE_EXISTING) underneath std::filesystem::rename.
  const std::filesystem::path target = std::filesystem::u8path(path);
  std::filesystem::path temporary = target;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Error{"cannot write " + path + ".tmp"};
  }
  std::error_code error;
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return Error{"cannot replace " + path};
  }
  return {};
#else
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"cannot write " + temporary + ": " + std::strerror(errno)};
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      return Error{"cannot write " + temporary + ": " + std::strerror(error)};
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return Error{"cannot replace " + path + ": " + std::strerror(error)};
  }
  return {};
#endif
}

}  // namespace

std::string settings_to_json(const Settings& settings) {
  json::object out;
  out["policy"] = policy_part(settings);
  out["sandbox"] = json::object{{"value", std::string(to_string(settings.sandbox.value))},
                                {"scope", scope_value(settings.sandbox.scope)}};
  out["allow_unsandboxed"] =
      json::object{{"value", settings.allow_unsandboxed.value},
                   {"scope", scope_value(settings.allow_unsandboxed.scope)},
                   {"locked", !settings.locks.allow_unsandboxed.value_or(true)}};
  json::array excluded;
  for (const auto& pattern : settings.excluded_commands)
    excluded.push_back(
        json::object{{"pattern", pattern.value}, {"scope", scope_value(pattern.scope)}});
  out["excluded_commands"] = std::move(excluded);
  out["trusted_projects"] = report::string_array(settings.trusted_projects);
  json::array plugin_dirs;
  for (const auto& dir : settings.plugin_dirs)
    plugin_dirs.push_back(json::object{{"path", dir.value}, {"scope", scope_value(dir.scope)}});
  out["backends"] = json::object{
      {"order", settings.backend_order ? report::string_array(settings.backend_order->value)
                                       : json::value(json::array{})},
      {"order_scope",
       scope_value(settings.backend_order ? settings.backend_order->scope : Scope::kBuiltin)},
      {"order_locked", settings.locks.backend_order.value_or(false)},
      {"plugin_dirs", std::move(plugin_dirs)},
      {"plugin_dirs_locked", settings.locks.plugin_dirs.value_or(false)}};
  out["locks"] = locks_json(settings.locks);
  json::array files;
  for (const auto& file : settings.files)
    files.push_back(json::object{{"path", file.value}, {"scope", scope_value(file.scope)}});
  out["files"] = std::move(files);
  out["project"] = json::object{
      {"root", settings.project_root ? json::value(*settings.project_root) : json::value(nullptr)},
      {"trusted", settings.project_trusted}};
  out["notes"] = report::string_array(settings.notes);
  out["ignored_project_files"] = report::string_array(settings.ignored_project_files);
  return report::render_json(std::move(out), JsonStyle::kPretty);
}

Status trust_project(const std::string& user_file, const std::string& directory) {
  if (user_file.empty())
    return Error{"there is no user settings file (neither $XDG_CONFIG_HOME nor $HOME is set)"};
  if (directory.empty() || directory.front() != '/')
    return Error{"'" + directory + "' is not an absolute directory"};
  Result<json::object> document = read_user_object(user_file);
  if (!document) return document.failure();
  json::value& list = (*document)["trusted_projects"];
  if (!list.is_array()) list = json::array{};
  for (const json::value& item : list.get_array()) {
    if (item.is_string() && item.get_string() == directory) return {};  // already trusted
  }
  list.get_array().emplace_back(directory);
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(user_file).parent_path(), error);
  if (error) return Error{"cannot create the directory of " + user_file + ": " + error.message()};
  return write_atomically(user_file,
                          report::render_json(std::move(*document), JsonStyle::kPretty) + "\n");
}

}  // namespace sbx::settings
