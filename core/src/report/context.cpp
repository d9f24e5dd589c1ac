// The model-facing description (see context.hpp). The wording is part of the contract: agents
// put it into prompts and golden tests pin it, so change it deliberately.
#include "sbx/core/context.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "report/json_render.hpp"
#include "report/text_escape.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/proxy.hpp"

namespace sbx {
namespace {

namespace json = boost::json;
using report::string_array;

bool within_any(std::string_view path, const std::vector<std::string>& roots, bool strictly) {
  for (const std::string& root : roots) {
    if (path_is_within(path, root) && (!strictly || path != root)) return true;
  }
  return false;
}

// Readable roots when reads are restricted: the top-most read/write rules (a rule below another
// readable rule adds nothing a model needs to know).
std::vector<std::string> top_readable_roots(const ResolvedPolicy& policy) {
  std::vector<std::string> roots;
  for (const PathRule& rule : policy.rules) {
    if (rule.access != Access::kDeny && !within_any(rule.path, roots, false))
      roots.push_back(rule.path);
  }
  return roots;
}

void describe_restricted(const ResolvedPolicy& policy, SandboxContext& out) {
  out.writable_roots = writable_roots(policy);
  out.mode = out.writable_roots.empty() ? "read-only" : "workspace-write";
  out.reads_restricted = reads_restricted(policy);
  if (out.reads_restricted) {
    out.readable_roots = top_readable_roots(policy);
    out.platform_defaults_readable = policy.platform_defaults_readable;
  }
  for (const PathRule& rule : policy.rules) {
    if (rule.access == Access::kRead && within_any(rule.path, out.writable_roots, true))
      out.read_only_paths.push_back(rule.path);
    if (rule.access == Access::kDeny && rule.path != "/") out.denied_paths.push_back(rule.path);
  }
  for (const ProtectedPath& path : policy.protected_paths) {
    std::vector<std::string>& list = path.exists ? out.read_only_paths : out.not_creatable;
    // sbx's install is both a read rule and a protected path (resolve.hpp): list it once.
    if (std::find(list.begin(), list.end(), path.path) == list.end()) list.push_back(path.path);
  }
  out.denied_globs = policy.deny_globs;
}

// "  - <value>" lines, each value quoted and escaped.
void append_list(std::string_view heading, const std::vector<std::string>& items,
                 std::string_view prefix, std::string& out) {
  if (items.empty()) return;
  if (!heading.empty()) {
    out += heading;
    out += '\n';
  }
  for (const std::string& item : items) {
    out += "  - ";
    out += prefix;
    out += report::quote_for_text(item);
    out += '\n';
  }
}

void append_reads(const SandboxContext& context, std::string& out) {
  if (!context.reads_restricted) {
    out += "- Reading is allowed everywhere except the denied paths below.\n";
    return;
  }
  append_list("- Reading is allowed only in:", context.readable_roots, "", out);
  if (context.readable_roots.empty()) out += "- Reading is not allowed anywhere.\n";
  if (context.platform_defaults_readable)
    out += "- The system files programs need to start are also readable.\n";
}

void append_filesystem(const SandboxContext& context, std::string& out) {
  if (context.mode == "full-access") {
    out += "Filesystem: no restrictions.\n";
    return;
  }
  if (context.mode == "external-sandbox") {
    out += "Filesystem: limited by an outer sandbox that is not described here.\n";
    return;
  }
  out += "Filesystem:\n";
  append_reads(context, out);
  if (context.writable_roots.empty()) out += "- Writing is not allowed anywhere.\n";
  append_list("- Writing is allowed only in:", context.writable_roots, "", out);
  append_list("- Read-only even inside those:", context.read_only_paths, "", out);
  append_list("- Must not be created:", context.not_creatable, "", out);
  if (!context.denied_paths.empty() || !context.denied_globs.empty()) {
    out += "- Denied (no reading or writing):\n";
    append_list("", context.denied_paths, "", out);
    append_list("", context.denied_globs, "paths matching ", out);
  }
}

bool sandboxed(const SandboxContext& context) { return context.sandboxed; }

// sbx's own sentences (a decision's reason, a backend's name) may carry a path or a plugin's
// words: escaped like a quoted value, without the quotes, so they cannot add lines either.
std::string_view without_final_stop(std::string_view text) {
  return text.ends_with('.') ? text.substr(0, text.size() - 1) : text;
}

std::string inline_text(std::string_view text) {
  const std::string quoted = report::quote_for_text(text);
  return quoted.substr(1, quoted.size() - 2);
}

// The sentence for a policy whose command runs without sbx's sandbox although the network is
// not enabled: an outer sandbox's decision, or nobody's (the caller forbade a sandbox).
std::string unsandboxed_network_sentence(const SandboxContext& context) {
  if (context.mode == "external-sandbox")
    return "Network: not restricted by sbx; an outer sandbox, not described here, decides.\n";
  return "Network: not restricted (sbx runs these commands without a sandbox).\n";
}

// The sentence for a policy whose command sbx does not sandbox (an external sandbox owns it):
// the policy's network mode is the outer sandbox's to make true, not sbx's (issue #33 point 6:
// the model was told "Network: blocked" for a command that ran with the network open).
constexpr std::string_view kOuterSandboxNetwork =
    "Not enforced by sbx: the command runs without sbx's sandbox (an outer sandbox owns it), so "
    "whether the network is reachable is the outer sandbox's decision.";

// With no sandbox (full-access, an external sandbox) nothing of network_limits holds: with the
// network enabled the host's unix sockets are as reachable as everything else; otherwise only
// the outer sandbox can block anything.
std::vector<std::string> context_network_limits(const SandboxContext& context) {
  if (sandboxed(context)) return network_limits(context.network, context.backend);
  if (context.network.mode == NetworkMode::kEnabled) return {};
  if (context.mode != "external-sandbox") return {};
  return {std::string(kOuterSandboxNetwork)};
}

void append_network(const SandboxContext& context, std::string& out) {
  const NetworkPolicy& network = context.network;
  if (!sandboxed(context) && network.mode != NetworkMode::kEnabled) {
    out += unsandboxed_network_sentence(context);
    return;
  }
  switch (network.mode) {
    case NetworkMode::kEnabled:
      // Enabled means the internet, not the host's local services (the limit says so).
      out += sandboxed(context) ? "Network: enabled (the internet and other machines).\n"
                                : "Network: unrestricted.\n";
      for (const std::string& limit : context_network_limits(context)) out += "- " + limit + "\n";
      if (sandboxed(context))
        append_list("- Local sockets that may be used:", network.unix_sockets, "", out);
      return;
    case NetworkMode::kRestricted:
      // Not "no connections at all": under bwrap the command has a loopback of its own (the
      // limit below says which backend gives what), so the claim is about what lies outside.
      out +=
          "Network: blocked; commands cannot reach the internet, other machines or services "
          "running outside the sandbox";
      out += network.unix_sockets.empty() ? ".\n" : " (except the local sockets listed below).\n";
      for (const std::string& limit : context_network_limits(context)) out += "- " + limit + "\n";
      break;
    case NetworkMode::kProxy:
      out += "Network: only through the sandbox's proxy.\n";
      append_list("- Allowed domains:", network.allowed_domains, "", out);
      append_list("- Denied domains:", network.denied_domains, "", out);
      // Fixed sentences with numbers only: nothing from the policy to escape.
      for (const std::string& limit : context_network_limits(context)) out += "- " + limit + "\n";
      break;
  }
  append_list("- Local sockets that may be used:", network.unix_sockets, "", out);
  // Only backends that offer it are chosen (capability local_binding; Landlock's filter refuses
  // bind() in every closed network mode, so it is passed over).
  if (network.allow_local_binding)
    out += context.backend.empty()
               ? "- Listening on local ports is allowed where the backend supports it.\n"
               : "- Listening on local ports is allowed.\n";
}

// Who enforces the policy, first, so that the model reads the rest in its light: nothing (sbx
// runs the commands without a sandbox), nobody here (every run is refused), or the backend
// question 2 chose on this host.
void append_enforcement(const SandboxContext& context, std::string& out) {
  if (!sandboxed(context)) {
    if (context.mode == "workspace-write" || context.mode == "read-only")
      out += "Not enforced: sbx runs these commands without a sandbox (" +
             inline_text(without_final_stop(context.unsandboxed_reason)) +
             "); the limits below are the policy's intent only.\n";
    return;
  }
  if (!context.no_backend_reason.empty()) {
    out +=
        "No sandbox backend on this host can enforce this policy, so every command is "
        "refused and does not run (" +
        inline_text(without_final_stop(context.no_backend_reason)) + ").\n";
    return;
  }
  if (!context.backend.empty())
    out += "Enforced on this host by the " + inline_text(context.backend) + " sandbox.\n";
}

// ":caches": what the command's package managers download stays for the project's later
// commands; the user's own caches are not written.
void append_caches(const SandboxContext& context, std::string& out) {
  if (context.cache_tools.empty()) return;
  std::string tools;
  for (const std::string& tool : context.cache_tools)
    tools += (tools.empty() ? "" : ", ") + inline_text(tool);
  if (context.caches_copy_on_write) {
    out += "Toolchain caches (" + tools +
           "): the user's caches are copy-on-write: what they hold is there, and what commands "
           "download or change there is kept for later commands in the same working directory "
           "only; the user's own cache files never change.\n";
    return;
  }
  out += "Toolchain caches (" + tools +
         "): downloads go to a cache of this project's own, kept for later commands in the same "
         "working directory; the user's own caches are read-only.\n";
}

json::value nullable(const std::string& text) {
  if (text.empty()) return nullptr;
  return json::value(text);  // render_json repairs invalid UTF-8
}

std::string_view reads_word(const SandboxContext& context) {
  if (context.mode == "full-access") return "unrestricted";
  if (context.mode == "external-sandbox") return "external";
  return context.reads_restricted ? "restricted" : "all";
}

}  // namespace

std::vector<std::string> network_limits(const NetworkPolicy& network, std::string_view backend,
                                        const std::vector<std::string>& considered) {
  // Without a backend, the sentences name only the backends that could have run it.
  const auto may_run = [&](std::string_view name) {
    return backend == name || (backend.empty() && (considered.empty() ||
                                                   std::find(considered.begin(), considered.end(),
                                                             name) != considered.end()));
  };
  std::vector<std::string> out;
  // Restricted does not mean the same loopback everywhere: bwrap's private network namespace
  // has a loopback of its own (no route beyond it, not the host's), Landlock shares the host's
  // namespace, whose loopback is the host's, so it refuses every inet socket. Seatbelt and
  // Windows are not described here: the sentence names the backends it is true for.
  if (network.mode == NetworkMode::kRestricted) {
    if (backend == "bwrap") {
      out.push_back(
          "Each command gets a network namespace of its own, whose loopback (127.0.0.1, ::1) it "
          "may use for TCP and UDP servers and clients it starts itself, reachable by that "
          "command and its child processes only (not by later commands, and the host's own "
          "loopback services are not reachable there).");
    } else if (backend == "landlock") {
      out.push_back("No network socket can be created, loopback included.");
    } else if (may_run("bwrap") && may_run("landlock")) {
      out.push_back(
          "Loopback depends on the sandbox backend: under bwrap each command gets a network "
          "namespace of its own, whose loopback (127.0.0.1, ::1) it may use for TCP and UDP "
          "servers and clients it starts itself, reachable by that command and its child "
          "processes only (not by later commands, and the host's own loopback services are not "
          "reachable there); under Landlock no network socket can be created, loopback "
          "included.");
    } else if (may_run("bwrap")) {
      out.push_back(
          "Under bwrap each command gets a network namespace of its own, whose loopback "
          "(127.0.0.1, ::1) it may use for TCP and UDP servers and clients it starts itself, "
          "reachable by that command and its child processes only (not by later commands, and "
          "the host's own loopback services are not reachable there).");
    } else if (may_run("landlock")) {
      out.push_back("Under Landlock no network socket can be created, loopback included.");
    }
    return out;
  }
  // Enabled means the internet, not the host's local services: the manager only runs such a
  // policy under a backend that keeps host unix sockets closed unless listed (capability
  // unix_socket_block: bwrap's unix-socket supervisor; Landlock cannot and is passed over).
  if (network.mode == NetworkMode::kEnabled) {
    out.push_back(
        "Unix sockets of the host (Docker, ssh-agent, D-Bus, X11, tmux, any socket bound outside "
        "the sandbox, by path or abstract name) cannot be connected to unless listed as local "
        "sockets that may be used; unix sockets the command creates itself work.");
    return out;
  }
  if (network.mode != NetworkMode::kProxy) return out;
  // Landlock's TCP rules name a port, never an address (the kernel has no per-address rule).
  // Said only where Landlock may be the one that runs it.
  if (may_run("landlock"))
    out.push_back(
        "Under Landlock, a TCP port rule allows that port on EVERY address (Landlock port rules "
        "are address-blind): commands may connect to the port of sbx's proxy on any address or "
        "host, not just to the proxy, so a service listening on that port elsewhere is reachable "
        "directly. The port is the proxy's own, chosen afresh for each run; bwrap (an empty "
        "network namespace) has no such gap.");
  if (!network.proxy_ports.empty())
    out.push_back("Runs of this policy are refused: " +
                  proxy::policy_ports_refusal(network.proxy_ports) + ".");
  return out;
}

SandboxContext describe_sandbox(const ResolvedPolicy& policy) {
  SandboxContext out;
  out.cwd = policy.cwd;
  out.network = policy.network;
  switch (policy.filesystem_kind) {
    case FilesystemKind::kUnrestricted:
      out.mode = "full-access";
      break;
    case FilesystemKind::kExternal:
      out.mode = "external-sandbox";
      break;
    case FilesystemKind::kRestricted:
      describe_restricted(policy, out);
      break;
  }
  // A first answer from the filesystem kind; the front end replaces it with question 1's.
  out.sandboxed = policy.filesystem_kind == FilesystemKind::kRestricted;
  return out;
}

std::string context_to_text(const SandboxContext& context) {
  std::string out = "Sandbox policy for the commands you run (mode: " + context.mode + ").\n";
  out += "Working directory: " + report::quote_for_text(context.cwd) + "\n";
  append_enforcement(context, out);
  append_filesystem(context, out);
  append_caches(context, out);
  append_network(context, out);
  const bool unrestricted =
      context.mode == "full-access" && context.network.mode == NetworkMode::kEnabled;
  // Without sbx's sandbox nothing fails because of these limits (an outer sandbox may still
  // stop an action, so external-sandbox keeps the sentence).
  const bool nothing_enforced = !context.sandboxed && context.mode != "external-sandbox";
  if (!unrestricted && !nothing_enforced) {
    out +=
        "Actions outside these limits fail with errors such as \"Permission denied\", "
        "\"Read-only file system\" or \"Operation not permitted\". Do not try to work around "
        "the sandbox; ask the user when you need more access.\n";
  }
  if (context.unsandboxed_locked) {
    // The model must not be told (or tell itself) to retry a failed command without the
    // sandbox: that would only produce refusals.
    out +=
        "Running commands outside the sandbox is locked by the administrator: never retry a "
        "command unsandboxed or ask for that; ask the user when you need more access.\n";
  }
  return out;
}

std::string context_to_json(const SandboxContext& context, JsonStyle style) {
  json::object filesystem;
  filesystem["reads"] = reads_word(context);
  filesystem["readable_roots"] = string_array(context.readable_roots);
  filesystem["platform_defaults_readable"] = context.platform_defaults_readable;
  filesystem["writable_roots"] = string_array(context.writable_roots);
  filesystem["read_only_paths"] = string_array(context.read_only_paths);
  filesystem["not_creatable"] = string_array(context.not_creatable);
  filesystem["denied_paths"] = string_array(context.denied_paths);
  filesystem["denied_globs"] = string_array(context.denied_globs);
  json::object network;
  network["mode"] = std::string(to_string(context.network.mode));
  network["allowed_domains"] = string_array(context.network.allowed_domains);
  network["denied_domains"] = string_array(context.network.denied_domains);
  network["unix_sockets"] = string_array(context.network.unix_sockets);
  network["allow_local_binding"] = context.network.allow_local_binding;
  network["limits"] = string_array(context_network_limits(context));
  json::object out;
  out["mode"] = context.mode;
  out["cwd"] = context.cwd;
  out["filesystem"] = std::move(filesystem);
  out["network"] = std::move(network);
  out["unsandboxed_runs"] = context.unsandboxed_locked ? "locked" : "allowed";
  out["sandboxed"] = context.sandboxed;
  out["unsandboxed_reason"] = nullable(context.sandboxed ? "" : context.unsandboxed_reason);
  out["backend"] = nullable(context.backend);
  out["no_backend_reason"] = nullable(context.no_backend_reason);
  out["caches"] = string_array(context.cache_tools);
  out["caches_copy_on_write"] = context.caches_copy_on_write;
  return report::render_json(std::move(out), style);
}

}  // namespace sbx
