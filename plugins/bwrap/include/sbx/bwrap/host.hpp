// The parts of the bwrap backend that look at the host: path facts for the translator, deny-glob
// expansion, the registry of mount points bwrap creates on the host, and the probe. Kept apart
// from translate.hpp so the translator stays pure.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sbx/bwrap/translate.hpp"
#include "sbx/sdk/private_state.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::bwrap {

// lstat()s every path (and realpath()s symlinks) into facts.paths / facts.canonical.
void gather_path_facts(const std::vector<std::string>& paths, HostFacts& facts);

// True if the absolute `path` matches the absolute gitignore-style `pattern` ("**" any number of
// components, "*" and "?" within one component, "[...]" classes with "!"/"^" negation,
// "{a,b}" alternatives).
bool glob_matches(const std::string& pattern, const std::string& path);

// Brace alternatives expanded: "/a/{b,c}/*.pem" -> {"/a/b/*.pem", "/a/c/*.pem"}.
std::vector<std::string> expand_braces(const std::string& pattern);

// Walks the filesystem below each pattern's literal prefix (symlinks are not followed into) and
// returns every matching path. Errors: a pattern without a literal directory prefix ("/**" would
// mean walking the whole host), or more than `max_matches` matches (fail closed, never truncate).
Result<std::vector<std::string>> expand_deny_globs(const std::vector<std::string>& patterns,
                                                   std::size_t max_matches = 4096);

// The fixed system locations bwrap is taken from, in order (never PATH).
const std::vector<std::string>& bwrap_candidates();

// The first candidate that canonicalises to a root-owned, non-group/world-writable executable;
// Error says what was tried. `writable_roots`: a bwrap inside any of them is refused.
Result<std::string> find_trusted_bwrap(const std::vector<std::string>& writable_roots);

// How a helper the probe ran ended: exit_code -1 when it could not run, died of a signal or
// timed out.
struct ProbeRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr, at most 4 KiB, trailing newlines removed
};

// One throwaway sandbox, run exactly as the probe runs each of its trials:
// `bwrap <bwrap_args> -- <command>` with an empty environment, stdin from /dev/null, no
// descriptor of this process but the output pipe, default signal dispositions and mask
// (sbx/sdk/posix_child.hpp), killed after `timeout_ms`. The probe's checks run /bin/true; a
// test runs a command that reports what the sandbox was given.
ProbeRun run_trial_sandbox(const std::string& bwrap_path,
                           const std::vector<std::string>& bwrap_args,
                           const std::vector<std::string>& command, int timeout_ms);

// "0.8.0" from `bwrap --version`, or Error.
Result<std::string> bwrap_version(const std::string& bwrap_path);

// Runs `bwrap ... --proc /proc /bin/true` in fresh namespaces: false when procfs cannot be
// mounted here (the translator then uses the reported fallback).
bool bwrap_can_mount_proc(const std::string& bwrap_path);

// The probe cache (run_probe): the key a cache must carry to be reused now for `bwrap_path`
// (kernel, the bwrap binary's identity, euid, user namespace, the namespace sysctls), and the
// cached passing checks of `cache_file` or why it may not be used: a directory or file not
// owned by the effective uid or writable by group or others, a symlink, a stale key, malformed.
std::string probe_cache_key(const std::string& bwrap_path);
Result<std::vector<ProbeCheck>> load_probe_cache(const std::string& bwrap_path,
                                                 const std::string& cache_file);

// What an earlier probe with the same `cache_file` found for procfs (see run_probe): true when
// load_probe_cache accepts the cache (only passing checks are cached), nullopt when there is
// no valid cache. Lets transform() skip bwrap_can_mount_proc
// when the probe ran in another process (core isolates probes in a child).
std::optional<bool> cached_proc_mount(const std::string& bwrap_path, const std::string& cache_file);

// The bwrap probe's checks: bwrap found/version/setuid, user namespaces (tried), the AppArmor
// restriction, proc, network namespace with loopback, seccomp, WSL1. The throwaway-sandbox
// checks are cached in `cache_file` ("" = no cache) once they pass, and a cache load_probe_cache
// accepts replaces them: then the probe starts no process at all.
ProbeReport run_probe(const std::string& stage2_path, const std::string& cache_file);

// Marks an available `report` as one sbx may keep between runs (kKeepableProbeCheck): it
// depends on the kernel and process (sbx's key) and on what the probe cache keys on beyond
// them, the bwrap binary and the namespace sysctls (kKeepableDependsOnCheck). Fine for bwrap
// because a wrong kept answer cannot weaken a run: every capability it claims is enforced by
// bwrap, the seccomp filters and the unix-socket supervisor, each of which fails the run
// (exit 125) when the kernel refuses it.
void mark_keepable(ProbeReport& report);

