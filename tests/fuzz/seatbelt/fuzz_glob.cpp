// Glob compiler: never crashes; every regex it produces (and every protected-path regex) has
// no `"` or control byte (the SBPL literal stays closed), uses `\` only as `\^`, and has
// balanced groups and closed bracket expressions. (std::regex itself is too slow under the
// sanitizers to run here; the unit tests compile the outputs with it.)
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sbx/seatbelt/glob_regex.hpp"

namespace {

void check_regex(const std::string& r) {
  int depth = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const auto b = static_cast<unsigned char>(r[i]);
    if (r[i] == '"' || b < 0x20 || b >= 0x7F) std::abort();  // printable ASCII only
    if (r[i] == '\\') {
      if (i + 1 >= r.size() || r[i + 1] != '^') std::abort();
      ++i;
    } else if (r[i] == '[') {
      std::size_t j = i + 1;
      if (j < r.size() && r[j] == '^') ++j;
      if (j >= r.size() || r[j] == ']') std::abort();  // never an empty or `]`-first class
      while (j < r.size() && r[j] != ']') {
        if (r[j] == '\\' || r[j] == '"') std::abort();
        ++j;
      }
      if (j >= r.size()) std::abort();
      i = j;
    } else if (r[i] == '(') {
      ++depth;
    } else if (r[i] == ')') {
      if (--depth < 0) std::abort();
    }
  }
  if (depth != 0 || r.empty() || r.front() != '^' || r.back() != '$') std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string glob(reinterpret_cast<const char*>(data), size);
  if (glob.empty() || glob.front() != '/') glob.insert(glob.begin(), '/');
  (void)sbx::seatbelt::expand_braces(glob);
  (void)sbx::seatbelt::glob_static_ancestors(glob);
  check_regex(sbx::seatbelt::subtree_regex_for_path(glob));
  auto regex = sbx::seatbelt::glob_to_regex(glob);
  if (regex.ok()) check_regex(*regex);
  return 0;
}
