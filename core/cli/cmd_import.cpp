// `sbx policy import --from codex|srt FILE [--json]`: the sbx policy equivalent to a Codex
// config.toml or a sandbox-runtime (srt) settings file (core/cli/README.md, "policy import").
// Every setting is accounted for: mapped into the policy, listed as "unmapped" (it changes what
// the other tool's sandbox allows and sbx has no equivalent: exit 3), or listed as "ignored" (it
// does not change the sandbox: not a sandbox setting, or not in effect). Nothing is dropped
// silently. The policy is built as a document and run through sbx's strict parser; a value the
// parser refuses is moved to "unmapped" with the parser's reason, so the printed policy is always
// one `sbx policy check` accepts.
#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <toml.hpp>
#include <vector>

#include "cli.hpp"
#include "extras.hpp"
#include "sbx/core/bounded_read.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

namespace json = boost::json;
using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;

constexpr std::size_t kMaxImportBytes = 1 << 20;

struct ImportOptions {
  std::string from;
  std::string file;
  std::string profile;
  bool json = false;
};

// A setting of the source and why it was not carried over.
struct Listed {
  std::string setting;
  std::string reason;
};

// The input cannot be read as the format it claims to be (exit 2).
struct InvalidInput {
  std::string message;
};

// A piece of the policy and the source setting it came from (for moving it to "unmapped" when
// sbx's parser refuses it).
struct Sourced {
  std::string source;
  json::value value;
};

// The policy being built, in the full form, with where each list item came from.
struct Draft {
  std::string kind = "restricted";
  std::vector<Sourced> entries;
  std::string mode = "restricted";
  std::vector<Sourced> allowed_domains;
  std::vector<Sourced> denied_domains;
  std::vector<Sourced> unix_sockets;
  std::optional<bool> allow_local_binding;
  std::optional<Sourced> environment;  // the whole /environment object
  std::vector<Listed> unmapped;
  std::vector<Listed> ignored;
  std::vector<std::string> notes;

  // Adds an entry; with `replace`, an earlier entry for the same path or glob is replaced (a
  // Codex profile's key replaces its parent's), so a parent's grant cannot outlive the child's
  // narrower access through sbx's deny > write > read tie-break.
  void entry(std::string source, std::string_view key, const std::string& path,
             std::string_view access, bool replace = false) {
    if (replace) {
      for (Sourced& existing : entries) {
        json::object& object = existing.value.as_object();
        if (object.contains(key) && object[key] == json::value(path)) {
          object["access"] = access;
          existing.source = std::move(source);
          return;
        }
      }
    }
    json::object object;
    object[key] = path;
    object["access"] = access;
    entries.push_back({std::move(source), std::move(object)});
  }
  void unmap(std::string setting, std::string reason) {
    unmapped.push_back({std::move(setting), std::move(reason)});
  }
  void ignore(std::string setting, std::string reason) {
    ignored.push_back({std::move(setting), std::move(reason)});
  }
};

bool has_glob_chars(std::string_view text) {
  return text.find_first_of("*?[]{}") != std::string_view::npos;
}

// A path of the source as an sbx path: absolute and "~/..." stay, "." is :cwd, other relative
// paths are taken from :cwd (both tools resolve them against the working directory).
std::string sbx_path(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "." || path == "./") return ":cwd";
  if (path.rfind("./", 0) == 0) path = path.substr(2);
  if (path.empty() || path.front() == '/' || path.front() == '~' || path.front() == ':') {
    return path;
  }
  return ":cwd/" + path;
}

// ---- the document and the strict parser ----

json::array values_of(const std::vector<Sourced>& items) {
  json::array out;
  for (const Sourced& item : items) out.push_back(item.value);
  return out;
}

json::object document_of(const Draft& draft) {
  json::object fs;
  fs["kind"] = draft.kind;
  fs["entries"] = values_of(draft.entries);
  json::object network;
  network["mode"] = draft.mode;
  network["allowed_domains"] = values_of(draft.allowed_domains);
  network["denied_domains"] = values_of(draft.denied_domains);
  network["unix_sockets"] = values_of(draft.unix_sockets);
  if (draft.allow_local_binding) network["allow_local_binding"] = *draft.allow_local_binding;
  json::object doc;
  doc["version"] = 1;
  doc["filesystem"] = std::move(fs);
  doc["network"] = std::move(network);
  if (draft.environment) doc["environment"] = draft.environment->value;
  return doc;
}

