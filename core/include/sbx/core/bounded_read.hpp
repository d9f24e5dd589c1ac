// Reading a file that a parser bounds (policies, settings): at most `limit` bytes, so that an
// oversized file is reported by the parser without being read whole, and with memory growing
// with what is read. (A buffer of the whole limit filled up front costs a 1 MiB memset, 256
// fresh 4 KiB pages to fault in, on every read of a 200-byte policy; CHANGELOG.md, 2026-12-06.)
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <istream>
#include <string>

#if !defined(_WIN32)
#include <unistd.h>
#endif

namespace sbx {

// Up to `limit` bytes of `in`; the caller checks the stream's state if it cares about errors.
inline std::string read_at_most(std::istream& in, std::size_t limit) {
  std::string text;
  std::array<char, 16384> chunk{};
  while (text.size() < limit && in) {
    const std::size_t want = std::min(chunk.size(), limit - text.size());
    in.read(chunk.data(), static_cast<std::streamsize>(want));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  return text;
}

#if !defined(_WIN32)
// Up to `limit` bytes of `fd`; false (errno set) if a read fails.
inline bool read_at_most(int fd, std::size_t limit, std::string& text) {
  text.clear();
  std::array<char, 16384> chunk{};
  while (text.size() < limit) {
    const std::size_t want = std::min(chunk.size(), limit - text.size());
    const ssize_t n = ::read(fd, chunk.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  return true;
}
#endif

}  // namespace sbx
