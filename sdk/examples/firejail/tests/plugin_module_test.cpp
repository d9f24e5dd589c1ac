// The built plugin file, loaded the way sbx loads it (dlopen + sbx_plugin_entry_v2 + create),
// with a minimal host table of our own; then a real command through real firejail.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sbx/sdk/backend.hpp"

namespace {

// The host's spawn service, reduced to what a test needs: execve the plan in its cwd, wait.
int test_spawn(void* /*ctx*/, const sbx_run_v2* /*run*/, const void* plan_ptr, void* status_out,
               char* error, std::size_t error_size) {
  const auto& plan = *static_cast<const sbx::ExecPlan*>(plan_ptr);
  std::vector<char*> argv, envp;
  for (const std::string& a : plan.argv) argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : plan.env) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::snprintf(error, error_size, "fork: %s", std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    if (::chdir(plan.cwd.c_str()) == 0) ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto* out = static_cast<sbx::ExitStatus*>(status_out);
  out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  out->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return 0;
}

void test_log(void*, int, const char*, std::size_t) {}

const sbx_host_v2 kHost = {
    sizeof(sbx_host_v2), SBX_ABI_MAJOR, SBX_ABI_MINOR, "test", nullptr, nullptr,
    &test_log,           &test_spawn};
// A run's table without any service (a 2.0 table may be smaller than a later SDK's): zeroed and
// sized, so it stays valid whatever slots later SDKs append.
const sbx_run_v2 kRun = [] {
  sbx_run_v2 run{};
  run.struct_size = sizeof run;
  return run;
}();

class PluginModule : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = ::dlopen(FIREJAIL_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    auto entry = reinterpret_cast<sbx_plugin_entry_fn>(::dlsym(handle_, SBX_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr) << "the plugin must export " SBX_PLUGIN_ENTRY_SYMBOL;
    descriptor_ = entry();
    ASSERT_NE(descriptor_, nullptr);
  }
  // The library stays loaded (sbx never unloads plugins either).

  std::unique_ptr<sbx::Backend, void (*)(void*)> create() const {
    return {static_cast<sbx::Backend*>(descriptor_->create(&kHost)), descriptor_->destroy};
  }

  void* handle_ = nullptr;
  const sbx_plugin_v2* descriptor_ = nullptr;
};

TEST_F(PluginModule, DescriptorMatchesWhatTheHostChecks) {
  EXPECT_EQ(descriptor_->struct_size, sizeof(sbx_plugin_v2));
  EXPECT_EQ(descriptor_->abi_major, SBX_ABI_MAJOR);
  EXPECT_EQ(descriptor_->abi_minor, SBX_ABI_MINOR);
  EXPECT_STREQ(descriptor_->name, "firejail");
  EXPECT_STREQ(descriptor_->fingerprint, SBX_TOOLCHAIN_FINGERPRINT);
  for (void* reserved : descriptor_->reserved) EXPECT_EQ(reserved, nullptr);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A real command through real firejail: writes inside the writable root land on the host,
// writes outside and into the protected .git fail, the network namespace has only loopback.
TEST_F(PluginModule, ConfinesARealCommand) {
  auto backend = create();
  ASSERT_NE(backend, nullptr);
  const sbx::ProbeReport report = backend->probe(sbx::ProbeContext{});
  if (!report.available) GTEST_SKIP() << "firejail cannot run on this host: " << report.summary;

  char base_template[] = "/tmp/sbx-firejail-test.XXXXXX";
  ASSERT_NE(::mkdtemp(base_template), nullptr);
  const std::string base = base_template, ws = base + "/ws", outside = base + "/outside";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((ws + "/.git").c_str(), 0755), 0);
  std::ofstream(ws + "/.git/HEAD") << "ref: refs/heads/main\n";

  sbx::TransformRequest request;
  request.cwd = ws;
  request.env = {"PATH=/usr/bin:/bin"};
  request.policy.rules = {{"/", sbx::Access::kRead}, {ws, sbx::Access::kWrite}};
  request.policy.protected_paths = {{ws + "/.git", ws, true, true}};
  request.policy.cwd = ws;
  request.argv = {"/bin/sh", "-c",
                  "echo inside > inside.txt || exit 10\n"
                  "if (echo x > " +
                      outside +
                      "/escape.txt) 2>/dev/null; then exit 11; fi\n"
                      "if (echo x >> .git/HEAD) 2>/dev/null; then exit 12; fi\n"
                      "[ \"$container\" = firejail ] || exit 13\n"
                      "[ \"$(grep -c : /proc/net/dev)\" = 1 ] || exit 14\n"
                      "exit 42"};
  sbx::Result<sbx::ExecPlan> plan = backend->transform(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  sbx::Result<sbx::ExitStatus> status = backend->exec(*plan, sbx::RunContext(&kRun));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->shell_code(), 42) << "10 inside failed, 11 escaped, 12 .git written, "
                                         "13 not firejail, 14 network visible";
  EXPECT_EQ(read_file(ws + "/inside.txt"), "inside\n");
  EXPECT_NE(::access((outside + "/escape.txt").c_str(), F_OK), 0);
  EXPECT_EQ(read_file(ws + "/.git/HEAD"), "ref: refs/heads/main\n");
  const std::string cleanup = "rm -rf '" + base + "'";
  EXPECT_EQ(std::system(cleanup.c_str()), 0);
}

}  // namespace
