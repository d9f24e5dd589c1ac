// The permission algebra: widen a policy when one command asks for more, and approve
// (intersect) what a person grants against what was requested. Pure: no filesystem access, no
// resolution.
//
// The model. Both operations work on the policy's own spelling of paths, lexically: ":root" (or
// "/") contains every path; "A/B" lies inside "A" (":cwd/src" inside ":cwd", "~/x/y" inside
// "~/x", "/a/b" inside "/a"); nothing else contains anything else. So ":cwd" and the absolute
// path it will resolve to are unrelated here. That is deliberately fail-closed: a grant spelled
// "/home/me/proj" is not seen inside a request spelled ":cwd", so approve() drops it rather than
// guessing. The access a policy gives a path is decided as by resolution: the most specific
// entry containing it wins, on a tie deny > write > read, no entry = deny; a filesystem kind
// other than restricted gives write everywhere. Deny globs cannot be evaluated lexically: they
// are never dropped by either operation.
//
// Order on access: deny < read < write. Network modes: restricted < proxy < enabled.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// True if the lexical path `path` lies inside `ancestor` (or is it). Both spelled as in a policy
// entry (special, absolute or "~/..."); "/" and ":root" are the same.
bool lexically_within(std::string_view path, std::string_view ancestor);

// The access `policy` gives the lexical path `path` (see the model above). Deny globs are not
// consulted.
Access granted_access(const Policy& policy, std::string_view path);

// True if the policy has a deny entry or a deny glob. Such a policy never runs unsandboxed,
// whatever the preference or escalation (should_sandbox refuses kForbid for it).
bool has_deny_entries(const Policy& policy);

// One command asks for more. The result gives every path the higher access of the two, except
// that an explicit deny of either side is kept: widening never removes a deny. Entries: one per
// path, base's paths first, then extra's new ones (order kept, duplicates merged); deny globs
// and protected names: union, order kept. Network: enabled if either side enables it, else proxy
// if either uses the proxy (ports and domain lists united), else restricted; unix sockets
// united, local binding if either allows it. Filesystem kind: restricted if both are; otherwise
// the wider kind (unrestricted > external), except that a side with deny entries turns the other
// side's unrestricted/external filesystem into {":root": write} so the denies survive.
// Error only if either policy is invalid (validate_policy) or the result does not validate.
Result<Policy> widen(const Policy& base, const Policy& extra);

// What approve() recorded. `policy` is nullopt when the intersection grants nothing (no
// readable or writable path, no network, no unix socket): "nothing recorded". That is not a
// refusal of the command and not a reason to forget earlier grants; see record_approval().
struct Approval {
  std::optional<Policy> policy;
  std::vector<std::string> dropped;  // one line per granted entry that was not kept, and why
};

// A person grants `granted` in answer to `requested`. The result gives every path the lower
// access of the two (the intersection) and keeps every explicit deny and deny glob of both sides,
// so it lies within the request and within the grant. A granted entry outside the request (or
// above what it asked for) is narrowed or dropped, with a line in `dropped`. Network: enabled
// only if both enable it; proxy if both allow at least the proxy (ports, allowed domains and
// unix sockets intersected, denied domains united); otherwise restricted. Filesystem kind:
// restricted unless both are non-restricted (then the narrower: external < unrestricted).
// Protected names: union. Error only for an invalid input.
Result<Approval> approve(const Policy& requested, const Policy& granted);

// The grants of a session after an approval: widen(session, *approval.policy), or the session
// unchanged when nothing was recorded.
Result<Policy> record_approval(const Policy& session, const Approval& approval);

// Lexical comparison over the union of both policies' entry paths, which decides the access
// of every path (see the model). within(a, b): a gives no path more than b does, a keeps every
// deny glob and protected name of b, and a's network is no wider than b's.
bool within(const Policy& a, const Policy& b);
// Same access everywhere, same deny globs, protected names, kind and network (as sets).
bool equivalent(const Policy& a, const Policy& b);

}  // namespace sbx
