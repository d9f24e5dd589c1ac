// `sbx cache list [--project DIR] [--json]` and `sbx cache clear [--project DIR | --all]`: the
// projects' toolchain caches that runs with ":caches" stored in sbx's state
// (sbx/core/caches.hpp; core/src/caches/README.md).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "sbx/core/caches.hpp"
#include "sbx/core/report_json.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

struct CacheOptions {
  std::string project;  // --project DIR; "" : the current directory
  bool all = false;     // clear: every project
  bool json = false;    // list
};

#ifndef _WIN32
// The project a run in DIR would use: DIR's real path (a run's working directory is canonical),
// or, for a directory that is gone, its absolute path as written.
Result<std::string> project_of(const std::string& given) {
  std::error_code error;
  const std::filesystem::path dir =
      given.empty() ? std::filesystem::current_path(error) : std::filesystem::path(given);
  if (error) return Error{"cannot determine the current directory (" + error.message() + ")"};
  std::filesystem::path real = std::filesystem::canonical(dir, error);
  if (error) real = std::filesystem::absolute(dir, error).lexically_normal();
  if (error) return Error{"'" + given + "': " + error.message(), ErrorKind::invalid_input};
  std::string text = real.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

std::string size_words(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

int run_list(const CacheOptions& options) {
  Result<std::string> base = caches::caches_base();
  if (!base.ok()) return fail(base.failure(), "set XDG_CACHE_HOME or HOME to a private directory");
  Result<std::vector<caches::ProjectCache>> projects = caches::list_projects(*base);
  if (!projects.ok()) return fail(projects.failure());
  if (!options.project.empty()) {
    Result<std::string> project = project_of(options.project);
    if (!project.ok()) return fail(project.failure());
    std::erase_if(*projects, [&](const caches::ProjectCache& one) {
      return one.key != caches::project_key(*project);
    });
  }
  if (options.json) {
    std::cout << cache_list_to_json(*base, *projects) << '\n';
    return 0;
  }
  if (projects->empty()) {
    std::cout << "no project caches in " << printable(*base) << '\n';
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"PROJECT", "SIZE", "FILES", "CACHE"}};
  for (const caches::ProjectCache& one : *projects) {
    const std::string project = one.project.empty() ? "(unknown)" : printable(one.project);
    rows.push_back({project + (one.project_exists ? "" : " (gone)"), size_words(one.bytes),
                    std::to_string(one.files), printable(one.directory)});
  }
  std::cout << render_table(rows);
  return 0;
}

int run_clear(const CacheOptions& options) {
  Result<std::string> base = caches::caches_base();
  if (!base.ok()) return fail(base.failure(), "set XDG_CACHE_HOME or HOME to a private directory");
  std::vector<std::string> keys;
  if (options.all) {
    Result<std::vector<caches::ProjectCache>> projects = caches::list_projects(*base);
    if (!projects.ok()) return fail(projects.failure());
    for (const caches::ProjectCache& one : *projects) keys.push_back(one.key);
  } else {
    Result<std::string> project = project_of(options.project);
    if (!project.ok()) return fail(project.failure());
    const std::string key = caches::project_key(*project);
    std::error_code error;
    if (!std::filesystem::exists(*base + "/" + key, error)) {
      std::cout << "no cache for " << printable(*project) << '\n';
      return 0;
    }
    keys.push_back(key);
  }
  for (const std::string& key : keys) {
    if (Status cleared = caches::clear_project(*base, key); !cleared.ok())
      return fail(cleared.failure());
    std::cout << "removed " << printable(*base + "/" + key) << '\n';
  }
  return 0;
}
#else
int run_list(const CacheOptions&) {
  return fail("toolchain caches are not kept on Windows yet", "run without --caches");
}
int run_clear(const CacheOptions&) {
  return fail("toolchain caches are not kept on Windows yet", "run without --caches");
}
#endif

}  // namespace

std::vector<Command> register_cache(CLI::App& app) {
  CLI::App* cache = app.add_subcommand(
      "cache",
      "List or remove the toolchain caches that runs with --caches keep per project in sbx's "
      "state");
  cache->require_subcommand(1);
  auto list_options = std::make_shared<CacheOptions>();
  CLI::App* list =
      cache->add_subcommand("list", "Each project's cache: the project, its size and where it is");
  list->add_option("--project", list_options->project,
                   "Only the cache of the project at DIR (a run's working directory)")
      ->type_name("DIR");
  list->add_flag("--json", list_options->json, "Print the same as JSON");
  auto clear_options = std::make_shared<CacheOptions>();
  CLI::App* clear = cache->add_subcommand(
      "clear",
      "Remove the cache of the project at DIR (default: the current directory), or of every "
      "project with --all; the host's own caches are never touched");
  CLI::Option* project =
      clear
          ->add_option("--project", clear_options->project,
                       "The project whose cache goes (a run's working directory)")
          ->type_name("DIR");
  clear->add_flag("--all", clear_options->all, "Remove every project's cache")->excludes(project);
  return {{list, [list_options] { return run_list(*list_options); }},
          {clear, [clear_options] { return run_clear(*clear_options); }}};
}

}  // namespace sbx::cli
