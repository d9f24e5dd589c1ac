// sbx::private_state: a per-user private directory for what sbx keeps between runs (bwrap's
// probe cache and mount-point registry, the kept probe answers of core), and the reading and
// writing of small files in it that no other user can plant or replace.
//
// Header-only and part of no ABI (nothing of it crosses the plugin boundary); POSIX only.
//
// Why so careful: what is kept decides how a later run starts. Another local user must not be
// able to put a file there (a "pass" it forged) or redirect a write (a symlink at the name), so
//  - the directory is this user's own, mode 0700, not a symlink;
//  - a file is read through a descriptor opened relative to the checked directory with
//    O_NOFOLLOW, and used only if it is a regular file of this user that group and others
//    cannot write;
//  - a file is written to a fresh temporary name (O_CREAT|O_EXCL|O_NOFOLLOW, 0600, after
//    unlinking whatever was there) and renamed over the old one, so a reader never sees half of
//    it and a planted symlink is never followed;
//  - every directory met on the way to it (its ancestors, through every symlink) can be changed
//    only by root or this user, and not by a sandboxed command of this user given a shared
//    directory such as /tmp writable (why_shared_path).
// A caller treats every failure as "nothing kept": it never trusts a file that fails a check and
// never fails its run because of one.
#pragma once

#ifndef _WIN32

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/unique_fd.hpp"

namespace sbx::private_state {

// Where a private directory may go, read from the process (current_sources) or given by a test.
struct Sources {
  uid_t uid = 0;
  std::string xdg_runtime_dir;              // used only if it is this uid's own 0700 directory
  std::string run_user_root = "/run/user";  // <root>/<uid>: the same condition
  std::string root_run;        // root: "/run" when it is root's and not writable by others
  std::string xdg_cache_home;  // the last resort of callers that want one (bwrap)
  std::string home;
  // The home directory passwd(5) gives this uid: a run started with another HOME (an agent
  // harness that sets one per task) must still keep the usual home's state read-only.
  std::string passwd_home;
};

// "<dir>" and "<name>" of a path ("name" alone is in ".").
inline std::pair<std::string, std::string> split_path(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// Why `st`, the directory `dir` met on the way to a state location, would let someone other
// than root or this user, or a sandboxed command of this user, replace what lies below it; or
// nullopt. rename(2) needs only write permission on the directory that holds a name, so
// whoever may write ANY directory on the way can move this user's own 0700 state directory
// (or an ancestor of it) aside and put a directory of the same name in its place: also an
// ancestor of a mount point (rename(2) gives EBUSY only for the mount point itself). Hence:
//  - owned by root or this user: the owner may always chmod and then rename (chmod(2));
//  - not writable by others, sticky or not: the sticky bit ("S_ISVTX", inode(7)) keeps a user
//    from renaming entries that another user owns, not their own, and a sandboxed command runs
//    as this user; the workspace-write preset gives it /tmp writable (issue #32);
//  - not writable by the group without the sticky bit: any member could rename every entry.
inline std::optional<std::string> why_shared_dir(const std::string& dir, const struct stat& st,
                                                 uid_t uid) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_uid != 0 && st.st_uid != uid)
    return "'" + dir + "' is owned by uid " + std::to_string(st.st_uid) +
           ", neither root nor this user (" + std::to_string(uid) + ")";
  if ((st.st_mode & S_IWOTH) != 0) return "'" + dir + "' is writable by others (mode " + mode + ")";
  if ((st.st_mode & S_IWGRP) != 0 && (st.st_mode & S_ISVTX) == 0)
    return "'" + dir + "' is writable by its group without the sticky bit (mode " + mode + ")";
  return std::nullopt;
}

