// Shared state of one profile build (internal to the seatbelt library).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/seatbelt/profile.hpp"

namespace sbx::seatbelt::internal {

// Collects parameters and hands back the SBPL expression that refers to each one. Values are
// rewritten to their /private spelling here, once, for every path.
class ParamTable {
 public:
  std::string add(std::string key, std::string_view path) {
    std::string ref = "(param \"" + key + "\")";
    params_.push_back(Param{std::move(key), macos_canonical_path(path)});
    return ref;
  }
  std::vector<Param> take() { return std::move(params_); }

 private:
  std::vector<Param> params_;
};

struct Context {
  explicit Context(const ResolvedPolicy& p) : policy(p) {}
  const ResolvedPolicy& policy;
  ParamTable params;
  std::vector<std::string> notes;
  std::vector<std::string> writable;  // writable roots as the policy spells them
  std::vector<std::string> guards;    // directories whose unlink/rename is denied, emitted last
};

// The network section (may be empty), or an Error when the network part of the policy cannot
// be enforced (proxy mode without a usable loopback port, domain lists without proxy mode).
Result<std::string> network_section(Context& ctx, const std::vector<std::string>& env);

}  // namespace sbx::seatbelt::internal
