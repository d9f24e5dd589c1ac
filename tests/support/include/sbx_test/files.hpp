// Small file helpers for checking the host from outside a sandbox.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sbx::test {

namespace fs = std::filesystem;  // the tests that use these helpers all say fs::

// The whole file ("" when it cannot be read).
std::string read_file(const std::string& path);
// Replaces the file's content.
void write_file(const std::string& path, const std::string& text);
// True when anything (even a dangling symlink) exists at `path`.
bool exists(const std::string& path);
// The sorted names directly inside `dir` (to prove nothing new appeared).
std::vector<std::string> listing(const std::string& dir);
// Binds a unix socket at `path` and closes it: the socket inode stays, as the bwrap backend's
// mount point for a missing name is on the host. false when it cannot (path too long, taken).
bool make_socket_inode(const std::string& path);
// Polls until `path` exists; false after `timeout_ms`.
bool wait_for_file(const std::string& path, int timeout_ms);

// What a file was (content and inode), to prove a run left it untouched, even replaced by rename.
struct FileState {
  std::string content;
  ino_t inode = 0;
};
// The state of `path` without following a final symlink ({} when nothing is there).
FileState state_of(const std::string& path);

}  // namespace sbx::test