// The list item an error pointer names ("/network/allowed_domains/2: ..."), if any.
std::vector<Sourced>* item_list(Draft& draft, const std::string& error, std::size_t& index) {
  struct Prefix {
    std::string_view pointer;
    std::vector<Sourced>* list;
  };
  const Prefix prefixes[] = {{"/filesystem/entries/", &draft.entries},
                             {"/network/allowed_domains/", &draft.allowed_domains},
                             {"/network/denied_domains/", &draft.denied_domains},
                             {"/network/unix_sockets/", &draft.unix_sockets}};
  for (const Prefix& prefix : prefixes) {
    if (error.rfind(prefix.pointer, 0) != 0) continue;
    std::size_t end = 0;
    try {
      index = std::stoul(error.substr(prefix.pointer.size()), &end);
    } catch (const std::exception&) {
      return nullptr;
    }
    return index < prefix.list->size() ? prefix.list : nullptr;
  }
  return nullptr;
}

// Parses the draft with sbx's strict parser; each refused item moves to "unmapped" with the
// parser's reason, and the rest is tried again.
Result<Policy> finish(Draft& draft) {
  for (;;) {
    Result<Policy> policy = parse_policy(json::serialize(document_of(draft)));
    if (policy.ok()) return policy;
    const std::string& error = policy.error();
    std::size_t index = 0;
    if (std::vector<Sourced>* list = item_list(draft, error, index)) {
      draft.unmap((*list)[index].source, "sbx refuses it: " + error);
      list->erase(list->begin() + static_cast<std::ptrdiff_t>(index));
      continue;
    }
    if (draft.environment && error.rfind("/environment", 0) == 0) {
      draft.unmap(draft.environment->source, "sbx refuses it: " + error);
      draft.environment.reset();
      continue;
    }
    return policy.failure();
  }
}

// ---- sandbox-runtime (srt) settings JSON ----

std::string srt_name(std::string_view parent, std::string_view key) {
  return std::string(parent) + "." + std::string(key);
}

// A value that asks for nothing (false, empty list or object, null): its absence is sbx's
// behaviour too.
bool is_default_json(const json::value& value) {
  return value.is_null() || (value.is_bool() && !value.get_bool()) ||
         (value.is_array() && value.get_array().empty()) ||
         (value.is_object() && value.get_object().empty());
}

// The paths of an srt path list: strings or {"path", "literal"} objects.
struct SrtPath {
  std::string text;
  bool literal = false;
};

std::vector<SrtPath> srt_paths(const json::value& value, const std::string& name) {
  if (!value.is_array()) throw InvalidInput{name + ": expected an array of paths"};
  std::vector<SrtPath> out;
  for (const json::value& item : value.get_array()) {
    if (item.is_string()) {
      out.push_back({std::string(item.get_string()), false});
    } else if (item.is_object() && item.get_object().contains("path") &&
               item.get_object().at("path").is_string()) {
      const json::value* literal = item.get_object().if_contains("literal");
      out.push_back({std::string(item.get_object().at("path").get_string()),
                     literal != nullptr && literal->is_bool() && literal->get_bool()});
    } else {
      throw InvalidInput{name + ": expected a path string or {\"path\": ..., \"literal\": ...}"};
    }
  }
  return out;
}

bool srt_is_glob(const SrtPath& path) { return !path.literal && has_glob_chars(path.text); }

// Lexically: is `inner` equal to or below `outer` (both sbx paths)?
bool lexically_inside(const std::string& inner, const std::string& outer) {
  if (inner == outer) return true;
  std::string prefix = outer == "/" ? outer : outer + "/";
  return inner.rfind(prefix, 0) == 0;
}

// denyWrite beats allowWrite in srt, also from above: a write grant at or below a denyWrite
// is read-only, and a denyWrite inside a denied read stays denied.
void apply_deny_write(const std::vector<std::pair<std::string, std::string>>& deny_write,
                      const std::vector<std::string>& deny_read, Draft& draft) {
  for (const auto& [source, target] : deny_write) {
    bool unreadable = false;
    for (const std::string& denied : deny_read) unreadable |= lexically_inside(target, denied);
    for (Sourced& entry : draft.entries) {
      json::object& object = entry.value.as_object();
      if (object.contains("path") && object["access"] == "write" &&
          lexically_inside(std::string(object["path"].as_string()), target)) {
        object["access"] = "read";
        draft.notes.push_back(entry.source + " is read-only: " + source +
                              " covers it (denyWrite beats allowWrite in srt)");
      }
    }
    draft.entry(source, "path", target, unreadable ? "deny" : "read");
  }
}

