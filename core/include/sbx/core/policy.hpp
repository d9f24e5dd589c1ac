// Policy v1: the user-facing model, its strict JSON form (DESIGN.md "Policy (JSON v1)") and the
// four presets. Pure: nothing here touches the OS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// One filesystem entry. Exactly one of path/glob is set. Paths are special (":root", ":cwd",
// ":cwd/sub", ":tmpdir", ":slash_tmp", ":minimal"), absolute, or "~/..."; globs are deny-only.
struct PolicyEntry {
  std::string path;
  std::string glob;
  Access access = Access::kRead;
  friend bool operator==(const PolicyEntry&, const PolicyEntry&) = default;
};

struct FilesystemSpec {
  FilesystemKind kind = FilesystemKind::kRestricted;
  std::vector<PolicyEntry> entries;
  std::vector<std::string> protected_names;  // plain names, no '/'
  friend bool operator==(const FilesystemSpec&, const FilesystemSpec&) = default;
};

// The full form. Every short form and preset converts to this.
struct Policy {
  int version = 1;
  FilesystemSpec filesystem;
  NetworkPolicy network;
  friend bool operator==(const Policy&, const Policy&) = default;
};

inline constexpr std::size_t kMaxPolicyBytes = 1 << 20;  // 1 MiB
inline constexpr std::size_t kMaxPolicyDepth = 16;
inline constexpr std::string_view kPresetNames[] = {"read-only", "workspace-write",
                                                     "danger-full-access", "external-sandbox"};
// Protected names of the workspace-write preset and of a full form that omits them.
inline const std::vector<std::string> kDefaultProtectedNames = {".git", ".codex", ".agents"};

// The full-form policy a preset stands for. Error for an unknown name (listing the valid ones).
Result<Policy> preset_policy(std::string_view name);

// Parses either form. Strict: UTF-8, at most kMaxPolicyBytes, no duplicate or unknown keys,
// nesting at most kMaxPolicyDepth. Every error starts with the JSON pointer of the offending
// value, e.g. "/filesystem/entries/3/access: expected one of read|write|deny".
Result<Policy> parse_policy(std::string_view json_text);

// Serializes the full form (stable key order, pretty-printed); parse_policy(to_json(p)) == p.
std::string policy_to_json(const Policy& policy);

std::string_view to_string(Access access);
std::string_view to_string(FilesystemKind kind);
std::string_view to_string(NetworkMode mode);

}  // namespace sbx
