#include "plugins/elf_dynamic.hpp"

#if !defined(_WIN32) && !defined(__APPLE__)

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace sbx::plugins {
namespace {

// Where the fields the reader needs sit in each class (elf(5)). p_type is at 0 in both.
struct Layout {
  unsigned word;  // size of an address, offset or xword
  std::uint64_t phoff_at, phentsize_at, phnum_at, ehdr_size;
  std::uint64_t p_offset_at, p_vaddr_at, p_filesz_at, phdr_size;
  std::uint64_t dyn_size;  // d_tag + d_un
};
constexpr Layout kElf32{4, 28, 42, 44, sizeof(Elf32_Ehdr), 4, 8, 16, sizeof(Elf32_Phdr), 8};
constexpr Layout kElf64{8, 32, 54, 56, sizeof(Elf64_Ehdr), 8, 16, 32, sizeof(Elf64_Phdr), 16};

constexpr std::uint64_t kMaxImageSize = 1ULL << 30;

// Bounds-checked reads of unsigned integers from the image in its byte order.
class Image {
 public:
  Image(std::string_view bytes, bool big_endian) : bytes_(bytes), big_(big_endian) {}

  std::uint64_t size() const { return bytes_.size(); }

  // Whether [offset, offset + length) lies inside the image (no overflow).
  bool contains(std::uint64_t offset, std::uint64_t length) const {
    return offset <= bytes_.size() && length <= bytes_.size() - offset;
  }

  bool read(std::uint64_t offset, std::uint64_t width, std::uint64_t& out) const {
    if (!contains(offset, width)) return false;
    std::uint64_t value = 0;
    for (std::uint64_t i = 0; i < width; ++i) {
      const std::uint64_t at = offset + (big_ ? i : width - 1 - i);
      value = (value << 8U) | static_cast<unsigned char>(bytes_[at]);
    }
    out = value;
    return true;
  }

  std::string_view bytes() const { return bytes_; }

 private:
  std::string_view bytes_;
  bool big_;
};

struct Segment {
  std::uint64_t offset, vaddr, filesz;
};

struct ProgramHeaders {
  std::vector<Segment> loads;
  std::optional<Segment> dynamic;
};

Result<ProgramHeaders> read_program_headers(const Image& image, const Layout& l) {
  std::uint64_t phoff = 0, phentsize = 0, phnum = 0;
  if (!image.read(l.phoff_at, l.word, phoff) || !image.read(l.phentsize_at, 2, phentsize) ||
      !image.read(l.phnum_at, 2, phnum))
    return Error{"the ELF header is truncated"};
  // PN_XNUM moves the count into section 0; no shared object needs 65535 program headers.
  if (phnum == PN_XNUM) return Error{"the program header count is PN_XNUM (unsupported)"};
  if (phnum != 0 && phentsize < l.phdr_size)
    return Error{"e_phentsize is " + std::to_string(phentsize) + ", smaller than a program header"};
  if (!image.contains(phoff, phnum * phentsize))
    return Error{"the program headers lie outside the file"};
  ProgramHeaders headers;
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::uint64_t at = phoff + i * phentsize;
    std::uint64_t type = 0;
    Segment s{};
    if (!image.read(at, 4, type) || !image.read(at + l.p_offset_at, l.word, s.offset) ||
        !image.read(at + l.p_vaddr_at, l.word, s.vaddr) ||
        !image.read(at + l.p_filesz_at, l.word, s.filesz))
      return Error{"program header " + std::to_string(i) + " is truncated"};
    if (type == PT_LOAD) headers.loads.push_back(s);
    if (type == PT_DYNAMIC) {
      if (headers.dynamic) return Error{"there are two PT_DYNAMIC program headers"};
      headers.dynamic = s;
    }
  }
  if (!headers.dynamic)
    return Error{"there is no PT_DYNAMIC program header (not a dynamically linked object)"};
  return headers;
}

// The file range behind [vaddr, vaddr + length) as ld.so maps it: inside one PT_LOAD's file
// bytes. Segments that overlap there must agree (ld.so maps them in order, the last one wins;
// a file that makes the answer depend on that is refused).
Result<std::uint64_t> file_offset_of(const Image& image, const std::vector<Segment>& loads,
                                     std::uint64_t vaddr, std::uint64_t length,
                                     const std::string& what) {
  std::optional<std::uint64_t> found;
  for (const Segment& s : loads) {
    if (vaddr < s.vaddr || vaddr - s.vaddr >= s.filesz) continue;
    const std::uint64_t delta = vaddr - s.vaddr;
    if (length > s.filesz - delta || s.offset > UINT64_MAX - delta)
      return Error{what + " runs past the end of its PT_LOAD segment"};
    const std::uint64_t offset = s.offset + delta;
    if (found && *found != offset)
      return Error{"overlapping PT_LOAD segments give " + what + " two different file offsets"};
    found = offset;
  }
  if (!found) return Error{what + " lies in no PT_LOAD segment's file bytes"};
  if (!image.contains(*found, length)) return Error{what + " lies outside the file"};
  return *found;
}

struct DynamicEntries {
  std::optional<std::uint64_t> strtab, strsz;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> strings;  // (tag, offset in strtab)
};

Result<DynamicEntries> read_dynamic_entries(const Image& image, const Layout& l,
                                            const ProgramHeaders& headers) {
  const Segment& dyn = *headers.dynamic;
  // ld.so reads the dynamic array at its address, so that is what is read here too.
  Result<std::uint64_t> base =
      file_offset_of(image, headers.loads, dyn.vaddr, dyn.filesz, "the dynamic section");
  if (!base) return base.failure();
  DynamicEntries entries;
  for (std::uint64_t at = *base; at + l.dyn_size <= *base + dyn.filesz; at += l.dyn_size) {
    std::uint64_t tag = 0, value = 0;
    if (!image.read(at, l.word, tag) || !image.read(at + l.word, l.word, value))
      return Error{"the dynamic section is truncated"};
    if (tag == DT_NULL) return entries;
    if (tag == DT_STRTAB || tag == DT_STRSZ) {
      std::optional<std::uint64_t>& slot = tag == DT_STRTAB ? entries.strtab : entries.strsz;
      if (slot) return Error{"the dynamic section has two DT_STRTAB or DT_STRSZ entries"};
      slot = value;
    }
    if (tag == DT_NEEDED || tag == DT_RPATH || tag == DT_RUNPATH)
      entries.strings.emplace_back(tag, value);
  }
  // ld.so would read on past the segment's file bytes until it met a DT_NULL.
  return Error{"the dynamic section has no DT_NULL within its PT_DYNAMIC segment"};
}

}  // namespace

