#include "sbx_test/installed_sbx.hpp"

#include <algorithm>
#include <filesystem>

namespace sbx::test {

std::string installed_prefix() { return SBX_TEST_PREFIX; }
std::string sbx_path() { return installed_prefix() + "/bin/sbx"; }
std::string install_libdir() { return SBX_INSTALL_LIBDIR; }
std::string installed_plugin_dir() {
  return installed_prefix() + "/" + install_libdir() + "/sbx/backends";
}

std::string installed_libsbx() {
  namespace fs = std::filesystem;
  std::string best;
  std::error_code ec;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(fs::path(installed_prefix()) / install_libdir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libsbx.so", 0) != 0) continue;
    if (best.empty() || entry.path().string().size() < best.size()) best = entry.path().string();
  }
  return best;
}

std::vector<std::string> base_env() {
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"};
}

std::vector<std::string> exec_argv(const std::string& backend,
                                   const std::vector<std::string>& policy, const std::string& cwd,
                                   const std::vector<std::string>& command) {
  std::vector<std::string> argv = {sbx_path(), "--backends", backend, "exec"};
  argv.insert(argv.end(), policy.begin(), policy.end());
  argv.insert(argv.end(), {"--cwd", cwd, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> with_pwd(const std::vector<std::string>& env, const std::string& cwd) {
  // As a shell caller's environment has it: PWD at the working directory. Without any PWD the
  // bwrap backend keeps sbx-stage2 (bwrap 0.8 would add PWD, plugins/bwrap/README.md, "The
  // direct launch"), so with it these suites run bwrap's direct launch.
  std::vector<std::string> result = env;
  if (std::none_of(env.begin(), env.end(),
                   [](const std::string& entry) { return entry.rfind("PWD=", 0) == 0; }))
    result.push_back("PWD=" + cwd);
  return result;
}

RunResult exec_with(const std::string& backend, const std::vector<std::string>& policy,
                    const std::string& cwd, const std::vector<std::string>& command,
                    const std::vector<std::string>& env, const std::string& input) {
  return run(exec_argv(backend, policy, cwd, command), with_pwd(env, cwd), input);
}

RunResult sbx_exec(const std::vector<std::string>& policy, const std::string& cwd,
                   const std::vector<std::string>& command, const std::vector<std::string>& env,
                   const std::string& input) {
  return exec_with("bwrap", policy, cwd, command, env, input);
}

RunResult sh(const std::string& cwd, const std::string& script,
             const std::vector<std::string>& policy, const std::vector<std::string>& env) {
  return sbx_exec(policy, cwd, {"/bin/sh", "-c", script}, env);
}

JsonExec sbx_exec_json(const std::vector<std::string>& sbx_args, const std::string& cwd) {
  std::vector<std::string> argv = {sbx_path()};
  argv.insert(argv.end(), sbx_args.begin(), sbx_args.end());
  JsonExec result{run(argv, RunOptions{std::nullopt, "", cwd}), {}, {}};
  std::string err = result.run.err;
  if (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t last = err.rfind('\n');
  const std::string line = last == std::string::npos ? err : err.substr(last + 1);
  result.command_stderr = last == std::string::npos ? "" : err.substr(0, last + 1);
  boost::json::error_code ec;
  boost::json::value value = boost::json::parse(line, ec);
  EXPECT_FALSE(ec) << "no JSON report as the last stderr line:\n" << result.run.err;
  if (!ec && value.is_object()) result.report = value.as_object();
  return result;
}

namespace {

// The backend's entry in `sbx backends --probe --json`, or why there is none.
std::optional<boost::json::object> probed_backend(const std::string& name, std::string& why,
                                                  const Runner& runner = {}) {
  const std::vector<std::string> argv = {sbx_path(), "backends", "--probe", "--json"};
  const RunResult probe = runner ? runner(argv) : run(argv);
  boost::json::error_code ec;
  const boost::json::value listing = boost::json::parse(probe.out, ec);
  if (ec || !listing.is_object()) {
    why = "sbx backends --probe --json printed no JSON: " + probe.err;
    return std::nullopt;
  }
  for (const auto& backend : listing.at("backends").as_array()) {
    if (backend.at("name").as_string() != name.c_str()) continue;
    if (backend.at("available").as_bool()) return backend.as_object();
    why = "the " + name + " backend is installed but unavailable here: " +
          std::string(backend.at("summary").as_string());
    return std::nullopt;
  }
  why = "the " + name + " backend is not installed under " + installed_prefix() +
        " (its plugin may still be landing)";
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<std::string>> backend_capabilities(const std::string& name,
                                                             const Runner& runner) {
  std::string why;
  const std::optional<boost::json::object> backend = probed_backend(name, why, runner);
  if (!backend) return std::nullopt;
  std::vector<std::string> capabilities;
  if (const auto* list = backend->if_contains("capabilities"); list && list->is_array())
    for (const auto& capability : list->as_array())
      if (capability.is_string()) capabilities.emplace_back(capability.as_string());
  return capabilities;
}

std::string backend_unavailable(const std::string& name) {
  std::string why;
  return probed_backend(name, why) ? "" : why;
}

}  // namespace sbx::test
