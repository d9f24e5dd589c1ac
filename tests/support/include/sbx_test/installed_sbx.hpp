// Drives the installed sbx (the tree the install_tree fixture stages under SBX_TEST_PREFIX):
// `sbx exec` with a policy, the JSON report of `sbx exec --json`, and what `sbx backends
// --probe --json` says a backend is and can enforce.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sbx_test/process.hpp"

namespace sbx::test {

// <prefix>/bin/sbx of the installed tree.
std::string installed_prefix();
std::string sbx_path();
// The build's CMAKE_INSTALL_LIBDIR, relative to a prefix: "lib", or "lib/<multiarch triplet>"
// (SBX_MULTIARCH_LIBDIR, the ci preset's); and <prefix>/<libdir>/sbx/backends of the
// installed tree.
std::string install_libdir();
std::string installed_plugin_dir();

// The shortest libsbx.so* in the installed tree's libdir (the versioned file's SONAME link),
// for a test that dlopens it; "" when there is none.
std::string installed_libsbx();

// A small fixed environment, so runs do not depend on the test runner's.
std::vector<std::string> base_env();

// `sbx --backends <backend> exec <policy...> --cwd <cwd> -- <command...>`.
RunResult exec_with(const std::string& backend, const std::vector<std::string>& policy,
                    const std::string& cwd, const std::vector<std::string>& command,
                    const std::vector<std::string>& env = base_env(),
                    const std::string& input = "");

// The argv and environment exec_with() runs (identity.hpp runs them as another user): the
// environment with PWD at `cwd` unless it has one.
std::vector<std::string> exec_argv(const std::string& backend,
                                   const std::vector<std::string>& policy, const std::string& cwd,
                                   const std::vector<std::string>& command);
std::vector<std::string> with_pwd(const std::vector<std::string>& env, const std::string& cwd);

// exec_with() on the bwrap backend.
RunResult sbx_exec(const std::vector<std::string>& policy, const std::string& cwd,
                   const std::vector<std::string>& command,
                   const std::vector<std::string>& env = base_env(), const std::string& input = "");

// `/bin/sh -c script` through sbx_exec() (bwrap, workspace-write unless told).
RunResult sh(const std::string& cwd, const std::string& script,
             const std::vector<std::string>& policy = {"--preset", "workspace-write"},
             const std::vector<std::string>& env = base_env());

// `sbx <args...>` run in `cwd` with the test's environment, for `exec --json`: the report is the
// last stderr line, everything before it is the command's own stderr.
struct JsonExec {
  RunResult run;
  boost::json::object report;
  std::string command_stderr;
};
JsonExec sbx_exec_json(const std::vector<std::string>& sbx_args, const std::string& cwd);

// The capabilities `sbx backends --probe --json` lists for an available backend; nullopt when
// the backend is not installed or not available here. `runner` runs the probe's argv (as
// another user: identity.hpp's run_as); run() with the test's environment when unset.
using Runner = std::function<RunResult(const std::vector<std::string>& argv)>;
std::optional<std::vector<std::string>> backend_capabilities(const std::string& name,
                                                             const Runner& runner = {});

// "" when the installed backend `name` is loaded and available, else why not (for GTEST_SKIP).
std::string backend_unavailable(const std::string& name);

#ifdef SBX_ESCAPE_PROBE
// The tiny program a sandboxed command runs to attempt one forbidden operation.
inline std::string probe_path() { return SBX_ESCAPE_PROBE; }
#endif

}  // namespace sbx::test

// In a test body: skip the test, with the reason, unless the backend is available (GTEST_SKIP
// must be expanded in the test body itself to end it).
#define SBX_REQUIRE_BACKEND(name)                                               \
  do {                                                                          \
    const std::string sbx_backend_why = ::sbx::test::backend_unavailable(name); \
    if (!sbx_backend_why.empty()) GTEST_SKIP() << sbx_backend_why;              \
  } while (0)
#define SBX_REQUIRE_BWRAP() SBX_REQUIRE_BACKEND("bwrap")
