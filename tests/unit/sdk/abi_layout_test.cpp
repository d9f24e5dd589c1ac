// The plugin ABI's layout, fixed at compile time, and the same layout seen by the C compiler.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "abi_layout_c.h"
#include "sbx/sdk/abi.h"

namespace {

constexpr std::size_t kP = sizeof(void*);

// Descriptor: 8 bytes of fixed-width fields, then pointers; growth only at the end.
static_assert(std::is_standard_layout_v<sbx_plugin_v1> && std::is_trivial_v<sbx_plugin_v1>);
static_assert(offsetof(sbx_plugin_v1, struct_size) == 0);
static_assert(offsetof(sbx_plugin_v1, abi_major) == 4);
static_assert(offsetof(sbx_plugin_v1, abi_minor) == 6);
static_assert(offsetof(sbx_plugin_v1, name) == 8);
static_assert(offsetof(sbx_plugin_v1, version) == 8 + kP);
static_assert(offsetof(sbx_plugin_v1, fingerprint) == 8 + 2 * kP);
static_assert(offsetof(sbx_plugin_v1, description) == 8 + 3 * kP);
static_assert(offsetof(sbx_plugin_v1, create) == 8 + 4 * kP);
static_assert(offsetof(sbx_plugin_v1, destroy) == 8 + 5 * kP);
static_assert(offsetof(sbx_plugin_v1, reserved) == 8 + 6 * kP);
static_assert(sizeof(sbx_plugin_v1) == 8 + 10 * kP);
static_assert(SBX_PLUGIN_V1_MIN_SIZE == offsetof(sbx_plugin_v1, reserved));
static_assert(std::is_same_v<decltype(sbx_plugin_v1::struct_size), std::uint32_t>);
static_assert(std::is_same_v<decltype(sbx_plugin_v1::abi_major), std::uint16_t>);

// Host table: same header, then pointers; the plugin reads it, so it only grows at the end.
static_assert(std::is_standard_layout_v<sbx_host_v1> && std::is_trivial_v<sbx_host_v1>);
static_assert(offsetof(sbx_host_v1, host_version) == 8);
static_assert(offsetof(sbx_host_v1, stage2_path) == 8 + kP);
static_assert(offsetof(sbx_host_v1, ctx) == 8 + 2 * kP);
static_assert(offsetof(sbx_host_v1, log) == 8 + 3 * kP);
static_assert(offsetof(sbx_host_v1, spawn) == 8 + 4 * kP);
static_assert(offsetof(sbx_host_v1, prepare_child) == 8 + 5 * kP);  // 1.2
static_assert(offsetof(sbx_host_v1, report_network_refusal) == 8 + 6 * kP);  // 1.5
static_assert(offsetof(sbx_host_v1, run_started) == 8 + 7 * kP);             // 1.6
static_assert(sizeof(sbx_host_v1) == 8 + 8 * kP);

// Log levels are part of the ABI (they cross as plain ints).
static_assert(SBX_LOG_TRACE == 0 && SBX_LOG_DEBUG == 1 && SBX_LOG_INFO == 2 &&
              SBX_LOG_WARN == 3 && SBX_LOG_ERROR == 4);

TEST(SdkAbi, VersionIsOnePointSix) {
  EXPECT_EQ(SBX_ABI_MAJOR, 1);
  EXPECT_EQ(SBX_ABI_MINOR, 6);  // 1.1: TransformRequest::proxy_socket; 1.2: host prepare_child;
                                // 1.3: ExecPlan::host_paths; 1.4: ExecPlan::windows;
                                // 1.5: host report_network_refusal, unix_socket_block;
                                // 1.6: host run_started
  EXPECT_STREQ(SBX_PLUGIN_ENTRY_SYMBOL, "sbx_plugin_entry_v1");
}

TEST(SdkAbi, CAndCxxCompilersAgreeOnTheLayout) {
  const sbx_c_layout c = sbx_c_layout_of_abi();
  EXPECT_EQ(c.plugin_size, sizeof(sbx_plugin_v1));
  EXPECT_EQ(c.plugin_name, offsetof(sbx_plugin_v1, name));
  EXPECT_EQ(c.plugin_fingerprint, offsetof(sbx_plugin_v1, fingerprint));
  EXPECT_EQ(c.plugin_create, offsetof(sbx_plugin_v1, create));
  EXPECT_EQ(c.plugin_destroy, offsetof(sbx_plugin_v1, destroy));
  EXPECT_EQ(c.plugin_reserved, offsetof(sbx_plugin_v1, reserved));
  EXPECT_EQ(c.plugin_min_size, SBX_PLUGIN_V1_MIN_SIZE);
  EXPECT_EQ(c.host_size, sizeof(sbx_host_v1));
  EXPECT_EQ(c.host_ctx, offsetof(sbx_host_v1, ctx));
  EXPECT_EQ(c.host_log, offsetof(sbx_host_v1, log));
  EXPECT_EQ(c.host_spawn, offsetof(sbx_host_v1, spawn));
  EXPECT_EQ(c.log_error, SBX_LOG_ERROR);
}

TEST(SdkAbi, FingerprintNamesAbiStdlibAndPointerSize) {
  const std::string fingerprint = SBX_TOOLCHAIN_FINGERPRINT;
  EXPECT_EQ(fingerprint.rfind("sbx-abi1;", 0), 0u) << fingerprint;
  EXPECT_NE(fingerprint.find("libstdc++-cxx11abi1"), std::string::npos) << fingerprint;
  EXPECT_NE(fingerprint.find(";ptr" + std::to_string(kP)), std::string::npos) << fingerprint;
}

TEST(SdkAbi, HeaderDigestIsAHexSha256) {
  const std::string digest = SBX_ABI_HEADER_SHA256;
  ASSERT_EQ(digest.size(), 64u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
