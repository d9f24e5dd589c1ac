// network_limits (core/include/sbx/core/context.hpp): which backends' loopback sentences a
// restricted policy gets. With the backend that runs it, only that one's; without one, only the
// backends that were considered (`--backends landlock,seatbelt` says nothing of bwrap).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sbx/core/context.hpp"

namespace sbx {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST(NetworkLimits, RestrictedNamesOnlyTheBackendsThatCouldRunIt) {
  const NetworkPolicy restricted;  // restricted is the default mode
  ASSERT_EQ(restricted.mode, NetworkMode::kRestricted);

  const std::string every = joined(network_limits(restricted));
  EXPECT_NE(every.find("under bwrap"), std::string::npos) << every;
  EXPECT_NE(every.find("under Landlock"), std::string::npos) << every;
  EXPECT_EQ(joined(network_limits(restricted, "", {"bwrap", "landlock"})), every);

  const std::string landlock_only =
      joined(network_limits(restricted, "", {"landlock", "seatbelt"}));
  EXPECT_EQ(landlock_only, "Under Landlock no network socket can be created, loopback included.\n");

  const std::string bwrap_only = joined(network_limits(restricted, "", {"bwrap"}));
  EXPECT_NE(bwrap_only.find("Under bwrap each command gets a network namespace"), std::string::npos)
      << bwrap_only;
  EXPECT_EQ(bwrap_only.find("Landlock"), std::string::npos) << bwrap_only;

  EXPECT_TRUE(network_limits(restricted, "", {"seatbelt", "windows"}).empty());
  // The backend that runs it wins over the list.
  EXPECT_EQ(joined(network_limits(restricted, "landlock", {"bwrap"})),
            "No network socket can be created, loopback included.\n");
}

TEST(NetworkLimits, ProxyNamesLandlocksPortGapOnlyWhereLandlockMayRunIt) {
  NetworkPolicy proxy;
  proxy.mode = NetworkMode::kProxy;
  EXPECT_NE(joined(network_limits(proxy)).find("Under Landlock, a TCP port rule"),
            std::string::npos);
  EXPECT_NE(joined(network_limits(proxy, "", {"landlock"})).find("Under Landlock"),
            std::string::npos);
  EXPECT_TRUE(network_limits(proxy, "", {"bwrap"}).empty());
  EXPECT_TRUE(network_limits(proxy, "bwrap").empty());
}

}  // namespace
}  // namespace sbx
