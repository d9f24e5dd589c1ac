// SBX_DECLARE_BACKEND and HostServices: the descriptor a plugin exports, create() never
// letting an exception out, and the host table used through its C++ view.
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "sbx/sdk/plugin.hpp"

namespace {

bool g_throw_in_constructor = false;
int g_live_backends = 0;

class MacroBackend final : public sbx::Backend {
 public:
  explicit MacroBackend(sbx::HostServices host) : Backend(host) {
    if (g_throw_in_constructor) throw std::runtime_error("constructor failed");
    ++g_live_backends;
  }
  ~MacroBackend() override { --g_live_backends; }
  sbx::ProbeReport probe(const sbx::ProbeContext&) override { return {}; }
  sbx::Result<sbx::ExecPlan> transform(const sbx::TransformRequest&) const override {
    host().log(SBX_LOG_INFO, "transform");
    return sbx::Error{"not in this test"};
  }
  sbx::HostServices services() const { return host(); }
};

}  // namespace

SBX_DECLARE_BACKEND(MacroBackend, "macro-test", "9.9.9", "a backend for the SDK's own tests")

namespace {

struct Recorder {
  std::string last;
  int level = -1;
  bool spawned = false;
  std::string refused;  // "kind address" of the last report_network_refusal
  int started = 0;      // calls of run_started
  bool forward = true;  // forward_signals' answer
};

void record_log(void* ctx, int level, const char* message, std::size_t length) {
  auto* recorder = static_cast<Recorder*>(ctx);
  recorder->last.assign(message, length);
  recorder->level = level;
}

int fake_spawn(void* ctx, const sbx_run_v2* run, const void* plan, void* status_out, char* error,
               std::size_t size) {
  static_cast<Recorder*>(ctx)->spawned = true;
  if (run == nullptr || run->ctx != ctx) {
    std::snprintf(error, size, "not the run's table");
    return 1;
  }
  if (static_cast<const sbx::ExecPlan*>(plan)->argv.empty()) {
    std::snprintf(error, size, "empty argv");
    return 1;
  }
  static_cast<sbx::ExitStatus*>(status_out)->exit_code = 7;
  return 0;
}

int fake_prepare_child(void* ctx) { return static_cast<Recorder*>(ctx)->spawned ? 0 : EPERM; }

void record_refusal(void* ctx, const char* kind, const char* address, std::size_t length) {
  static_cast<Recorder*>(ctx)->refused = std::string(kind) + " " + std::string(address, length);
}

void record_started(void* ctx) { ++static_cast<Recorder*>(ctx)->started; }

// The run's stdio: 10 + which; its end: 42.
int fake_stdio_fd(void* /*ctx*/, int which) { return 10 + which; }
int fake_cancel_fd(void* /*ctx*/) { return 42; }

int fake_forward_signals(void* ctx) { return static_cast<Recorder*>(ctx)->forward ? 1 : 0; }

TEST(SdkPluginMacro, DescriptorCarriesTheAbiAndIdentity) {
  const sbx_plugin_v2* d = sbx_plugin_entry_v2();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d, sbx_plugin_entry_v2()) << "one static descriptor";
  EXPECT_EQ(d->struct_size, sizeof(sbx_plugin_v2));
  EXPECT_EQ(d->abi_major, SBX_ABI_MAJOR);
  EXPECT_EQ(d->abi_minor, SBX_ABI_MINOR);
  EXPECT_STREQ(d->name, "macro-test");
  EXPECT_STREQ(d->version, "9.9.9");
  EXPECT_STREQ(d->fingerprint, SBX_TOOLCHAIN_FINGERPRINT);
  for (void* reserved : d->reserved) EXPECT_EQ(reserved, nullptr);
}

TEST(SdkPluginMacro, CreateAndDestroyPairUp) {
  const sbx_plugin_v2* d = sbx_plugin_entry_v2();
  void* backend = d->create(nullptr);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(g_live_backends, 1);
  d->destroy(backend);
  EXPECT_EQ(g_live_backends, 0);
}

