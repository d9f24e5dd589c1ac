// The tools' configuration files as sbx reads them for the toolchain caches (caches.cpp,
// core/src/caches/README.md): npm's ini files and pip's configparser files, each parsed as its
// tool parses it. Outside any sandbox, on files read whole first (caches::read_config_file).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::caches::config {

std::string lower(std::string_view text);
std::string upper(std::string_view text);
// Without the spaces and tabs around it.
std::string_view trim(std::string_view text);
std::string join(const std::string& dir, std::string_view name);

// `path` with a leading "~" or "~/" taken as the home directory, as npm's and pip's path
// settings are (@npmcli/config parse-field.js; pip's os.path.expanduser); "" unless the result
// is absolute (a tool resolves a relative one against its own working directory).
std::string tool_path(const std::string& path, const std::string& home);

// The `cache` npm takes from one of its configuration files (npmrc text): the last top-level
// one (a "[section]" nests what follows), ${NAME} replaced from `env`, "~/" the home
// directory; "" when none names an absolute directory.
std::string npmrc_cache(std::string_view text, const std::map<std::string, std::string>& env,
                        const std::string& home);

// Every `cache-dir` of a pip configuration file, each absolute one once (pip_cache_dirs in
// config_files.cpp says how it is read).
std::vector<std::string> pip_cache_dirs(std::string_view text, const std::string& home);

}  // namespace sbx::caches::config
