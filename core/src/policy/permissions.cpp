// The permission algebra: widen and approve as pointwise max/min over the lexical path model of
// permissions.hpp. Why pointwise over the union of entry paths is exact: for any path p, the
// most specific path P of the union that contains p is contained in (or equal to) the entry
// that decides p on either side, and no entry of either side lies strictly between P and p, so
// each side decides P exactly as it decides p. Giving P the combined access therefore gives
// every such p the combined access.
#include "sbx/core/permissions.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sbx {
namespace {

// A filesystem as the algebra sees it: entries only; a non-restricted kind becomes
// {":root": write} (it gives write everywhere).
struct Side {
  const Policy* policy;
  std::vector<PolicyEntry> entries;
};

Side side_of(const Policy& policy) {
  Side side{&policy, policy.filesystem.entries};
  if (policy.filesystem.kind != FilesystemKind::kRestricted) {
    side.entries = {PolicyEntry{":root", "", Access::kWrite}};
  }
  return side;
}

std::string_view canonical(std::string_view path) { return path == "/" ? ":root" : path; }

int rank(Access access) {
  switch (access) {
    case Access::kDeny:
      return 0;
    case Access::kRead:
      return 1;
    case Access::kWrite:
      return 2;
  }
  return 0;
}

int rank(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kRestricted:
      return 0;
    case NetworkMode::kProxy:
      return 1;
    case NetworkMode::kEnabled:
      return 2;
  }
  return 0;
}

// Ties at one path: deny > write > read.
int tie_rank(Access access) { return access == Access::kDeny ? 3 : rank(access); }

// The entry that decides `path` on one side: most specific containing path wins, ties
// deny > write > read. nullopt: no entry contains it (an implicit deny).
std::optional<Access> decider(const std::vector<PolicyEntry>& entries, std::string_view path) {
  std::optional<Access> best;
  std::size_t best_length = 0;
  for (const PolicyEntry& entry : entries) {
    if (entry.path.empty() || !lexically_within(path, entry.path)) continue;
    const std::size_t length = canonical(entry.path) == ":root" ? 0 : entry.path.size() + 1;
    const bool tie_wins = best && length == best_length && tie_rank(entry.access) > tie_rank(*best);
    if (!best || length > best_length || tie_wins) {
      best = entry.access;
      best_length = length;
    }
  }
  return best;
}

