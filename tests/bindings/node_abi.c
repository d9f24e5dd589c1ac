/* ctest node.abi: the layout of sbx/sbx.h's structs and the values of its constants, as the C
 * compiler sees them, as JSON for node_abi.js to compare with the Node binding's declarations
 * (bindings/node/lib/ffi.js). */
#include <sbx/sbx.h>
#include <stddef.h>
#include <stdio.h>

#define MEMBER(type, member)                                                                 \
  printf("    \"%s\": {\"offset\": %zu, \"size\": %zu},\n", #member, offsetof(type, member), \
         sizeof(((type*)0)->member))

int main(void) {
  printf("{\n  \"sbx_stdio\": {\"size\": %zu, \"members\": {\n", sizeof(sbx_stdio));
  MEMBER(sbx_stdio, mode);
  MEMBER(sbx_stdio, fd);
  MEMBER(sbx_stdio, max_bytes);
  MEMBER(sbx_stdio, data);
  printf("    \"length\": {\"offset\": %zu, \"size\": %zu}}},\n", offsetof(sbx_stdio, length),
         sizeof(((sbx_stdio*)0)->length));
  printf("  \"sbx_run_options\": {\"size\": %zu, \"members\": {\n", sizeof(sbx_run_options));
  MEMBER(sbx_run_options, struct_size);
  MEMBER(sbx_run_options, policy_json);
  MEMBER(sbx_run_options, cwd);
  MEMBER(sbx_run_options, argv);
  MEMBER(sbx_run_options, preference);
  MEMBER(sbx_run_options, flags);
  MEMBER(sbx_run_options, stdio);
  MEMBER(sbx_run_options, env_set);
  MEMBER(sbx_run_options, env_unset);
  printf("    \"timeout_ms\": {\"offset\": %zu, \"size\": %zu}}},\n",
         offsetof(sbx_run_options, timeout_ms), sizeof(((sbx_run_options*)0)->timeout_ms));
  printf("  \"constants\": {\"EXEC_ALLOW_UNSANDBOXED\": %d, \"EXEC_CAPTURE_STDERR\": %d, ",
         (int)SBX_EXEC_ALLOW_UNSANDBOXED, (int)SBX_EXEC_CAPTURE_STDERR);
  printf("\"STDIO_INHERIT\": %d, \"STDIO_NULL\": %d, \"STDIO_FD\": %d, \"STDIO_PIPE\": %d, ",
         SBX_STDIO_INHERIT, SBX_STDIO_NULL, SBX_STDIO_FD, SBX_STDIO_PIPE);
  printf("\"STDIO_CAPTURE\": %d, \"STDIO_DATA\": %d},\n", SBX_STDIO_CAPTURE, SBX_STDIO_DATA);
  printf("  \"error_kinds\": [\"%d invalid_input\", \"%d refused\", \"%d unavailable\", ",
         SBX_ERROR_INVALID_INPUT, SBX_ERROR_REFUSED, SBX_ERROR_UNAVAILABLE);
  printf("\"%d backend_failure\", \"%d host_failure\", \"%d timed_out\", \"%d cancelled\"]\n}\n",
         SBX_ERROR_BACKEND_FAILURE, SBX_ERROR_HOST_FAILURE, SBX_ERROR_TIMED_OUT,
         SBX_ERROR_CANCELLED);
  return 0;
}
