// Installation layout (found from the real location of libsbx's code, never from the environment
// or argv) and the host-services table handed to every plugin's create().
#include "sbx/core/runtime.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__linux__)
#include <link.h>
#include <linux/magic.h>
#include <sys/auxv.h>
#include <sys/vfs.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plugins/host_table.hpp"
#include "plugins/loaded_image.hpp"
#include "plugins/trusted_fs.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/spawn.hpp"
#include "sbx_config.hpp"

namespace sbx {
namespace {

// Any object inside libsbx: dladdr() on its address names the file libsbx was loaded from.
const char kLibsbxAnchor = 0;

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// sbx_host_v2::spawn: runs a plan through core's spawner, under the caller's run (its limits,
// its start). Nothing may escape into plugin code.
int host_spawn(void* /*ctx*/, const sbx_run_v2* run, const void* plan, void* status_out,
               char* error, size_t error_size) noexcept {
  if (plan == nullptr || status_out == nullptr) {
    plugins::write_host_error(error, error_size, "spawn: plan and status must not be NULL");
    return 1;
  }
  try {
    // Only a table core made (RunServices) has core's run behind its ctx; anything else
    // spawns without a run.
    RunServices* services = nullptr;
    if (run != nullptr && run->run_started != nullptr && run->ctx != nullptr &&
        run == static_cast<RunServices*>(run->ctx)->table())
      services = static_cast<RunServices*>(run->ctx);
    Result<ExitStatus> status = spawn_and_wait(*static_cast<const ExecPlan*>(plan), services);
    if (!status) {
      plugins::write_host_error(error, error_size, status.error());
      return 1;
    }
    *static_cast<ExitStatus*>(status_out) = *status;
    return 0;
  } catch (const std::exception& e) {
    plugins::write_host_error(error, error_size, std::string("spawn failed: ") + e.what());
  } catch (...) {
    plugins::write_host_error(error, error_size, "spawn failed: unknown exception");
  }
  return 1;
}

// The helper is handed to plugins, which run it inside the sandbox as the confinement step;
// it gets the same ownership/permission walk as a plugin, from "/".
const char* verified_stage2(const InstallLayout& layout, std::string& storage) {
  Result<plugins::TrustedFile> file =
      plugins::open_trusted_path(layout.stage2_path, "/", plugins::Owners{layout.libsbx_owner});
  if (!file) {
    spdlog::debug("stage-2 helper not offered to plugins: {}", file.error());
    return nullptr;
  }
  storage = layout.stage2_path;
  return storage.c_str();
}

// One table per distinct layout, never freed: plugins keep the pointer for the whole process.
struct HostTable {
  std::string stage2;
  sbx_host_v2 table{};
};

}  // namespace

namespace {

// "<prefix>/<rel>", where "/" as the prefix gives "/<rel>".
std::string under_prefix(const std::string& prefix, const char* relative) {
  return (prefix == "/" ? "" : prefix) + "/" + relative;
}

// The layout around `code_path` (canonical): libsbx.so in <prefix>/<libdir>, or the sbx
// executable in <prefix>/<bindir>. `code` is the stat of the file that runs.
InstallLayout layout_around(const std::string& code_path, const struct stat& code,
                            bool executable) {
  InstallLayout layout;
  layout.libsbx_path = code_path;
  layout.libsbx_owner = code.st_uid;
  // The prefix is the directory minus as many components as CMAKE_INSTALL_LIBDIR (or BINDIR)
  // has ("lib" -> 1, Debian multiarch "lib/x86_64-linux-gnu" -> 2), so both layouts work.
  std::string prefix = parent_of(code_path);
  int depth = SBX_LIBDIR_DEPTH;
  if (executable) depth = SBX_BINDIR_DEPTH;  // equal with the default "lib" and "bin"
  for (int i = 0; i < depth; ++i) prefix = parent_of(prefix);
  layout.lib_dir = executable ? under_prefix(prefix, SBX_LIBDIR_RELPATH) : parent_of(code_path);
  layout.plugin_dir = layout.lib_dir + "/" + SBX_PLUGIN_SUBDIR;
  layout.stage2_path = under_prefix(prefix, SBX_STAGE2_RELPATH);
  layout.bin_dir = under_prefix(prefix, SBX_BINDIR_RELPATH);
  layout.prefix = prefix;
  return layout;
}

#if defined(__linux__)
// True when the libsbx code that runs is part of the main program (the sbx executable links it
// in) rather than of a loaded libsbx.so: glibc lists the main program first, named "".
bool find_code_is_in_executable() {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(&kLibsbxAnchor, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr)
    return false;
  return map->l_prev == nullptr && map->l_name != nullptr && map->l_name[0] == '\0';
}

// Asked once per process: which object holds this code cannot change while the code runs (it
// is unmapped only with the code itself), and dladdr searches every loaded object's symbols,
// which a warm C API caller paid on each run.
bool code_is_in_executable() {
  static const bool in_executable = find_code_is_in_executable();
  return in_executable;
}

// /proc/self/exe from a real procfs (a directory merely named /proc proves nothing: whoever can
// mount can put links there), and its name must still lead to the running inode (not moved,
// replaced or deleted since the start). The owner is that of the running inode itself.
// nullopt when procfs cannot answer.
using ExecutableFile = std::pair<std::string, struct stat>;
std::optional<Result<ExecutableFile>> executable_from_procfs() {
  struct statfs fs {};
  if (::statfs("/proc/self", &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC) return std::nullopt;
  char name[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", name, sizeof name - 1);
  if (n <= 0) return std::nullopt;
  name[n] = '\0';
  struct stat running {};
  struct stat named {};
  if (::stat("/proc/self/exe", &running) != 0 || ::stat(name, &named) != 0 ||
      running.st_dev != named.st_dev || running.st_ino != named.st_ino) {
    return Result<ExecutableFile>(Error{std::string("the running sbx executable is no longer at ") +
                                        name + " (moved, replaced or deleted)"});
  }
  return Result<ExecutableFile>(ExecutableFile{std::string(name), running});
}

// Without procfs: the name the kernel executed (AT_EXECFN, relative to the cwd at the start,
// which sbx has not changed), resolved, accepted only if it holds the bytes that run.
Result<ExecutableFile> executable_from_execfn() {
  const auto* execfn = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  if (execfn == nullptr) return Error{"the kernel gave no AT_EXECFN"};
  char resolved[PATH_MAX];
  if (::realpath(execfn, resolved) == nullptr)
    return Error{std::string("cannot resolve ") + execfn + ": " + std::strerror(errno)};
  plugins::TrustedFile file;
  file.path = resolved;
  file.fd = UniqueFd(::open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!file.fd.valid() || ::fstat(file.fd.get(), &file.st) != 0 || !S_ISREG(file.st.st_mode))
    return Error{std::string("cannot open ") + resolved + ": " + std::strerror(errno)};
  if (std::optional<std::string> problem = plugins::main_program_image_problem(file))
    return Error{std::string(resolved) + " is not the running sbx executable: " + *problem};
  return ExecutableFile{std::string(resolved), file.st};
}

Result<InstallLayout> executable_layout() {
  std::optional<Result<ExecutableFile>> file = executable_from_procfs();
  if (!file) file = executable_from_execfn();
  if (!file->ok()) return Error{"cannot find the running sbx executable: " + file->error()};
  return layout_around((*file)->first, (*file)->second, /*executable=*/true);
}

// The sbx executable's layout and install directories, looked up on first use and kept for
// the process (one command): the same checks, done once instead of three times per run.
struct ExecutableInstall {
  Result<InstallLayout> layout;
  Result<std::vector<std::string>> directories;
};
const ExecutableInstall& executable_install() {
  // Never freed: read until the process exits.
  static const ExecutableInstall* const install = [] {
    Result<InstallLayout> layout = executable_layout();
    Result<std::vector<std::string>> directories =
        layout ? Result<std::vector<std::string>>(install_directories(*layout))
               : Result<std::vector<std::string>>(layout.failure());
    return new ExecutableInstall{std::move(layout), std::move(directories)};
  }();
  return *install;
}
#endif

Result<InstallLayout> library_layout();

}  // namespace

Result<InstallLayout> install_layout() {
#if defined(__linux__)
  if (code_is_in_executable()) return executable_install().layout;
#endif
  return library_layout();
}

namespace {

// The name libsbx.so was loaded by (dladdr), or nullptr. Looked up once per process: the
// loader keeps that name for as long as the object is loaded, so asking again gives the same
// string and only costs dladdr's search of every loaded object's symbols. Only the name is
// kept: what it leads to is resolved and checked again on every call (library_layout), since
// the files and directories behind it can change between runs.
const char* loaded_libsbx_name() {
  static const char* const name = [] {
    Dl_info info{};
    return dladdr(&kLibsbxAnchor, &info) != 0 ? info.dli_fname : nullptr;
  }();
  return name;
}

// The layout around the loaded libsbx.so.
Result<InstallLayout> library_layout() {
  const char* const loaded_name = loaded_libsbx_name();
  if (loaded_name == nullptr)
    return Error{"cannot find where libsbx was loaded from (dladdr failed)"};
  // realpath: a symlinked libsbx.so (e.g. the SONAME link) must lead to the real install, so
  // the plugin directory is the one next to the file that actually runs.
  char resolved[PATH_MAX];
  if (realpath(loaded_name, resolved) == nullptr) {
    return Error{std::string("cannot resolve the path of libsbx (") + loaded_name +
                 "): " + std::strerror(errno)};
  }
  struct stat st {};
  if (::stat(resolved, &st) != 0)
    return Error{std::string("cannot stat libsbx at ") + resolved + ": " + std::strerror(errno)};
  return layout_around(resolved, st, /*executable=*/false);
}

}  // namespace

namespace {

// realpath() for several paths that share their ancestors (the install directories all lie
// below one prefix): realpath readlinks every component of every path, so the prefix was
// resolved once per directory. Here each lexical ancestor is resolved once and its real path
// reused: appending a component that is not a symlink (readlink says EINVAL) to a real path
// gives a real path. Any other answer (a symlink, a missing component, ".", "..") goes to
// realpath for the whole path, so the result is always what realpath gives.
class SharedPrefixResolver {
 public:
  std::optional<std::string> resolve(const std::string& path) {
    if (path.empty() || path.front() != '/') return fallback(path);
    if (path == "/") return path;
    const std::string parent = parent_of(path);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (name.empty() || name == "." || name == "..") return fallback(path);
    auto known = real_.find(path);
    if (known != real_.end()) return known->second;
    std::optional<std::string> real_parent = resolve(parent);
    if (!real_parent) return fallback(path);
    const std::string candidate = (*real_parent == "/" ? "" : *real_parent) + "/" + name;
    char target[1];
    std::optional<std::string> real = candidate;
    if (::readlink(candidate.c_str(), target, sizeof target) >= 0 || errno != EINVAL)
      real = fallback(path);  // a symlink, or not there: realpath decides
    if (real) real_.emplace(path, *real);
    return real;
  }

 private:
  static std::optional<std::string> fallback(const std::string& path) {
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real) == nullptr) return std::nullopt;
    return std::string(real);
  }
  std::map<std::string, std::string> real_;  // lexical path -> its real path
};

}  // namespace

std::vector<std::string> install_directories(const InstallLayout& layout) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& path) {
    if (path.empty() || std::find(out.begin(), out.end(), path) != out.end()) return;
    out.push_back(path);
  };
  // The sbx executable's directory is also the bin directory: each name is looked at once.
  std::vector<std::string> dirs;
  // Headers and data too: the shells of the host source the completions in <datadir>, and
  // a later build compiles against <includedir>.
  const std::string include_dir =
      layout.prefix.empty() ? "" : under_prefix(layout.prefix, SBX_INCLUDEDIR_RELPATH);
  const std::string data_dir =
      layout.prefix.empty() ? "" : under_prefix(layout.prefix, SBX_DATADIR_RELPATH);
  for (const std::string& dir :
       {layout.lib_dir, parent_of(layout.libsbx_path), layout.plugin_dir,
        parent_of(layout.stage2_path), layout.bin_dir, include_dir, data_dir}) {
    if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  SharedPrefixResolver resolver;
  for (const std::string& dir : dirs) {
    struct stat st {};
    // Only existing directories matter: a missing one holds nothing that could be run.
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    add(dir);
    // Both names: the layout's path is how sbx finds its files, the real one is where the
    // kernel writes; a symlink between them must not let the command reach either.
    if (std::optional<std::string> real = resolver.resolve(dir)) add(*real);
  }
  return out;
}