Result<DynamicSearchInfo> read_dynamic_search_info(std::string_view bytes) {
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return Error{"the file is not an ELF object"};
  const auto elf_class = static_cast<unsigned char>(bytes[EI_CLASS]);
  const auto data = static_cast<unsigned char>(bytes[EI_DATA]);
  if (elf_class != ELFCLASS32 && elf_class != ELFCLASS64)
    return Error{"unknown ELF class " + std::to_string(elf_class)};
  if (data != ELFDATA2LSB && data != ELFDATA2MSB)
    return Error{"unknown ELF byte order " + std::to_string(data)};
  const Layout& l = elf_class == ELFCLASS64 ? kElf64 : kElf32;
  const Image image(bytes, data == ELFDATA2MSB);
  if (image.size() < l.ehdr_size) return Error{"the ELF header is truncated"};
  Result<ProgramHeaders> headers = read_program_headers(image, l);
  if (!headers) return headers.failure();
  Result<DynamicEntries> entries = read_dynamic_entries(image, l, *headers);
  if (!entries) return entries.failure();
  DynamicSearchInfo info;
  if (entries->strings.empty()) return info;
  if (!entries->strtab || !entries->strsz)
    return Error{"the dynamic section names strings but has no DT_STRTAB or DT_STRSZ"};
  Result<std::uint64_t> strtab =
      file_offset_of(image, headers->loads, *entries->strtab, *entries->strsz, "DT_STRTAB");
  if (!strtab) return strtab.failure();
  const std::string_view table = bytes.substr(*strtab, *entries->strsz);
  for (const auto& [tag, offset] : entries->strings) {
    const std::size_t end = offset < table.size() ? table.find('\0', offset) : std::string::npos;
    if (end == std::string_view::npos)
      return Error{
          "a DT_NEEDED, DT_RPATH or DT_RUNPATH string lies outside DT_STRTAB or is not "
          "terminated"};
    std::vector<std::string>& list = tag == DT_NEEDED  ? info.needed
                                     : tag == DT_RPATH ? info.rpath
                                                       : info.runpath;
    list.emplace_back(table.substr(offset, end - offset));
  }
  return info;
}

Result<DynamicSearchInfo> read_dynamic_search_info_fd(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Error{std::string("cannot stat the file: ") + strerror(errno)};
  if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > kMaxImageSize)
    return Error{"the file is larger than 1 GiB"};
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got =
        pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error{std::string("cannot read the file: ") + strerror(errno)};
    if (got == 0) break;  // shrank since fstat: parse what is there, bounds-checked
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return read_dynamic_search_info(bytes);
}

std::vector<std::string> split_search_path(std::string_view list) {
  std::vector<std::string> entries;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = list.find(':', start);
    entries.emplace_back(
        list.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) return entries;
    start = colon + 1;
  }
}

namespace {

constexpr const char* kFix =
    "rebuild the plugin without RUNPATH/RPATH, or install it with `cmake --install`, which "
    "strips the build tree's RUNPATH";

// "/a/b" -> "/a", "/a" -> "/".
std::string parent_of(const std::string& dir) {
  const std::size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

// Components of an absolute path, or why the entry is refused: "." and ".." are never
// normalised, because ld.so does not normalise them either and under descriptor loading its
// $ORIGIN is /proc/self/fd, whose ".." is the process's own /proc entry (cwd, root).
Result<std::string> normalised_absolute(const std::string& path) {
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part == "." || part == "..")
      return Error{"has a '" + part +
                   "' component, which sbx does not resolve; name the directory itself"};
    if (!part.empty()) out += "/" + part;
    start = end + 1;
  }
  return out.empty() ? "/" : out;
}

