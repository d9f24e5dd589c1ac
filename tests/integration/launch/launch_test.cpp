// What `sbx exec --dry-run` and the C API's sbx_transform show is what `sbx exec` runs (issue
// #36: the plan travels to exec() typed, in ExecPlan::detail, and is never parsed back from its
// printed argv). For each backend and mode (bwrap's direct launch, bwrap's stage-2 launch,
// bwrap in network mode proxy, Landlock, Landlock in proxy mode), as root and as user 65534
// (sbx_test/identity.hpp), the installed sbx makes the plan with --dry-run, then runs the same
// command with --log-level debug, where each backend's exec() logs what it started
// ("bwrap: launched {...}", "landlock: launched {...}"), and the two are compared:
//  * bwrap: the plan's "launch" (form, bwrap's argv, its --args block, the environment's names)
//    is the launch exec() started, once each bind descriptor is named by the path it was opened
//    from (the record's "bind_sources");
//  * landlock: the plan's argv is the one exec() rendered from the typed plan it ran, and the
//    launch exec() handed to the launcher is field for field what sbx-stage2 parses out of the
//    printed argv (parse_landlock_argv: the plan run by hand);
//  * both: the command (/usr/bin/env) prints exactly the environment the plan shows.
// What differs between two runs by design is replaced on both sides first: in proxy mode each
// run has a proxy of its own (port, socket directory) and a credential of its own ("***" in a
// plan). The C API case runs sbx_transform of the installed libsbx in this process, with the same
// policy and environment, and compares its plan with the record of a CLI run.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "landlock_launch.hpp"
#include "sbx/sbx.h"
#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

extern char** environ;

namespace launch_test {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace sbx::test;

// One backend and mode, and the launch it must take.
struct Mode {
  const char* name;
  const char* backend;
  const char* network;  // the policy's network mode
  bool pwd;             // the caller's environment has PWD at the working directory
  const char* form;     // bwrap: the launch exec() takes; nullptr for landlock
};

constexpr Mode kModes[] = {
    {"bwrap_direct", "bwrap", "restricted", true, "direct"},
    // Without PWD at the working directory bwrap 0.8 would add one: stage 2 runs the command.
    {"bwrap_stage2", "bwrap", "restricted", false, "stage2"},
    {"bwrap_proxy", "bwrap", "proxy", true, "stage2"},
    {"landlock", "landlock", "restricted", true, nullptr},
    {"landlock_proxy", "landlock", "proxy", true, nullptr},
};

// The policy: the workspace writable, the rest readable; bwrap keeps the protected names (its
// mount points and /dev/null masks are in the launch), Landlock cannot and has none.
std::string policy_json(const Mode& mode) {
  const bool bwrap = std::string(mode.backend) == "bwrap";
  std::string network = std::string(R"({"mode":")") + mode.network + "\"";
  if (std::string(mode.network) == "proxy") network += R"(,"allowed_domains":["example.com"])";
  return std::string(R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}])") +
         (bwrap ? "" : R"(,"protected_names":[])") + R"(},"network":)" + network + "}}";
}

// The environment sbx is started with: `base` with PWD at `cwd`, or without any PWD.
std::vector<std::string> caller_env(std::vector<std::string> base, const Mode& mode,
                                    const std::string& cwd) {
  std::erase_if(base, [](const std::string& e) { return e.rfind("PWD=", 0) == 0; });
  if (mode.pwd) base.push_back("PWD=" + cwd);
  return base;
}

std::vector<std::string> strings(const json::value& value) {
  std::vector<std::string> out;
  for (const json::value& item : value.as_array()) out.emplace_back(item.as_string());
  return out;
}

std::string after(const std::vector<std::string>& argv, const std::string& option) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == option) return argv[i + 1];
  return "";
}

// What one run (or plan) has of its own in proxy mode, to be replaced by placeholders: the
// proxy's port and socket directory, and the credential in the proxy URLs.
struct PerRun {
  std::string port;
  std::string socket_dir;
};

PerRun per_run(const std::vector<std::string>& argv) {
  PerRun out;
  out.port = after(argv, "--proxy-port");
  const std::string socket = after(argv, "--proxy-socket");
  if (!socket.empty()) out.socket_dir = fs::path(socket).parent_path().string();
  return out;
}