// The components of `path` ("/a//b/" -> a, b), in order.
inline std::deque<std::string> path_components(const std::string& path) {
  std::deque<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// Why the directory `path` is not safe to keep state below (why_shared_dir of a directory met
// on the way, or the lookup failing), or nullopt. Walked as the kernel resolves it
// (path_resolution(7)): from "/", one name at a time with openat(O_PATH|O_NOFOLLOW), each
// symlink read from the descriptor of the link itself and its target walked in its place (an
// absolute one from "/" again), at most 40 of them (MAXSYMLINKS). So every directory a name
// is looked up in is checked, on the descriptor actually used for the next lookup, the
// symlinked ~/.cache and the directories holding each link included: realpath() alone would
// miss a directory that only holds a link on the way. "/" and "path" itself are checked too.
inline std::optional<std::string> why_shared_path(const std::string& path, uid_t uid) {
  if (path.empty() || path.front() != '/') return "'" + path + "' is not an absolute path";
  const auto open_root = [] { return UniqueFd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)); };
  UniqueFd dir = open_root();
  std::string at = "/";  // where `dir` is: every prefix of it was checked on the way down
  struct stat st {};
  if (!dir.valid() || ::fstat(dir.get(), &st) != 0)
    return "'/': " + std::string(std::strerror(errno));
  if (std::optional<std::string> why = why_shared_dir(at, st, uid)) return why;
  std::deque<std::string> pending = path_components(path);
  int links = 0;
  while (!pending.empty()) {
    const std::string name = std::move(pending.front());
    pending.pop_front();
    if (name == ".") continue;
    const std::string next_path =
        name == ".." ? split_path(at).first : (at == "/" ? "" : at) + "/" + name;
    UniqueFd next(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid() || ::fstat(next.get(), &st) != 0)
      return "'" + next_path + "': " + std::strerror(errno);
    if (S_ISLNK(st.st_mode)) {
      if (++links > 40) return "'" + path + "': too many symlinks";
      char target[PATH_MAX];
      // An empty name reads the link the O_PATH descriptor is on (readlinkat(2), Linux 2.6.39).
      const ssize_t n = ::readlinkat(next.get(), "", target, sizeof target - 1);
      if (n <= 0) return "'" + next_path + "': cannot read the symlink";
      const std::string link(target, static_cast<std::size_t>(n));
      std::deque<std::string> parts = path_components(link);
      pending.insert(pending.begin(), parts.begin(), parts.end());
      if (link.front() == '/') {
        dir = open_root();
        at = "/";
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) return "'" + next_path + "' is not a directory";
    // ".." leads to a directory already checked on the way down.
    if (name != "..")
      if (std::optional<std::string> why = why_shared_dir(next_path, st, uid)) return why;
    dir = std::move(next);
    at = next_path;
  }
  return std::nullopt;
}

// Why `dir` is not a private directory of `uid` (an absolute path to a directory, not a
// symlink, owned by `uid`, no group or other permission bits), or nullopt when it is. Decided
// on the object opened with O_NOFOLLOW (open(2): a symlink as the last component fails with
// ELOOP), so a name another user squatted with a symlink is refused, never followed.
inline std::optional<std::string> why_not_private_dir(const std::string& dir, uid_t uid) {
  if (dir.empty() || dir.front() != '/') return "'" + dir + "' is not an absolute path";
  const UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid()) {
    const int error = errno;
    if (error == ELOOP || error == ENOTDIR) return "'" + dir + "' is a symlink or not a directory";
    return "'" + dir + "': " + std::strerror(error);
  }
  if (::fstat(fd.get(), &st) != 0) return "'" + dir + "': " + std::strerror(errno);
  if (st.st_uid != uid)
    return "'" + dir + "' is owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
           std::to_string(uid);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "'" + dir + "' has mode " + mode + ", not 0700";
  }
  return std::nullopt;
}

inline bool is_private_dir_of(const std::string& dir, uid_t uid) {
  return !why_not_private_dir(dir, uid).has_value();
}

