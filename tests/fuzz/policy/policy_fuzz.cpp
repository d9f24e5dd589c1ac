// libFuzzer entry for parse_policy (see CMakeLists.txt for the properties checked). A violated
// property prints what differed and traps, which libFuzzer reports as a crash with the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "sbx/core/policy.hpp"

namespace {

[[noreturn]] void violated(const char* property, const std::string& detail) {
  std::fprintf(stderr, "policy_fuzz: %s\n%s\n", property, detail.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  sbx::Result<sbx::Policy> policy = sbx::parse_policy(text);
  if (!policy.ok()) {
    // Every message starts with the pointer of the offending value ("/" for the document).
    if (policy.error().empty() || policy.error().front() != '/')
      violated("an error message does not start with a JSON pointer", policy.error());
    return 0;
  }
  std::string json = sbx::policy_to_json(*policy);
  sbx::Result<sbx::Policy> again = sbx::parse_policy(json);
  if (!again.ok()) violated("the serialized policy does not parse", again.error() + "\n" + json);
  if (!(*again == *policy))
    violated("the serialized policy parses to another policy",
             json + "\nparses to\n" + sbx::policy_to_json(*again));
  if (sbx::policy_to_json(*again) != json)
    violated("serializing is not stable", json + "\nthen\n" + sbx::policy_to_json(*again));
  return 0;
}
