// Placeholders for a closed 0, 1 or 2 while sbx works (core/src/run/standard_fds.hpp): nothing
// sbx opens meanwhile takes the number, the number still counts as closed for the command, and
// the embedding program gets its table back as it left it.
#include "run/standard_fds.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>

namespace sbx {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Closes fd for the test's life and puts the original back afterwards.
class ClosedFor {
 public:
  explicit ClosedFor(int fd) : fd_(fd), saved_(::fcntl(fd, F_DUPFD_CLOEXEC, 10)) { ::close(fd_); }
  ~ClosedFor() {
    if (saved_ >= 0) {
      ::dup2(saved_, fd_);
      ::close(saved_);
    }
  }
  ClosedFor(const ClosedFor&) = delete;
  ClosedFor& operator=(const ClosedFor&) = delete;

 private:
  int fd_;
  int saved_;
};

TEST(StandardDescriptors, AClosedOneIsHeldWhileSbxWorksAndStillCountsAsClosed) {
  const ClosedFor closed(0);
  ASSERT_FALSE(is_open(0));
  EXPECT_FALSE(standard_fd_is_callers(0));
  {
    const StandardDescriptorHold hold;
    EXPECT_TRUE(is_open(0)) << "nothing holds 0: the next descriptor sbx opens would take it";
    EXPECT_FALSE(standard_fd_is_callers(0)) << "the placeholder would become the command's stdin";
    EXPECT_TRUE(standard_fd_is_callers(1));
    const int opened = ::open("/", O_PATH | O_CLOEXEC);
    EXPECT_GT(opened, 2);
    ::close(opened);
    {
      const StandardDescriptorHold nested;
      EXPECT_FALSE(standard_fd_is_callers(0));
    }
    EXPECT_TRUE(is_open(0)) << "an inner hold's end released the outer one's placeholder";
  }
  EXPECT_FALSE(is_open(0)) << "the embedding program's 0 was left taken";
}

TEST(StandardDescriptors, ADescriptorTheProgramPutThereMeanwhileIsItsOwnAndKept) {
  const ClosedFor closed(0);
  std::optional<StandardDescriptorHold> hold;
  hold.emplace();
  // The embedding program puts a descriptor of its own at 0 during the hold (dup2 clears
  // close-on-exec): it is the program's stdin now, and the end of the hold leaves it.
  const int mine = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(mine, 0);
  ASSERT_EQ(::dup2(mine, 0), 0);
  ::close(mine);
  hold.reset();
  EXPECT_TRUE(is_open(0));
  EXPECT_TRUE(standard_fd_is_callers(0));
  ::close(0);
}

TEST(StandardDescriptors, OpenOnesAreLeftAlone) {
  const int before = ::fcntl(1, F_GETFD);
  {
    const StandardDescriptorHold hold;
    EXPECT_TRUE(standard_fd_is_callers(1));
    EXPECT_EQ(::fcntl(1, F_GETFD), before);
  }
  EXPECT_TRUE(is_open(1));
  EXPECT_FALSE(standard_fd_is_callers(3)) << "only 0, 1 and 2 are standard descriptors";
}

}  // namespace
}  // namespace sbx
