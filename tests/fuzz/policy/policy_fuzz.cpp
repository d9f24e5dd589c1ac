// libFuzzer entry for parse_policy (see CMakeLists.txt for the properties checked). A violated
// property traps, which libFuzzer reports as a crash with the input that caused it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sbx/core/policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  sbx::Result<sbx::Policy> policy = sbx::parse_policy(text);
  if (!policy.ok()) {
    // Every message starts with the pointer of the offending value ("/" for the document).
    if (policy.error().empty() || policy.error().front() != '/') __builtin_trap();
    return 0;
  }
  std::string json = sbx::policy_to_json(*policy);
  sbx::Result<sbx::Policy> again = sbx::parse_policy(json);
  if (!again.ok() || !(*again == *policy)) __builtin_trap();
  if (sbx::policy_to_json(*again) != json) __builtin_trap();
  return 0;
}