// Gives `dir` back the owner's rwx when a command of this user NARROWED its mode: it is a
// directory (not a symlink: opened O_NOFOLLOW) of `uid` with no group or other bits that lacks
// some of u+rwx (`chmod 000 ~/.cache/sbx` from a sandbox that had it writable, issue #32 B1).
// Such a mode keeps out no one but its owner (root ignores it, capabilities(7)), so 0700 widens
// nothing: it only undoes what the sandbox did. Another owner's directory, a symlink or a mode
// with group or other bits is left exactly as it is (and then refused by the caller's check).
// fchmod(2) on the descriptor, never the name, so a name swapped meanwhile is not changed.
inline void repair_narrowed_dir(const std::string& dir, uid_t uid) {
  const UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  // O_RDONLY of a directory needs r on it; one whose owner lost r is opened O_PATH, which
  // fchmod(2) refuses (EBADF), so that case goes through the /proc/self/fd name of the same
  // O_PATH descriptor (chmod(2) of it acts on the opened object, proc(5)).
  const UniqueFd path_fd(
      fd.valid() ? -1 : ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const int used = fd.valid() ? fd.get() : path_fd.get();
  if (used < 0 || ::fstat(used, &st) != 0) return;
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0 ||
      (st.st_mode & 0700) == 0700)
    return;
  if (fd.valid()) {
    (void)::fchmod(fd.get(), (st.st_mode & 07000) | 0700);
    return;
  }
  const std::string proc = "/proc/self/fd/" + std::to_string(path_fd.get());
  (void)::chmod(proc.c_str(), (st.st_mode & 07000) | 0700);
}

// mkdir 0700 (EEXIST is fine), a narrowed mode repaired (repair_narrowed_dir), and then the
// check above: a directory someone else made first at the name (a squat), a symlink or a wider
// mode is refused with the reason, never used.
inline Status make_private_dir(const std::string& dir, uid_t uid) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error{"cannot create state directory '" + dir + "': " + std::strerror(errno)};
  repair_narrowed_dir(dir, uid);
  if (std::optional<std::string> why = why_not_private_dir(dir, uid))
    return Error{"state directory " + *why +
                 "; sbx keeps its state only in a private directory of this user (mode 0700): "
                 "remove it"};
  return {};
}

inline std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

inline Sources current_sources() {
  Sources sources;
  sources.uid = ::geteuid();
  sources.xdg_runtime_dir = env_or_empty("XDG_RUNTIME_DIR");
  sources.xdg_cache_home = env_or_empty("XDG_CACHE_HOME");
  sources.home = env_or_empty("HOME");
  if (const passwd* pw = ::getpwuid(sources.uid); pw != nullptr && pw->pw_dir != nullptr)
    sources.passwd_home = pw->pw_dir;
  if (sources.home.empty()) sources.home = sources.passwd_home;
  // root: /run (root-owned, not writable by others) holds state no sandbox is given write
  // access to by any shipped preset. Only such a /run is used.
  struct stat st {};
  if (sources.uid == 0 && ::lstat("/run", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
      (st.st_mode & 022) == 0)
    sources.root_run = "/run";
  return sources;
}

// The user's runtime directory (a tmpfs emptied at logout and at boot, so its content never
// outlives the boot it was found on): $XDG_RUNTIME_DIR or /run/user/<uid> when it is this
// user's own 0700 directory, root's /run; nullopt when there is none.
inline std::optional<std::string> runtime_base(const Sources& sources) {
  // A $XDG_RUNTIME_DIR below /tmp (some CI sets /tmp/runtime-<user>) is 0700 and this user's,
  // but a command with /tmp writable could rename it away (why_shared_path): not private.
  const auto usable = [&](const std::string& dir) {
    return is_private_dir_of(dir, sources.uid) && !why_shared_path(dir, sources.uid);
  };
  if (usable(sources.xdg_runtime_dir)) return sources.xdg_runtime_dir;
  const std::string run_user = sources.run_user_root + "/" + std::to_string(sources.uid);
  if (usable(run_user)) return run_user;
  if (!sources.root_run.empty()) return sources.root_run;
  return std::nullopt;
}

// The refusal of a state location `base` because of `why` (why_shared_path), with what to do.
inline std::string shared_path_refusal(const std::string& base, const std::string& why) {
  return "sbx keeps no state below '" + base + "': " + why +
         ", so a sandboxed command given that directory writable, or another user, could rename "
         "what is below it and plant a state directory that a later run would trust. Set "
         "XDG_RUNTIME_DIR to a private runtime directory of this user (mode 0700), or "
         "XDG_CACHE_HOME or HOME to a directory outside shared directories such as /tmp";
}

// The user's cache base ($XDG_CACHE_HOME, else ~/.cache), in the home directory that no other
// user can write. It may be a symlink the user made, but must lead to a directory of this user
// that group and others cannot write, and every directory on the way, the symlinks followed,
// must be safe (why_shared_path): HOME=/tmp (containers, CI) is refused, never used. Created
// 0700 when missing, and only after its parent was found safe (nothing is made in /tmp).
inline Result<std::string> cache_base(const Sources& sources) {
  std::string base = sources.xdg_cache_home;
  if (base.empty() || base.front() != '/') {
    if (sources.home.empty() || sources.home.front() != '/')
      return Error{
          "no private place for sbx's state: no usable runtime directory "
          "($XDG_RUNTIME_DIR, /run/user/<uid>) and no home directory for ~/.cache"};
    base = sources.home + "/.cache";
  }
  if (std::optional<std::string> why = why_shared_path(split_path(base).first, sources.uid))
    return Error{shared_path_refusal(base, *why)};
  if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST)
    return Error{"cannot create '" + base + "': " + std::strerror(errno)};
  // ~/.cache is the user's own directory, but a sandbox given HOME writable can chmod it (it
  // cannot be kept read-only without making all of ~/.cache so): `chmod 000 ~/.cache` would
  // end every later run's state. Only the narrowing is undone (repair_narrowed_dir): a mode
  // the user gave it with group or other bits stays theirs.
  repair_narrowed_dir(base, sources.uid);
  if (std::optional<std::string> why = why_shared_path(base, sources.uid))
    return Error{shared_path_refusal(base, *why)};
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != sources.uid ||
      (st.st_mode & 022) != 0)
    return Error{"'" + base + "' is not a directory of this user that only it can write"};
  return base;
}