TEST(SdkPluginMacro, ThrowingConstructorBecomesNull) {
  g_throw_in_constructor = true;
  void* backend = sbx_plugin_entry_v2()->create(nullptr);
  g_throw_in_constructor = false;
  EXPECT_EQ(backend, nullptr);
}

sbx_host_v2 host_table(Recorder& recorder) {
  return {
      sizeof(sbx_host_v2), SBX_ABI_MAJOR, SBX_ABI_MINOR, "1.2.3", "/opt/sbx/libexec/sbx/sbx-stage2",
      &recorder,           &record_log,   &fake_spawn};
}

sbx_run_v2 run_table(Recorder& recorder) {
  return {sizeof(sbx_run_v2), &recorder,      &fake_prepare_child, &record_refusal,
          &record_started,    &fake_stdio_fd, &fake_cancel_fd,     &fake_forward_signals};
}

TEST(SdkHostServices, LogAndSpawnGoThroughTheTable) {
  Recorder recorder;
  const sbx_host_v2 host = host_table(recorder);
  const sbx_run_v2 run = run_table(recorder);
  void* raw = sbx_plugin_entry_v2()->create(&host);
  ASSERT_NE(raw, nullptr);
  auto* backend = static_cast<MacroBackend*>(static_cast<sbx::Backend*>(raw));
  EXPECT_FALSE(backend->transform({}).ok());
  EXPECT_EQ(recorder.last, "transform");
  EXPECT_EQ(recorder.level, SBX_LOG_INFO);
  EXPECT_EQ(backend->services().stage2_path(), "/opt/sbx/libexec/sbx/sbx-stage2");
  EXPECT_EQ(backend->services().host_version(), "1.2.3");
  sbx::ExecPlan plan;
  plan.argv = {"/bin/true"};
  // The default exec is the host's spawn, under the run exec() was given.
  sbx::Result<sbx::ExitStatus> status = backend->exec(plan, sbx::RunContext(&run));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 7);
  EXPECT_TRUE(recorder.spawned);
  sbx::Result<sbx::ExitStatus> failed = backend->exec(sbx::ExecPlan{}, sbx::RunContext(&run));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "empty argv");
  sbx_plugin_entry_v2()->destroy(raw);
}

// Every slot of a size-versioned table is read only when struct_size covers it: a table of an
// older minor (shorter) or one without the slot makes the service do nothing.
TEST(SdkRunContext, ChildHookIsTheRunsPrepareChildWhenTheTableHasIt) {
  Recorder recorder;
  sbx_run_v2 run = run_table(recorder);
  EXPECT_EQ(sbx::RunContext(&run).child_hook()(), EPERM);  // the host's answer
  recorder.spawned = true;
  EXPECT_EQ(sbx::RunContext(&run).child_hook()(), 0);
  recorder.spawned = false;
  run.struct_size = static_cast<uint32_t>(offsetof(sbx_run_v2, prepare_child));
  EXPECT_EQ(sbx::RunContext(&run).child_hook()(), 0);
  run = run_table(recorder);
  run.prepare_child = nullptr;
  EXPECT_EQ(sbx::RunContext(&run).child_hook()(), 0);
  EXPECT_EQ(sbx::RunContext(nullptr).child_hook()(), 0);
}

TEST(SdkRunContext, NetworkRefusalsGoThroughTheTableWhenItHasTheSlot) {
  Recorder recorder;
  sbx_run_v2 run = run_table(recorder);
  // The address is passed with its length: bytes after it (and NULs in it) are the caller's.
  const std::string address("/tmp/a\0b-and-more", 8);
  sbx::RunContext(&run).report_network_refusal("unix", address);
  EXPECT_EQ(recorder.refused, std::string("unix /tmp/a\0b", 13));
  recorder.refused.clear();
  run.struct_size = static_cast<uint32_t>(offsetof(sbx_run_v2, report_network_refusal));
  sbx::RunContext(&run).report_network_refusal("ip", "10.0.0.1:80");
  EXPECT_EQ(recorder.refused, "");
  sbx::RunContext(nullptr).report_network_refusal("ip", "10.0.0.1:80");
}

