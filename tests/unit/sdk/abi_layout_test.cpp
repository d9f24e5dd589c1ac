// The plugin ABI's layout, fixed at compile time, and the same layout seen by the C compiler.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "abi_layout_c.h"
#include "sbx/sdk/abi.h"

namespace {

constexpr std::size_t kP = sizeof(void*);

// Descriptor: 8 bytes of fixed-width fields, then pointers; growth only at the end.
static_assert(std::is_standard_layout_v<sbx_plugin_v2> && std::is_trivial_v<sbx_plugin_v2>);
static_assert(offsetof(sbx_plugin_v2, struct_size) == 0);
static_assert(offsetof(sbx_plugin_v2, abi_major) == 4);
static_assert(offsetof(sbx_plugin_v2, abi_minor) == 6);
static_assert(offsetof(sbx_plugin_v2, name) == 8);
static_assert(offsetof(sbx_plugin_v2, version) == 8 + kP);
static_assert(offsetof(sbx_plugin_v2, fingerprint) == 8 + 2 * kP);
static_assert(offsetof(sbx_plugin_v2, description) == 8 + 3 * kP);
static_assert(offsetof(sbx_plugin_v2, create) == 8 + 4 * kP);
static_assert(offsetof(sbx_plugin_v2, destroy) == 8 + 5 * kP);
static_assert(offsetof(sbx_plugin_v2, reserved) == 8 + 6 * kP);
static_assert(sizeof(sbx_plugin_v2) == 8 + 10 * kP);
static_assert(SBX_PLUGIN_V2_MIN_SIZE == offsetof(sbx_plugin_v2, reserved));
static_assert(std::is_same_v<decltype(sbx_plugin_v2::struct_size), std::uint32_t>);
static_assert(std::is_same_v<decltype(sbx_plugin_v2::abi_major), std::uint16_t>);

// Host table: same header, then pointers; the plugin reads it, so it only grows at the end.
static_assert(std::is_standard_layout_v<sbx_host_v2> && std::is_trivial_v<sbx_host_v2>);
static_assert(offsetof(sbx_host_v2, host_version) == 8);
static_assert(offsetof(sbx_host_v2, stage2_path) == 8 + kP);
static_assert(offsetof(sbx_host_v2, ctx) == 8 + 2 * kP);
static_assert(offsetof(sbx_host_v2, log) == 8 + 3 * kP);
static_assert(offsetof(sbx_host_v2, spawn) == 8 + 4 * kP);
static_assert(sizeof(sbx_host_v2) == 8 + 5 * kP);

// The run's table: struct_size, then pointers; only grows at the end.
static_assert(std::is_standard_layout_v<sbx_run_v2> && std::is_trivial_v<sbx_run_v2>);
static_assert(offsetof(sbx_run_v2, struct_size) == 0);
static_assert(offsetof(sbx_run_v2, ctx) == kP);
static_assert(offsetof(sbx_run_v2, prepare_child) == 2 * kP);
static_assert(offsetof(sbx_run_v2, report_network_refusal) == 3 * kP);
static_assert(offsetof(sbx_run_v2, run_started) == 4 * kP);      // the last slot of 2.0
static_assert(offsetof(sbx_run_v2, stdio_fd) == 5 * kP);         // 2.1
static_assert(offsetof(sbx_run_v2, cancel_fd) == 6 * kP);        // 2.1
static_assert(offsetof(sbx_run_v2, forward_signals) == 7 * kP);  // 2.2
static_assert(sizeof(sbx_run_v2) == 8 * kP);

// Log levels are part of the ABI (they cross as plain ints).
static_assert(SBX_LOG_TRACE == 0 && SBX_LOG_DEBUG == 1 && SBX_LOG_INFO == 2 && SBX_LOG_WARN == 3 &&
              SBX_LOG_ERROR == 4);

TEST(SdkAbi, VersionIsTwoPointThree) {
  EXPECT_EQ(SBX_ABI_MAJOR, 2);
  EXPECT_EQ(SBX_ABI_MINOR, 3);
  EXPECT_STREQ(SBX_PLUGIN_ENTRY_SYMBOL, "sbx_plugin_entry_v2");
  EXPECT_STREQ(SBX_PLUGIN_ENTRY_SYMBOL_V1, "sbx_plugin_entry_v1");  // named in refusals only
}

// SBX_TABLE_HAS: a slot is there only when struct_size covers it and it is set.
TEST(SdkAbi, TableHasChecksSizeAndSlot) {
  sbx_run_v2 run{};
  run.run_started = [](void*) {};
  run.struct_size = sizeof run;
  EXPECT_TRUE(SBX_TABLE_HAS(&run, sbx_run_v2, run_started));
  EXPECT_FALSE(SBX_TABLE_HAS(&run, sbx_run_v2, prepare_child));
  run.struct_size = static_cast<std::uint32_t>(offsetof(sbx_run_v2, run_started));
  EXPECT_FALSE(SBX_TABLE_HAS(&run, sbx_run_v2, run_started));
  const sbx_run_v2* none = nullptr;
  EXPECT_FALSE(SBX_TABLE_HAS(none, sbx_run_v2, run_started));
}

TEST(SdkAbi, CAndCxxCompilersAgreeOnTheLayout) {
  const sbx_c_layout c = sbx_c_layout_of_abi();
  EXPECT_EQ(c.plugin_size, sizeof(sbx_plugin_v2));
  EXPECT_EQ(c.plugin_name, offsetof(sbx_plugin_v2, name));
  EXPECT_EQ(c.plugin_fingerprint, offsetof(sbx_plugin_v2, fingerprint));
  EXPECT_EQ(c.plugin_create, offsetof(sbx_plugin_v2, create));
  EXPECT_EQ(c.plugin_destroy, offsetof(sbx_plugin_v2, destroy));
  EXPECT_EQ(c.plugin_reserved, offsetof(sbx_plugin_v2, reserved));
  EXPECT_EQ(c.plugin_min_size, SBX_PLUGIN_V2_MIN_SIZE);
  EXPECT_EQ(c.host_size, sizeof(sbx_host_v2));
  EXPECT_EQ(c.host_ctx, offsetof(sbx_host_v2, ctx));
  EXPECT_EQ(c.host_log, offsetof(sbx_host_v2, log));
  EXPECT_EQ(c.host_spawn, offsetof(sbx_host_v2, spawn));
  EXPECT_EQ(c.run_size, sizeof(sbx_run_v2));
  EXPECT_EQ(c.run_ctx, offsetof(sbx_run_v2, ctx));
  EXPECT_EQ(c.run_prepare_child, offsetof(sbx_run_v2, prepare_child));
  EXPECT_EQ(c.run_report_network_refusal, offsetof(sbx_run_v2, report_network_refusal));
  EXPECT_EQ(c.run_run_started, offsetof(sbx_run_v2, run_started));
  EXPECT_EQ(c.run_stdio_fd, offsetof(sbx_run_v2, stdio_fd));
  EXPECT_EQ(c.run_cancel_fd, offsetof(sbx_run_v2, cancel_fd));
  EXPECT_EQ(c.run_forward_signals, offsetof(sbx_run_v2, forward_signals));
  EXPECT_EQ(c.log_error, SBX_LOG_ERROR);
}

TEST(SdkAbi, FingerprintNamesAbiStdlibAndPointerSize) {
  const std::string fingerprint = SBX_TOOLCHAIN_FINGERPRINT;
  EXPECT_EQ(fingerprint.rfind("sbx-abi2;", 0), 0u) << fingerprint;
  EXPECT_NE(fingerprint.find("libstdc++-cxx11abi1"), std::string::npos) << fingerprint;
  EXPECT_NE(fingerprint.find(";ptr" + std::to_string(kP)), std::string::npos) << fingerprint;
}

TEST(SdkAbi, HeaderDigestIsAHexSha256) {
  const std::string digest = SBX_ABI_HEADER_SHA256;
  ASSERT_EQ(digest.size(), 64u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