std::string normalized(std::string text, const PerRun& run) {
  auto replace_all = [&text](const std::string& from, const std::string& to) {
    if (from.empty()) return;
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace_all(run.socket_dir, "<proxy-dir>");
  if (!run.port.empty()) {
    if (text == run.port) return "<port>";
    replace_all("127.0.0.1:" + run.port, "127.0.0.1:<port>");
  }
  static const std::regex credential("(://sbx:)[^@]*@");
  return std::regex_replace(text, credential, "$1<credential>@");
}

std::vector<std::string> normalized(const std::vector<std::string>& items, const PerRun& run) {
  std::vector<std::string> out;
  for (const std::string& item : items) out.push_back(normalized(item, run));
  return out;
}

// The record's options with each --bind-fd/--ro-bind-fd descriptor named by its path, as the
// plan shows them (launch_form.hpp).
std::vector<std::string> with_bind_paths(const std::vector<std::string>& items,
                                         const json::object& sources) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const bool fd_form = items[i] == "--bind-fd" || items[i] == "--ro-bind-fd";
    const json::value* source =
        fd_form && i + 1 < items.size() ? sources.if_contains(items[i + 1]) : nullptr;
    if (source == nullptr) {
      out.push_back(items[i]);
      continue;
    }
    out.emplace_back(items[i] == "--bind-fd" ? "--bind" : "--ro-bind");
    out.emplace_back(source->as_string());
    ++i;
  }
  return out;
}

// The JSON of the debug line "sbx: debug: BACKEND: launched {...}" in `err`; null without one.
json::value launch_record(const std::string& err, const std::string& backend) {
  const std::string prefix = "sbx: debug: " + backend + ": launched ";
  std::size_t at = err.find(prefix);
  if (at == std::string::npos) return nullptr;
  at += prefix.size();
  return json::parse(err.substr(at, err.find('\n', at) - at));
}

// The environment the plan gives the command: bwrap's --env entries, Landlock's plan env.
std::vector<std::string> plan_environment(const json::object& plan) {
  if (plan.at("backend").as_string() != "bwrap") return strings(plan.at("env"));
  const std::vector<std::string> argv = strings(plan.at("argv"));
  std::vector<std::string> out;
  const auto end = std::find(std::find(argv.begin(), argv.end(), "--") + 1, argv.end(), "--");
  for (auto it = argv.begin(); it != end && std::next(it) != end; ++it)
    if (*it == "--env") out.push_back(*std::next(it));
  return out;
}

std::vector<std::string> names_of(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const std::string& entry : env) out.push_back(entry.substr(0, entry.find('=')));
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

json::array string_array(const std::vector<std::string>& items) {
  json::array out;
  for (const std::string& item : items) out.emplace_back(item);
  return out;
}

// The launch the launcher gets out of the printed argv, as the landlock record writes it.
json::object parsed_launch(const std::vector<std::string>& argv) {
  sbx::Result<sbx::stage2::LandlockLaunch> parsed = sbx::stage2::parse_landlock_argv(argv);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  if (!parsed.ok()) return {};
  const sbx::stage2::LandlockSpec& spec = parsed->landlock;
  json::array ports;
  for (const std::uint16_t port : spec.connect_tcp_ports) ports.emplace_back(std::int64_t{port});
  const auto network = parsed->network;
  json::object out;
  out["min_abi"] = spec.min_abi;
  out["restrict_filesystem"] = spec.restrict_filesystem;
  out["read"] = string_array(spec.read);
  out["write"] = string_array(spec.write);
  out["dev"] = string_array(spec.dev);
  out["list"] = string_array(spec.list);
  out["scope_abstract_unix"] = spec.scope_abstract_unix;
  out["block_tcp"] = spec.block_tcp;
  out["connect_tcp_ports"] = std::move(ports);
  out["network"] = network == sbx::stage2::NetworkFilter::kBlocked ? "blocked"
                   : network == sbx::stage2::NetworkFilter::kOpen  ? "open"
                   : network == sbx::stage2::NetworkFilter::kProxy ? "proxy"
                                                                   : "other";
  out["proxy_port"] = std::int64_t{parsed->proxy_port};
  out["env_environ"] = parsed->env_environ;
  out["command"] = string_array(parsed->command);
  return out;
}

