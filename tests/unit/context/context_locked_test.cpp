// `sbx context` when the administrator locks runs without a sandbox: the model is told never
// to retry unsandboxed, in the text and as "unsandboxed_runs" in the JSON.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "sbx/core/context.hpp"

namespace sbx {
namespace {

SandboxContext workspace() {
  ResolvedPolicy policy;
  policy.filesystem_kind = FilesystemKind::kRestricted;
  policy.cwd = "/work";
  policy.rules = {PathRule{"/", Access::kRead}, PathRule{"/work", Access::kWrite}};
  return describe_sandbox(policy);
}

TEST(ContextLocked, TextAndJsonSayTheEscapeHatchIsLocked) {
  SandboxContext open = workspace();
  EXPECT_EQ(context_to_text(open).find("locked by the administrator"), std::string::npos);
  EXPECT_EQ(boost::json::parse(context_to_json(open, JsonStyle::kCompact)).at("unsandboxed_runs"),
            "allowed");
  SandboxContext locked = workspace();
  locked.unsandboxed_locked = true;
  const std::string text = context_to_text(locked);
  EXPECT_NE(text.find("Running commands outside the sandbox is locked by the administrator: "
                      "never retry a command unsandboxed"),
            std::string::npos)
      << text;
  EXPECT_EQ(boost::json::parse(context_to_json(locked, JsonStyle::kCompact)).at("unsandboxed_runs"),
            "locked");
}

}  // namespace
}  // namespace sbx
