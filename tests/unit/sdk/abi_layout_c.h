/* The ABI structs' layout as computed by the C compiler (abi_layout_c.c). */
#ifndef SBX_TESTS_ABI_LAYOUT_C_H_
#define SBX_TESTS_ABI_LAYOUT_C_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbx_c_layout {
  size_t plugin_size, plugin_name, plugin_fingerprint, plugin_create, plugin_destroy;
  size_t plugin_reserved, plugin_min_size;
  size_t host_size, host_ctx, host_log, host_spawn;
  size_t run_size, run_ctx, run_prepare_child, run_report_network_refusal, run_run_started;
  size_t run_stdio_fd, run_cancel_fd, run_forward_signals;
  int log_error;
};

struct sbx_c_layout sbx_c_layout_of_abi(void);

#ifdef __cplusplus
}
#endif

#endif /* SBX_TESTS_ABI_LAYOUT_C_H_ */