// THE place where sbx keeps per-user state of kind `name` ("bwrap": bwrap's probe cache and
// mount registry; "proxy": the proxy's per-run socket directories), made on first use:
//  - <runtime>/sbx-<name> when the user has a runtime directory (runtime_base);
//  - else <cache>/sbx/<name> (cache_base): su sessions, containers and CI often have no
//    /run/user/<uid>;
//  - never a shared directory such as /tmp: another user could take the name first, and a
//    sandboxed command with /tmp writable (the workspace-write preset) could remove or replace
//    another run's files there (issue #32: a Landlock run deleted another run's proxy socket).
//  - never below a directory that others (or a sandboxed command with it writable) could
//    rename entries in: HOME=/tmp or XDG_CACHE_HOME=/var/tmp/... is refused (why_shared_path).
// Each directory made or met on the way must be this user's own, mode 0700, not a symlink
// (make_private_dir); anything else is an error naming the directory and what is wrong.
// Returned by its real path: a symlinked ~/.cache (checked by cache_base) is common, and a
// sandbox binds or masks a directory by a path without symlinks (bwrap opens bind sources with
// O_NOFOLLOW, and makes its mount points below the new root, where an absolute link leads out).
inline Result<std::string> state_dir(const Sources& sources, const std::string& name) {
  const auto real = [](const std::string& dir) -> Result<std::string> {
    char resolved[PATH_MAX];
    if (::realpath(dir.c_str(), resolved) == nullptr)
      return Error{"cannot resolve '" + dir + "': " + std::strerror(errno)};
    return std::string(resolved);
  };
  if (const std::optional<std::string> runtime = runtime_base(sources)) {
    const std::string dir = *runtime + "/sbx-" + name;
    if (Status ok = make_private_dir(dir, sources.uid); !ok.ok()) return ok.failure();
    return real(dir);
  }
  Result<std::string> base = cache_base(sources);
  if (!base.ok()) return base.failure();
  const std::string sbx_dir = *base + "/sbx";
  if (Status ok = make_private_dir(sbx_dir, sources.uid); !ok.ok()) return ok.failure();
  const std::string dir = sbx_dir + "/" + name;
  if (Status ok = make_private_dir(dir, sources.uid); !ok.ok()) return ok.failure();
  return real(dir);
}