// Compares a plan (of `sbx exec --dry-run` or sbx_transform) with the record of a run and the
// environment its command printed.
void expect_plan_is_what_ran(const Mode& mode, const json::object& plan, const json::object& record,
                             const std::string& command_output) {
  const std::vector<std::string> plan_argv = strings(plan.at("argv"));
  const PerRun planned = per_run(plan_argv);
  if (std::string(mode.backend) == "bwrap") {
    ASSERT_TRUE(plan.contains("launch")) << json::serialize(plan);
    const json::object& shown = plan.at("launch").as_object();
    EXPECT_EQ(shown.at("form").as_string(), mode.form);
    EXPECT_EQ(record.at("form").as_string(), mode.form);
    const json::object no_sources;
    const json::object& sources =
        record.contains("bind_sources") ? record.at("bind_sources").as_object() : no_sources;
    const std::vector<std::string> ran_argv = with_bind_paths(strings(record.at("argv")), sources);
    const PerRun ran = per_run(ran_argv);
    EXPECT_EQ(normalized(ran_argv, ran), normalized(strings(shown.at("argv")), planned));
    EXPECT_EQ(with_bind_paths(strings(record.at("args")), sources), strings(shown.at("args")));
    EXPECT_EQ(strings(record.at("environment")), strings(shown.at("environment")));
    EXPECT_EQ(strings(shown.at("environment")), names_of(plan_environment(plan)));
    // Nothing of the environment's values in what was logged.
    EXPECT_EQ(json::serialize(record).find("PATH=/"), std::string::npos);
  } else {
    const std::vector<std::string> ran_argv = strings(record.at("argv"));
    const PerRun ran = per_run(ran_argv);
    EXPECT_EQ(normalized(ran_argv, ran), normalized(plan_argv, planned));
    // The printed argv, with this run's proxy port, parsed as sbx-stage2 parses it.
    std::vector<std::string> printed = plan_argv;
    for (std::string& arg : printed)
      if (arg == planned.port) arg = ran.port;
    EXPECT_EQ(record.at("launch").as_object(), parsed_launch(printed));
    EXPECT_EQ(strings(record.at("environment")), names_of(plan_environment(plan)));
  }
  // The command printed the plan's environment, entry for entry.
  const PerRun ran = per_run(strings(record.at("argv")));
  EXPECT_EQ(normalized(lines_of(command_output), ran), normalized(plan_environment(plan), planned));
}

using Param = std::tuple<std::size_t, Identity>;

class LaunchMatchesPlan : public ::testing::TestWithParam<Param> {
 protected:
  const Mode& mode() const { return kModes[std::get<0>(GetParam())]; }
  Identity who() const { return std::get<1>(GetParam()); }

  TempDir ws_;
  TempDir conf_;
};

TEST_P(LaunchMatchesPlan, DryRunShowsWhatExecRuns) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  SBX_REQUIRE_IDENTITY(who(), mode().backend);
  const std::optional<std::vector<std::string>> capabilities = backend_capabilities(
      mode().backend,
      [&](const std::vector<std::string>& argv) { return run_as(who(), argv, env_for(who())); });
  ASSERT_TRUE(capabilities.has_value()) << backend_unavailable(mode().backend);
  const std::string policy = conf_.write("policy.json", policy_json(mode()));
  for (const TempDir* dir : {&ws_, &conf_}) give_to(who(), dir->path());
  const std::vector<std::string> env = caller_env(env_for(who()), mode(), ws_.path());
  const std::vector<std::string> sbx_options = {sbx_path(), "--backends", mode().backend};
  auto sbx_argv = [&](std::vector<std::string> global, std::vector<std::string> exec) {
    std::vector<std::string> argv = sbx_options;
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), {"exec", "--policy", policy, "--cwd", ws_.path()});
    argv.insert(argv.end(), exec.begin(), exec.end());
    argv.insert(argv.end(), {"--", "/usr/bin/env"});
    return argv;
  };

  const RunResult dry = run_as(who(), sbx_argv({}, {"--dry-run"}), env);
  ASSERT_EQ(dry.code, 0) << describe(dry);
  const json::object plan = json::parse(dry.out).as_object();
  ASSERT_EQ(plan.at("backend").as_string(), mode().backend) << dry.out;

  const RunResult real = run_as(who(), sbx_argv({"--log-level", "debug"}, {}), env);
  ASSERT_EQ(real.code, 0) << describe(real);
  const json::value record = launch_record(real.err, mode().backend);
  ASSERT_TRUE(record.is_object()) << "no launch record in the debug log: " << real.err;
  expect_plan_is_what_ran(mode(), plan, record.as_object(), real.out);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(kModes[std::get<0>(info.param)].name) + "_" + name_of(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Modes, LaunchMatchesPlan,
                         ::testing::Combine(::testing::Range<std::size_t>(0, std::size(kModes)),
                                            ::testing::ValuesIn(kIdentities)),
                         param_name);

