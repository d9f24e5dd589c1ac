// Lexical and filesystem path helpers shared by policy validation and resolution. Private to
// libsbx. All functions work on '/'-separated POSIX paths.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "sbx/sdk/result.hpp"

namespace sbx::policy::path {

// Collapses runs of '/' and drops a trailing '/' (but keeps "/" itself). Does not touch "."
// or ".." components; see check_components().
std::string collapse_slashes(std::string_view path);

// Error text (no pointer) if `path` holds a NUL byte or a "." or ".." component, because a
// policy path must mean exactly what it says: ".." could walk out of the directory a reader
// believes is named. Empty components are ignored (collapse_slashes removes them).
std::optional<std::string> check_components(std::string_view path);

// `base` + "/" + `rel`, with exactly one slash between them ("/" + "x" = "/x").
std::string join(std::string_view base, std::string_view rel);

// Number of components: "/" = 0, "/a" = 1, "/a/b" = 2.
std::size_t depth(std::string_view path);

// The parent directory of an absolute normalised path ("/" for "/a" and for "/").
std::string parent(std::string_view path);

// Resolves "." and ".." lexically in an absolute path ("/a/b/../c" -> "/a/c"; ".." above "/"
// stays at "/"). Only for paths sbx did not get from the policy (e.g. a .git file's gitdir).
std::string lexically_normal(std::string_view path);

// realpath(3) of an existing path; nullopt if it does not exist or cannot be resolved.
std::optional<std::string> real_path(const std::string& path);

// For an absolute normalised path: realpath of the longest existing ancestor, with the missing
// rest appended lexically. A path that exists is fully canonical; a missing one is as canonical
// as the filesystem allows, so backends act on the names the kernel will see.
std::string canonicalize(const std::string& path);

// Quotes `text` for an error message: "..." with control bytes, '"' and '\' escaped.
std::string quote(std::string_view text);

}  // namespace sbx::policy::path