// Every directory a run of this user could keep its state in, whichever one this run uses, made
// when missing as a run using it would make it (make_private_dir), in this order:
//  - <runtime>/sbx-<name> for each of `runtime_names` in each runtime directory usable now
//    (runtime_base's test): $XDG_RUNTIME_DIR, /run/user/<uid>, root's /run. A run with another
//    XDG_RUNTIME_DIR, or none, uses the next one: su sessions, cron and CI often have no
//    XDG_RUNTIME_DIR;
//  - <cache>/sbx (it holds every <name>) for $XDG_CACHE_HOME when absolute and for ~/.cache,
//    each that cache_base accepts: the fallback of a run without a usable runtime directory
//    (logind removes /run/user/<uid> at the user's last logout). Not for root with /run
//    usable: runtime_base never passes /run over, whatever the environment.
// Why all of them (issue #32 B3): a sandboxed command that could write one that this run does
// not use (~/.cache/sbx with HOME writable while XDG_RUNTIME_DIR is in use) could plant a state
// directory there that a later run without XDG_RUNTIME_DIR finds private and trusts: only the
// directory itself tells, and a command of this user makes it this user's own, mode 0700.
//  - the passwd home's ~/.cache/sbx when HOME names another directory.
// Not covered: a location a later run is given by a variable this run does not have (another
// XDG_RUNTIME_DIR, XDG_CACHE_HOME, or a HOME that is neither this one nor passwd's).
inline std::vector<std::string> candidate_state_dirs(
    const Sources& sources, const std::vector<std::string>& runtime_names) {
  std::vector<std::string> out;
  const auto add = [&out, &sources](const std::string& dir) {
    if (std::find(out.begin(), out.end(), dir) != out.end()) return;
    if (make_private_dir(dir, sources.uid).ok()) out.push_back(dir);
  };
  std::vector<std::string> runtimes;
  const auto usable = [&](const std::string& dir) {
    return is_private_dir_of(dir, sources.uid) && !why_shared_path(dir, sources.uid);
  };
  if (usable(sources.xdg_runtime_dir)) runtimes.push_back(sources.xdg_runtime_dir);
  const std::string run_user = sources.run_user_root + "/" + std::to_string(sources.uid);
  if (run_user != sources.xdg_runtime_dir && usable(run_user)) runtimes.push_back(run_user);
  if (!sources.root_run.empty()) runtimes.push_back(sources.root_run);
  for (const std::string& runtime : runtimes)
    for (const std::string& name : runtime_names) add(runtime + "/sbx-" + name);
  if (sources.uid == 0 && !sources.root_run.empty()) return out;
  for (const std::string& cache_home : {sources.xdg_cache_home, std::string()}) {
    Sources one = sources;
    one.xdg_cache_home = cache_home;  // "": ~/.cache
    if (!cache_home.empty() && cache_home.front() != '/') continue;
    const Result<std::string> base = cache_base(one);
    if (base.ok()) add(*base + "/sbx");
  }
  // The passwd home's ~/.cache/sbx too, when HOME names another directory (red team round 4:
  // a run with HOME set elsewhere and the usual home writable moved that state aside, and
  // every later run with the usual HOME failed).
  if (!sources.passwd_home.empty() && sources.passwd_home.front() == '/' &&
      sources.passwd_home != sources.home) {
    Sources usual = sources;
    usual.xdg_cache_home.clear();
    usual.home = sources.passwd_home;
    const Result<std::string> base = cache_base(usual);
    if (base.ok()) add(*base + "/sbx");
  }
  return out;
}

