// Kept probe answers: a backend's probe answer, kept by sbx's CLI between runs of the same boot
// so that a run of a backend whose probe says its answer may be kept (kKeepableProbeCheck,
// sbx/sdk/backend.hpp) forks no guarded probe and tries no trial sandbox.
// core/src/plugins/README.md, "Kept probe answers", has the threat model; in short:
//  - the store is <runtime dir>/sbx-probe (sbx/sdk/private_state.hpp: $XDG_RUNTIME_DIR or
//    /run/user/<uid> when it is this user's own 0700 directory, root's /run), one file per
//    backend and install, read and written only through the private-file checks of that header;
//    without such a runtime directory nothing is kept;
//  - an answer is reused only under the key it was written with: everything the answer may
//    depend on (probe_store.cpp, answer_key);
//  - anything wrong with the store (missing, another owner, writable by others, a symlink,
//    malformed, another key) means "nothing kept": the backend is probed as without a store,
//    and the run never fails because of the store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sbx/core/plugin_loader.hpp"
#include "sbx/sdk/private_state.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::kept_probe {

#ifndef _WIN32
// The store directory for `sources` (created 0700 when missing), or nullopt when there is no
// private runtime directory (then nothing is kept).
std::optional<std::string> store_dir(const private_state::Sources& sources);
#endif
// store_dir() of this process (private_state::current_sources); always nullopt on Windows.
std::optional<std::string> current_store_dir();

// Every per-user state directory of sbx for this process (sbx/sdk/private_state.hpp), made
// when missing, each by its name as sbx finds it (symlinks such as a symlinked ~/.cache
// included): the kept probe answers, the
// proxy's sockets ("proxy"), bwrap's registry and probe cache ("bwrap"), and when these lie in
// the cache (no runtime directory) <cache>/sbx, which holds them (a command that could chmod
// or rename entries in it could end or forge every later run's state, issue #32); then every
// other directory a later run of this user could use (private_state::candidate_state_dirs:
// the other runtime directories' and the cache's, issue #32 B3). Empty on Windows.
std::vector<std::string> state_directory_names();

// State directories that state_directory_names() leaves out because they do not exist yet,
// and that a later run would trust once made: root's <cache>/sbx/caches (the projects'
// toolchain caches) for each cache directory a run of root may use, when root keeps its other
// state in /run. Resolution makes one where a writable root reaches it and keeps it like the
// others (resolve.hpp ResolveContext::absent_state_dirs). Empty for other users and on Windows.
std::vector<std::string> absent_state_directory_names();

// The symlinks met on the way to state_directory_names() (a symlinked ~/.cache), each once:
// resolution refuses a writable root that holds one (a sandboxed command could repoint it at a
// state directory it made, which runs started meanwhile would trust). Empty on Windows.
std::vector<std::string> state_directory_links();

// state_directory_names(), each by its real path (without symlinks). Resolution keeps each
// read-only in every sandbox like sbx's install and refuses a writable root inside one; a
// backend that cannot carve one out of a writable root is passed over. A symlink on the way
// that a writable root holds is the run's StateModeGuard's (run/state_guard.hpp). Empty on
// Windows.
std::vector<std::string> state_directories();

// The file that keeps `plugin`'s answer in `dir` (one per backend and install of sbx).
std::string answer_path(const std::string& dir, const LoadedPlugin& plugin);

// The key of `plugin`'s answer in this process, or "" when it cannot be formed (then nothing
// is kept or reused). `depends_on`: the answer's own dependencies (dependencies()), whose
// identities or /proc/sys values are appended.
std::string answer_key(const LoadedPlugin& plugin, const std::vector<std::string>& depends_on);

// True when `report` says it may be kept (a passing kKeepableProbeCheck) and whatever it names
// in a kKeepableDependsOnCheck can be keyed on.
bool keepable(const ProbeReport& report);

// The paths `report` names in its kKeepableDependsOnCheck (none: empty), or nullopt when one of
// them is not an absolute one-line path.
std::optional<std::vector<std::string>> dependencies(const ProbeReport& report);

// The kept answer of `plugin` in `dir`, when one is there under this process's key; its
// kKeepableProbeCheck then says that it was kept and where from.
std::optional<ProbeReport> load(const std::string& dir, const LoadedPlugin& plugin);

// Keeps `report` as `plugin`'s answer in `dir` when it is keepable; otherwise removes what was
// kept for it. Failures are ignored (the next run probes).
void keep(const std::string& dir, const LoadedPlugin& plugin, const ProbeReport& report);

}  // namespace sbx::kept_probe
