// Loading a checked plugin file by its path (LoadingMode::kPath, core/src/plugins/README.md):
// what must hold before dlopen(path), and the check that the
// object the dynamic loader mapped is the file that was checked. Private to libsbx.
//
// What these checks can and cannot do: dlopen runs the object's constructors before any check
// after it, so the post-load comparison *detects* a swapped file, it does not stop its code.
// What stops a swap is the ownership chain (open_trusted_directory_chain): nobody but root and
// the trusted owner can change what the path names. The comparison makes a broken assumption
// (a second name for the same path, a loader that opened something else) fail closed instead of
// running a plugin nobody checked.
#pragma once

#include <optional>
#include <string>

#include "plugins/trusted_fs.hpp"

namespace sbx::plugins {

// Why dlopen(path) cannot be trusted to open exactly `path` in this process, or nullopt.
// macOS: DYLD_LIBRARY_PATH and DYLD_IMAGE_SUFFIX make dyld try other files first.
std::optional<std::string> path_loading_problem();

// After dlopen(file.path) returned `handle`: nullopt if the mapped object is the checked file,
// else why not (text for a RejectedPlugin). Fails closed on a platform it cannot check.
//  - Linux: the object's link_map name is file.path; its read-only PT_LOAD segments (as
//    dl_iterate_phdr reports them: code and constants, which relocation never writes) are
//    byte-for-byte the same as the checked descriptor's bytes at their file offsets; and the
//    path still names the checked device and inode.
//  - macOS (compiled only there, verified by generation only): the image dyld reports for the
//    entry symbol (_dyld_get_image_header / _dyld_get_image_name) is file.path, and that path
//    names the checked device and inode.
std::optional<std::string> loaded_image_problem(void* handle, const TrustedFile& file);

// Linux: nullopt if the running executable's read-only PT_LOAD segments are byte for byte
// `file`'s bytes at their offsets and file.path still names the checked inode, else why not.
// Lets the sbx executable, which links libsbx's code in, trust the name it was started by when
// /proc/self/exe cannot be read (install_layout). Fails closed on other platforms.
std::optional<std::string> main_program_image_problem(const TrustedFile& file);

}  // namespace sbx::plugins
