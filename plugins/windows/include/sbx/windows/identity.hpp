// The capability identity of a plan, and the names that serialise DACL updates. Pure, so the
// derivation is unit-tested on every host; src/win32/ turns the results into a SID and mutexes.
//
// Why a derived identity: the capability SID (cap:write) carries every ACE of a plan. A SID
// derived from the user's SID and the plan's exact ACE list is the same for every run of the same
// plan, so the ACEs a first run wrote are found again and not rewritten (on a big tree, writing
// an inheritable ACE rewrites the ACL of every file below it). A different plan (another
// writable root, one protected name more or less) derives a different SID, so ACEs left by one
// plan never grant or deny anything to the token of another. Nothing is stored: there is no file
// that could be tampered with, and knowing the SID gives nothing, because a restricting SID can
// only narrow what a token may do, never widen it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan_types.hpp"

namespace sbx::windows {

// SHA-256 of `data` (FIPS 180-4).
std::array<std::uint8_t, 32> sha256(std::string_view data);

// The exact text the identity is derived from: a version line, the user's SID, then one line
// per ACE ("<kind> <sid> <PATH>") in plan order, paths upper-cased (Windows compares names
// case-insensitively, so "C:\Work" and "c:\work" are one plan).
std::string identity_material(std::string_view user_sid, const std::vector<WindowsAce>& aces);

// "S-1-5-21-a-b-c-d": the four 32-bit sub-authorities are the first 16 bytes of
// sha256(identity_material(...)), little-endian. The same form as a machine-local account SID,
// so every Windows ACL API accepts it; a 96-bit collision with a real account is not a concern.
std::string capability_sid_for(std::string_view user_sid, const std::vector<WindowsAce>& aces);

// The name of the mutex that serialises DACL reads and writes on `windows_path` between
// concurrent runs of any plan: "Local\sbx-windows-acl-" + 16 hex digits of the SHA-256 of the
// upper-cased path. A kernel object name may not contain a backslash after its namespace, and
// case-insensitive paths must share one mutex.
std::string acl_lock_name(std::string_view windows_path);

// Upper-cases ASCII letters only (what the identity and lock names fold).
std::string ascii_upper(std::string_view text);

}  // namespace sbx::windows
