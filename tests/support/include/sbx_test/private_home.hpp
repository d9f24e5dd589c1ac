// Homes for runs that keep sbx's state below HOME. sbx refuses a state location below a
// directory others may write (sbx/sdk/private_state.hpp why_shared_path; issue #32), so a
// TempDir in /tmp as HOME has no state directory: a test whose run needs one (the proxy, bwrap's
// mount registry) as a user with no runtime directory (user 65534) uses these instead.
#pragma once

#include <string>

#include "sbx_test/identity.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx::test {

// The parent for a TempDir that is a HOME or XDG_CACHE_HOME: as root /var/lib/sbx-test-homes,
// root's and 0755 (made on first use), so that user 65534 reaches a home given to it there and
// no one else can add or rename one; as another user ~/.sbx-test-homes (0700) in their home
// from passwd. Throws std::runtime_error when it cannot be made or is not such a directory.
const std::string& private_parent();

// A scratch HOME for one test in private_parent(), given to `who` (give_to).
class PrivateHome : public TempDir {
 public:
  explicit PrivateHome(Identity who) : TempDir(private_parent()) { give_to(who, path()); }
};

}  // namespace sbx::test
