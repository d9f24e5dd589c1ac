#include "policy/path_util.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

namespace sbx::policy::path {

std::string collapse_slashes(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::optional<std::string> check_components(std::string_view path) {
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "." || part == "..") {
      return "contains a \"" + std::string(part) +
             "\" component; write the path without \".\" and \"..\"";
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string join(std::string_view base, std::string_view rel) {
  std::string out(base);
  if (rel.empty()) return out;
  if (out.empty() || out.back() != '/') out.push_back('/');
  std::size_t skip = rel.find_first_not_of('/');
  if (skip != std::string_view::npos) out.append(rel.substr(skip));
  return collapse_slashes(out);
}

std::size_t depth(std::string_view path) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '/' && i + 1 < path.size()) ++n;
  }
  return n;
}

std::string parent(std::string_view path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string lexically_normal(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (std::string_view part : parts) {
    out += "/";
    out += part;
  }
  return out.empty() ? "/" : out;
}

std::optional<std::string> real_path(const std::string& path) {
#ifdef _WIN32
  // Windows: the final path with links and junctions followed, in the generic '/' form.
  std::error_code error;
  const std::filesystem::path real = std::filesystem::canonical(path, error);
  if (error) return std::nullopt;
  return real.generic_string();
#else
  // realpath(path, nullptr) allocates; wrap it so every return path frees.
  std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                       &std::free);
  if (!resolved) return std::nullopt;
  return std::string(resolved.get());
#endif
}

std::string canonicalize(const std::string& path) {
  std::string existing = path;
  std::string rest;
  while (true) {
    if (std::optional<std::string> real = real_path(existing)) {
      return rest.empty() ? *real : join(*real, rest);
    }
    if (existing == "/" || existing.empty()) return path;
    std::size_t slash = existing.rfind('/');
    std::string name = existing.substr(slash + 1);
    rest = rest.empty() ? name : name + "/" + rest;
    existing = parent(existing);
  }
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20 || byte == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(byte));
      out.append(buf);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace sbx::policy::path
