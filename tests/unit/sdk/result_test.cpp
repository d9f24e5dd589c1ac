// sbx::Error kinds (result.hpp): the default kind, kinds kept through Status, Result and the
// propagation helpers, the names every boundary uses, and the unchanged layout plugins rely on.
#include "sbx/sdk/result.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "sbx/sdk/types.hpp"

namespace sbx {
namespace {

// Status and Result as they were before kinds: plugins built against an older SDK
// (tests/fixtures/sdk-abi-*) return Result<ExecPlan...> and Result<ExitStatus> in this layout.
template <typename T>
struct ResultBeforeKinds {
  std::optional<T> value;
  std::string error;
};
static_assert(sizeof(Result<ExecPlan>) == sizeof(ResultBeforeKinds<ExecPlan>));
static_assert(sizeof(Result<ExitStatus>) == sizeof(ResultBeforeKinds<ExitStatus>));
static_assert(sizeof(Status) == sizeof(std::optional<std::string>));

Result<int> fails(ErrorKind kind) { return Error{"what; what to do", kind}; }

Status propagates(ErrorKind kind) {
  Result<int> inner = fails(kind);
  if (!inner.ok()) return inner.failure().prefixed("outer: ");
  return {};
}

TEST(ErrorKinds, DefaultIsHostFailure) {
  const Status status = Error{"cannot read /x: EIO"};
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.kind(), ErrorKind::host_failure);
  EXPECT_EQ(status.error(), "cannot read /x: EIO");
  EXPECT_EQ(kDefaultErrorKind, ErrorKind::host_failure);
}

TEST(ErrorKinds, EveryKindSurvivesStatusResultAndPropagation) {
  for (int i = 0; i < kErrorKindCount; ++i) {
    const auto kind = static_cast<ErrorKind>(i);
    const Result<int> result = fails(kind);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.kind(), kind);
    EXPECT_EQ(result.error(), "what; what to do");
    EXPECT_EQ(result.status().kind(), kind);
    EXPECT_EQ(result.status().error(), "what; what to do");
    const Status outer = propagates(kind);
    EXPECT_EQ(outer.kind(), kind) << error_kind_name(kind);
    EXPECT_EQ(outer.error(), "outer: what; what to do");
    const Result<std::string> converted = outer.failure();
    EXPECT_EQ(converted.kind(), kind);
    EXPECT_EQ(converted.error(), outer.error());
  }
}

TEST(ErrorKinds, AsRelabelsAndKeepsTheMessage) {
  const Result<int> result = fails(ErrorKind::invalid_input);
  const Error relabelled = result.failure().as(ErrorKind::backend_failure);
  EXPECT_EQ(relabelled.kind, ErrorKind::backend_failure);
  EXPECT_EQ(relabelled.message, "what; what to do");
  const Error copy = relabelled;
  EXPECT_EQ(copy.prefixed("p: ").message, "p: what; what to do");
  EXPECT_EQ(copy.as(ErrorKind::refused).kind, ErrorKind::refused);
  EXPECT_EQ(copy.kind, ErrorKind::backend_failure);  // the const& overloads copy
}

TEST(ErrorKinds, NamesAreTheBoundaryNames) {
  EXPECT_EQ(error_kind_name(ErrorKind::invalid_input), "invalid_input");
  EXPECT_EQ(error_kind_name(ErrorKind::refused), "refused");
  EXPECT_EQ(error_kind_name(ErrorKind::unavailable), "unavailable");
  EXPECT_EQ(error_kind_name(ErrorKind::backend_failure), "backend_failure");
  EXPECT_EQ(error_kind_name(ErrorKind::host_failure), "host_failure");
  EXPECT_EQ(error_kind_name(ErrorKind::timed_out), "timed_out");
  EXPECT_EQ(error_kind_name(ErrorKind::cancelled), "cancelled");
}

// A message may hold any bytes, including ones that look like the kind tag.
TEST(ErrorKinds, MessagesAreKeptByteForByte) {
  const std::string odd = std::string("\x1e") + "3 starts like a tag";
  const Status status = Error{odd, ErrorKind::refused};
  EXPECT_EQ(status.error(), odd);
  EXPECT_EQ(status.kind(), ErrorKind::refused);
  const Status empty = Error{"", ErrorKind::cancelled};
  EXPECT_EQ(empty.error(), "");
  EXPECT_EQ(empty.kind(), ErrorKind::cancelled);
}

}  // namespace
}  // namespace sbx
