// The model-facing description of a sandbox policy (`sbx context`): what an agent's model should
// know about the limits its commands run under. It describes what will hold for a run: whether
// sbx sandboxes the command at all (question 1) and, when the front end asked this host
// (question 2), the one backend that will run it, with that backend's limits only; without a
// backend, each backend's differences are labelled, so the text is the same on every host.
// It is advice to the model, never a security boundary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/report_json.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// The facts the description is built from, derived from a ResolvedPolicy. Every list keeps the
// policy's order (rules are sorted parents-first by resolution).
struct SandboxContext {
  // "read-only" (restricted, nothing writable), "workspace-write" (restricted, some writable
  // roots), "full-access" (filesystem unrestricted), "external-sandbox" (an outer sandbox owns
  // the filesystem).
  std::string mode;
  std::string cwd;
  bool reads_restricted = false;            // reads limited to readable_roots
  std::vector<std::string> readable_roots;  // only when reads_restricted
  bool platform_defaults_readable = false;  // ":minimal" granted (only with reads_restricted)
  std::vector<std::string> writable_roots;
  std::vector<std::string> read_only_paths;  // inside writable roots: read rules, protected
  std::vector<std::string> not_creatable;    // protected names that do not exist yet
  std::vector<std::string> denied_paths;     // no read, no write
  std::vector<std::string> denied_globs;
  NetworkPolicy network;
  // The administrator locked runs without a sandbox (settings.hpp, lock allow_unsandboxed):
  // the model is told never to retry a command unsandboxed. Not derived from the policy; the
  // front end sets it from the settings.
  bool unsandboxed_locked = false;
  // Question 1 (should_sandbox): false when sbx runs the command without a sandbox (nothing of
  // the policy is enforced by sbx), with the decision's reason. describe_sandbox starts from
  // the filesystem kind; the front end sets both from the real decision.
  bool sandboxed = true;
  std::string unsandboxed_reason;
  // Question 2, when the front end asked this host: the backend that will run the command, so
  // only its limits are described; "" = any host (every backend's differences labelled).
  std::string backend;
  // A sandbox is needed and no backend here can enforce the policy: every run is refused.
  std::string no_backend_reason;
  // The policy's ":caches": the tools pointed at the project's own cache (caches.hpp).
  std::vector<std::string> cache_tools;
  // The backend that runs the command mounts the user's caches copy-on-write (caches.hpp
  // CopyOnWrite) rather than pointing every tool at the project's own cache.
  bool caches_copy_on_write = false;
};

SandboxContext describe_sandbox(const ResolvedPolicy& policy);

// What the network rules do not hold to, as plain sentences (`context` and `explain`, text and
// JSON): in network mode restricted, which backend gives the command a loopback of its own
// (bwrap: its private network namespace) and which refuses every inet socket (Landlock: the
// host's namespace); in network mode proxy, that under Landlock the proxy's TCP port is allowed
// on every address (port rules are address-blind), and, when the policy names proxy_ports
// itself, that its runs are refused and why; with the network enabled, that the host's unix
// sockets stay closed unless listed (only backends with unix_socket_block run it). With
// `backend` (the one that will run it), only what holds for that backend; "" = every backend in
// `considered` (all when empty), each labelled. Pure.
std::vector<std::string> network_limits(const NetworkPolicy& network, std::string_view backend = "",
                                        const std::vector<std::string>& considered = {});

// Stable plain text for a system prompt. Every value (path, glob, domain) is quoted with
// control, bidi and invalid bytes escaped, so a crafted path cannot add lines to the text.
std::string context_to_text(const SandboxContext& context);

// The same facts as JSON:
// {"mode","cwd","filesystem":{"reads":"all"|"restricted"|"unrestricted"|"external",
//   "readable_roots","platform_defaults_readable","writable_roots","read_only_paths",
//   "not_creatable","denied_paths","denied_globs"},
//  "network":{"mode","allowed_domains","denied_domains","unix_sockets","allow_local_binding",
//   "limits":[network_limits(); none with the network enabled in an unsandboxed mode]},
//  "unsandboxed_runs":"allowed"|"locked","sandboxed":bool,"unsandboxed_reason":string|null,
//  "backend":string|null (null = described for any host),"no_backend_reason":string|null,
//  "caches":[tool names],"caches_copy_on_write":bool}
// Strings are valid UTF-8 (invalid bytes become U+FFFD); JSON escaping does the rest.
std::string context_to_json(const SandboxContext& context, JsonStyle style);

}  // namespace sbx
