/* The plugin ABI seen by a C compiler: static layout checks, and the layout reported at run
 * time so the C++ test can compare both compilers' view of the same structs. */
#include <stddef.h>

#include "abi_layout_c.h"
#include "sbx/sdk/abi.h"

#define SBX_P sizeof(void*)

/* sbx_plugin_v1: three fixed-width fields (8 bytes), then pointers only. */
_Static_assert(offsetof(sbx_plugin_v1, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(sbx_plugin_v1, abi_major) == 4, "abi_major at 4");
_Static_assert(offsetof(sbx_plugin_v1, abi_minor) == 6, "abi_minor at 6");
_Static_assert(offsetof(sbx_plugin_v1, name) == 8, "name at 8");
_Static_assert(offsetof(sbx_plugin_v1, destroy) == 8 + 5 * SBX_P, "destroy after 5 pointers");
_Static_assert(sizeof(sbx_plugin_v1) == 8 + 10 * SBX_P, "4 reserved pointers at the end");
_Static_assert(SBX_PLUGIN_V1_MIN_SIZE == 8 + 6 * SBX_P, "v1.0 minimum ends after destroy");
_Static_assert(offsetof(sbx_host_v1, spawn) == 8 + 4 * SBX_P, "spawn after 4 pointers");
_Static_assert(offsetof(sbx_host_v1, prepare_child) == 8 + 5 * SBX_P, "prepare_child (1.2)");
_Static_assert(offsetof(sbx_host_v1, report_network_refusal) == 8 + 6 * SBX_P,
               "report_network_refusal (1.5)");
_Static_assert(offsetof(sbx_host_v1, run_started) == 8 + 7 * SBX_P,
               "run_started (1.6) is the last host field");
_Static_assert(sizeof(sbx_host_v1) == 8 + 8 * SBX_P, "host table size");

struct sbx_c_layout sbx_c_layout_of_abi(void) {
  struct sbx_c_layout layout;
  layout.plugin_size = sizeof(sbx_plugin_v1);
  layout.plugin_name = offsetof(sbx_plugin_v1, name);
  layout.plugin_fingerprint = offsetof(sbx_plugin_v1, fingerprint);
  layout.plugin_create = offsetof(sbx_plugin_v1, create);
  layout.plugin_destroy = offsetof(sbx_plugin_v1, destroy);
  layout.plugin_reserved = offsetof(sbx_plugin_v1, reserved);
  layout.plugin_min_size = SBX_PLUGIN_V1_MIN_SIZE;
  layout.host_size = sizeof(sbx_host_v1);
  layout.host_ctx = offsetof(sbx_host_v1, ctx);
  layout.host_log = offsetof(sbx_host_v1, log);
  layout.host_spawn = offsetof(sbx_host_v1, spawn);
  layout.log_error = SBX_LOG_ERROR;
  return layout;
}