// Where the state directory may go, read from the process (state_dir_sources) or given by a
// test (the same sources as every private directory of sbx: sbx/sdk/private_state.hpp).
using StateDirSources = private_state::Sources;
StateDirSources state_dir_sources();

// The state directory for the mount-point registry and the probe cache, never a predictable
// name in a shared directory: <runtime dir>/sbx-bwrap, root: /run/sbx-bwrap, else
// <cache>/sbx/bwrap. Created 0700 and verified (owned by us, not a symlink); Error when none
// of these is usable (bwrap is then unavailable with that reason).
Result<std::string> ensure_state_dir(const StateDirSources& sources);
Result<std::string> ensure_state_dir();

// Sweeps the registry in `state_dir` of entries no live run holds (a run killed with SIGKILL
// leaves them): removes each recorded mount point that is still the recorded socket or empty
// file (or empty directory, as sbx versions before the file mask made them), and deletes the
// stale lock and marker files. Returns the mount points it removed. A recorded mount point that
// cannot be removed keeps its entry (the next sweep tries again) and goes to `kept`, as a
// message saying why and what to do.
std::vector<std::string> sweep_stale_entries(const std::string& state_dir,
                                             std::vector<std::string>* kept = nullptr);

// Makes the mount point of a missing name's mask (a socket inode, else an empty file) without
// recording it: for runs without a state directory, whose mount points stay on the host.
// true if it made one (false: the name exists, or bwrap is left to make it).
bool make_unrecorded_mount_point(const std::string& path);

// Holds the registry locks of one run. Before the run, acquire() takes a shared lock for every
// mount point bwrap will create (`synthetic`) and every existing protected path the run relies
// on (`existing`: it may be another run's mount point), and makes each planned mount point
// itself, recording its identity in a marker (so a killed run still leaves a record); after the
// run, release_and_cleanup() removes each recorded mount point once no other run holds a lock
// on it, together with its registry entry. A mount point is a socket inode (an empty regular
// file where none can be bound) that /dev/null is bound over. acquire() fails (after taking
// what it took; release_and_cleanup gives it back) when a planned mount point was found taken
// by a directory or a symlink, on which the mask cannot be mounted safely.
class MountRegistry {
 public:
  MountRegistry() = default;
  ~MountRegistry();
  MountRegistry(const MountRegistry&) = delete;
  MountRegistry& operator=(const MountRegistry&) = delete;

  Status acquire(const std::string& state_dir, const std::vector<std::string>& synthetic,
                 const std::vector<std::string>& existing);
  // Returns the paths it removed (for logs and tests).
  std::vector<std::string> release_and_cleanup();
  // After release_and_cleanup: the recorded mount points this run could not remove (their
  // entries stay for the next run's sweep), as messages saying why and what to do.
  const std::vector<std::string>& kept() const { return kept_; }

 private:
  static Result<int> lock_shared(const std::string& lock);
  enum class Made { kMade, kExisted, kNotMade };
  // `unrecorded`: the parent is a directory every user may write whose lock this run could not
  // take; the mount point is made but not recorded there, so it stays.
  static Made make_and_mark(const std::string& marker, const std::string& path, bool unrecorded);
  // A shared flock on a directory holding mount points (mount_registry.cpp writable_by_every_user).
  struct DirectoryLock {
    std::string path;          // a mount point in the directory (what it was opened for)
    int fd = -1;               // -1: it could not be had
    bool every_users = false;  // a directory every user may write (/tmp)
  };
  const DirectoryLock& hold_directory_lock(const std::string& path);

  // What was at a path when the run took its lock: inode, type, birth and change time (the
  // identity mount_registry.cpp records).
  struct Found {
    unsigned long long dev = 0;
    unsigned long long ino = 0;
    unsigned type = 0;
    bool has_btime = false;
    long long btime_sec = 0;
    long long btime_nsec = 0;
    long long ctime_sec = 0;
    long long ctime_nsec = 0;
  };

  struct Entry {
    std::string path;
    std::string marker;  // state_dir/<hash>.synthetic: identity of the mount point a run made
    std::string lock;    // state_dir/<hash>.lock
    int lock_fd = -1;
    bool mark_at_end = false;  // planned, but bwrap (not sbx) had to make it: warned of, kept
    // What was there when this run did not make the mount point itself (another run's, maybe
    // another user's, whose cleanup this registry cannot hold off; a person's file).
    std::optional<Found> found;
  };
  static bool replaced_by_own_empty_file(const Entry& e);
  std::vector<Entry> entries_;
  std::vector<std::string> kept_;
  // Directories holding this run's mount points or ones it relies on, and their locks.
  std::map<std::string, DirectoryLock> directory_locks_;
};

}  // namespace sbx::bwrap
