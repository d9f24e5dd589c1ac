// An embedder's C++ program (find_package(sbx) -> sbx::sbx): the C++ policy API
// (sbx/core/policy.hpp, permissions.hpp) and a sandboxed run through the C API.
// Usage: consumer_cxx WORKSPACE OUTSIDE_FILE. Exit 0 = every check held.
#include <sbx/sbx.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "sbx/core/permissions.hpp"
#include "sbx/core/policy.hpp"

namespace {

int fail(const std::string& what) {
  std::cerr << "FAIL " << what << "\n";
  return 1;
}

struct Freer {
  void operator()(char* text) const { sbx_string_free(text); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: consumer_cxx WORKSPACE OUTSIDE_FILE");
  const std::string workspace = argv[1];
  const std::string outside = argv[2];

  // The C++ API: parse, widen, ask what a path gets.
  sbx::Result<sbx::Policy> base = sbx::preset_policy("read-only");
  sbx::Result<sbx::Policy> extra = sbx::parse_policy(
      R"({"version":1,"filesystem":{"entries":[{"path":"/srv/data","access":"write"}]}})");
  if (!base || !extra) return fail("policy parsing: " + (base ? extra.error() : base.error()));
  sbx::Result<sbx::Policy> widened = sbx::widen(*base, *extra);
  if (!widened) return fail("widen: " + widened.error());
  if (sbx::granted_access(*widened, "/srv/data/x") != sbx::Access::kWrite ||
      sbx::granted_access(*widened, "/etc") != sbx::Access::kRead)
    return fail("widen did not give /srv/data write and keep / read");
  std::cout << "widened: " << sbx::policy_to_json(*widened) << "\n";

  // The C API from C++: a sandboxed write inside the workspace and one outside it.
  sbx_error* error = nullptr;
  std::unique_ptr<sbx_manager, void (*)(sbx_manager*)> manager(sbx_manager_new(nullptr, &error),
                                                               sbx_manager_free);
  if (!manager) return fail(std::string("sbx_manager_new: ") + sbx_error_message(error));
  const std::string policy = R"({"version":1,"preset":"workspace-write"})";
  const std::string write_outside = "echo x > '" + outside + "'";
  const char* inside_argv[] = {"sh", "-c", "echo hello > made-by-cxx.txt", nullptr};
  const char* outside_argv[] = {"sh", "-c", write_outside.c_str(), nullptr};

  std::unique_ptr<char, Freer> inside(sbx_exec(manager.get(), policy.c_str(), workspace.c_str(),
                                               inside_argv, "require", 0, &error));
  if (!inside) return fail(std::string("sbx_exec: ") + sbx_error_message(error));
  std::cout << "inside: " << inside.get() << "\n";
  if (std::string(inside.get()).find("\"code\":0") == std::string::npos ||
      !std::filesystem::exists(workspace + "/made-by-cxx.txt"))
    return fail("a write inside the workspace did not pass");

  std::unique_ptr<char, Freer> denied(sbx_exec(manager.get(), policy.c_str(), workspace.c_str(),
                                               outside_argv, "require", SBX_EXEC_CAPTURE_STDERR,
                                               &error));
  if (!denied) return fail(std::string("sbx_exec: ") + sbx_error_message(error));
  std::cout << "outside: " << denied.get() << "\n";
  if (std::string(denied.get()).find("\"likely_sandbox_denial\":true") == std::string::npos ||
      std::filesystem::exists(outside))
    return fail("a write outside the workspace was not denied and classified");
  std::cout << "all checks passed\n";
  return 0;
}
