// The plugin loader's ELF dynamic-section reader (core/src/plugins/elf_dynamic.hpp) on images
// built here byte by byte, in every class and byte order, and broken in every way the reader
// must survive: truncated at every length, a byte changed anywhere, headers that point outside
// the file, overlap or overflow. A malformed file is an error, never a crash or a wrong answer.
#include "plugins/elf_dynamic.hpp"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sbx::plugins {
namespace {

// One small shared object: ELF header, program headers (PT_LOAD over the whole file at address
// kBase, optionally a second PT_LOAD, PT_DYNAMIC), the dynamic array, then the string table,
// which ends the file.
struct ImageSpec {
  bool is64 = true;
  bool big = false;
  std::vector<std::pair<std::uint64_t, std::string>> strings = {
      {DT_NEEDED, "libc.so.6"}, {DT_RUNPATH, "$ORIGIN:/opt/lib"}, {DT_RPATH, "/old"}};
  bool terminate = true;  // write DT_NULL
  // A second PT_LOAD at the same addresses whose file bytes start this much later (0: none).
  std::uint64_t disagreeing_load = 0;
};

constexpr std::uint64_t kBase = 0x10000;

class Writer {
 public:
  Writer(bool is64, bool big) : is64_(is64), big_(big) {}
  void put(std::uint64_t at, std::uint64_t value, unsigned width) {
    if (bytes.size() < at + width) bytes.resize(at + width, '\0');
    for (unsigned i = 0; i < width; ++i) {
      const unsigned shift = 8 * (big_ ? width - 1 - i : i);
      bytes[at + i] = static_cast<char>((value >> shift) & 0xffU);
    }
  }
  void word(std::uint64_t at, std::uint64_t value) { put(at, value, is64_ ? 8 : 4); }
  std::string bytes;