void srt_filesystem(const json::object& fs, Draft& draft) {
  const json::value* disabled = fs.if_contains("disabled");
  if (disabled != nullptr && disabled->is_bool() && disabled->get_bool()) {
    draft.kind = "unrestricted";
    for (const auto& member : fs) {
      if (member.key() != "disabled") {
        draft.ignore(srt_name("filesystem", member.key()), "filesystem.disabled turns it off");
      }
    }
    return;
  }
  draft.entry("filesystem (reads are allowed everywhere by default)", "path", ":root", "read");
  std::vector<std::string> deny_read;
  std::vector<std::pair<std::string, std::string>> deny_write;  // {source, path}
  for (const auto& member : fs) {
    const std::string key(member.key());
    const std::string name = srt_name("filesystem", key);
    if (key == "denyRead" || key == "allowRead" || key == "allowWrite" || key == "denyWrite") {
      std::vector<SrtPath> paths = srt_paths(member.value(), name);
      for (std::size_t i = 0; i < paths.size(); ++i) {
        const std::string item = name + "[" + std::to_string(i) + "]";
        SrtPath path = paths[i];
        if (key == "allowWrite" && path.text.size() > 3 &&
            path.text.compare(path.text.size() - 3, 3, "/**") == 0) {
          path.text.resize(path.text.size() - 3);  // srt writes the directory itself
        }
        if (srt_is_glob(path)) {
          if (key == "denyRead") {
            std::string glob = path.text.rfind("./", 0) == 0 ? path.text.substr(2) : path.text;
            draft.entry(item, "glob", glob, "deny");
          } else {
            draft.unmap(item, "a glob in " + key + ": sbx globs are deny-only (they deny reading)");
          }
          continue;
        }
        std::string target = sbx_path(path.text);
        if (key == "denyRead") {
          deny_read.push_back(target);
          draft.entry(item, "path", target, "deny");
        } else if (key == "allowRead") {
          draft.entry(item, "path", target, "read");
        } else if (key == "allowWrite") {
          draft.entry(item, "path", target, "write");
        } else {
          deny_write.emplace_back(item, target);
        }
      }
    } else if (key == "disabled" || is_default_json(member.value())) {
      draft.ignore(name, "default value; nothing to map");
    } else {
      draft.unmap(name, "sbx has no equivalent");
    }
  }
  apply_deny_write(deny_write, deny_read, draft);
}

std::vector<std::string> srt_strings(const json::value& value, const std::string& name) {
  if (!value.is_array()) throw InvalidInput{name + ": expected an array of strings"};
  std::vector<std::string> out;
  for (const json::value& item : value.get_array()) {
    if (!item.is_string()) throw InvalidInput{name + ": expected an array of strings"};
    out.emplace_back(item.get_string());
  }
  return out;
}

void srt_network(const json::object& network, Draft& draft) {
  std::vector<std::string> allowed;
  std::vector<std::string> denied;
  if (const json::value* value = network.if_contains("allowedDomains")) {
    allowed = srt_strings(*value, "network.allowedDomains");
  }
  if (const json::value* value = network.if_contains("deniedDomains")) {
    denied = srt_strings(*value, "network.deniedDomains");
  }
  if (!allowed.empty()) draft.mode = "proxy";
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    draft.allowed_domains.push_back(
        {"network.allowedDomains[" + std::to_string(i) + "]", json::value(allowed[i])});
  }
  for (std::size_t i = 0; i < denied.size(); ++i) {
    std::string item = "network.deniedDomains[" + std::to_string(i) + "]";
    if (allowed.empty()) {
      draft.ignore(item, "no domain is allowed, so the network is closed anyway");
    } else {
      draft.denied_domains.push_back({item, json::value(denied[i])});
    }
  }
  for (const auto& member : network) {
    const std::string key(member.key());
    const std::string name = srt_name("network", key);
    if (key == "allowedDomains" || key == "deniedDomains") continue;
    if (key == "allowUnixSockets") {
      std::vector<std::string> sockets = srt_strings(member.value(), name);
      for (std::size_t i = 0; i < sockets.size(); ++i) {
        draft.unix_sockets.push_back(
            {name + "[" + std::to_string(i) + "]", json::value(sbx_path(sockets[i]))});
      }
    } else if (key == "allowLocalBinding" && member.value().is_bool()) {
      draft.allow_local_binding = member.value().get_bool();
    } else if (is_default_json(member.value())) {
      draft.ignore(name, "default value; nothing to map");
    } else {
      draft.unmap(name, "sbx has no equivalent");
    }
  }
}