Result<std::vector<std::string>> running_install_directories(std::string* prefix) {
#if defined(__linux__)
  if (code_is_in_executable()) {
    const ExecutableInstall& install = executable_install();
    if (prefix != nullptr && install.layout) *prefix = install.layout->prefix;
    return install.directories;
  }
#endif
  Result<InstallLayout> layout = library_layout();
  if (!layout) return layout.failure();
  if (prefix != nullptr) *prefix = layout->prefix;
  return install_directories(*layout);
}

namespace {

bool is_directory_at(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The library directories another sbx install on this host may have, whatever this build's
// own: this build's, "lib" (GNUInstallDirs' default for any prefix but /usr, and the parent of
// every multiarch one) and the host's multiarch one, lib/<triplet> (a build for /usr: the .debs).
// An install's libsbx finds its plugins below its own libdir, so any of them may hold code.
std::vector<const char*> install_libdirs() {
  std::vector<const char*> out = {SBX_LIBDIR_RELPATH};
  for (const char* libdir : {"lib", SBX_MULTIARCH_LIBDIR_RELPATH}) {
    if (libdir[0] != '\0' && std::string_view(libdir) != SBX_LIBDIR_RELPATH) out.push_back(libdir);
  }
  return out;
}

// An sbx install's marks: its executable, and the helper's or the plugins' directory (a `bin/sbx`
// alone could be any program of that name).
bool holds_an_install(const std::string& prefix) {
  struct stat st {};
  if (::stat(under_prefix(prefix, SBX_BINDIR_RELPATH "/sbx").c_str(), &st) != 0 ||
      !S_ISREG(st.st_mode))
    return false;
  if (is_directory_at(under_prefix(prefix, SBX_LIBEXECDIR_RELPATH "/sbx"))) return true;
  const std::vector<const char*> libdirs = install_libdirs();
  return std::any_of(libdirs.begin(), libdirs.end(), [&prefix](const char* libdir) {
    return is_directory_at(under_prefix(prefix, libdir) + "/sbx");
  });
}

std::optional<std::string> real_path_of(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return std::nullopt;
  return std::string(real);
}

// The prefix of the install whose executable is `sbx` (found on PATH): its real path minus
// the bin directory, as layout_around does for the running executable.
std::optional<std::string> prefix_of_executable(const std::string& sbx) {
  std::optional<std::string> real = real_path_of(sbx);
  if (!real) return std::nullopt;
  std::string prefix = parent_of(*real);
  for (int i = 0; i < SBX_BINDIR_DEPTH; ++i) prefix = parent_of(prefix);
  return prefix;
}

}  // namespace

std::vector<std::string> install_prefixes(const std::string& running, const std::string& path_env,
                                          const std::string& home) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& prefix) {
    if (prefix.empty() || prefix.front() != '/') return;
    for (const std::string& name : {prefix, real_path_of(prefix).value_or(prefix)}) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  };
  // The running layout comes from a real path already (layout_around): not resolved again.
  if (!running.empty() && running.front() == '/') out.push_back(running);
  // What the user's shell and a later `sbx` would start: each `sbx` on PATH, followed to the
  // install it belongs to (a symlink in ~/bin to /opt/sbx/bin/sbx protects /opt/sbx).
  std::size_t start = 0;
  while (start <= path_env.size()) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    const std::string entry = path_env.substr(start, end - start);
    start = end + 1;
    if (entry.empty() || entry.front() != '/') continue;  // relative entries name no install
    const std::string sbx = (entry == "/" ? "" : entry) + "/sbx";
    if (::access(sbx.c_str(), F_OK) != 0) continue;
    if (std::optional<std::string> prefix = prefix_of_executable(sbx)) {
      if (holds_an_install(*prefix)) add(*prefix);
    }
  }
  // The usual places (README's install steps, demo.sh), also when not on this PATH: a user's
  // login shell or a cron job may have them on theirs.
  std::vector<std::string> usual = {"/opt/sbx", "/usr/local", "/usr"};
  if (!home.empty() && home.front() == '/' && home != "/") {
    usual.insert(usual.begin(), home + "/.local");
    usual.insert(usual.begin(), home + "/.local/opt/sbx");
  }
  for (const std::string& prefix : usual) {
    if (holds_an_install(prefix)) add(prefix);
  }
  return out;
}

