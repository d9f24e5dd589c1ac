/* The plugin ABI seen by a C compiler: static layout checks, and the layout reported at run
 * time so the C++ test can compare both compilers' view of the same structs. */
#include "abi_layout_c.h"

#include <stddef.h>

#include "sbx/sdk/abi.h"

#define SBX_P sizeof(void*)

/* sbx_plugin_v2: three fixed-width fields (8 bytes), then pointers only. */
_Static_assert(offsetof(sbx_plugin_v2, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(sbx_plugin_v2, abi_major) == 4, "abi_major at 4");
_Static_assert(offsetof(sbx_plugin_v2, abi_minor) == 6, "abi_minor at 6");
_Static_assert(offsetof(sbx_plugin_v2, name) == 8, "name at 8");
_Static_assert(offsetof(sbx_plugin_v2, destroy) == 8 + 5 * SBX_P, "destroy after 5 pointers");
_Static_assert(sizeof(sbx_plugin_v2) == 8 + 10 * SBX_P, "4 reserved pointers at the end");
_Static_assert(SBX_PLUGIN_V2_MIN_SIZE == 8 + 6 * SBX_P, "v2.0 minimum ends after destroy");
_Static_assert(offsetof(sbx_host_v2, spawn) == 8 + 4 * SBX_P, "spawn is the last host field");
_Static_assert(sizeof(sbx_host_v2) == 8 + 5 * SBX_P, "host table size");
/* sbx_run_v2: struct_size, then pointers only. */
_Static_assert(offsetof(sbx_run_v2, ctx) == SBX_P, "ctx after struct_size (aligned)");
_Static_assert(offsetof(sbx_run_v2, run_started) == 4 * SBX_P, "run_started, the last of 2.0");
_Static_assert(offsetof(sbx_run_v2, stdio_fd) == 5 * SBX_P, "2.1 appends stdio_fd");
_Static_assert(offsetof(sbx_run_v2, cancel_fd) == 6 * SBX_P, "then cancel_fd");
_Static_assert(offsetof(sbx_run_v2, forward_signals) == 7 * SBX_P, "2.2 appends forward_signals");
_Static_assert(sizeof(sbx_run_v2) == 8 * SBX_P, "run table size");

struct sbx_c_layout sbx_c_layout_of_abi(void) {
  struct sbx_c_layout layout;
  layout.plugin_size = sizeof(sbx_plugin_v2);
  layout.plugin_name = offsetof(sbx_plugin_v2, name);
  layout.plugin_fingerprint = offsetof(sbx_plugin_v2, fingerprint);
  layout.plugin_create = offsetof(sbx_plugin_v2, create);
  layout.plugin_destroy = offsetof(sbx_plugin_v2, destroy);
  layout.plugin_reserved = offsetof(sbx_plugin_v2, reserved);
  layout.plugin_min_size = SBX_PLUGIN_V2_MIN_SIZE;
  layout.host_size = sizeof(sbx_host_v2);
  layout.host_ctx = offsetof(sbx_host_v2, ctx);
  layout.host_log = offsetof(sbx_host_v2, log);
  layout.host_spawn = offsetof(sbx_host_v2, spawn);
  layout.run_size = sizeof(sbx_run_v2);
  layout.run_ctx = offsetof(sbx_run_v2, ctx);
  layout.run_prepare_child = offsetof(sbx_run_v2, prepare_child);
  layout.run_report_network_refusal = offsetof(sbx_run_v2, report_network_refusal);
  layout.run_run_started = offsetof(sbx_run_v2, run_started);
  layout.run_stdio_fd = offsetof(sbx_run_v2, stdio_fd);
  layout.run_cancel_fd = offsetof(sbx_run_v2, cancel_fd);
  layout.run_forward_signals = offsetof(sbx_run_v2, forward_signals);
  layout.log_error = SBX_LOG_ERROR;
  return layout;
}