Draft import_srt(const std::string& text) {
  json::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) throw InvalidInput{"not JSON: " + ec.message()};
  if (!doc.is_object()) throw InvalidInput{"expected a JSON object (srt settings)"};
  Draft draft;
  bool has_network = false;
  for (const auto& member : doc.get_object()) {
    const std::string key(member.key());
    if (key == "filesystem" || key == "network") {
      if (!member.value().is_object()) throw InvalidInput{key + ": expected an object"};
      if (key == "filesystem") srt_filesystem(member.value().get_object(), draft);
      if (key == "network") srt_network(member.value().get_object(), draft);
      has_network |= key == "network";
    } else if (is_default_json(member.value())) {
      draft.ignore(key, "default value; nothing to map");
    } else {
      draft.unmap(key, "sbx has no equivalent");
    }
  }
  if (!doc.get_object().contains("filesystem")) {
    draft.entry("filesystem (absent: reads everywhere, no writes)", "path", ":root", "read");
  }
  if (!has_network) draft.notes.push_back("no network settings: the network is closed");
  draft.notes.push_back(
      "srt's built-in write protection of shell and editor files (.bashrc, .gitconfig, .vscode, "
      ".git/hooks, ...) is not a setting; sbx keeps .git, .codex and .agents read-only in every "
      "writable root (filesystem.protected_names)");
  return draft;
}

// ---- Codex config.toml ----

