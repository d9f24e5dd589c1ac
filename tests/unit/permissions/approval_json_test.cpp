// The approval document of `sbx policy approve` and sbx_policy_approve is written by the one JSON
// writer: the approved policy and the dropped lines (which quote policy paths) escape control,
// invisible and bidi characters as \uXXXX like every report, and the embedded policy reads back
// unchanged.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "sbx/core/permissions.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/report_json.hpp"

namespace sbx {
namespace {

const std::string kRightToLeftOverride = "\xE2\x80\xAE";  // U+202E
const std::string kLeftToRightIsolate = "\xE2\x81\xA6";   // U+2066

Policy checked(Policy policy) {
  Result<Policy> valid = validate_policy(std::move(policy));
  EXPECT_TRUE(valid.ok()) << valid.error();
  return valid.ok() ? *valid : Policy{};
}

TEST(ApprovalJson, EscapesControlAndBidiCharactersInPolicyAndDroppedLines) {
  Policy policy = *preset_policy("read-only");
  policy.filesystem.entries.push_back(
      PolicyEntry{"/srv/evil" + kRightToLeftOverride + "txt.sh", {}, Access::kDeny});
  policy.filesystem.entries.push_back(
      PolicyEntry{"/srv/a\x01"
                  "b\x1f" +
                      kLeftToRightIsolate,
                  {},
                  Access::kRead});
  Approval approval{checked(policy),
                    {"/opt/x" + kRightToLeftOverride + "\n: not requested, dropped"}};

  const std::string json = approval_to_json(approval);
  SCOPED_TRACE(json);
  for (const std::string& raw :
       {kRightToLeftOverride, kLeftToRightIsolate, std::string("\x01"), std::string("\x1f")}) {
    EXPECT_EQ(json.find(raw), std::string::npos) << "a raw invisible character in the output";
  }
  EXPECT_NE(json.find(R"("/srv/evil\u202etxt.sh")"), std::string::npos);
  EXPECT_NE(json.find(R"("/srv/a\u0001b\u001f\u2066")"), std::string::npos);
  EXPECT_NE(json.find(R"("/opt/x\u202e\n: not requested, dropped")"), std::string::npos);

  const boost::json::value parsed = boost::json::parse(json);
  EXPECT_TRUE(parsed.at("recorded").as_bool());
  ASSERT_EQ(parsed.at("dropped").as_array().size(), 1u);
  EXPECT_EQ(parsed.at("dropped").at(0).as_string(), approval.dropped[0]);
  // The embedded policy is policy_to_json's object: it reads back to the approved policy.
  Result<Policy> again = parse_policy(boost::json::serialize(parsed.at("policy")));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *approval.policy);
}

TEST(ApprovalJson, NothingRecordedIsANullPolicy) {
  const Approval approval{std::nullopt, {"/opt/a: not requested, dropped"}};
  const boost::json::value parsed = boost::json::parse(approval_to_json(approval));
  EXPECT_FALSE(parsed.at("recorded").as_bool());
  EXPECT_TRUE(parsed.at("policy").is_null());
  EXPECT_EQ(parsed.at("dropped").at(0).as_string(), "/opt/a: not requested, dropped");
}

// sbx policy approve and sbx_policy_approve print the same document as `sbx policy show` lays
// out a policy: the approval of a request by itself embeds exactly policy_to_json's text.
TEST(ApprovalJson, EmbedsThePolicyInPolicyToJsonLayout) {
  const Policy policy = checked(*preset_policy("workspace-write"));
  Result<Approval> approval = approve(policy, policy);
  ASSERT_TRUE(approval.ok()) << approval.error();
  ASSERT_TRUE(approval->policy.has_value());
  const std::string json = approval_to_json(*approval);
  std::string shown = policy_to_json(*approval->policy);
  while (!shown.empty() && shown.back() == '\n') shown.pop_back();
  // Nested one level deeper: every line of the policy after the first is indented two more.
  std::string nested;
  for (char c : shown) {
    nested += c;
    if (c == '\n') nested += "  ";
  }
  EXPECT_NE(json.find("\"policy\": " + nested), std::string::npos) << json << "\n" << nested;
}

}  // namespace
}  // namespace sbx
