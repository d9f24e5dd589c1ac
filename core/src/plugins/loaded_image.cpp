#include "plugins/loaded_image.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__linux__)
#include <elf.h>
#include <link.h>
#elif defined(__APPLE__)
#include <mach-o/dyld.h>

#include "sbx/sdk/abi.h"
#endif

namespace sbx::plugins {
namespace {

#if defined(__linux__) || defined(__APPLE__)
// The path must still name the checked inode after the load. It cannot change while the chain
// holds; if it did, the chain assumption is broken and nothing loaded from it is trusted.
std::optional<std::string> path_still_names_checked_file(const TrustedFile& file) {
  struct stat now {};
  if (lstat(file.path.c_str(), &now) != 0)
    return "the checked path is gone after loading (" + std::string(std::strerror(errno)) + ")";
  if (now.st_dev != file.st.st_dev || now.st_ino != file.st.st_ino)
    return std::string("the checked path names another file after loading; refusing the image");
  return std::nullopt;
}
#endif

#if defined(__linux__)

struct LoadedSegments {
  const char* name = nullptr;
  ElfW(Addr) base = 0;
  bool found = false;
  std::vector<ElfW(Phdr)> headers;
};

// The first object dl_iterate_phdr reports is the main program (glibc: always, named "").
int collect_main_program(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* wanted = static_cast<LoadedSegments*>(data);
  wanted->found = true;
  wanted->base = info->dlpi_addr;
  wanted->headers.assign(info->dlpi_phdr, info->dlpi_phdr + info->dlpi_phnum);
  return 1;
}

int collect_segments(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* wanted = static_cast<LoadedSegments*>(data);
  if (info->dlpi_addr != wanted->base || info->dlpi_name == nullptr ||
      std::strcmp(info->dlpi_name, wanted->name) != 0) {
    return 0;
  }
  wanted->found = true;
  wanted->headers.assign(info->dlpi_phdr, info->dlpi_phdr + info->dlpi_phnum);
  return 1;
}

std::string hex(std::uint64_t value) {
  std::array<char, 24> text{};
  std::snprintf(text.data(), text.size(), "0x%llx", static_cast<unsigned long long>(value));
  return text.data();
}

// True if the `length` bytes mapped at `image` equal `file_bytes`. The image is read as raw
// memory: under AddressSanitizer the gaps between an instrumented object's globals are poisoned
// though mapped and readable, so this one function is left uninstrumented, and it avoids
// memcmp (whose interceptor checks the shadow anyway).
__attribute__((no_sanitize("address"))) bool same_bytes(const unsigned char* image,
                                                        const unsigned char* file_bytes,
                                                        std::size_t length) {
  unsigned char difference = 0;
  for (std::size_t i = 0; i < length; ++i) difference |= image[i] ^ file_bytes[i];
  return difference == 0;
}

// Compares `length` bytes mapped at `memory` with the checked descriptor's bytes at `offset`.
std::optional<std::string> compare_with_file(const unsigned char* memory, std::size_t length,
                                             int fd, off_t offset) {
  std::array<unsigned char, 64 * 1024> buffer{};
  std::size_t done = 0;
  while (done < length) {
    const std::size_t want = std::min(buffer.size(), length - done);
    const ssize_t got = pread(fd, buffer.data(), want, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return "cannot read the checked file at offset " + hex(static_cast<std::uint64_t>(offset)) +
             " to compare it with the loaded image";
    }
    if (!same_bytes(memory + done, buffer.data(), static_cast<std::size_t>(got))) {
      return "the loaded image is not the checked file (its bytes at file offset " +
             hex(static_cast<std::uint64_t>(offset)) + " differ); refusing it";
    }
    done += static_cast<std::size_t>(got);
  }
  return std::nullopt;
}

// Every read-only PT_LOAD segment (the ELF headers, code, constants: relocation never writes
// them) must hold exactly the checked file's bytes. Writable segments are skipped because the
// dynamic loader rewrites them (GOT, relocated data); the code that would use them is compared.
std::optional<std::string> compare_segments(const LoadedSegments& segments,
                                            const TrustedFile& file) {
  std::size_t compared = 0;
  for (const ElfW(Phdr) & header : segments.headers) {
    if (header.p_type != PT_LOAD || (header.p_flags & PF_W) != 0) continue;
    if ((header.p_flags & PF_R) == 0) {
      return "the loaded image has an unreadable segment (file offset " + hex(header.p_offset) +
             "); it cannot be compared with the checked file";
    }
    if (header.p_offset + header.p_filesz > static_cast<std::uint64_t>(file.st.st_size)) {
      return std::string(
          "the loaded image has a segment beyond the end of the checked file; it "
          "is not the checked file");
    }
    const auto* memory = reinterpret_cast<const unsigned char*>(segments.base + header.p_vaddr);
    if (std::optional<std::string> problem = compare_with_file(
            memory, header.p_filesz, file.fd.get(), static_cast<off_t>(header.p_offset))) {
      return problem;
    }
    compared += header.p_filesz;
  }
  if (compared == 0)
    return std::string("the loaded image has no read-only segment to compare with the file");
  return std::nullopt;
}

#endif  // __linux__

}  // namespace

std::optional<std::string> path_loading_problem() {
#if defined(__APPLE__)
  // With either set, dyld looks for the leaf name elsewhere (or for a suffixed variant) before
  // it opens the full path it was given, so dlopen(path) might not open the checked file.
  for (const char* name : {"DYLD_LIBRARY_PATH", "DYLD_IMAGE_SUFFIX"}) {
    if (std::getenv(name) != nullptr) {
      return std::string(name) +
             " is set, so dyld may load another file than the checked path; unset it";
    }
  }
#endif
  return std::nullopt;
}

std::optional<std::string> loaded_image_problem(void* handle, const TrustedFile& file) {
#if defined(__linux__)
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr)
    return std::string("cannot find the loaded image (dlinfo failed) to compare it with the file");
  // glibc hands back an object already loaded under the same name even if the path now names
  // another file; the name must be ours, and the bytes below must be the checked file's.
  if (file.path != map->l_name) {
    return "the loader returned an image named " + std::string(map->l_name) +
           "; expected the checked path";
  }
  LoadedSegments segments;
  segments.name = map->l_name;
  segments.base = map->l_addr;
  dl_iterate_phdr(collect_segments, &segments);
  if (!segments.found)
    return std::string("dl_iterate_phdr does not report the loaded image; cannot compare it");
  if (std::optional<std::string> problem = compare_segments(segments, file)) return problem;
  return path_still_names_checked_file(file);
#elif defined(__APPLE__)
  void* entry = dlsym(handle, SBX_PLUGIN_ENTRY_SYMBOL);
  Dl_info info{};
  if (entry == nullptr || dladdr(entry, &info) == 0 || info.dli_fbase == nullptr)
    return std::string("cannot find the loaded image of " SBX_PLUGIN_ENTRY_SYMBOL);
  const char* image_name = nullptr;
  for (uint32_t i = 0; i < _dyld_image_count(); ++i) {
    if (static_cast<const void*>(_dyld_get_image_header(i)) == info.dli_fbase) {
      image_name = _dyld_get_image_name(i);
      break;
    }
  }
  if (image_name == nullptr)
    return std::string("dyld does not report the image of " SBX_PLUGIN_ENTRY_SYMBOL);
  if (file.path != image_name)
    return "dyld loaded " + std::string(image_name) + "; expected the checked path";
  return path_still_names_checked_file(file);
#else
  (void)handle;
  (void)file;
  return std::string("this platform has no way to compare a loaded image with the checked file");
#endif
}

std::optional<std::string> main_program_image_problem(const TrustedFile& file) {
#if defined(__linux__)
  LoadedSegments segments;
  dl_iterate_phdr(collect_main_program, &segments);
  if (!segments.found)
    return std::string("dl_iterate_phdr does not report the main program; cannot compare it");
  if (std::optional<std::string> problem = compare_segments(segments, file)) return problem;
  return path_still_names_checked_file(file);
#else
  (void)file;
  return std::string("this platform has no way to compare the running program with a file");
#endif
}

}  // namespace sbx::plugins