TEST(SdkRunContext, RunStartedGoesThroughTheTableWhenItHasTheSlot) {
  Recorder recorder;
  sbx_run_v2 run = run_table(recorder);
  sbx::RunContext(&run).run_started();
  EXPECT_EQ(recorder.started, 1);
  run.struct_size = static_cast<uint32_t>(offsetof(sbx_run_v2, run_started));
  sbx::RunContext(&run).run_started();
  EXPECT_EQ(recorder.started, 1);
  sbx::RunContext(nullptr).run_started();
}

// ABI 2.1's slots; a 2.0 table (shorter) means the host's own stdio and no end.
TEST(SdkRunContext, StdioAndCancelGoThroughTheTableWhenItHasTheSlots) {
  Recorder recorder;
  sbx_run_v2 run = run_table(recorder);
  EXPECT_EQ(sbx::RunContext(&run).stdio_fds(), (std::array<int, 3>{10, 11, 12}));
  EXPECT_EQ(sbx::RunContext(&run).cancel_fd(), 42);
  run.struct_size = static_cast<uint32_t>(offsetof(sbx_run_v2, stdio_fd));
  EXPECT_EQ(sbx::RunContext(&run).stdio_fds(), (std::array<int, 3>{0, 1, 2}));
  EXPECT_EQ(sbx::RunContext(&run).cancel_fd(), -1);
  run = run_table(recorder);
  run.cancel_fd = nullptr;
  EXPECT_EQ(sbx::RunContext(&run).cancel_fd(), -1);
  EXPECT_EQ(sbx::RunContext(&run).stdio_fd(2), 12);
  EXPECT_EQ(sbx::RunContext(nullptr).stdio_fd(1), 1);
  EXPECT_EQ(sbx::RunContext(nullptr).cancel_fd(), -1);
}

// ABI 2.2's slot; a 2.1 table (shorter) or none means forwarding, as every run did before 2.2.
TEST(SdkRunContext, ForwardSignalsGoesThroughTheTableWhenItHasTheSlot) {
  Recorder recorder;
  sbx_run_v2 run = run_table(recorder);
  EXPECT_TRUE(sbx::RunContext(&run).forward_signals());
  recorder.forward = false;
  EXPECT_FALSE(sbx::RunContext(&run).forward_signals());
  run.struct_size = static_cast<uint32_t>(offsetof(sbx_run_v2, forward_signals));
  EXPECT_TRUE(sbx::RunContext(&run).forward_signals());
  run = run_table(recorder);
  run.forward_signals = nullptr;
  EXPECT_TRUE(sbx::RunContext(&run).forward_signals());
  EXPECT_TRUE(sbx::RunContext(nullptr).forward_signals());
}

TEST(SdkHostServices, MissingTableOrSlotIsAnErrorNotACrash) {
  const sbx::HostServices none(nullptr);
  EXPECT_EQ(none.stage2_path(), "");
  none.log(SBX_LOG_ERROR, "dropped");
  sbx::Result<sbx::ExitStatus> status = none.spawn(sbx::ExecPlan{}, sbx::RunContext(nullptr));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("no spawn service"), std::string::npos);
  // A table that ends before spawn: never read.
  Recorder recorder;
  sbx_host_v2 host = host_table(recorder);
  host.struct_size = static_cast<uint32_t>(offsetof(sbx_host_v2, spawn));
  status = sbx::HostServices(&host).spawn(sbx::ExecPlan{}, sbx::RunContext(nullptr));
  ASSERT_FALSE(status.ok());
  EXPECT_FALSE(recorder.spawned);
}

}  // namespace