std::vector<std::string> prefix_directories(const std::string& prefix) {
  std::vector<std::string> out;
  SharedPrefixResolver resolver;
  std::vector<const char*> relatives = {SBX_BINDIR_RELPATH};
  for (const char* libdir : install_libdirs()) relatives.push_back(libdir);
  relatives.insert(relatives.end(),
                   {SBX_LIBEXECDIR_RELPATH, SBX_INCLUDEDIR_RELPATH, SBX_DATADIR_RELPATH});
  for (const char* relative : relatives) {
    const std::string dir = under_prefix(prefix, relative);
    if (!is_directory_at(dir)) continue;
    for (const std::string& name : {dir, resolver.resolve(dir).value_or(dir)}) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> current_install_directories() {
  std::string running;  // the running install's prefix, empty without a layout
  Result<std::vector<std::string>> directories = running_install_directories(&running);
  std::vector<std::string> out = directories ? std::move(*directories) : std::vector<std::string>{};
  const char* path_env = std::getenv("PATH");
  const char* home = std::getenv("HOME");
  for (const std::string& prefix :
       install_prefixes(running, path_env ? path_env : "", home ? home : "")) {
    out.push_back(prefix);
    // The running prefix's directories are install_directories() already.
    if (prefix == running) continue;
    for (std::string& dir : prefix_directories(prefix)) out.push_back(std::move(dir));
  }
  return out;
}

const sbx_host_v2* host_services(const InstallLayout& layout) {
  static auto* mutex = new std::mutex();
  static auto* tables = new std::map<std::string, std::unique_ptr<HostTable>>();
  const std::lock_guard<std::mutex> lock(*mutex);
  const std::string key =
      layout.libsbx_path + '\0' + layout.stage2_path + '\0' + std::to_string(layout.libsbx_owner);
  std::unique_ptr<HostTable>& slot = (*tables)[key];
  if (!slot) {
    slot = std::make_unique<HostTable>();
    sbx_host_v2& host = slot->table;
    plugins::fill_portable_host_entries(host);
    host.stage2_path = verified_stage2(layout, slot->stage2);
    host.spawn = &host_spawn;
  }
  return &slot->table;
}

}  // namespace sbx