 private:
  bool is64_, big_;
};

struct Offsets {
  std::uint64_t phoff, phentsize, phnum, dyn, dyn_size, strtab;
};

Offsets offsets_of(const ImageSpec& spec) {
  const std::uint64_t ehdr = spec.is64 ? 64 : 52;
  const std::uint64_t phent = spec.is64 ? 56 : 32;
  const std::uint64_t phnum = spec.disagreeing_load != 0 ? 3 : 2;
  const std::uint64_t dyn = ehdr + phnum * phent;
  const std::uint64_t dyn_size = (spec.is64 ? 16 : 8) * (spec.strings.size() + 3);
  return {ehdr, phent, phnum, dyn, dyn_size, dyn + dyn_size};
}

// Program header `index` at `at`: type, offset, vaddr, filesz (memsz = filesz).
void phdr(Writer& w, const ImageSpec& spec, std::uint64_t at, std::uint32_t type,
          std::uint64_t offset, std::uint64_t vaddr, std::uint64_t size) {
  w.put(at, type, 4);
  if (spec.is64) {
    w.word(at + 8, offset), w.word(at + 16, vaddr), w.word(at + 32, size), w.word(at + 40, size);
  } else {
    w.word(at + 4, offset), w.word(at + 8, vaddr), w.word(at + 16, size), w.word(at + 20, size);
  }
}

std::string build(const ImageSpec& spec) {
  const Offsets o = offsets_of(spec);
  std::string table(1, '\0');
  std::vector<std::uint64_t> at;
  for (const auto& entry : spec.strings) {
    at.push_back(table.size());
    table += entry.second + '\0';
  }
  Writer w(spec.is64, spec.big);
  w.bytes = std::string(ELFMAG, SELFMAG);
  w.bytes.resize(EI_NIDENT, '\0');
  w.bytes[EI_CLASS] = static_cast<char>(spec.is64 ? ELFCLASS64 : ELFCLASS32);
  w.bytes[EI_DATA] = static_cast<char>(spec.big ? ELFDATA2MSB : ELFDATA2LSB);
  w.bytes[EI_VERSION] = EV_CURRENT;
  w.put(16, ET_DYN, 2);
  w.word(spec.is64 ? 32 : 28, o.phoff);
  w.put(spec.is64 ? 54 : 42, o.phentsize, 2);
  w.put(spec.is64 ? 56 : 44, o.phnum, 2);
  const std::uint64_t file_size = o.strtab + table.size();
  phdr(w, spec, o.phoff, PT_LOAD, 0, kBase, file_size);
  if (spec.disagreeing_load != 0) {
    phdr(w, spec, o.phoff + o.phentsize, PT_LOAD, spec.disagreeing_load, kBase,
         file_size - spec.disagreeing_load);
  }
  phdr(w, spec, o.phoff + (o.phnum - 1) * o.phentsize, PT_DYNAMIC, o.dyn, kBase + o.dyn,
       o.dyn_size);
  const std::uint64_t entry = spec.is64 ? 16 : 8;
  std::uint64_t d = o.dyn;
  auto dyn = [&](std::uint64_t tag, std::uint64_t value) {
    w.word(d, tag), w.word(d + entry / 2, value), d += entry;
  };
  for (std::size_t i = 0; i < spec.strings.size(); ++i) dyn(spec.strings[i].first, at[i]);
  dyn(DT_STRTAB, kBase + o.strtab);
  dyn(DT_STRSZ, table.size());
  if (spec.terminate)
    dyn(DT_NULL, 0);
  else
    dyn(DT_DEBUG, 0);
  w.bytes.resize(o.strtab, '\0');
  w.bytes += table;
  return w.bytes;
}

struct Variant {
  bool is64, big;
};

class EveryClassAndByteOrder : public ::testing::TestWithParam<Variant> {
 protected:
  ImageSpec spec() const {
    ImageSpec s;
    s.is64 = GetParam().is64;
    s.big = GetParam().big;
    return s;
  }
};

TEST_P(EveryClassAndByteOrder, ReadsNeededRpathAndRunpath) {
  Result<DynamicSearchInfo> info = read_dynamic_search_info(build(spec()));
  ASSERT_TRUE(info) << info.error();
  EXPECT_EQ(info->needed, std::vector<std::string>{"libc.so.6"});
  EXPECT_EQ(info->runpath, std::vector<std::string>{"$ORIGIN:/opt/lib"});
  EXPECT_EQ(info->rpath, std::vector<std::string>{"/old"});
}

TEST_P(EveryClassAndByteOrder, EveryTruncationIsAnError) {
  const std::string image = build(spec());
  for (std::size_t length = 0; length < image.size(); ++length) {
    Result<DynamicSearchInfo> info = read_dynamic_search_info(image.substr(0, length));
    EXPECT_FALSE(info) << "a file cut to " << length << " of " << image.size() << " bytes was read";
  }
}

// Every byte set to each of a few values: whatever the reader returns, it stays inside the
// image (its strings are parts of it) and it does not crash. The sanitizer builds check reads.
TEST_P(EveryClassAndByteOrder, AnyChangedByteIsSurvived) {
  const std::string image = build(spec());
  std::size_t refused = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    for (const int value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string changed = image;
      changed[i] = static_cast<char>(value);
      Result<DynamicSearchInfo> info = read_dynamic_search_info(changed);
      if (!info) {
        ++refused;
        EXPECT_FALSE(info.error().empty());
        continue;
      }
      for (const auto* list : {&info->needed, &info->rpath, &info->runpath})
        for (const std::string& s : *list) EXPECT_NE(changed.find(s), std::string::npos);
    }
  }
  EXPECT_GT(refused, 0u);
}

INSTANTIATE_TEST_SUITE_P(ElfDynamic, EveryClassAndByteOrder,
                         ::testing::Values(Variant{true, false}, Variant{true, true},
                                           Variant{false, false}, Variant{false, true}),
                         [](const ::testing::TestParamInfo<Variant>& p) {
                           return std::string(p.param.is64 ? "elf64" : "elf32") +
                                  (p.param.big ? "_msb" : "_lsb");
                         });