std::string toml_key(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

const TomlValue* toml_find(const TomlValue& table, const std::string& key) {
  if (!table.is_table()) return nullptr;
  auto found = table.as_table().find(key);
  return found == table.as_table().end() ? nullptr : &found->second;
}

std::string toml_string(const TomlValue& value, const std::string& name) {
  if (!value.is_string()) throw InvalidInput{name + ": expected a string"};
  return value.as_string().str;
}

bool toml_bool(const TomlValue& value, const std::string& name) {
  if (!value.is_boolean()) throw InvalidInput{name + ": expected true or false"};
  return value.as_boolean();
}

std::vector<std::string> toml_strings(const TomlValue& value, const std::string& name) {
  if (!value.is_array()) throw InvalidInput{name + ": expected an array of strings"};
  std::vector<std::string> out;
  for (const TomlValue& item : value.as_array()) out.push_back(toml_string(item, name));
  return out;
}

// The preset of a Codex sandbox mode, with [sandbox_workspace_write] for workspace-write.
void codex_legacy(const std::string& mode, const TomlValue* workspace, Draft& draft,
                  const std::string& mode_source) {
  const std::string table = "sandbox_workspace_write";
  if (mode != "read-only" && mode != "workspace-write" && mode != "danger-full-access") {
    throw InvalidInput{mode_source + ": unknown sandbox mode \"" + mode +
                       "\"; Codex knows read-only, workspace-write and danger-full-access"};
  }
  if (mode == "danger-full-access") {
    draft.kind = "unrestricted";
    draft.mode = "enabled";
  } else {
    draft.entry(mode_source, "path", ":root", "read");
  }
  if (mode == "workspace-write") draft.entry(mode_source, "path", ":cwd", "write");
  bool slash_tmp = mode == "workspace-write";
  bool tmpdir = mode == "workspace-write";
  if (workspace != nullptr) {
    if (!workspace->is_table()) throw InvalidInput{table + ": expected a table"};
    for (const auto& [key, value] : workspace->as_table()) {
      const std::string name = toml_key(table, key);
      if (mode != "workspace-write") {
        draft.ignore(name, "Codex applies it only with sandbox_mode = \"workspace-write\"");
      } else if (key == "writable_roots") {
        std::vector<std::string> roots = toml_strings(value, name);
        for (std::size_t i = 0; i < roots.size(); ++i) {
          draft.entry(name + "[" + std::to_string(i) + "]", "path", sbx_path(roots[i]), "write");
        }
      } else if (key == "network_access") {
        draft.mode = toml_bool(value, name) ? "enabled" : "restricted";
      } else if (key == "exclude_tmpdir_env_var") {
        tmpdir = !toml_bool(value, name);
      } else if (key == "exclude_slash_tmp") {
        slash_tmp = !toml_bool(value, name);
      } else {
        draft.unmap(name, "unknown to this import; sbx has no equivalent");
      }
    }
  }
  if (slash_tmp) draft.entry(mode_source, "path", ":slash_tmp", "write");
  if (tmpdir) draft.entry(mode_source, "path", ":tmpdir", "write");
}

std::optional<std::string> codex_access(const TomlValue& value, const std::string& name) {
  std::string access = toml_string(value, name);
  if (access == "read" || access == "write" || access == "deny") return access;
  if (access == "none") return std::string("deny");
  throw InvalidInput{name + ": expected read, write, deny or none, got \"" + access + "\""};
}

// One entry of [permissions.NAME.filesystem].
void codex_fs_entry(const std::string& name, const std::string& path, const std::string& access,
                    Draft& draft) {
  std::string target = path;
  if (access != "deny" && target.size() > 3 && target.compare(target.size() - 3, 3, "/**") == 0) {
    target.resize(target.size() - 3);  // Codex: a trailing /** grants the subtree
  }
  if (has_glob_chars(target)) {
    if (access != "deny") {
      draft.unmap(name, "a read or write glob; sbx globs are deny-only");
    } else {
      draft.entry(name, "glob", target, "deny", true);
    }
    return;
  }
  draft.entry(name, "path", target, access, true);
}

void codex_filesystem(const TomlValue& fs, const std::string& parent, Draft& draft) {
  if (!fs.is_table()) throw InvalidInput{parent + ": expected a table"};
  for (const auto& [key, value] : fs.as_table()) {
    const std::string name = toml_key(parent, "\"" + key + "\"");
    if (key == "glob_scan_max_depth") {
      draft.notes.push_back(name +
                            ": sbx's deny globs have no depth limit (they hold at any depth)");
      continue;
    }
    bool workspace = key == ":workspace_roots" || key == ":project_roots";
    if (value.is_table()) {
      for (const auto& [sub, access] : value.as_table()) {
        const std::string item = name + ".\"" + sub + "\"";
        std::optional<std::string> mode = codex_access(access, item);
        std::string base = workspace ? ":cwd" : key;
        if (!workspace && !key.empty() && key.front() == ':') {
          draft.unmap(item, "special path " + key + " takes no subpaths in sbx");
          continue;
        }
        if (workspace && *mode == "deny" && has_glob_chars(sub)) {
          // A relative sbx glob is taken from the working directory, as Codex takes it from
          // the workspace root.
          draft.entry(item, "glob", sub, "deny", true);
          continue;
        }
        codex_fs_entry(item, sub == "." ? base : base + "/" + sub, *mode, draft);
      }
      continue;
    }
    std::optional<std::string> mode = codex_access(value, name);
    if (workspace) {
      codex_fs_entry(name, ":cwd", *mode, draft);
    } else if (!key.empty() && key.front() == ':' && key != ":root" && key != ":minimal" &&
               key != ":tmpdir" && key != ":slash_tmp") {
      draft.unmap(name, "special path unknown to sbx");
    } else {
      codex_fs_entry(name, key, *mode, draft);
    }
  }
}

// The filesystem entries of Codex's built-in profiles, as parents of a user profile.
void codex_builtin_parent(const std::string& parent, const std::string& source, Draft& draft) {
  draft.entry(source, "path", ":root", "read");
  if (parent == ":workspace") {
    for (const char* path : {":cwd", ":slash_tmp", ":tmpdir"}) {
      draft.entry(source, "path", path, "write");
    }
  }
}

void codex_permissions(const TomlValue& config, const std::string& profile, Draft& draft,
                       std::set<std::string>& used, int depth = 0) {
  used.insert(profile);
  const std::string parent = "permissions." + profile;
  const TomlValue* permissions = toml_find(config, "permissions");
  const TomlValue* table = permissions == nullptr ? nullptr : toml_find(*permissions, profile);
  if (table == nullptr || !table->is_table()) {
    throw InvalidInput{"default_permissions names the profile \"" + profile +
                       "\", but there is no [" + parent + "] table"};
  }
  if (depth > 8) throw InvalidInput{parent + ".extends: the chain of profiles is too long"};
  if (const TomlValue* extends = toml_find(*table, "extends")) {
    std::string base = toml_string(*extends, parent + ".extends");
    if (base == ":read-only" || base == ":workspace") {
      codex_builtin_parent(base, parent + ".extends", draft);
    } else if (!base.empty() && base.front() == ':') {
      draft.unmap(parent + ".extends", "built-in profile " + base + " cannot be extended here");
    } else {
      codex_permissions(config, base, draft, used, depth + 1);
    }
  }
  for (const auto& [key, value] : table->as_table()) {
    const std::string name = toml_key(parent, key);
    if (key == "extends") continue;
    if (key == "description") {
      draft.ignore(name, "a description");
    } else if (key == "filesystem") {
      codex_filesystem(value, name, draft);
    } else if (key == "network" && value.is_table()) {
      for (const auto& [net_key, net_value] : value.as_table()) {
        const std::string net_name = toml_key(name, net_key);
        if (net_key == "enabled") {
          draft.mode = toml_bool(net_value, net_name) ? "enabled" : "restricted";
        } else {
          draft.unmap(net_name,
                      "Codex's managed network proxy settings; sbx's proxy mode is "
                      "set with network.mode proxy and network.allowed_domains");
        }
      }
    } else {
      draft.unmap(name, "sbx has no equivalent (add what it grants as filesystem entries)");
    }
  }
}

// [shell_environment_policy] -> /environment (names the source for the parser's errors).
void codex_environment(const TomlValue& table, Draft& draft) {
  const std::string parent = "shell_environment_policy";
  if (!table.is_table()) throw InvalidInput{parent + ": expected a table"};
  json::object environment;
  bool ignore_defaults_set = false;
  for (const auto& [key, value] : table.as_table()) {
    const std::string name = toml_key(parent, key);
    if (key == "inherit") {
      environment["inherit"] = toml_string(value, name);
    } else if (key == "exclude" || key == "include_only") {
      json::array patterns;
      for (const std::string& pattern : toml_strings(value, name)) {
        if (pattern.find('?') != std::string::npos) {
          draft.unmap(name + " \"" + pattern + "\"", "'?' is a literal character in sbx patterns");
          continue;
        }
        patterns.emplace_back(pattern);
      }
      environment[key] = std::move(patterns);
    } else if (key == "set") {
      if (!value.is_table()) throw InvalidInput{name + ": expected a table"};
      json::object set;
      for (const auto& [variable, text] : value.as_table()) {
        set[variable] = toml_string(text, toml_key(name, variable));
      }
      environment["set"] = std::move(set);
    } else if (key == "ignore_default_excludes") {
      ignore_defaults_set = true;
      if (toml_bool(value, name)) environment["keep"] = json::array{"*"};
    } else if (key == "experimental_use_profile" && value.is_boolean() && !value.as_boolean()) {
      draft.ignore(name, "default value; nothing to map");
    } else {
      draft.unmap(name, "sbx has no equivalent");
    }
  }
  if (!ignore_defaults_set) {
    draft.notes.push_back(parent +
                          ".ignore_default_excludes is not set: Codex then passes "
                          "secret-named variables; sbx drops them (add environment.keep)");
  }
  if (environment.contains("include_only") && environment.contains("set")) {
    draft.notes.push_back(parent +
                          ": Codex applies include_only after set, sbx before it: "
                          "variables in set are kept even when include_only does not name them");
  }
  draft.environment = Sourced{parent, std::move(environment)};
}

// The keys of config.toml the import reads; every other top-level key is not about the sandbox.
bool codex_sandbox_key(const std::string& key) {
  return key == "sandbox_mode" || key == "sandbox_workspace_write" ||
         key == "default_permissions" || key == "permissions" || key == "profile" ||
         key == "profiles" || key == "shell_environment_policy";
}

// Which profile of [profiles] is selected and the sandbox_mode it sets, if any.
std::optional<std::string> codex_profile_mode(const TomlValue& config, const std::string& chosen,
                                              Draft& draft) {
  const TomlValue* profiles = toml_find(config, "profiles");
  std::optional<std::string> mode;
  if (!chosen.empty() && (profiles == nullptr || toml_find(*profiles, chosen) == nullptr)) {
    throw InvalidInput{"the profile \"" + chosen + "\" is not defined under [profiles]"};
  }
  if (profiles == nullptr) return mode;
  if (!profiles->is_table()) throw InvalidInput{"profiles: expected a table"};
  for (const auto& [name, profile] : profiles->as_table()) {
    const std::string parent = "profiles." + name;
    if (!profile.is_table()) throw InvalidInput{parent + ": expected a table"};
    for (const auto& [key, value] : profile.as_table()) {
      const std::string setting = toml_key(parent, key);
      if (name != chosen) {
        draft.ignore(setting, "the profile is not selected (see --profile)");
      } else if (key == "sandbox_mode") {
        mode = toml_string(value, setting);
      } else if (codex_sandbox_key(key)) {
        draft.unmap(setting, "this import reads only sandbox_mode from a profile");
      } else {
        draft.ignore(setting, "not a sandbox setting");
      }
    }
  }
  return mode;
}

// toml11 parses nested arrays and inline tables recursively: a file nesting them thousands
// deep would overflow the stack. This scan follows TOML's strings and comments far enough to
// count the brackets that nest values, and refuses deep nesting before toml11 sees the text.
constexpr int kMaxTomlNesting = 64;

void check_toml_nesting(std::string_view text) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '#') {
      i = std::min(text.find('\n', i), text.size());
    } else if (c == '"' || c == '\'') {
      bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      std::string_view end = multi ? std::string_view(c == '"' ? "\"\"\"" : "\'\'\'")
                                   : std::string_view(c == '"' ? "\"" : "'");
      std::size_t j = i + (multi ? 3 : 1);
      while (j < text.size() && text.compare(j, end.size(), end) != 0 &&
             (multi || text[j] != '\n')) {
        j += (c == '"' && text[j] == '\\') ? 2U : 1U;
      }
      i = j + (multi ? 2U : 0U);
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxTomlNesting) {
        throw InvalidInput{"arrays or inline tables nested deeper than " +
                           std::to_string(kMaxTomlNesting)};
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

Draft import_codex(const std::string& text, const std::string& file,
                   const std::string& profile_option) {
  check_toml_nesting(text);
  std::istringstream stream(text);
  TomlValue config;
  try {
    config = toml::parse<toml::discard_comments, std::map, std::vector>(stream, file);
  } catch (const std::exception& e) {
    // toml11 draws the place on several lines; one line is enough here.
    std::string message;
    std::istringstream lines(e.what());
    for (std::string line; std::getline(lines, line);) {
      std::size_t start = line.find_first_not_of(" |");
      if (start != std::string::npos) message += (message.empty() ? "" : " ") + line.substr(start);
    }
    throw InvalidInput{"not TOML: " + message};
  }
  Draft draft;
  std::string chosen = profile_option;
  if (const TomlValue* profile = toml_find(config, "profile"); chosen.empty() && profile) {
    chosen = toml_string(*profile, "profile");
  }
  std::optional<std::string> mode = codex_profile_mode(config, chosen, draft);
  std::string mode_source = mode ? "profiles." + chosen + ".sandbox_mode" : "sandbox_mode";
  if (!mode) {
    if (const TomlValue* top = toml_find(config, "sandbox_mode")) {
      mode = toml_string(*top, "sandbox_mode");
    }
  } else if (toml_find(config, "sandbox_mode") != nullptr) {
    draft.ignore("sandbox_mode", "the selected profile's sandbox_mode replaces it");
  }
  const TomlValue* workspace = toml_find(config, "sandbox_workspace_write");
  const TomlValue* default_permissions = toml_find(config, "default_permissions");
  if (mode) {
    codex_legacy(*mode, workspace, draft, mode_source);
    if (default_permissions != nullptr) {
      draft.ignore("default_permissions", "Codex uses sandbox_mode when both are set");
    }
    if (toml_find(config, "permissions") != nullptr) {
      draft.ignore("permissions", "Codex uses sandbox_mode when both are set");
    }
  } else if (default_permissions != nullptr) {
    std::string name = toml_string(*default_permissions, "default_permissions");
    if (name == ":read-only") {
      codex_legacy("read-only", workspace, draft, "default_permissions");
    } else if (name == ":workspace") {
      codex_legacy("workspace-write", workspace, draft, "default_permissions");
    } else if (name == ":danger-full-access") {
      codex_legacy("danger-full-access", workspace, draft, "default_permissions");
    } else if (!name.empty() && name.front() == ':') {
      throw InvalidInput{"default_permissions: unknown built-in profile \"" + name + "\""};
    } else {
      std::set<std::string> used;
      codex_permissions(config, name, draft, used);
      const TomlValue* permissions = toml_find(config, "permissions");
      for (const auto& [profile, value] : permissions->as_table()) {
        if (used.count(profile) == 0) {
          draft.ignore("permissions." + profile, "not selected by default_permissions");
        }
      }
      if (workspace != nullptr) {
        draft.ignore("sandbox_workspace_write", "a permissions profile is selected instead");
      }
    }
  } else {
    draft.notes.push_back(
        "neither sandbox_mode nor default_permissions is set: Codex then uses read-only, or "
        "workspace-write for a project with a trust decision; imported as read-only");
    codex_legacy("read-only", workspace, draft, "sandbox_mode (not set)");
  }
  if (const TomlValue* environment = toml_find(config, "shell_environment_policy")) {
    codex_environment(*environment, draft);
  }
  for (const auto& [key, value] : config.as_table()) {
    if (!codex_sandbox_key(key)) draft.ignore(key, "not a sandbox setting");
  }
  return draft;
}

// ---- the command ----

Result<std::string> read_source(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{"cannot read '" + printable(file) + "'"};
  std::string text = read_at_most(in, kMaxImportBytes + 1);
  if (in.bad()) return Error{"cannot read '" + printable(file) + "' (is it a directory?)"};
  if (text.size() > kMaxImportBytes) {
    return Error{"'" + printable(file) + "' is larger than 1 MiB"};
  }
  return text;
}

json::array listed_json(const std::vector<Listed>& items) {
  json::array out;
  for (const Listed& item : items) {
    out.push_back(json::object{{"setting", item.setting}, {"reason", item.reason}});
  }
  return out;
}

void print_report(const Draft& draft, const Policy& policy, bool as_json) {
  if (as_json) {
    json::object report;
    report["policy"] = json::parse(policy_to_json(policy));
    report["unmapped"] = listed_json(draft.unmapped);
    report["ignored"] = listed_json(draft.ignored);
    json::array notes;
    for (const std::string& note : draft.notes) notes.emplace_back(note);
    report["notes"] = std::move(notes);
    std::cout << json::serialize(report) << '\n';
    return;
  }
  std::cout << policy_to_json(policy) << '\n';
  for (const Listed& item : draft.unmapped) {
    std::cerr << "sbx: unmapped: " << printable(item.setting) << ": " << printable(item.reason)
              << '\n';
  }
  for (const Listed& item : draft.ignored) {
    std::cerr << "sbx: ignored: " << printable(item.setting) << ": " << printable(item.reason)
              << '\n';
  }
  for (const std::string& note : draft.notes) std::cerr << "sbx: note: " << printable(note) << '\n';
}

int run_import(const ImportOptions& options) {
  Result<std::string> text = read_source(options.file);
  if (!text.ok()) return fail(text.failure(), "check the path and its permissions");
  if (options.from == "srt" && !options.profile.empty()) {
    return fail(Error{"--profile is a Codex option", ErrorKind::invalid_input},
                "leave it out with --from srt");
  }
  std::optional<Draft> draft;
  try {
    draft = options.from == "codex" ? import_codex(*text, options.file, options.profile)
                                    : import_srt(*text);
  } catch (const InvalidInput& invalid) {
    std::cerr << "sbx: invalid " << options.from << " settings in '" << printable(options.file)
              << "': " << printable(invalid.message) << "; fix the file\n";
    return kExitInvalidPolicy;
  }
  Result<Policy> policy = finish(*draft);
  if (!policy.ok()) {
    std::cerr << "sbx: the settings in '" << printable(options.file)
              << "' do not make a valid sbx policy: " << printable(policy.error())
              << "; fix the file\n";
    return kExitInvalidPolicy;
  }
  print_report(*draft, *policy, options.json);
  return draft->unmapped.empty() ? 0 : kExitImportUnmapped;
}

}  // namespace

Command register_policy_import(CLI::App& policy) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* import = policy.add_subcommand(
      "import",
      "Print the sbx policy equivalent to a Codex config.toml (--from codex) or a "
      "sandbox-runtime settings file (--from srt), and list by name every setting without an "
      "equivalent (exit 3) or without effect on the sandbox; exit 2 for an invalid file");
  import->add_option("--from", options->from, "The format of FILE")
      ->required()
      ->check(CLI::IsMember({"codex", "srt"}))
      ->type_name("FORMAT");
  import
      ->add_option("--profile", options->profile,
                   "codex: the [profiles.NAME] to apply (default: the file's `profile`)")
      ->type_name("NAME");
  import->add_flag("--json", options->json,
                   "Print {\"policy\", \"unmapped\", \"ignored\", \"notes\"} instead");
  import->add_option("file", options->file, "The settings file")->required()->type_name("FILE");
  import->footer(
      "Examples:\n  sbx policy import --from codex ~/.codex/config.toml > policy.json\n"
      "  sbx policy import --from srt ~/.srt-settings.json --json");
  return {import, [options] { return run_import(*options); }};
}

}  // namespace sbx::cli
