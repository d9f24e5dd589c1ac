// The fanotify watch behind CreatedNamesScan (created_names_events.hpp, created_names.hpp).
#include "created_names_events.hpp"

#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#endif

namespace sbx::created_names_events {

#if defined(__linux__)
namespace {

// Every change that sets an inode's ctime or birth time and that fanotify reports (fanotify(7)):
// entries created, removed or renamed in a directory (its ctime), a file written (MODIFY;
// CLOSE_WRITE stands for writes through a shared mapping, which report nothing else), an
// inode's attributes changed (mode, owner, times, extended attributes, size, link count).
// FAN_ONDIR: the same for directories. A filesystem mark with FAN_REPORT_DIR_FID reports a
// file's events with its parent and name (FAN_EVENT_ON_CHILD is implied, Linux 5.9).
constexpr unsigned long long kEvents = FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO |
                                       FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE | FAN_ONDIR;
constexpr unsigned long long kDirent = FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO;
// Handles already looked at, remembered so that a directory written a thousand times is
// resolved once; forgotten past this many (resolving one again is only slower).
constexpr std::size_t kSeenBound = std::size_t{1} << 16;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// The descriptors made before the command starts, on the thread that starts it, are kept above
// 2: with the caller's 0, 1 or 2 closed, one would take that number, and the command would be
// given it as its stdin, stdout or stderr (the fanotify group: every change on the host).
Fd above_stdio(int fd) {
  if (fd < 0 || fd > 2) return Fd(fd);
  Fd low(fd);
  return Fd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
}

bool same_fsid(const fsid_t& a, const void* b) { return std::memcmp(&a, b, sizeof a) == 0; }

// A file handle as fanotify and name_to_handle_at give it: struct file_handle and its bytes.
std::string handle_bytes(const void* handle) {
  struct file_handle header {};
  std::memcpy(&header, handle, sizeof header);
  return std::string(static_cast<const char*>(handle), sizeof header + header.handle_bytes);
}

// The object of `handle` on the filesystem of `mount_fd`, through that descriptor's mount
// (open_by_handle_at(2): CAP_DAC_READ_SEARCH). O_PATH: nothing is opened for reading (a FIFO
// would block, a device would be touched).
int open_handle(int mount_fd, const std::string& handle) {
  alignas(struct file_handle) unsigned char buffer[sizeof(struct file_handle) + MAX_HANDLE_SZ];
  if (handle.size() > sizeof buffer) {
    errno = EINVAL;
    return -1;
  }
  std::copy(handle.begin(), handle.end(), buffer);
  return ::open_by_handle_at(mount_fd, reinterpret_cast<struct file_handle*>(buffer),
                             O_PATH | O_CLOEXEC);
}

// The path of an open descriptor, as the kernel names it (/proc/thread-self/fd); nullopt when it
// has none that fits.
std::optional<std::string> path_of(int fd) {
  char link[32];
  // thread-self: the reading thread has a descriptor table of its own (Linux 3.17).
  std::snprintf(link, sizeof link, "/proc/thread-self/fd/%d", fd);
  std::string path(4096, '\0');
  const ssize_t length = ::readlink(link, path.data(), path.size());
  if (length <= 0 || static_cast<std::size_t>(length) >= path.size() || path[0] != '/')
    return std::nullopt;
  path.resize(static_cast<std::size_t>(length));
  return path;
}

bool same_inode(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// A mount point of /proc/self/mountinfo, its escapes (\040 for a space...) undone.
std::string unescape(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3') {
      out += static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) |
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

struct MountLine {
  int id = 0;
  std::string device;  // "major:minor"
  std::string point;
};

std::vector<MountLine> parse_mountinfo(const std::string& text) {
  std::vector<MountLine> mounts;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::vector<std::string> fields;
    for (std::size_t f = at; f < end && fields.size() < 5;) {
      const std::size_t space = std::min(text.find(' ', f), end);
      fields.push_back(text.substr(f, space - f));
      f = space + 1;
    }
    at = end + 1;
    if (fields.size() < 5) continue;
    MountLine line;
    char* parsed_end = nullptr;
    const long id = std::strtol(fields[0].c_str(), &parsed_end, 10);
    if (parsed_end == fields[0].c_str() || *parsed_end != '\0' || id < 0 || id > INT32_MAX)
      continue;
    line.id = static_cast<int>(id);
    line.device = fields[2];
    line.point = unescape(fields[4]);
    mounts.push_back(std::move(line));
  }
  return mounts;
}

bool read_all(int fd, std::string& text) {
  text.clear();
  char chunk[8192];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.append(chunk, static_cast<std::size_t>(n));
  }
}

std::string joined(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

bool is_under(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace

struct ChangeWatch::State {
  // One watched filesystem: its mark, and a descriptor of each mount through which the walk
  // reaches it (the roots' own, and a bind mount of it below a root: the walk enters those),
  // so that a handle is named by every path the walk would list it under.
  struct Filesystem {
    dev_t device = 0;
    fsid_t fsid{};
    std::vector<Fd> mounts;
    std::vector<int> mount_ids;
    std::size_t root_mounts = 0;  // mounts[0, root_mounts) are the roots' own
  };
  // A directory where something changed, and a watched name created or moved there (empty:
  // the directory itself changed, or an entry in it).
  struct DirSpot {
    std::size_t fs = 0;
    std::string handle;
    std::string name;
  };
  // A file whose content or attributes changed, with the directory and name the event came
  // through.
  struct FileSpot {
    std::size_t fs = 0;
    std::string handle;
    std::string dir;
    std::string name;
  };
  struct Info {
    bool present = false;
    std::size_t fs = 0;
    std::string handle;
    std::string name;  // DFID_NAME only; "." (an event on the directory itself) is left empty
  };

  std::vector<std::string> roots;
  std::vector<std::string> names;
  std::vector<bool> watched;
  std::size_t max_changed = 0;
  std::vector<Filesystem> filesystems;
  Fd group;
  Fd stop;
  std::atomic<bool> stopping{false};
  std::thread thread;
  bool started = false;
  std::mutex mutex;
  std::condition_variable ready_changed;
  bool ready = true;  // false while a started thread has not read the mounts yet

  std::atomic<bool> abandon{false};  // the destructor: stop without answering
  // The thread's until it is joined, then finish()'s.
  std::vector<int> mounts_below;  // ids of the bind mounts below the roots, as first read
  std::string failed;             // non-empty: the events cannot answer, and why
  std::vector<Candidate> answer;
  std::unordered_set<std::string> seen;
  std::unordered_map<std::string, std::vector<std::string>> directory_cache;
  std::unordered_set<std::string> kept_keys;
  std::vector<DirSpot> kept_dirs;
  std::vector<FileSpot> kept_files;
  alignas(struct fanotify_event_metadata) char buffer[65536];
  std::vector<std::uint64_t> aligned;  // one record at a time, 8-byte aligned

  enum class Found { kOk, kGone, kFailed, kSeveralLinks };

  bool is_watched_name(const std::string& name) const {
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  // The outermost entry with a watched name on the way from the root `path` lies under (the
  // deepest root: a root nested in another is walked on its own) to `path` itself.
  std::optional<Candidate> candidate_for(const std::string& path) const {
    std::size_t best = roots.size();
    for (std::size_t i = 0; i < roots.size(); ++i) {
      if (is_under(path, roots[i]) &&
          (best == roots.size() || roots[i].size() > roots[best].size()))
        best = i;
    }
    if (best == roots.size() || !watched[best]) return std::nullopt;
    std::size_t at = roots[best] == "/" ? 1 : roots[best].size() + 1;
    while (at < path.size()) {
      const std::size_t end = std::min(path.find('/', at), path.size());
      if (is_watched_name(path.substr(at, end - at))) return Candidate{best, path.substr(0, end)};
      at = end + 1;
    }
    return std::nullopt;
  }

  void fail(std::string why) {
    if (failed.empty()) failed = std::move(why);
  }

  std::optional<std::size_t> filesystem_of(const void* fsid) const {
    for (std::size_t i = 0; i < filesystems.size(); ++i) {
      if (same_fsid(filesystems[i].fsid, fsid)) return i;
    }
    return std::nullopt;
  }

  // The bind mounts of the watched filesystems below a watched root, from /proc/self/mountinfo:
  // the walk enters them, so handles are also resolved through them. Read when the thread
  // starts, and again after the run: the same ones must be there (one made and removed during
  // the run is not walked either; one made or removed that stays would show another path).
  bool bind_mounts(std::vector<MountLine>& lines,
                   std::vector<std::vector<const MountLine*>>& below) {
    const Fd fd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    std::string text;
    if (fd.get() < 0 || !read_all(fd.get(), text)) {
      fail("/proc/self/mountinfo cannot be read");
      return false;
    }
    lines = parse_mountinfo(text);
    below.assign(filesystems.size(), {});
    for (std::size_t f = 0; f < filesystems.size(); ++f) {
      const Filesystem& fs = filesystems[f];
      const auto roots_end = fs.mount_ids.begin() + static_cast<long>(fs.root_mounts);
      std::vector<std::string> devices;
      for (const MountLine& line : lines) {
        if (std::find(fs.mount_ids.begin(), roots_end, line.id) != roots_end)
          devices.push_back(line.device);
      }
      for (const MountLine& line : lines) {
        if (std::find(devices.begin(), devices.end(), line.device) == devices.end()) continue;
        for (std::size_t i = 0; i < roots.size(); ++i) {
          if (watched[i] && line.point != roots[i] && is_under(line.point, roots[i])) {
            below[f].push_back(&line);
            break;
          }
        }
      }
    }
    return true;
  }
  void prepare_mounts() {
    std::vector<MountLine> lines;
    std::vector<std::vector<const MountLine*>> below;
    if (!bind_mounts(lines, below)) return;
    for (std::size_t f = 0; f < filesystems.size(); ++f) {
      Filesystem& fs = filesystems[f];
      for (const MountLine* line : below[f]) {
        mounts_below.push_back(line->id);
        if (std::find(fs.mount_ids.begin(), fs.mount_ids.end(), line->id) != fs.mount_ids.end())
          continue;
        // The mount now at that path, if it is still this one (the path names the top mount).
        Fd fd(::open(line->point.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        struct stat st {};
        alignas(struct file_handle) unsigned char h[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        auto* handle = reinterpret_cast<struct file_handle*>(h);
        handle->handle_bytes = MAX_HANDLE_SZ;
        int id = -1;
        if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || st.st_dev != fs.device ||
            ::name_to_handle_at(fd.get(), "", handle, &id, AT_EMPTY_PATH) != 0 || id != line->id)
          continue;
        fs.mounts.push_back(std::move(fd));
        fs.mount_ids.push_back(id);
      }
    }
    std::sort(mounts_below.begin(), mounts_below.end());
  }
  void check_mounts() {
    std::vector<MountLine> lines;
    std::vector<std::vector<const MountLine*>> below;
    if (!bind_mounts(lines, below)) return;
    std::vector<int> now;
    for (const auto& mounts : below) {
      for (const MountLine* line : mounts) now.push_back(line->id);
    }
    std::sort(now.begin(), now.end());
    if (now != mounts_below) fail("the mounts below a writable root changed during the run");
  }

  // Every path of the directory `handle` on filesystem `fs`, one per mount it is reached by (a
  // path outside every root is left to candidate_for). `keep`: a descriptor of it, when found.
  Found directory_paths(std::size_t fs, const std::string& handle, std::vector<std::string>& paths,
                        Fd* keep = nullptr) {
    const Filesystem& filesystem = filesystems[fs];
    for (std::size_t m = 0; m < filesystem.mounts.size(); ++m) {
      Fd fd(open_handle(filesystem.mounts[m].get(), handle));
      // ESTALE: no such inode any more (removed, its number reused). The directory is gone,
      // and with it whatever changed inside it (its removal changed its parent, which has its
      // own event).
      if (fd.get() < 0) return errno == ESTALE ? Found::kGone : Found::kFailed;
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0) return Found::kFailed;
      if (st.st_nlink == 0) return Found::kGone;  // removed, still held open by someone
      const std::optional<std::string> path = path_of(fd.get());
      if (!path) return Found::kFailed;
      if (std::find(paths.begin(), paths.end(), *path) == paths.end()) paths.push_back(*path);
      if (keep != nullptr && keep->get() < 0) *keep = std::move(fd);
    }
    return Found::kOk;
  }

  // Every path of a changed file. A file with one link is named by the event's directory and
  // name while they still name it, else by the path the kernel gives its inode (checked); a
  // file with several links may have another name anywhere, inside a watched entry too,
  // which nothing here can list.
  Found file_paths(const FileSpot& spot, std::vector<std::string>& paths) {
    const Filesystem& filesystem = filesystems[spot.fs];
    Fd file(open_handle(filesystem.mounts[0].get(), spot.handle));
    if (file.get() < 0) return errno == ESTALE ? Found::kGone : Found::kFailed;
    struct stat st {};
    if (::fstat(file.get(), &st) != 0) return Found::kFailed;
    if (st.st_nlink == 0) return Found::kGone;
    if (st.st_nlink > 1) return Found::kSeveralLinks;
    if (!spot.dir.empty()) {
      // Most changed files are other processes' (a build's objects): their directory is looked
      // up once, then each file by name under it, its identity checked.
      const std::vector<std::string>* known = cached_directory_paths(spot.fs, spot.dir);
      struct stat there {};
      if (known != nullptr && !known->empty() &&
          ::lstat(joined(known->front(), spot.name).c_str(), &there) == 0 &&
          same_inode(there, st)) {
        for (const std::string& d : *known) paths.push_back(joined(d, spot.name));
        return Found::kOk;
      }
      std::vector<std::string> dirs;
      Fd dir;
      struct stat named {};
      if (directory_paths(spot.fs, spot.dir, dirs, &dir) == Found::kOk && dir.get() >= 0 &&
          ::fstatat(dir.get(), spot.name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
          same_inode(named, st)) {
        for (const std::string& d : dirs) paths.push_back(joined(d, spot.name));
        return Found::kOk;
      }
    }
    for (std::size_t m = 0; m < filesystem.mounts.size(); ++m) {
      Fd fd(open_handle(filesystem.mounts[m].get(), spot.handle));
      const std::optional<std::string> path = fd.get() >= 0 ? path_of(fd.get()) : std::nullopt;
      struct stat there {};
      // A file's handle may come back as a dentry not connected to the tree, whose "path" is
      // no path: only one that leads to this very inode counts.
      if (path && ::lstat(path->c_str(), &there) == 0 && same_inode(there, st))
        paths.push_back(*path);
    }
    return paths.empty() ? Found::kFailed : Found::kOk;
  }

  // The paths of a directory as last looked up, while no directory has been renamed since:
  // only a rename moves a directory (a removed one's handle is never another's), and a rename
  // made after the lookup is an event read before any event made after it.
  const std::vector<std::string>* cached_directory_paths(std::size_t fs,
                                                         const std::string& handle) {
    const std::string key = std::to_string(fs) + ":" + handle;
    if (const auto found = directory_cache.find(key); found != directory_cache.end())
      return &found->second;
    std::vector<std::string> paths;
    if (directory_paths(fs, handle, paths) != Found::kOk) return nullptr;
    if (directory_cache.size() >= kSeenBound) directory_cache.clear();
    return &directory_cache.emplace(key, std::move(paths)).first->second;
  }

  bool keep(const std::string& key) {
    if (!kept_keys.insert(key).second) return false;
    if (kept_keys.size() > max_changed) {
      fail("more than " + std::to_string(max_changed) +
           " changed places inside or at watched names to check");
      return false;
    }
    return true;
  }
  bool first_sight(const std::string& key) {
    if (seen.size() >= kSeenBound) seen.clear();
    return seen.insert(key).second;
  }

  // A change in or of the directory `dir` (name empty), or the watched `name` created or moved
  // into it. Resolved now: a place that is not at or inside a watched entry now can only come
  // to be by a later change that has its own event (a rename into one, or to a watched name),
  // so it is dropped; the rest is kept and resolved again after the run, where it is then.
  void note_directory(const Info& dir, const std::string& name) {
    const std::string key = "d" + std::to_string(dir.fs) + ":" + dir.handle + '\0' + name;
    if (!first_sight(key)) return;
    std::vector<std::string> paths;
    const Found found = directory_paths(dir.fs, dir.handle, paths);
    if (found == Found::kGone) return;
    bool matters = found != Found::kOk;
    for (const std::string& path : paths) {
      matters = matters || candidate_for(name.empty() ? path : path + "/" + name).has_value();
    }
    if (matters && keep(key)) kept_dirs.push_back(DirSpot{dir.fs, dir.handle, name});
  }

  void note_file(const Info& child, const Info& dir) {
    const std::string key = "f" + std::to_string(child.fs) + ":" + child.handle;
    if (!first_sight(key)) return;
    FileSpot spot{child.fs, child.handle, dir.present && dir.fs == child.fs ? dir.handle : "",
                  dir.name};
    std::vector<std::string> paths;
    const Found found = file_paths(spot, paths);
    if (found == Found::kGone) return;
    bool matters = found != Found::kOk;
    for (const std::string& path : paths) matters = matters || candidate_for(path).has_value();
    if (matters && keep(key)) kept_files.push_back(std::move(spot));
  }

  bool parse(const struct fanotify_event_metadata* event, Info& dir, Info& child) const {
    const char* at = reinterpret_cast<const char*>(event) + event->metadata_len;
    const char* end = reinterpret_cast<const char*>(event) + event->event_len;
    while (at + sizeof(struct fanotify_event_info_header) <= end) {
      struct fanotify_event_info_header header {};
      std::memcpy(&header, at, sizeof header);
      if (header.len < sizeof header || at + header.len > end) return false;
      const bool fid = header.info_type == FAN_EVENT_INFO_TYPE_FID;
      const bool dfid = header.info_type == FAN_EVENT_INFO_TYPE_DFID ||
                        header.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME;
      if (fid || dfid) {
        const std::size_t fixed =
            sizeof(struct fanotify_event_info_fid) + sizeof(struct file_handle);
        if (header.len < fixed) return false;
        const char* fsid = at + offsetof(struct fanotify_event_info_fid, fsid);
        const char* handle = at + sizeof(struct fanotify_event_info_fid);
        struct file_handle h {};
        std::memcpy(&h, handle, sizeof h);
        if (h.handle_bytes > MAX_HANDLE_SZ || fixed + h.handle_bytes > header.len) return false;
        const std::optional<std::size_t> fs = filesystem_of(fsid);
        if (!fs) return false;
        Info& info = fid ? child : dir;
        info.present = true;
        info.fs = *fs;
        info.handle = handle_bytes(handle);
        if (header.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
          const char* name = handle + sizeof(struct file_handle) + h.handle_bytes;
          const std::size_t room = static_cast<std::size_t>(at + header.len - name);
          info.name.assign(name, ::strnlen(name, room));
          if (info.name == ".") info.name.clear();
        }
      }
      at += header.len;
    }
    return true;
  }

  void on_event(const struct fanotify_event_metadata* event) {
    if (event->vers != FANOTIFY_METADATA_VERSION)
      return fail("an fanotify event of another version");
    if (event->fd >= 0) ::close(event->fd);  // none with FAN_REPORT_FID; never leaked
    if ((event->mask & FAN_Q_OVERFLOW) != 0) return fail("the kernel's event queue overflowed");
    Info dir;
    Info child;
    if (!parse(event, dir, child)) return fail("an fanotify event that could not be read");
    const unsigned long long mask = event->mask;
    if ((mask & (FAN_MOVED_FROM | FAN_MOVED_TO)) != 0 && (mask & FAN_ONDIR) != 0)
      directory_cache.clear();
    if ((mask & kDirent) != 0) {
      // An entry created, removed or renamed in `dir`: the directory's own ctime changed.
      if (!dir.present || dir.name.empty()) return fail("a directory event without its entry");
      note_directory(dir, "");
      if ((mask & (FAN_CREATE | FAN_MOVED_TO)) != 0 && is_watched_name(dir.name))
        note_directory(dir, dir.name);
    }
    if ((mask & (FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE)) == 0) return;
    if ((mask & FAN_ONDIR) != 0) {
      // A directory's own attributes: reported with the directory itself as `dir`.
      if (!dir.present) return fail("a directory's event without the directory");
      return note_directory(dir, "");
    }
    if (!child.present) return fail("a file's event without the file");
    // An attribute change reported without the file's parent is a link count changed by a
    // link or unlink elsewhere (fsnotify_link_count): the file's content, mode and names
    // inside watched entries stay as they were (a name added or removed there has its own
    // event), so it is not a change anyone acts on (created_names.hpp).
    if (!dir.present && (mask & (FAN_MODIFY | FAN_CLOSE_WRITE)) == 0) return;
    note_file(child, dir);
  }

  // Reads the queue until it is empty, and: the thread, until finish() asks it to stop (a queue
  // that other processes keep filling would hold it for ever); finish(), until it has read
  // `max_events`, the events queued when it began (events queued later, by processes outside
  // the run, may keep coming: one that writes a file per event it sees, strace of sbx writing
  // its log on a watched filesystem, would keep the queue full for ever). false: it failed.
  bool read_queue(std::optional<std::size_t> max_events) {
    std::size_t events = 0;
    while (failed.empty()) {
      if (!max_events && stopping.load(std::memory_order_relaxed)) return true;
      if (max_events && events >= *max_events) return true;
      const ssize_t length = ::read(group.get(), buffer, sizeof buffer);
      if (length < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) return true;
        fail(std::string("reading the fanotify queue failed: ") + ::strerror(errno));
        break;
      }
      // The kernel aligns each record to 4 bytes only (a name's padding), and the metadata
      // holds a 64-bit mask: each record is copied to 8-byte-aligned memory before it is read
      // (UBSan: misaligned load).
      for (std::size_t at = 0;
           at + FAN_EVENT_METADATA_LEN <= static_cast<std::size_t>(length) && failed.empty();) {
        struct fanotify_event_metadata head {};
        std::memcpy(&head, buffer + at, sizeof head);
        if (head.event_len < FAN_EVENT_METADATA_LEN ||
            head.event_len > static_cast<std::size_t>(length) - at)
          break;
        aligned.assign((head.event_len + 7) / 8, 0);
        std::memcpy(aligned.data(), buffer + at, head.event_len);
        on_event(reinterpret_cast<const struct fanotify_event_metadata*>(aligned.data()));
        ++events;
        at += head.event_len;
      }
    }
    return false;
  }

  void flush_marks() {
    ::fanotify_mark(group.get(), FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, nullptr);
  }

  void set_ready() {
    const std::lock_guard<std::mutex> lock(mutex);
    ready = true;
    ready_changed.notify_all();
  }

  // The descriptors this thread opens (a directory or file per handle looked up, the mounts)
  // must never be where another thread of the process spawns a command from: with the
  // caller's 0, 1 or 2 closed, one of them would take that number and the command would get it
  // as its stdin (a directory of the host, outside the sandbox's view). So the thread takes a
  // descriptor table of its own (unshare(CLONE_FILES)) holding only what it needs; a copy of
  // another thread's descriptor (a pipe whose reader waits for its end) is closed at once.
  // Where that is refused (a seccomp filter), the shared table is safe only with 0-2 open.
  bool own_descriptor_table() {
    if (::unshare(CLONE_FILES) != 0) {
      for (int fd = 0; fd < 3; ++fd) {
        if (::fcntl(fd, F_GETFD) == -1) {
          fail("descriptor " + std::to_string(fd) +
               " is closed and the thread cannot have descriptors of its own");
          return false;
        }
      }
      return true;
    }
    std::vector<unsigned> kept = {static_cast<unsigned>(group.get()),
                                  static_cast<unsigned>(stop.get())};
    for (const Filesystem& fs : filesystems) {
      for (const Fd& mount : fs.mounts) kept.push_back(static_cast<unsigned>(mount.get()));
    }
    std::sort(kept.begin(), kept.end());
    unsigned from = 0;
    for (const unsigned fd : kept) {
      if (fd > from) ::syscall(SYS_close_range, from, fd - 1, 0U);
      from = fd + 1;
    }
    ::syscall(SYS_close_range, from, ~0U, 0U);
    return true;
  }

  // The thread: the events as they come, so that the queue (16384 events) rarely overflows
  // while the whole filesystem's processes add to it, and most are resolved (and dropped)
  // before the run ends; then, asked by finish(), the answer.
  void run() {
    try {
      if (own_descriptor_table()) prepare_mounts();
      set_ready();
      pollfd fds[2] = {{group.get(), POLLIN, 0}, {stop.get(), POLLIN, 0}};
      while (failed.empty()) {
        if (::poll(fds, 2, -1) < 0) {
          if (errno == EINTR) continue;
          fail("poll failed");
          break;
        }
        if ((fds[0].revents & POLLIN) != 0 && !read_queue(std::nullopt)) break;
        if ((fds[1].revents & POLLIN) != 0 || stopping.load(std::memory_order_relaxed)) break;
      }
      if (failed.empty() && !abandon.load(std::memory_order_relaxed)) conclude();
    } catch (...) {
      fail("out of memory");  // an exception must not leave the thread
    }
    // Given up: the marks go at once, and the filesystems' processes stop queuing events.
    if (!failed.empty()) flush_marks();
    set_ready();
  }

  // After the run (finish() asked). Every process of the run is dead: each change it made
  // queued its event in the system call that made it (fsnotify runs in the caller's context),
  // so the queue holds them all. FIONREAD counts the queued events (FAN_EVENT_METADATA_LEN
  // bytes each, their records not counted): those are all to read, and no more.
  void conclude() {
    int queued = 0;
    if (::ioctl(group.get(), FIONREAD, &queued) != 0)
      return fail(std::string("FIONREAD on the fanotify group failed: ") + ::strerror(errno));
    read_queue(static_cast<std::size_t>(queued) / FAN_EVENT_METADATA_LEN);
    // No event is needed any more: the marks go now. Closing a group whose marks are still
    // there, or were removed only just before, waits for the kernel to free them (an SRCU
    // grace period: 8-18 ms here), which the close that ends the run need not.
    flush_marks();
    if (failed.empty()) check_mounts();
    std::vector<std::string> paths;
    for (const DirSpot& spot : kept_dirs) {
      if (!failed.empty()) return;
      std::vector<std::string> found;
      if (directory_paths(spot.fs, spot.handle, found) == Found::kFailed)
        fail("a changed directory could not be found again");
      for (const std::string& path : found)
        paths.push_back(spot.name.empty() ? path : joined(path, spot.name));
    }
    for (const FileSpot& spot : kept_files) {
      if (!failed.empty()) return;
      const Found result = file_paths(spot, paths);
      if (result == Found::kSeveralLinks)
        fail("a file with several links changed: another of its names may be in a watched entry");
      if (result == Found::kFailed) fail("a changed file could not be found again");
    }
    if (!failed.empty()) return;
    for (const std::string& path : paths) {
      if (std::optional<Candidate> candidate = candidate_for(path))
        answer.push_back(std::move(*candidate));
    }
  }
};

ChangeWatch::ChangeWatch(std::unique_ptr<State> state) : state_(std::move(state)) {}

ChangeWatch::~ChangeWatch() {
  if (state_->thread.joinable()) {
    state_->abandon.store(true, std::memory_order_relaxed);
    state_->stopping.store(true, std::memory_order_relaxed);
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(state_->stop.get(), &one, sizeof one);
    state_->thread.join();
  }
}

std::unique_ptr<ChangeWatch> ChangeWatch::open(const std::vector<std::string>& roots,
                                               const std::vector<std::string>& names,
                                               std::size_t max_changed) {
  auto state = std::make_unique<State>();
  state->roots = roots;
  state->names = names;
  state->max_changed = max_changed;
  state->watched.assign(roots.size(), false);
  // FAN_REPORT_DFID_NAME: each event names the directory (a handle) and the entry; with
  // FAN_REPORT_FID a file's own handle too (Linux 5.9). No descriptors are opened for events.
  // The queue keeps its default bound (16384 events; FAN_Q_OVERFLOW past it).
  state->group = above_stdio(::fanotify_init(
      FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME | FAN_REPORT_FID,
      O_RDONLY | O_CLOEXEC));
  if (state->group.get() < 0) return nullptr;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    Fd fd = above_stdio(::open(roots[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    struct statfs fs {};
    alignas(struct file_handle) unsigned char h[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    auto* handle = reinterpret_cast<struct file_handle*>(h);
    handle->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = -1;
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || ::fstatfs(fd.get(), &fs) != 0 ||
        ::name_to_handle_at(fd.get(), "", handle, &mount_id, AT_EMPTY_PATH) != 0)
      continue;
    auto same = std::find_if(state->filesystems.begin(), state->filesystems.end(),
                             [&](const State::Filesystem& f) {
                               return f.device == st.st_dev || same_fsid(f.fsid, &fs.f_fsid);
                             });
    if (same != state->filesystems.end()) {
      // Another root on a filesystem already marked. Two filesystems sharing an fsid cannot
      // be told apart in the events: the second is left to the scan.
      if (same->device != st.st_dev || !same_fsid(same->fsid, &fs.f_fsid)) continue;
      if (std::find(same->mount_ids.begin(), same->mount_ids.end(), mount_id) ==
          same->mount_ids.end()) {
        same->mounts.insert(same->mounts.begin() + static_cast<long>(same->root_mounts),
                            std::move(fd));
        same->mount_ids.insert(same->mount_ids.begin() + static_cast<long>(same->root_mounts),
                               mount_id);
        ++same->root_mounts;
      }
      state->watched[i] = true;
      continue;
    }
    // Handles must come back as descriptors (CAP_DAC_READ_SEARCH; a filesystem that cannot
    // decode them, overlayfs without nfs_export say, is left to the scan).
    Fd back(::open_by_handle_at(fd.get(), handle, O_PATH | O_CLOEXEC));
    if (back.get() < 0) continue;
    // The whole filesystem (CAP_SYS_ADMIN in the initial user namespace): a mount mark
    // reports no directory-entry events (EINVAL), and marks on each directory would cost
    // a walk again.
    if (::fanotify_mark(state->group.get(), FAN_MARK_ADD | FAN_MARK_FILESYSTEM, kEvents, fd.get(),
                        nullptr) != 0)
      continue;
    State::Filesystem filesystem;
    filesystem.device = st.st_dev;
    filesystem.fsid = fs.f_fsid;
    filesystem.mounts.push_back(std::move(fd));
    filesystem.mount_ids.push_back(mount_id);
    filesystem.root_mounts = 1;
    state->filesystems.push_back(std::move(filesystem));
    state->watched[i] = true;
  }
  if (state->filesystems.empty()) return nullptr;
  state->stop = above_stdio(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (state->stop.get() < 0) return nullptr;
  return std::unique_ptr<ChangeWatch>(new ChangeWatch(std::move(state)));
}

bool ChangeWatch::watches(std::size_t root) const {
  return root < state_->watched.size() && state_->watched[root];
}

void ChangeWatch::start() {
  if (state_->started) return;
  state_->started = true;
  // The thread blocks every signal, as the scan's does: a signal meant for sbx (or for an
  // embedding process) is never taken by it.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  state_->ready = false;
  try {
    state_->thread = std::thread([state = state_.get()] { state->run(); });
  } catch (...) {
    state_->ready = true;  // no thread: finish() lets the walk answer
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void ChangeWatch::wait_until_ready() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->ready_changed.wait(lock, [this] { return state_->ready; });
}

bool ChangeWatch::finish(std::vector<Candidate>& candidates, std::string& why) {
  State& s = *state_;
  start();  // a run that never started it: the thread reads the whole queue now
  if (!s.thread.joinable()) {
    why = "no thread to read the events";
    return false;
  }
  s.stopping.store(true, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(s.stop.get(), &one, sizeof one);
  s.thread.join();
  if (!s.failed.empty()) {
    why = s.failed;
    return false;
  }
  candidates = std::move(s.answer);
  return true;
}

#else  // !__linux__

struct ChangeWatch::State {};
ChangeWatch::ChangeWatch(std::unique_ptr<State> state) : state_(std::move(state)) {}
ChangeWatch::~ChangeWatch() = default;
std::unique_ptr<ChangeWatch> ChangeWatch::open(const std::vector<std::string>&,
                                               const std::vector<std::string>&, std::size_t) {
  return nullptr;
}
bool ChangeWatch::watches(std::size_t) const { return false; }
void ChangeWatch::start() {}
void ChangeWatch::wait_until_ready() {}
bool ChangeWatch::finish(std::vector<Candidate>&, std::string& why) {
  why = "no fanotify";
  return false;
}

#endif

}  // namespace sbx::created_names_events