// The directory a DT_RPATH/DT_RUNPATH entry names once $ORIGIN is `plugin_dir`, or why it
// cannot be trusted whatever is on disk.
Result<std::string> entry_directory(const std::string& entry, const std::string& plugin_dir) {
  if (entry.empty()) {
    return Error{
        "is empty, which ld.so reads as the current directory of the process (wherever "
        "sbx was started)"};
  }
  std::string rest = entry;
  std::string base;
  for (const std::string_view token : {"$ORIGIN", "${ORIGIN}"}) {
    if (entry.compare(0, token.size(), token) == 0 &&
        (entry.size() == token.size() || entry[token.size()] == '/')) {
      base = plugin_dir;
      rest = entry.substr(token.size());
    }
  }
  // ld.so's dynamic string tokens (ld.so(8), "Dynamic string tokens"): $LIB and $PLATFORM
  // expand per distribution and CPU, so no single directory could be checked for them.
  auto has = [&rest](std::string_view name) {
    return rest.find("$" + std::string(name)) != std::string::npos ||
           rest.find("${" + std::string(name) + "}") != std::string::npos;
  };
  if (has("LIB"))
    return Error{"uses the $LIB token, which ld.so expands per distribution; sbx cannot check it"};
  if (has("PLATFORM"))
    return Error{"uses the $PLATFORM token, which ld.so expands per CPU; sbx cannot check it"};
  if (rest.find('$') != std::string::npos)
    return Error{"has a '$' other than a leading $ORIGIN, which ld.so may expand"};
  if (base.empty() && rest.front() != '/') {
    return Error{
        "is relative, so ld.so resolves it against the current directory of the "
        "process (wherever sbx was started)"};
  }
  return normalised_absolute(base + rest);
}

// Why ld.so looking `dir` up by path could find a directory others control: the chain from "/"
// must pass the rule for paths looked up again by name (open_trusted_directory_chain, the
// directory as its own trust root). A missing directory is skipped by ld.so, so it is fine
// when its deepest existing ancestor passes that rule itself: then nobody else can create it.
std::optional<std::string> directory_problem(const std::string& dir, const Owners& owners) {
  DirectoryWalk walk = open_trusted_directory_chain(dir, dir, owners);
  if (walk.fd.valid()) return std::nullopt;
  if (!walk.missing) return walk.error;
  for (std::string up = parent_of(dir);; up = parent_of(up)) {
    DirectoryWalk ancestor = open_trusted_directory_chain(up, up, owners);
    if (ancestor.fd.valid()) return std::nullopt;
    if (!ancestor.missing) return walk.error + " and could be created by others: " + ancestor.error;
    if (up == "/") return walk.error;
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

std::optional<std::string> search_list_problem(const char* kind,
                                               const std::vector<std::string>& lists,
                                               const DynamicSearchInfo& info,
                                               const std::string& plugin_dir,
                                               const Owners& owners) {
  for (const std::string& list : lists) {
    for (const std::string& entry : split_search_path(list)) {
      Result<std::string> dir = entry_directory(entry, plugin_dir);
      std::optional<std::string> why;
      if (!dir)
        why = dir.error();
      else
        why = directory_problem(*dir, owners);
      if (!why) continue;
      return std::string(kind) + " entry '" + entry + "' " + (dir ? "(" + *dir + "): " : "") +
             *why + "; ld.so searches it for the plugin's libraries (" + joined(info.needed) +
             "), so whoever can write there runs code inside sbx; expected every " + kind +
             " directory trusted like the plugin directory: " + kFix;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> dependency_search_problem(const DynamicSearchInfo& info,
                                                     const std::string& plugin_dir,
                                                     const Owners& owners) {
  if (auto problem = search_list_problem("RUNPATH", info.runpath, info, plugin_dir, owners))
    return problem;
  if (auto problem = search_list_problem("RPATH", info.rpath, info, plugin_dir, owners))
    return problem;
  // A DT_NEEDED name with a '/' is opened as it stands, without any search (ld.so(8)).
  for (const std::string& name : info.needed) {
    if (name.find('/') == std::string::npos) continue;
    std::optional<std::string> why;
    if (name.front() != '/') {
      why = "is relative, so ld.so opens it against the current directory of the process";
    } else {
      Result<std::string> file = normalised_absolute(name);
      why = file ? directory_problem(parent_of(*file), owners) : file.error();
    }
    if (why)
      return "DT_NEEDED '" + name + "' " + *why +
             "; expected a library name found through the system's search path (link against "
             "the library by name, with a SONAME)";
  }
  return std::nullopt;
}

}  // namespace sbx::plugins

#endif