// ---------------------------------------------------------------------------------------------
// The C API: sbx_transform of the installed libsbx (dlopen'ed, so its plugins and sbx-stage2 are
// the trusted installed ones), in this process and with this process's identity.

struct Library {
  void* handle = nullptr;
  decltype(&sbx_manager_new) manager_new = nullptr;
  decltype(&sbx_manager_free) manager_free = nullptr;
  decltype(&sbx_transform) transform = nullptr;
  decltype(&sbx_string_free) string_free = nullptr;
  decltype(&sbx_error_message) error_message = nullptr;
  decltype(&sbx_error_free) error_free = nullptr;
};

template <typename F>
void bind(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
}

// This process's environment replaced by `env` while it lives (sbx_transform plans with the
// caller's environment, as sbx exec does).
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::vector<std::string>& env) {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
      saved_.emplace_back(*entry);
    set(env);
  }
  ~ScopedEnvironment() { set(saved_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  static void set(const std::vector<std::string>& env) {
    ::clearenv();
    for (const std::string& entry : env) {
      const std::size_t equals = entry.find('=');
      ::setenv(entry.substr(0, equals).c_str(), entry.substr(equals + 1).c_str(), 1);
    }
  }
  std::vector<std::string> saved_;
};

class CApiLaunchMatchesPlan : public ::testing::TestWithParam<std::size_t> {
 protected:
  const Mode& mode() const { return kModes[GetParam()]; }
  TempDir ws_;
  TempDir conf_;
};

TEST_P(CApiLaunchMatchesPlan, TransformShowsWhatExecRuns) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  // This process's own identity: root when the tests run as root, else the user.
  const Identity self = ::geteuid() == 0 ? Identity::kRoot : Identity::kUnprivileged;
  SBX_REQUIRE_BACKEND(mode().backend);
  const std::string path = installed_libsbx();
  ASSERT_FALSE(path.empty()) << "no libsbx.so* under " << installed_prefix();
  Library lib;
  lib.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib.handle, nullptr) << ::dlerror();
  bind(lib.handle, "sbx_manager_new", lib.manager_new);
  bind(lib.handle, "sbx_manager_free", lib.manager_free);
  bind(lib.handle, "sbx_transform", lib.transform);
  bind(lib.handle, "sbx_string_free", lib.string_free);
  bind(lib.handle, "sbx_error_message", lib.error_message);
  bind(lib.handle, "sbx_error_free", lib.error_free);
  ASSERT_TRUE(lib.manager_new && lib.manager_free && lib.transform && lib.string_free &&
              lib.error_message && lib.error_free);

  const std::string policy = policy_json(mode());
  const std::vector<std::string> env = caller_env(env_for(self), mode(), ws_.path());
  std::string plan_text;
  {
    const ScopedEnvironment scoped(env);
    sbx_error* error = nullptr;
    sbx_manager* manager = lib.manager_new(mode().backend, &error);
    ASSERT_NE(manager, nullptr) << (error ? lib.error_message(error) : "");
    const char* argv[] = {"/usr/bin/env", nullptr};
    char* text = lib.transform(manager, policy.c_str(), ws_.path().c_str(), argv, nullptr, &error);
    const std::string why = error != nullptr ? lib.error_message(error) : "";
    if (error != nullptr) lib.error_free(error);
    lib.manager_free(manager);
    ASSERT_NE(text, nullptr) << why;
    plan_text = text;
    lib.string_free(text);
  }
  const json::object plan = json::parse(plan_text).as_object();
  ASSERT_EQ(plan.at("backend").as_string(), mode().backend) << plan_text;

  const std::string policy_file = conf_.write("policy.json", policy);
  const RunResult real =
      run({sbx_path(), "--backends", mode().backend, "--log-level", "debug", "exec", "--policy",
           policy_file, "--cwd", ws_.path(), "--", "/usr/bin/env"},
          env);
  ASSERT_EQ(real.code, 0) << describe(real);
  const json::value record = launch_record(real.err, mode().backend);
  ASSERT_TRUE(record.is_object()) << "no launch record in the debug log: " << real.err;
  expect_plan_is_what_ran(mode(), plan, record.as_object(), real.out);
}

std::string mode_name(const ::testing::TestParamInfo<std::size_t>& param) {
  return kModes[param.param].name;
}

INSTANTIATE_TEST_SUITE_P(Modes, CApiLaunchMatchesPlan,
                         ::testing::Range<std::size_t>(0, std::size(kModes)), mode_name);

}  // namespace launch_test
