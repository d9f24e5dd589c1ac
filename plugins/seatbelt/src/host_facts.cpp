// The Mac host facts the profile needs at transform time (profile.hpp): only the per-user cache
// directory, which is not an environment variable but a confstr() value.
#include "sbx/seatbelt/profile.hpp"

#if defined(__APPLE__)
#include <unistd.h>

#include <array>
#endif

namespace sbx::seatbelt {

MacHostFacts gather_mac_host_facts() {
  MacHostFacts facts;
#if defined(__APPLE__)
  // confstr returns the size the value needs, NUL included; 0 when it is not available.
  std::array<char, 1024> buffer{};
  const std::size_t needed = confstr(_CS_DARWIN_USER_CACHE_DIR, buffer.data(), buffer.size());
  if (needed > 1 && needed <= buffer.size())
    facts.darwin_user_cache_dir.assign(buffer.data(), needed - 1);
#endif
  return facts;
}

}  // namespace sbx::seatbelt