// Why `st` (of `what`) may not hold a file this user reuses: another owner could have written
// it, or replaced it (a directory writable by others lets anyone swap its entries).
inline std::optional<std::string> not_private(const struct stat& st, const std::string& what) {
  if (st.st_uid != ::geteuid())
    return what + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (" +
           std::to_string(::geteuid()) + ")";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return what + " is writable by group or others";
  return std::nullopt;
}

// The text of `path`, or why it may not be used. The directory and the file are checked on
// descriptors (the file opened relative to the checked directory, never through a symlink):
// both owned by this user, neither writable by group or others, the file regular and smaller
// than `max_size`. A directory an attacker redirected an ancestor to would have to be this
// user's own, which only this user (or root) can make.
// Messages name the directory and the file as "<kind> directory '...'", "<kind> file '...'".
inline Result<std::string> read_private_file(const std::string& path, const std::string& kind,
                                             std::size_t max_size = 65536) {
  const auto [dir, name] = split_path(path);
  const std::string dir_what = kind + " directory '" + dir + "'";
  const std::string file_what = kind + " file '" + path + "'";
  const UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!dir_fd.valid() || ::fstat(dir_fd.get(), &st) != 0)
    return Error{dir_what + ": " + std::strerror(errno)};
  if (std::optional<std::string> why = not_private(st, dir_what)) return Error{*why};
  const UniqueFd fd(
      ::openat(dir_fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0)
    return Error{file_what + ": " + std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return Error{file_what + " is not a regular file"};
  if (std::optional<std::string> why = not_private(st, file_what)) return Error{*why};
  if (static_cast<std::size_t>(st.st_size) >= max_size) return Error{file_what + " is too large"};
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  const ssize_t n = ::read(fd.get(), text.data(), text.size());
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

// Replaces `path` with `text`, or leaves it as it was (false). A fresh file (O_EXCL|O_NOFOLLOW
// after unlinking whatever is there): a symlink planted at the temporary name must not make the
// caller truncate or write the file it points to; rename() makes the new text appear whole.
// The temporary name is this process's own, so two runs writing at once never rename each
// other's half-written file into place.
inline bool write_private_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool complete = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (complete && ::rename(tmp.c_str(), path.c_str()) == 0) return true;
  ::unlink(tmp.c_str());
  return false;
}

// What confines this process, for the key of an answer kept between runs (a probe's): an
// answer found under one confinement says nothing of another (issue #38: a pass kept outside a
// container-like seccomp profile was reused inside it, and the probe blamed the wrong check).
// proc(5) /proc/self/status: Seccomp (mode), Seccomp_filters (how many, Linux 5.9), NoNewPrivs
// and the five capability sets; and the identity of each namespace (/proc/self/ns/*,
// namespaces(7)). Two different filters of the same count are not told apart (reading a
// filter back needs CAP_SYS_ADMIN, seccomp(2) SECCOMP_GET_FILTER): the key is a guard against
// reuse across environments, not a proof. "" when /proc/self/status cannot be read (then
// nothing may be kept).
inline std::string caller_confinement() {
  const UniqueFd fd(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  std::string status;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;)
    status.append(buffer, static_cast<std::size_t>(n));
  std::string out;
  std::size_t start = 0;
  while (start < status.size()) {
    std::size_t end = status.find('\n', start);
    if (end == std::string::npos) end = status.size();
    const std::string line = status.substr(start, end - start);
    for (const char* field : {"Seccomp:", "Seccomp_filters:", "NoNewPrivs:", "CapInh:", "CapPrm:",
                              "CapEff:", "CapBnd:", "CapAmb:"}) {
      if (line.rfind(field, 0) == 0) {
        std::string value = line.substr(std::strlen(field));
        value.erase(0, value.find_first_not_of(" \t"));
        out += std::string(field) + value + ";";
      }
    }
    start = end + 1;
  }
  if (out.find("Seccomp:") == std::string::npos || out.find("CapEff:") == std::string::npos)
    return {};
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
    char link[64] = {0};
    const std::string path = std::string("/proc/self/ns/") + ns;
    const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
    out += n > 0 ? std::string(link, static_cast<std::size_t>(n)) : std::string(ns) + ":?";
    out += ";";
  }
  return out;
}

}  // namespace sbx::private_state

#endif  // _WIN32
