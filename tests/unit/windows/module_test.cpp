// The real sbx-backend-windows module file on a non-Windows host: it loads, its probe says
// honestly that it is unavailable and why, transform() still returns the plan (for
// `sbx debug windows`), and exec() refuses.
#ifndef _WIN32
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "sbx/sdk/abi.h"
#include "sbx/sdk/backend.hpp"
#include "sbx/windows/plan.hpp"
#include "windows_test_support.hpp"

namespace sbx::windows {
namespace {

struct Module {
  void* handle = nullptr;
  const sbx_plugin_v2* descriptor = nullptr;
  Backend* backend = nullptr;
  sbx_host_v2 host{};
};

// Loads the module with no trust checks (that is the loader's job, tested elsewhere).
std::unique_ptr<Module, void (*)(Module*)> load() {
  auto module = std::unique_ptr<Module, void (*)(Module*)>(new Module, [](Module* m) {
    if (m->backend != nullptr) m->descriptor->destroy(m->backend);
    delete m;  // the library stays loaded, as in the host
  });
  module->handle = dlopen(SBX_WINDOWS_MODULE, RTLD_NOW | RTLD_LOCAL);
  if (module->handle == nullptr) return module;
  auto entry =
      reinterpret_cast<sbx_plugin_entry_fn>(dlsym(module->handle, SBX_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) return module;
  module->descriptor = entry();
  module->host.struct_size = sizeof(sbx_host_v2);
  module->host.abi_major = SBX_ABI_MAJOR;
  module->host.abi_minor = SBX_ABI_MINOR;
  module->host.log = [](void*, int, const char*, size_t) {};
  module->backend = static_cast<Backend*>(module->descriptor->create(&module->host));
  return module;
}

TEST(WindowsModule, LoadsWithTheSdkDescriptor) {
  auto module = load();
  ASSERT_NE(module->handle, nullptr) << dlerror();
  ASSERT_NE(module->descriptor, nullptr);
  EXPECT_STREQ(module->descriptor->name, "windows");
  EXPECT_STREQ(module->descriptor->fingerprint, SBX_TOOLCHAIN_FINGERPRINT);
  EXPECT_EQ(module->descriptor->abi_major, SBX_ABI_MAJOR);
  ASSERT_NE(module->backend, nullptr);
}

TEST(WindowsModule, ProbeSaysUnavailableAndWhy) {
  auto module = load();
  ASSERT_NE(module->backend, nullptr);
  const ProbeReport report = module->backend->probe(ProbeContext{});
  EXPECT_FALSE(report.available);
  EXPECT_NE(report.summary.find("needs Windows"), std::string::npos) << report.summary;
  ASSERT_EQ(report.checks.size(), 1u);
  EXPECT_EQ(report.checks[0].name, "host_os");
  EXPECT_EQ(report.checks[0].status, CheckStatus::kFail);
  EXPECT_FALSE(report.checks[0].remedy.empty());
  EXPECT_TRUE(report.capabilities.empty());
}

TEST(WindowsModule, TransformReturnsThePlanOnAnyHost) {
  auto module = load();
  ASSERT_NE(module->backend, nullptr);
  TransformRequest request = testing::request_for(
      {testing::rule("/", Access::kRead), testing::rule("C:/w", Access::kWrite)});
  Result<ExecPlan> plan = module->backend->transform(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->argv[0], "C:\\Windows\\System32\\where.exe");
  // The plan exec() follows is typed, in the module's own plan detail (only the module reads
  // it: its class is the module's); reports see it through report_json(). The notes describe
  // the same plan for a person.
  ASSERT_NE(plan->detail, nullptr);
  const std::string json = plan->detail->report_json();
  EXPECT_NE(json.find(R"({"kind":"allow-write","sid":"cap:write","path":"C:\\w"})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("disable_max_privilege":true,"lua_token":true,"write_restricted":true,)"
                      R"("restricting_sids":["cap:write","logon","everyone"])"),
            std::string::npos)
      << json;
  EXPECT_NE(std::find(plan->notes.begin(), plan->notes.end(), "ace: allow-write cap:write C:\\w"),
            plan->notes.end());
}

TEST(WindowsModule, TransformRefusalNamesTheRule) {
  auto module = load();
  ASSERT_NE(module->backend, nullptr);
  TransformRequest request = testing::request_for({testing::rule("/", Access::kRead)});
  request.policy.network.mode = NetworkMode::kRestricted;
  Result<ExecPlan> plan = module->backend->transform(request);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().find("network.mode=restricted"), std::string::npos);
}

TEST(WindowsModule, ExecRefusesOffWindows) {
  auto module = load();
  ASSERT_NE(module->backend, nullptr);
  Result<ExitStatus> status =
      module->backend->exec(ExecPlan{{"/bin/true"}, {}, "/", {}}, RunContext(nullptr));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("it needs Windows"), std::string::npos) << status.error();
}

}  // namespace
}  // namespace sbx::windows
#endif  // _WIN32