// Entry paths of both sides, a's first, each once (":root" and "/" merged).
std::vector<std::string> union_paths(const Side& a, const Side& b) {
  std::vector<std::string> paths;
  for (const Side* side : {&a, &b}) {
    for (const PolicyEntry& entry : side->entries) {
      if (entry.path.empty()) continue;
      const std::string path(canonical(entry.path));
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
  }
  return paths;
}

template <typename T>
std::vector<T> united(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> out = a;
  for (const T& item : b) {
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return out;
}

template <typename T>
std::vector<T> intersected(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> out;
  for (const T& item : a) {
    if (std::find(b.begin(), b.end(), item) != b.end()) out.push_back(item);
  }
  return out;
}

std::vector<std::string> deny_globs(const Policy& policy) {
  std::vector<std::string> globs;
  for (const PolicyEntry& entry : policy.filesystem.entries) {
    if (!entry.glob.empty()) globs.push_back(entry.glob);
  }
  return globs;
}

void append_globs(std::vector<PolicyEntry>& entries, const Policy& a, const Policy& b) {
  for (const std::string& glob : united(deny_globs(a), deny_globs(b))) {
    entries.push_back(PolicyEntry{"", glob, Access::kDeny});
  }
}

bool has_grant(const std::vector<PolicyEntry>& entries) {
  return std::any_of(entries.begin(), entries.end(),
                     [](const PolicyEntry& e) { return e.access != Access::kDeny; });
}

// Only the proxy reads ports and domain lists (validate_policy rejects them elsewhere).
NetworkPolicy without_proxy_lists(NetworkPolicy network) {
  if (network.mode != NetworkMode::kProxy) {
    network.proxy_ports.clear();
    network.allowed_domains.clear();
    network.denied_domains.clear();
  }
  return network;
}

NetworkPolicy widen_network(const NetworkPolicy& a, const NetworkPolicy& b) {
  NetworkPolicy out;
  out.mode = rank(a.mode) >= rank(b.mode) ? a.mode : b.mode;
  out.proxy_ports = united(a.proxy_ports, b.proxy_ports);
  out.allowed_domains = united(a.allowed_domains, b.allowed_domains);
  out.denied_domains = united(a.denied_domains, b.denied_domains);
  out.unix_sockets = united(a.unix_sockets, b.unix_sockets);
  out.allow_local_binding = a.allow_local_binding || b.allow_local_binding;
  return without_proxy_lists(out);
}

// Lists of a side that is not in proxy mode do not restrict the proxy: only a proxy side's
// lists take part in the intersection.
NetworkPolicy approve_network(const NetworkPolicy& r, const NetworkPolicy& g) {
  NetworkPolicy out;
  out.mode = rank(r.mode) <= rank(g.mode) ? r.mode : g.mode;
  out.unix_sockets = intersected(r.unix_sockets, g.unix_sockets);
  out.allow_local_binding = r.allow_local_binding && g.allow_local_binding;
  if (out.mode == NetworkMode::kProxy) {
    const bool both = r.mode == NetworkMode::kProxy && g.mode == NetworkMode::kProxy;
    const NetworkPolicy& proxy_side = r.mode == NetworkMode::kProxy ? r : g;
    out.proxy_ports = both ? intersected(r.proxy_ports, g.proxy_ports) : proxy_side.proxy_ports;
    out.allowed_domains =
        both ? intersected(r.allowed_domains, g.allowed_domains) : proxy_side.allowed_domains;
    out.denied_domains =
        both ? united(r.denied_domains, g.denied_domains) : proxy_side.denied_domains;
  }
  return out;
}

std::string describe(const PolicyEntry& entry) {
  return "\"" + entry.path + "\" (" + std::string(to_string(entry.access)) + ")";
}

// Why approve() did not keep a granted entry as granted; "" when it kept it unchanged.
std::string drop_reason(const PolicyEntry& entry, std::optional<Access> requested) {
  if (entry.access == Access::kDeny || !entry.glob.empty()) return "";
  if (!requested) return describe(entry) + ": dropped, not inside the request";
  if (*requested == Access::kDeny) return describe(entry) + ": dropped, the request denies it";
  if (rank(*requested) < rank(entry.access)) {
    return describe(entry) + ": narrowed to read, the request asked only to read it";
  }
  return "";
}

// Both inputs validated and normalised (e.g. ":cwd/src/" becomes ":cwd/src"), so equal paths
// are spelled equally.
Result<std::pair<Policy, Policy>> valid_inputs(const Policy& a, const Policy& b,
                                               std::string_view what_a, std::string_view what_b) {
  Result<Policy> first = validate_policy(a);
  if (!first.ok()) return first.failure().prefixed(std::string(what_a) + " policy is invalid: ");
  Result<Policy> second = validate_policy(b);
  if (!second.ok()) return second.failure().prefixed(std::string(what_b) + " policy is invalid: ");
  return std::pair{std::move(*first), std::move(*second)};
}

Result<Policy> finish(Policy out, std::string_view operation) {
  Result<Policy> valid = validate_policy(std::move(out));
  if (!valid.ok()) {
    return Error{"the " + std::string(operation) + " result does not validate (" + valid.error() +
                 "); please report this as a bug in sbx"};
  }
  return valid;
}

}  // namespace

bool lexically_within(std::string_view path, std::string_view ancestor) {
  path = canonical(path);
  ancestor = canonical(ancestor);
  if (ancestor == ":root" || path == ancestor) return true;
  return path.size() > ancestor.size() && path.substr(0, ancestor.size()) == ancestor &&
         (path[ancestor.size()] == '/' || ancestor.back() == '/');
}

Access granted_access(const Policy& policy, std::string_view path) {
  return decider(side_of(policy).entries, path).value_or(Access::kDeny);
}

bool has_deny_entries(const Policy& policy) {
  if (policy.filesystem.kind != FilesystemKind::kRestricted) return false;
  const auto& entries = policy.filesystem.entries;
  return std::any_of(entries.begin(), entries.end(),
                     [](const PolicyEntry& e) { return e.access == Access::kDeny; });
}

Result<Policy> widen(const Policy& base_in, const Policy& extra_in) {
  auto inputs = valid_inputs(base_in, extra_in, "the base", "the extra");
  if (!inputs.ok()) return inputs.failure();
  const Policy& base = inputs->first;
  const Policy& extra = inputs->second;
  Policy out;
  out.filesystem.protected_names =
      united(base.filesystem.protected_names, extra.filesystem.protected_names);
  out.network = widen_network(base.network, extra.network);
  const bool restricted = base.filesystem.kind == FilesystemKind::kRestricted &&
                          extra.filesystem.kind == FilesystemKind::kRestricted;
  if (!restricted && !has_deny_entries(base) && !has_deny_entries(extra)) {
    // Both unrestricted-like and no deny to keep: the wider kind.
    const bool unrestricted = base.filesystem.kind == FilesystemKind::kUnrestricted ||
                              extra.filesystem.kind == FilesystemKind::kUnrestricted;
    out.filesystem.kind = unrestricted ? FilesystemKind::kUnrestricted : FilesystemKind::kExternal;
    return finish(std::move(out), "widen");
  }
  const Side a = side_of(base);
  const Side b = side_of(extra);
  for (const std::string& path : union_paths(a, b)) {
    const std::optional<Access> left = decider(a.entries, path);
    const std::optional<Access> right = decider(b.entries, path);
    // An explicit deny of either side survives: widening must never lift a deny.
    const bool denied = left == Access::kDeny || right == Access::kDeny;
    const Access higher = rank(left.value_or(Access::kDeny)) >= rank(right.value_or(Access::kDeny))
                              ? left.value_or(Access::kDeny)
                              : right.value_or(Access::kDeny);
    const Access access = denied ? Access::kDeny : higher;
    out.filesystem.entries.push_back(PolicyEntry{path, "", access});
  }
  append_globs(out.filesystem.entries, base, extra);
  return finish(std::move(out), "widen");
}

Result<Approval> approve(const Policy& requested_in, const Policy& granted_in) {
  auto inputs = valid_inputs(requested_in, granted_in, "the requested", "the granted");
  if (!inputs.ok()) return inputs.failure();
  const Policy& requested = inputs->first;
  const Policy& granted = inputs->second;
  Approval approval;
  Policy out;
  out.filesystem.protected_names =
      united(requested.filesystem.protected_names, granted.filesystem.protected_names);
  out.network = approve_network(requested.network, granted.network);
  const Side r = side_of(requested);
  const Side g = side_of(granted);
  const bool restricted = requested.filesystem.kind == FilesystemKind::kRestricted ||
                          granted.filesystem.kind == FilesystemKind::kRestricted;
  if (!restricted) {
    const bool external = requested.filesystem.kind == FilesystemKind::kExternal ||
                          granted.filesystem.kind == FilesystemKind::kExternal;
    out.filesystem.kind = external ? FilesystemKind::kExternal : FilesystemKind::kUnrestricted;
  } else {
    for (const PolicyEntry& entry : granted.filesystem.entries) {
      std::string why = drop_reason(entry, decider(r.entries, entry.path));
      if (!why.empty()) approval.dropped.push_back(std::move(why));
    }
    for (const std::string& path : union_paths(r, g)) {
      const std::optional<Access> left = decider(r.entries, path);
      const std::optional<Access> right = decider(g.entries, path);
      if (left == Access::kDeny || right == Access::kDeny) {
        // An explicit deny of either side stays explicit (it also keeps the result from ever
        // running unsandboxed).
        out.filesystem.entries.push_back(PolicyEntry{path, "", Access::kDeny});
      } else if (left && right) {
        const Access access = rank(*left) <= rank(*right) ? *left : *right;
        out.filesystem.entries.push_back(PolicyEntry{path, "", access});
      }
      // Otherwise one side has no entry containing the path: an implicit deny, and (see the
      // file comment) no ancestor in the result grants anything, so leaving it out is exact.
    }
    append_globs(out.filesystem.entries, requested, granted);
  }
  const bool grants_something =
      out.filesystem.kind != FilesystemKind::kRestricted || has_grant(out.filesystem.entries) ||
      out.network.mode != NetworkMode::kRestricted || !out.network.unix_sockets.empty() ||
      out.network.allow_local_binding;
  if (!grants_something) return approval;  // nothing recorded
  Result<Policy> valid = finish(std::move(out), "approve");
  if (!valid.ok()) return valid.failure();
  approval.policy = std::move(*valid);
  return approval;
}

Result<Policy> record_approval(const Policy& session, const Approval& approval) {
  // "Nothing recorded" neither clears earlier grants nor adds anything.
  if (!approval.policy) return session;
  return widen(session, *approval.policy);
}

namespace {

bool network_within(const NetworkPolicy& a, const NetworkPolicy& b) {
  auto subset = [](const auto& x, const auto& y) { return intersected(x, y).size() == x.size(); };
  if (rank(a.mode) > rank(b.mode)) return false;
  if (!subset(a.unix_sockets, b.unix_sockets)) return false;
  if (a.allow_local_binding && !b.allow_local_binding) return false;
  if (a.mode == NetworkMode::kProxy && b.mode == NetworkMode::kProxy) {
    return subset(a.proxy_ports, b.proxy_ports) && subset(a.allowed_domains, b.allowed_domains) &&
           subset(b.denied_domains, a.denied_domains);
  }
  return true;
}

bool contains_all(const std::vector<std::string>& big, const std::vector<std::string>& small) {
  return intersected(small, big).size() == small.size();
}

}  // namespace

bool within(const Policy& a, const Policy& b) {
  const Side sa = side_of(a);
  const Side sb = side_of(b);
  for (const std::string& path : union_paths(sa, sb)) {
    if (rank(granted_access(a, path)) > rank(granted_access(b, path))) return false;
  }
  // Paths outside every entry are denied on both sides; ":root" covers the rest.
  if (rank(granted_access(a, ":root")) > rank(granted_access(b, ":root"))) return false;
  return contains_all(deny_globs(a), deny_globs(b)) &&
         contains_all(a.filesystem.protected_names, b.filesystem.protected_names) &&
         network_within(a.network, b.network);
}

bool equivalent(const Policy& a, const Policy& b) {
  return a.filesystem.kind == b.filesystem.kind && within(a, b) && within(b, a);
}

}  // namespace sbx
