#include "plugins/elf_dynamic.hpp"

#if !defined(_WIN32) && !defined(__APPLE__)

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
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

// Bounds-checked reads from the image: either bytes in memory, or a file read a page at a time
// with pread, only where the reader looks (the ELF header, the program headers, the dynamic
// array and the string table: a few KiB of a plugin of a megabyte, read on every load).
class Image {
 public:
  explicit Image(std::string_view bytes) : bytes_(bytes), size_(bytes.size()) {}
  Image(int fd, std::uint64_t size) : fd_(fd), size_(size) {}

  void set_big_endian(bool big) { big_ = big; }
  std::uint64_t size() const { return size_; }
  // Why the file could not be read (pread failed), or empty: reads then fail as out of bounds.
  const std::string& io_error() const { return io_error_; }

  // Whether [offset, offset + length) lies inside the image (no overflow).
  bool contains(std::uint64_t offset, std::uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

  // The bytes [offset, offset + length), or false (outside the image, or the file unreadable).
  bool bytes(std::uint64_t offset, std::uint64_t length, std::string& out) const {
    if (!contains(offset, length)) return false;
    out.clear();
    if (fd_ < 0) {
      out.assign(bytes_.substr(offset, length));
      return true;
    }
    out.reserve(length);
    while (out.size() < length) {
      const std::uint64_t at = offset + out.size();
      const std::string* page = page_at(at / kPage);
      if (page == nullptr) return false;
      const std::uint64_t in_page = at % kPage;
      if (in_page >= page->size()) return false;  // the file shrank since fstat
      out.append(*page, in_page,
                 std::min<std::uint64_t>(page->size() - in_page, length - out.size()));
    }
    return true;
  }

  bool read(std::uint64_t offset, std::uint64_t width, std::uint64_t& out) const {
    std::string raw;
    if (width > 8 || !bytes(offset, width, raw)) return false;
    std::uint64_t value = 0;
    for (std::uint64_t i = 0; i < width; ++i) {
      const std::uint64_t at = big_ ? i : width - 1 - i;
      value = (value << 8U) | static_cast<unsigned char>(raw[at]);
    }
    out = value;
    return true;
  }

 private:
  static constexpr std::uint64_t kPage = 4096;

  // The file's page `index` (shorter at the end of the file), read once.
  const std::string* page_at(std::uint64_t index) const {
    if (auto it = pages_.find(index); it != pages_.end()) return &it->second;
    std::string page(kPage, '\0');
    std::size_t done = 0;
    while (done < page.size()) {
      const ssize_t got = pread(fd_, page.data() + done, page.size() - done,
                                static_cast<off_t>(index * kPage + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        io_error_ = std::string("cannot read the file: ") + strerror(errno);
        return nullptr;
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    page.resize(done);
    return &pages_.emplace(index, std::move(page)).first->second;
  }

  std::string_view bytes_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  bool big_ = false;
  mutable std::map<std::uint64_t, std::string> pages_;
  mutable std::string io_error_;
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

namespace {

Result<DynamicSearchInfo> read_search_info(Image& image) {
  std::string ident;
  if (!image.bytes(0, EI_NIDENT, ident) || std::memcmp(ident.data(), ELFMAG, SELFMAG) != 0)
    return Error{"the file is not an ELF object"};
  const auto elf_class = static_cast<unsigned char>(ident[EI_CLASS]);
  const auto data = static_cast<unsigned char>(ident[EI_DATA]);
  if (elf_class != ELFCLASS32 && elf_class != ELFCLASS64)
    return Error{"unknown ELF class " + std::to_string(elf_class)};
  if (data != ELFDATA2LSB && data != ELFDATA2MSB)
    return Error{"unknown ELF byte order " + std::to_string(data)};
  const Layout& l = elf_class == ELFCLASS64 ? kElf64 : kElf32;
  image.set_big_endian(data == ELFDATA2MSB);
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
  std::string table;
  if (!image.bytes(*strtab, *entries->strsz, table))
    return Error{"DT_STRTAB lies outside the file"};
  for (const auto& [tag, offset] : entries->strings) {
    const std::size_t end = offset < table.size() ? table.find('\0', offset) : std::string::npos;
    if (end == std::string::npos)
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

}  // namespace

Result<DynamicSearchInfo> read_dynamic_search_info(std::string_view bytes) {
  Image image(bytes);
  return read_search_info(image);
}

Result<DynamicSearchInfo> read_dynamic_search_info_fd(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Error{std::string("cannot stat the file: ") + strerror(errno)};
  if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > kMaxImageSize)
    return Error{"the file is larger than 1 GiB"};
  Image image(fd, static_cast<std::uint64_t>(st.st_size));
  Result<DynamicSearchInfo> info = read_search_info(image);
  // A read error is the answer, not the "truncated" its failed read looks like to the parser.
  if (!info && !image.io_error().empty()) return Error{image.io_error()};
  return info;
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
