// Where the dynamic linker will look for a plugin's dependencies, read from the ELF file before
// it is loaded (stage kInspect), and whether every place it names is trusted
// (core/src/plugins/README.md, "Where plugins come from"). Private to libsbx. ELF only: built
// on Linux (and other ELF POSIX systems), never on Windows or macOS (Mach-O's LC_RPATH is not
// checked yet).
#pragma once

#if !defined(_WIN32) && !defined(__APPLE__)

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/trusted_fs.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx::plugins {

// The dynamic section's search information, as the dynamic linker reads it: through the
// program headers (PT_DYNAMIC, DT_STRTAB mapped through the PT_LOAD segments), never the
// section headers, which ld.so ignores and a file may omit or forge.
struct DynamicSearchInfo {
  std::vector<std::string> rpath;    // each DT_RPATH string (a ':'-separated list)
  std::vector<std::string> runpath;  // each DT_RUNPATH string
  std::vector<std::string> needed;   // each DT_NEEDED name
};

// Reads ELF32/ELF64, little or big endian, from the file `image`. Every offset, size and
// count is bounds-checked; anything malformed (truncated headers, a PT_DYNAMIC or string table
// outside the file, an unterminated string, no PT_DYNAMIC, two DT_STRTABs) is an Error saying
// what, never a crash.
Result<DynamicSearchInfo> read_dynamic_search_info(std::string_view image);

// The same for the file behind `fd`, reading only the pages the answer needs (with pread, so
// the descriptor's offset is unchanged; files over 1 GiB are refused).
Result<DynamicSearchInfo> read_dynamic_search_info_fd(int fd);

// A DT_RPATH/DT_RUNPATH string split at ':' as ld.so splits it, empty entries kept (ld.so
// reads an empty entry as the current directory).
std::vector<std::string> split_search_path(std::string_view list);

// Why loading the plugin in `plugin_dir` (absolute, already trusted) could make ld.so read a
// library from a place nobody vouches for, or nullopt. Refused: an empty or relative entry,
// any '$' other than a leading $ORIGIN / ${ORIGIN} ($LIB, $PLATFORM: not resolved here), a "."
// or ".." component, a directory (after $ORIGIN becomes `plugin_dir`) whose chain from "/" fails
// open_trusted_directory_chain with the directory as its own trust root (the rule for paths
// looked up again by name), a missing directory whose deepest existing ancestor others could
// write into, and a DT_NEEDED holding a '/' that is relative or in such a directory. The message
// names the entry, why, and the fix.
std::optional<std::string> dependency_search_problem(const DynamicSearchInfo& info,
                                                     const std::string& plugin_dir,
                                                     const Owners& owners);

}  // namespace sbx::plugins

#endif
