// Takes what a C API call returned: the string (freed) and the error's message (freed).
#pragma once

#include <string>

#include "sbx/sbx.h"

namespace sbx_capi_test {

struct Call {
  std::string text;
  std::string error;
  bool ok = false;
  int kind = -1;  // sbx_error_kind of the error, -1 without one
};

// `error` by address: it is read after the call that fills it (argument order is unspecified).
inline Call take(char* result, sbx_error** error) {
  Call call;
  call.ok = result != nullptr;
  if (result != nullptr) call.text = result;
  if (*error != nullptr) {
    call.error = sbx_error_message(*error);
    call.kind = sbx_error_kind(*error);
  }
  sbx_string_free(result);
  sbx_error_free(*error);
  *error = nullptr;
  return call;
}

}  // namespace sbx_capi_test