// Sets a field of the ELF64 little-endian image and expects the reader to refuse it, naming why.
void expect_refused(std::string image, std::uint64_t at, std::uint64_t value, unsigned width,
                    const std::string& why) {
  Writer w(true, false);
  w.bytes = std::move(image);
  w.put(at, value, width);
  Result<DynamicSearchInfo> info = read_dynamic_search_info(w.bytes);
  ASSERT_FALSE(info) << "accepted; expected: " << why;
  EXPECT_NE(info.error().find(why), std::string::npos) << info.error();
}

TEST(ElfDynamic, MalformedHeadersAreRefusedWithTheReason) {
  const ImageSpec spec;
  const Offsets o = offsets_of(spec);
  const std::string image = build(spec);
  const std::uint64_t load = o.phoff, dynamic = o.phoff + o.phentsize;
  expect_refused(image, 32, image.size(), 8, "program headers lie outside the file");
  expect_refused(image, 32, UINT64_MAX - 8, 8, "program headers lie outside the file");
  expect_refused(image, 54, 20, 2, "smaller than a program header");
  expect_refused(image, 56, PN_XNUM, 2, "PN_XNUM");
  expect_refused(image, dynamic, PT_LOAD, 4, "no PT_DYNAMIC");
  expect_refused(image, load, PT_DYNAMIC, 4, "two PT_DYNAMIC");
  // The dynamic array at an address no PT_LOAD covers, or running past its segment.
  expect_refused(image, dynamic + 16, 0x500000, 8, "the dynamic section lies in no PT_LOAD");
  expect_refused(image, dynamic + 32, UINT64_MAX, 8, "the dynamic section runs past the end");
  // The PT_LOAD's file bytes outside the file, or its offset overflowing.
  expect_refused(image, load + 8, image.size(), 8, "lies outside the file");
  expect_refused(image, load + 8, UINT64_MAX - 2, 8, "the dynamic section");
  // The string table outside every segment, longer than its segment, or a string past it.
  const std::uint64_t strtab_entry = o.dyn + 16 * spec.strings.size();
  expect_refused(image, strtab_entry + 8, 0x10, 8, "DT_STRTAB lies in no PT_LOAD");
  expect_refused(image, strtab_entry + 24, 1U << 20, 8, "DT_STRTAB runs past the end");
  expect_refused(image, o.dyn + 8, 4096, 8, "outside DT_STRTAB or is not terminated");
  // A second DT_STRTAB instead of DT_STRSZ.
  expect_refused(image, strtab_entry + 16, DT_STRTAB, 8, "two DT_STRTAB or DT_STRSZ");
  expect_refused(image, 0, 0, 1, "not an ELF object");
  expect_refused(image, EI_CLASS, 3, 1, "unknown ELF class 3");
  expect_refused(image, EI_DATA, 0, 1, "unknown ELF byte order 0");
}

TEST(ElfDynamic, UnterminatedDynamicArrayIsRefused) {
  ImageSpec spec;
  spec.terminate = false;
  Result<DynamicSearchInfo> info = read_dynamic_search_info(build(spec));
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().find("no DT_NULL"), std::string::npos) << info.error();
}

TEST(ElfDynamic, UnterminatedStringIsRefused) {
  std::string image = build(ImageSpec{});
  image.back() = 'x';  // the last string loses its NUL, and the table ends there
  Result<DynamicSearchInfo> info = read_dynamic_search_info(image);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().find("not terminated"), std::string::npos) << info.error();
}

// Two PT_LOADs covering the dynamic array from different file offsets: which bytes ld.so sees
// would depend on the mapping order, so the file is refused.
TEST(ElfDynamic, OverlappingLoadsThatDisagreeAreRefused) {
  ImageSpec spec;
  spec.disagreeing_load = 8;
  Result<DynamicSearchInfo> info = read_dynamic_search_info(build(spec));
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().find("overlapping PT_LOAD segments give the dynamic section two "
                              "different file offsets"),
            std::string::npos)
      << info.error();
}

