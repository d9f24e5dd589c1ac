/* sbx/sbx.h must compile as strict C99 and be usable from C: one call of each kind. */
#include <stdio.h>

#include "sbx/sbx.h"

int sbx_capi_header_check(void);

int sbx_capi_header_check(void) {
  sbx_error* error = NULL;
  char* decision = sbx_should_sandbox("{\"version\":1,\"preset\":\"read-only\"}", NULL, &error);
  if (decision == NULL) {
    fprintf(stderr, "%s\n", sbx_error_message(error));
    sbx_error_free(error);
    return 1;
  }
  sbx_string_free(decision);
  return (SBX_EXEC_ALLOW_UNSANDBOXED | SBX_EXEC_CAPTURE_STDERR) == 3 ? 0 : 1;
}