TEST(ElfDynamic, NoStringsNeedNoStringTable) {
  ImageSpec spec;
  spec.strings.clear();
  Result<DynamicSearchInfo> info = read_dynamic_search_info(build(spec));
  ASSERT_TRUE(info) << info.error();
  EXPECT_TRUE(info->needed.empty() && info->rpath.empty() && info->runpath.empty());
}

TEST(ElfDynamic, ReadsARealObjectThroughItsDescriptor) {
  // This test binary is dynamically linked: it needs at least the C library.
  const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Result<DynamicSearchInfo> info = read_dynamic_search_info_fd(fd);
  ::close(fd);
  ASSERT_TRUE(info) << info.error();
  EXPECT_FALSE(info->needed.empty());
}

// The descriptor reader reads only the pages it needs; it must answer exactly as the reader of
// the whole file, for every truncation and a changed byte anywhere.
std::string answer(const Result<DynamicSearchInfo>& info) {
  if (!info) return "error: " + info.error();
  std::string out;
  for (const auto* list : {&info->needed, &info->rpath, &info->runpath}) {
    for (const std::string& s : *list) out += s + "|";
    out += ";";
  }
  return out;
}

std::string answer_through_descriptor(const std::string& image) {
  const int fd = ::memfd_create("elf", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, image.data(), image.size()), static_cast<ssize_t>(image.size()));
  std::string out = answer(read_dynamic_search_info_fd(fd));
  ::close(fd);
  return out;
}

TEST_P(EveryClassAndByteOrder, TheDescriptorReaderAnswersAsTheWholeFileReader) {
  const std::string image = build(spec());
  for (std::size_t length = 0; length <= image.size(); ++length)
    EXPECT_EQ(answer_through_descriptor(image.substr(0, length)),
              answer(read_dynamic_search_info(image.substr(0, length))))
        << "cut to " << length;
  for (std::size_t i = 0; i < image.size(); ++i) {
    std::string changed = image;
    changed[i] = static_cast<char>(0xff);
    EXPECT_EQ(answer_through_descriptor(changed), answer(read_dynamic_search_info(changed)))
        << "byte " << i << " changed";
  }
}

TEST(ElfDynamic, ARealObjectReadByPagesGivesTheWholeFilesAnswer) {
  // A real linked object spans many pages; its tables need not sit on one.
  const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::string whole;
  char buffer[65536];
  for (ssize_t got = 0; (got = ::read(fd, buffer, sizeof buffer)) > 0;)
    whole.append(buffer, static_cast<std::size_t>(got));
  const std::string by_pages = answer(read_dynamic_search_info_fd(fd));
  ::close(fd);
  ASSERT_GT(whole.size(), 8192U);
  EXPECT_EQ(by_pages, answer(read_dynamic_search_info(whole)));
  EXPECT_EQ(by_pages.rfind("error", 0), std::string::npos) << by_pages;
}

TEST(ElfDynamic, ADescriptorThatCannotBeReadSaysSo) {
  const int fd = ::open("/proc/self/exe", O_PATH | O_CLOEXEC);  // fstat works, pread does not
  ASSERT_GE(fd, 0);
  Result<DynamicSearchInfo> info = read_dynamic_search_info_fd(fd);
  ::close(fd);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().find("cannot read the file"), std::string::npos) << info.error();
}

TEST(ElfDynamic, SplitsSearchPathsKeepingEmptyEntries) {
  EXPECT_EQ(split_search_path("/a::/b:"), (std::vector<std::string>{"/a", "", "/b", ""}));
  EXPECT_EQ(split_search_path(""), std::vector<std::string>{""});
  EXPECT_EQ(split_search_path("$ORIGIN"), std::vector<std::string>{"$ORIGIN"});
}

}  // namespace
}  // namespace sbx::plugins
