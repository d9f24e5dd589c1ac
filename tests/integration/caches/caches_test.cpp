// Toolchain caches (":caches", core/src/caches/README.md) with the real tools: npm and pip (and
// cargo where the identity can run it) install a package that needs a download from a registry
// stand-in on loopback (registry.py; never the internet), reached through sbx's proxy; a second
// run finds it in the project's cache and downloads nothing; the host's caches stay byte for
// byte as they were; a file planted in a cache from inside reaches only the project's cache;
// another project's cache and the host's caches cannot be written; credentials beside the
// caches are unreadable (bwrap) or the run is refused naming them (Landlock cannot deny inside
// a readable home). Both Linux backends, as root and as user 65534. Where bwrap mounts the
// host's caches copy-on-write (its probe passes "cache_overlay"), a write to a host cache from
// inside takes, into the project's upper layer: the host's files stay as they were, what the
// command wrote is in the layer (upper_of) and in the next run of that project only, and the
// command holds no capability.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace sbx::test;

// The registry stand-in: `python3 registry.py DIR` in a child of the test, stopped (by its pid)
// when the object goes. requests() is what it was asked since the last clear_requests().
class Registry {
 public:
  Registry() {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/usr/bin/python3", "python3", SBX_CACHES_REGISTRY, state_.path().c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pid_ = pid;
    if (wait_for_file(state_ / "port", 15000)) port_ = std::stoi(read_file(state_ / "port"));
  }
  ~Registry() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string requests() const {
    return exists(state_ / "requests.log") ? read_file(state_ / "requests.log") : "";
  }
  void clear_requests() const { write_file(state_ / "requests.log", ""); }

 private:
  TempDir state_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// Every entry below `root` but sbx's own state (<home>/.cache/sbx, where the project's cache
// is): its kind, mode, size, modification time and, for a file, its bytes.
std::string digest(const std::string& root) {
  std::ostringstream out;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const std::string path = it->path().string();
    if (path == root + "/.cache/sbx") {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    out << path << ' ' << std::oct << st.st_mode << std::dec << ' ' << st.st_size << ' '
        << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec;
    if (S_ISREG(st.st_mode)) out << ' ' << read_file(path);
    out << '\n';
  }
  return out.str();
}

std::string json_field(const std::string& text, const std::function<std::string(json::value&)>& f) {
  try {
    json::value doc = json::parse(text);
    return f(doc);
  } catch (const std::exception&) {
    return "";
  }
}

// `text` at `path`, with the directories above it; fails the test when it is not there after.
void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  write_file(path, text);
  ASSERT_EQ(read_file(path), text) << path;
}

using Param = std::tuple<std::string, Identity>;

class ToolchainCaches : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    const std::string why = identity_unavailable(who(), backend());
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_GT(registry_.port(), 0) << "the registry stand-in did not start";
    home_.emplace(who());
    give_to(who(), ws_.path());
    give_to(who(), other_.path());
    give_to(who(), conf_.path());
    policy_ = conf_.write(
        "policy.json",
        R"({"version":1,"filesystem":{"kind":"restricted","protected_names":[],"entries":[)"
        R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
        R"({"path":":caches","access":"write"}]},"network":{"mode":"proxy",)"
        R"("allowed_domains":["127.0.0.1:)" +
            std::to_string(registry_.port()) + R"("]}})");
    give_to(who(), policy_);
    const RunResult explain = sbx_as(
        {"--backends", backend(), "explain", "--policy", policy_, "--cwd", ws_.path(), "--json"});
    const std::string available = json_field(explain.out, [](json::value& doc) {
      const json::value* v = doc.as_object().if_contains("available_backend");
      return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
    });
    if (available != backend())
      GTEST_SKIP() << backend()
                   << " cannot run this policy (network mode proxy) here: " << explain.out
                   << explain.err;
    // The XDG cache (~/.cache) always exists (sbx makes it for the project's cache), so a
    // backend that mounts the caches copy-on-write lists it.
    cow_ = json_field(explain.out, [](json::value& doc) {
             const json::value* caches = doc.as_object().if_contains("caches");
             if (caches == nullptr || !caches->is_object()) return std::string();
             const json::value* cow = caches->as_object().if_contains("copy_on_write");
             return std::string(
                 cow != nullptr && cow->is_array() && !cow->as_array().empty() ? "yes" : "");
           }) == "yes";
  }

  const std::string& backend() const { return std::get<0>(GetParam()); }
  Identity who() const { return std::get<1>(GetParam()); }
  std::string home() const { return home_->path(); }

  // env_for(who) with HOME the test's own home and no XDG_* variable.
  std::vector<std::string> env() const {
    std::vector<std::string> out;
    for (const std::string& entry : env_for(who()))
      if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_", 0) != 0) out.push_back(entry);
    out.push_back("HOME=" + home());
    out.insert(out.end(), extra_env_.begin(), extra_env_.end());
    return out;
  }
  RunResult sbx_as(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {sbx_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_as(who(), argv, env());
  }
  RunResult run_in(const std::string& cwd, const std::string& script) const {
    return exec_as(who(), backend(), {"--policy", policy_}, cwd, {"/bin/sh", "-c", script}, env());
  }
  RunResult run(const std::string& script) const { return run_in(ws_.path(), script); }

  // The project's cache (its data directory) of a run in `cwd`, as `sbx cache list` finds it.
  std::string data_of(const std::string& cwd) const {
    const RunResult listed = sbx_as({"cache", "list", "--project", cwd, "--json"});
    return json_field(listed.out, [](json::value& doc) {
      const json::array& projects = doc.as_object().at("projects").as_array();
      return projects.size() == 1
                 ? std::string(projects.front().as_object().at("directory").as_string()) + "/data"
                 : std::string();
    });
  }

  // Copy-on-write: the upper layer of the project of `cwd` for the host's directory `host_dir`
  // (explain's caches.copy_on_write), "" when it is not mounted so.
  std::string upper_of(const std::string& host_dir, const std::string& cwd = "") const {
    const RunResult explain = sbx_as({"--backends", backend(), "explain", "--policy", policy_,
                                      "--cwd", cwd.empty() ? ws_.path() : cwd, "--json"});
    const std::string real = fs::weakly_canonical(host_dir).string();
    return json_field(explain.out, [&real](json::value& doc) {
      for (const json::value& o : doc.at("caches").at("copy_on_write").as_array()) {
        if (o.at("path").as_string() == real)
          return std::string(o.at("layers").as_string()) + "/upper";
      }
      return std::string();
    });
  }

  // Caches the host had before any run: a file in each, given to the identity.
  void fill_host_caches() const {
    put(home() + "/.npm/_cacache/index-v5/host-entry", "host npm\n");
    put(home() + "/.cache/pip/http-v2/host-entry", "host pip\n");
    put(home() + "/.cache/other-tool/host-entry", "host xdg\n");
    put(home() + "/.cargo/registry/cache/host.crate", "host crate\n");
    give_to(who(), home());
  }

  std::string npm_install(const std::string& flags) const {
    return "npm install --no-audit --no-fund --no-update-notifier " + flags + " --registry " +
           registry_.url("/") + " sbx-demo-pkg && node -e 'console.log(require(\"sbx-demo-pkg\"))'";
  }
  std::string pip_install() const {
    return "python3 -m pip install --disable-pip-version-check --no-warn-script-location "
           "--trusted-host 127.0.0.1:" +
           std::to_string(registry_.port()) + " --target ./site --index-url " +
           registry_.url("/simple/") +
           " sbx-demo && PYTHONPATH=site python3 -c 'import sbx_demo; print(sbx_demo.VALUE)'";
  }

  Registry registry_;
  std::optional<PrivateHome> home_;
  TempDir ws_, other_, conf_;
  std::string policy_;
  std::vector<std::string> extra_env_;
  bool cow_ = false;  // the backend mounts the host's caches copy-on-write here
};

// The lines "CapXxx:\tHEX" of /proc/self/status that `out` holds, each of the five sets.
std::map<std::string, std::string> capability_sets(const std::string& out) {
  std::map<std::string, std::string> sets;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
      if (line.rfind(std::string(set) + ":", 0) == 0)
        sets[set] = line.substr(line.find_first_not_of(" \t", std::strlen(set) + 1));
    }
  }
  return sets;
}

// chattr +i / -i (FS_IOC_SETFLAGS): the test process is root.
bool set_immutable(const std::string& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

TEST_P(ToolchainCaches, AnInstallDownloadsOnceAndTheNextRunReusesTheProjectsCache) {
  fill_host_caches();
  const std::string before = digest(home());

  const RunResult npm = run(npm_install(""));
  ASSERT_EQ(npm.code, 0) << describe(npm);
  EXPECT_NE(npm.out.find("sbx-demo 42"), std::string::npos) << describe(npm);
  EXPECT_NE(registry_.requests().find("GET /sbx-demo-pkg/-/sbx-demo-pkg-1.0.0.tgz"),
            std::string::npos)
      << registry_.requests();
  const RunResult pip = run(pip_install());
  ASSERT_EQ(pip.code, 0) << describe(pip);
  EXPECT_NE(pip.out.find("42"), std::string::npos) << describe(pip);
  EXPECT_NE(registry_.requests().find("GET /files/sbx_demo-1.0-py3-none-any.whl"),
            std::string::npos)
      << registry_.requests();

  const std::string data = data_of(ws_.path());
  ASSERT_FALSE(data.empty()) << "sbx cache list found no cache for " << ws_.path();
  if (cow_) {
    // npm's cache is the host's ~/.npm, pip's the XDG cache's pip: what they downloaded is in
    // the project's upper layers (and not on the host: the digest below).
    const std::string npm_upper = upper_of(home() + "/.npm");
    const std::string xdg = upper_of(home() + "/.cache");
    ASSERT_FALSE(npm_upper.empty() || xdg.empty()) << "not copy-on-write: ~/.npm or ~/.cache";
    EXPECT_TRUE(exists(npm_upper + "/_cacache")) << npm_upper;
    EXPECT_TRUE(exists(xdg + "/pip/http-v2") || exists(xdg + "/pip/http")) << xdg;
  } else {
    EXPECT_TRUE(exists(data + "/npm/_cacache")) << data;
    EXPECT_TRUE(exists(data + "/pip/http-v2") || exists(data + "/pip/http")) << data;
  }

  // The next run of the same project: npm takes the package from the cache without asking the
  // registry at all; pip asks for the index page (it never caches those) but not the wheel.
  fs::remove_all(ws_ / "node_modules");
  fs::remove_all(ws_ / "site");
  registry_.clear_requests();
  const RunResult npm_again = run(npm_install("--prefer-offline"));
  ASSERT_EQ(npm_again.code, 0) << describe(npm_again);
  EXPECT_NE(npm_again.out.find("sbx-demo 42"), std::string::npos) << describe(npm_again);
  EXPECT_EQ(registry_.requests(), "");
  const RunResult pip_again = run(pip_install());
  ASSERT_EQ(pip_again.code, 0) << describe(pip_again);
  EXPECT_EQ(registry_.requests().find("/files/"), std::string::npos) << registry_.requests();

  EXPECT_EQ(digest(home()), before) << "the host's caches changed";
}

TEST_P(ToolchainCaches, WhatACommandPlantsStaysInItsProjectsCache) {
  fill_host_caches();
  // Another project: its cache exists once a run used it.
  const RunResult other = run_in(other_.path(), "true");
  ASSERT_EQ(other.code, 0) << describe(other);
  const std::string other_data = data_of(other_.path());
  ASSERT_FALSE(other_data.empty());
  // The other project's whole cache: its data and, copy-on-write, its layers.
  const std::string other_dir = fs::path(other_data).parent_path().string();
  const std::string before = digest(home());
  const std::string other_before = digest(other_dir);

  extra_env_ = {"OTHER=" + other_data};
  const RunResult r = run(
      // The project's own cache takes anything.
      "for d in \"$npm_config_cache\" \"$PIP_CACHE_DIR\" \"$XDG_CACHE_HOME\" \"$CARGO_HOME\"; do "
      "  mkdir -p \"$d\" && echo planted > \"$d/planted\" && echo \"planted:$d\"; done; "
      // The host's caches take nothing (copy-on-write: nothing of the host's files)...
      "for f in ~/.npm/evil ~/.npm/_cacache/index-v5/host-entry ~/.cache/pip/evil "
      "  ~/.cache/evil ~/.cargo/registry/evil ~/.cargo/config.toml; do "
      "  if (echo evil >> \"$f\") 2>/dev/null; then echo \"IN-LAYER:$f\"; fi; done; "
      "for d in ~/.npm/newdir ~/.cache/newdir; do "
      "  if mkdir \"$d\" 2>/dev/null; then echo \"IN-LAYER:$d\"; fi; done; "
      // ...and another project's cache nothing at all.
      "for f in \"$OTHER/evil\" \"$OTHER/npm/evil\" \"$OTHER/../project\"; do "
      "  if (echo evil >> \"$f\") 2>/dev/null; then echo \"WROTE:$f\"; else echo \"refused:$f\"; "
      "  fi; done; "
      "for d in \"$OTHER/newdir\" \"$OTHER/../data2\"; do "
      "  if mkdir \"$d\" 2>/dev/null; then echo \"WROTE:$d\"; else echo \"refused:$d\"; fi; done");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE:"), std::string::npos) << describe(r);
  const std::string data = data_of(ws_.path());
  ASSERT_FALSE(data.empty());
  if (cow_) {
    // The tools' variables name the host's directories, and what was planted and written there
    // is in the project's upper layers.
    const std::string npm = upper_of(home() + "/.npm");
    const std::string xdg = upper_of(home() + "/.cache");
    const std::string cargo = upper_of(home() + "/.cargo");
    ASSERT_FALSE(npm.empty() || xdg.empty() || cargo.empty()) << describe(r);
    for (const char* dir : {"/.npm", "/.cache/pip", "/.cache", "/.cargo"})
      EXPECT_NE(r.out.find("planted:" + home() + dir + "\n"), std::string::npos) << describe(r);
    for (const std::string& file :
         {npm + "/planted", xdg + "/pip/planted", xdg + "/planted", cargo + "/planted",
          npm + "/evil", xdg + "/pip/evil", cargo + "/config.toml", npm + "/newdir"})
      EXPECT_TRUE(exists(file)) << file;
    EXPECT_EQ(read_file(npm + "/_cacache/index-v5/host-entry"), "host npm\nevil\n");
  } else {
    EXPECT_EQ(r.out.find("IN-LAYER:"), std::string::npos) << describe(r);
    for (const char* sub : {"npm", "pip", "xdg", "cargo"}) {
      EXPECT_NE(r.out.find("planted:" + data + "/" + sub), std::string::npos) << describe(r);
      EXPECT_TRUE(exists(data + "/" + sub + "/planted")) << sub;
    }
  }
  // Nothing of it reached the host's caches, nor the other project's.
  EXPECT_EQ(digest(home()), before) << "the host's caches changed";
  EXPECT_FALSE(exists(home() + "/.npm/planted"));
  EXPECT_FALSE(exists(home() + "/.cache/planted"));
  EXPECT_EQ(digest(other_dir), other_before);
  // sbx cache clear removes the project's cache, and only it (copy-on-write: its layers too,
  // whose work directories overlayfs made mode 000).
  const RunResult cleared = sbx_as({"cache", "clear", "--project", ws_.path()});
  EXPECT_EQ(cleared.code, 0) << describe(cleared);
  EXPECT_FALSE(exists(data));
  EXPECT_FALSE(exists(fs::path(data).parent_path()));
  EXPECT_TRUE(exists(other_data));
  EXPECT_EQ(digest(home()), before) << "sbx cache clear touched the host's caches";
}

// Copy-on-write (bwrap where its probe passes "cache_overlay"): the command sees what the host
// cached, changes and removes there what it likes, and none of it reaches the host's files,
// which stay byte for byte as they were; the project's next run finds it, another project's
// does not; the command holds no capability in any set; `sbx cache list` counts the layers
// and `sbx cache clear` removes them.
TEST_P(ToolchainCaches, CopyOnWriteShowsTheHostsCachesAndKeepsWhatTheProjectWrote) {
  if (!cow_)
    GTEST_SKIP() << backend()
                 << " points the tools at the project's cache here (no copy-on-write: "
                    "its probe does not pass cache_overlay)";
  fill_host_caches();
  const std::string before = digest(home());
  const RunResult r =
      run("cat ~/.npm/_cacache/index-v5/host-entry ~/.cache/pip/http-v2/host-entry "
          "~/.cargo/registry/cache/host.crate && "
          "echo planted > ~/.npm/_cacache/planted && echo planted > ~/.cache/pip/planted && "
          "echo changed >> ~/.npm/_cacache/index-v5/host-entry && "
          "rm ~/.cache/other-tool/host-entry && rm -r ~/.cargo/registry && echo done; "
          "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("host npm\nhost pip\nhost crate\ndone\n"), std::string::npos) << describe(r);
  const std::map<std::string, std::string> caps = capability_sets(r.out);
  EXPECT_EQ(caps.size(), 5u) << r.out;
  for (const auto& [set, value] : caps)
    EXPECT_EQ(value, "0000000000000000") << set << " inside: " << r.out;
  // The host's caches: byte for byte, modes and times as they were.
  EXPECT_EQ(digest(home()), before) << "the host's caches changed";
  EXPECT_FALSE(exists(home() + "/.npm/_cacache/planted"));
  EXPECT_EQ(read_file(home() + "/.npm/_cacache/index-v5/host-entry"), "host npm\n");
  EXPECT_TRUE(exists(home() + "/.cargo/registry/cache/host.crate"));
  // What the command wrote is in the project's upper layers.
  const std::string npm = upper_of(home() + "/.npm");
  ASSERT_FALSE(npm.empty());
  EXPECT_EQ(read_file(npm + "/_cacache/planted"), "planted\n");
  EXPECT_EQ(read_file(npm + "/_cacache/index-v5/host-entry"), "host npm\nchanged\n");
  // The project's next run finds it, removals included.
  const RunResult again =
      run("cat ~/.npm/_cacache/planted ~/.npm/_cacache/index-v5/host-entry ~/.cache/pip/planted; "
          "test -e ~/.cache/other-tool/host-entry || echo removed; "
          "test -e ~/.cargo/registry || echo gone");
  ASSERT_EQ(again.code, 0) << describe(again);
  EXPECT_EQ(again.out, "planted\nhost npm\nchanged\nplanted\nremoved\ngone\n") << describe(again);
  // Another project's run sees the host's caches as they are, nothing of this project's.
  const RunResult other = run_in(
      other_.path(),
      "test -e ~/.npm/_cacache/planted && echo SEEN; cat ~/.npm/_cacache/index-v5/host-entry "
      "~/.cache/other-tool/host-entry ~/.cargo/registry/cache/host.crate");
  ASSERT_EQ(other.code, 0) << describe(other);
  EXPECT_EQ(other.out, "host npm\nhost xdg\nhost crate\n") << describe(other);
  // `sbx cache list` counts the layers; `sbx cache clear` removes them, mode-000 work
  // directories included, and the host's caches stay.
  const RunResult listed = sbx_as({"cache", "list", "--project", ws_.path(), "--json"});
  const std::string files = json_field(listed.out, [](json::value& doc) {
    const json::array& projects = doc.as_object().at("projects").as_array();
    return projects.size() == 1
               ? std::to_string(projects.front().at("files").to_number<std::int64_t>())
               : "";
  });
  EXPECT_NE(files, "") << describe(listed);
  EXPECT_NE(files, "0") << describe(listed);
  const std::string dir = fs::path(data_of(ws_.path())).parent_path().string();
  const RunResult cleared = sbx_as({"cache", "clear", "--project", ws_.path()});
  EXPECT_EQ(cleared.code, 0) << describe(cleared);
  EXPECT_FALSE(exists(dir)) << dir;
  EXPECT_EQ(digest(home()), before) << "sbx cache clear touched the host's caches";
  const RunResult fresh = run("cat ~/.npm/_cacache/index-v5/host-entry");
  EXPECT_EQ(fresh.out, "host npm\n") << describe(fresh);
}

// Copy-on-write fails closed: when stage 2 cannot mount an overlay (here its work directory made
// immutable, so overlayfs cannot make its own directory there), the run fails with the reason
// and the command never runs; the host's caches are untouched.
TEST_P(ToolchainCaches, ACacheOverlayThatCannotBeMountedFailsTheRun) {
  if (!cow_) GTEST_SKIP() << backend() << " mounts no cache copy-on-write here (no cache_overlay)";
  fill_host_caches();
  const RunResult first = run("true");
  ASSERT_EQ(first.code, 0) << describe(first);
  const std::string npm = upper_of(home() + "/.npm");
  ASSERT_FALSE(npm.empty());
  const std::string work = fs::path(npm).parent_path().string() + "/work";
  fs::remove_all(work + "/work");
  if (!set_immutable(work, true))
    GTEST_SKIP() << "cannot make " << work << " immutable here (chattr +i: " << std::strerror(errno)
                 << ")";
  const std::string before = digest(home());
  const RunResult r = run("echo ran > ran");
  set_immutable(work, false);
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("cache overlay"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find(home() + "/.npm"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(ws_ / "ran")) << "the command ran without its overlay";
  EXPECT_EQ(digest(home()), before);
}

// A policy with the home writable: the host's caches stay read-only (and a missing one
// uncreatable), and so do the other projects' caches, while the rest of the home and the
// project's cache take writes. Landlock cannot carve those out and refuses, naming one.
TEST_P(ToolchainCaches, AWritableHomeKeepsTheHostsAndOtherProjectsCachesReadOnly) {
  fill_host_caches();
  const RunResult other = run_in(other_.path(), "true");
  ASSERT_EQ(other.code, 0) << describe(other);
  const std::string other_data = data_of(other_.path());
  ASSERT_FALSE(other_data.empty());
  policy_ = conf_.write(
      "home-policy.json",
      R"({"version":1,"filesystem":{"kind":"restricted","protected_names":[],"entries":[)"
      R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
      R"({"path":"~","access":"write"},{"path":":caches","access":"write"}]},)"
      R"("network":{"mode":"restricted"}})");
  give_to(who(), policy_);
  const std::string before = digest(home() + "/.npm") + digest(home() + "/.cargo") +
                             digest(home() + "/.cache/pip") + digest(other_data);
  extra_env_ = {"OTHER=" + other_data};
  const RunResult r = run(
      // Copy-on-write, ~/.npm and ~/.cache (kept read-only, then mounted) take writes into the
      // project's layer; ~/.cargo, inside the writable home, is no overlay: CARGO_HOME moves.
      "for f in ~/.npm/evil ~/.npm/_cacache/index-v5/host-entry ~/.cache/pip/evil; do "
      "  if (echo evil >> \"$f\") 2>/dev/null; then echo \"IN-LAYER:$f\"; fi; done; "
      "for f in ~/.cargo/registry/evil \"$OTHER/evil\" \"$OTHER/npm/evil\"; do "
      "  if (echo evil >> \"$f\") 2>/dev/null; then echo \"WROTE:$f\"; else echo \"refused:$f\"; "
      "  fi; done; "
      "for d in ~/.gradle ~/go \"$OTHER/../new\"; do "
      "  if mkdir \"$d\" 2>/dev/null; then echo \"WROTE:$d\"; else echo \"refused:$d\"; fi; done; "
      // A mount point cannot be moved (EBUSY); a directory inside an overlay is moved by
      // copying (rename(2) answers EXDEV there), into the layer.
      "mv ~/.npm ~/.npm.moved 2>/dev/null && echo MOVED:npm; "
      "mv ~/.cache/pip ~/.cache/pip.moved 2>/dev/null && echo MOVED-IN-CACHE:pip; "
      "echo notes > ~/notes.txt && echo home-ok; "
      "mkdir -p \"$npm_config_cache\" && echo ok > \"$npm_config_cache/ok\" && echo cache-ok");
  if (backend() == "landlock") {
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find("carve"), std::string::npos) << describe(r);
    return;
  }
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE:"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("MOVED:"), std::string::npos) << describe(r);
  if (!cow_) {
    EXPECT_EQ(r.out.find("IN-LAYER:"), std::string::npos) << describe(r);
    EXPECT_EQ(r.out.find("MOVED-IN-CACHE:"), std::string::npos) << describe(r);
  }
  EXPECT_NE(r.out.find("home-ok"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("cache-ok"), std::string::npos) << describe(r);
  EXPECT_EQ(digest(home() + "/.npm") + digest(home() + "/.cargo") + digest(home() + "/.cache/pip") +
                digest(other_data),
            before);
  // The missing caches were kept uncreatable without leaving anything in their place.
  EXPECT_FALSE(exists(home() + "/.gradle"));
  EXPECT_FALSE(exists(home() + "/go"));
}

// Issue #40 F2: caches named in npm's user configuration, a pip configuration file or another
// tool's variable, in a directory a writable root holds, are the host's like the others: kept
// read-only (a missing one uncreatable) while the rest of that root takes writes. Landlock
// cannot carve them out and refuses, naming one.
TEST_P(ToolchainCaches, CachesNamedInConfigFilesOrOtherVariablesStayReadOnly) {
  const TempDir shared;
  fs::create_directories(shared / "x-npmc");
  fs::create_directories(shared / "x-yarn");
  give_to(who(), shared.path());
  put(home() + "/.npmrc", "cache=" + shared / "x-npmc" + "\n");
  put(home() + "/.config/pip/pip.conf", "[global]\ncache-dir = " + shared / "x-pipc" + "\n");
  give_to(who(), home());
  policy_ = conf_.write(
      "shared-policy.json",
      R"({"version":1,"filesystem":{"kind":"restricted","protected_names":[],"entries":[)"
      R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
      R"({"path":")" +
          shared.path() +
          R"(","access":"write"},{"path":":caches","access":"write"}]},)"
          R"("network":{"mode":"restricted"}})");
  give_to(who(), policy_);
  extra_env_ = {"YARN_CACHE_FOLDER=" + shared / "x-yarn", "UV_CACHE_DIR=" + shared / "x-uv"};
  const RunResult r =
      run("cd " + shared.path() +
          " && for f in x-npmc/o x-yarn/o; do "
          "(echo PLANT > $f) 2>/dev/null && echo WROTE:$f; done; "
          "for d in x-pipc x-uv; do mkdir $d 2>/dev/null && echo WROTE:$d; done; "
          "echo free > free && echo free-ok; "
          "echo \"npm=$npm_config_cache pip=$PIP_CACHE_DIR yarn=$YARN_CACHE_FOLDER\"");
  if (backend() == "landlock") {
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find("carve"), std::string::npos) << describe(r);
    EXPECT_FALSE(exists(shared / "x-npmc/o"));
    return;
  }
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("free-ok"), std::string::npos) << describe(r);
  const std::string data = data_of(ws_.path());
  ASSERT_FALSE(data.empty());
  if (cow_) {
    // The existing ones (npm's from ~/.npmrc, yarn's) are mounted copy-on-write where they are:
    // the writes take, into the project's layers (the host keeps nothing: below); the missing
    // ones stay uncreatable and their tools move to the project's cache.
    EXPECT_EQ(r.out.find("WROTE:x-pipc"), std::string::npos) << describe(r);
    EXPECT_EQ(r.out.find("WROTE:x-uv"), std::string::npos) << describe(r);
    EXPECT_NE(
        r.out.find("npm=" + shared / "x-npmc" + " pip=" + data + "/pip yarn=" + shared / "x-yarn"),
        std::string::npos)
        << describe(r);
    EXPECT_TRUE(exists(upper_of(shared / "x-npmc") + "/o"));
  } else {
    EXPECT_EQ(r.out.find("WROTE:"), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("npm=" + data + "/npm pip=" + data + "/pip yarn=" + data + "/yarn"),
              std::string::npos)
        << describe(r);
  }
  for (const char* name : {"x-npmc/o", "x-yarn/o", "x-pipc", "x-uv"})
    EXPECT_FALSE(exists(shared / name)) << name;
}

// Issue #40 F5: a run without ":caches" whose writable root holds the cache directory (not
// the home) cannot make <cache>/sbx/caches and plant a project's cache there before the first
// run with ":caches" made it: root's (whose other state is in /run) is made and kept read-only
// like the state directory every other user's <cache>/sbx is. Landlock cannot carve it out.
TEST_P(ToolchainCaches, AWritableCacheDirectoryCannotPlantAProjectsCacheBeforeTheFirst) {
  // As before the first run with ":caches" (SetUp's explain made it).
  fs::remove_all(home() + "/.cache/sbx/caches");
  fs::create_directories(home() + "/.cache");
  give_to(who(), home());
  policy_ = conf_.write(
      "cache-dir-policy.json",
      R"({"version":1,"filesystem":{"kind":"restricted","protected_names":[],"entries":[)"
      R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
      R"({"path":")" +
          home() + R"(/.cache","access":"write"}]},"network":{"mode":"restricted"}})");
  give_to(who(), policy_);
  const RunResult r =
      run("d=\"$HOME/.cache/sbx/caches/p-0123/data\"; "
          "(mkdir -p \"$d/npm\" && echo PLANT > \"$d/npm/x\") 2>/dev/null && echo WROTE; "
          "echo other > \"$HOME/.cache/other\" && echo other-ok");
  if (backend() == "landlock") {
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find("state directory"), std::string::npos) << describe(r);
  } else {
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("other-ok"), std::string::npos) << describe(r);
  }
  EXPECT_FALSE(exists(home() + "/.cache/sbx/caches/p-0123"));
}

TEST_P(ToolchainCaches, CredentialsBesideTheCachesStayUnreadable) {
  put(home() + "/.cargo/credentials.toml", "[registry]\ntoken = \"cargo-secret\"\n");
  put(home() + "/.npmrc", "//127.0.0.1/:_authToken=npm-secret\n");
  put(home() + "/.m2/settings.xml", "<settings><password>maven-secret</password>\n");
  give_to(who(), home());
  const RunResult r = run("cat ~/.cargo/credentials.toml ~/.npmrc ~/.m2/settings.xml; true");
  if (backend() == "landlock") {
    // Landlock cannot deny a file inside a readable directory: the run is refused, naming the
    // capability and a credential file, rather than run with them readable.
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find("read_carveouts"), std::string::npos) << describe(r);
  } else {
    EXPECT_EQ(r.code, 0) << describe(r);
  }
  for (const char* secret : {"cargo-secret", "npm-secret", "maven-secret"})
    EXPECT_EQ(r.out.find(secret), std::string::npos) << secret << ": " << describe(r);
}

TEST_P(ToolchainCaches, CargoFetchesOnceIntoTheProjectsCargoHome) {
  // cargo as this process finds it; as user 65534 it must be reachable too.
  const char* path = std::getenv("PATH");
  std::string cargo;
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':') && cargo.empty();)
    if (!dir.empty() && ::access((dir + "/cargo").c_str(), X_OK) == 0) cargo = dir + "/cargo";
  if (cargo.empty()) GTEST_SKIP() << "cargo is not installed here (not on PATH)";
  if (run_as(who(), {"/usr/bin/test", "-x", cargo}, env()).code != 0)
    GTEST_SKIP() << name_of(who()) << " cannot execute " << cargo;
  const std::string bin = fs::path(cargo).parent_path().string();
  // A rustup proxy finds its toolchains in RUSTUP_HOME, which the private HOME does not hold.
  const char* rustup = std::getenv("RUSTUP_HOME");
  const char* real_home = std::getenv("HOME");
  std::string rustup_home = rustup != nullptr ? rustup : "";
  if (rustup_home.empty() && real_home != nullptr)
    rustup_home = std::string(real_home) + "/.rustup";
  extra_env_ = {"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"};
  if (exists(rustup_home)) extra_env_.push_back("RUSTUP_HOME=" + rustup_home);
  fill_host_caches();
  put(home() + "/.cargo/config.toml", "[net]\nretry = 1\n");
  give_to(who(), home());
  const std::string before = digest(home());
  put(ws_ / "Cargo.toml",
      "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n"
      "[dependencies]\nsbxdemo = \"0.1\"\n");
  put(ws_ / "src/main.rs", "fn main() { println!(\"{}\", sbxdemo::VALUE); }\n");
  put(ws_ / ".cargo/config.toml",
      "[source.crates-io]\nreplace-with = \"stand-in\"\n[source.stand-in]\nregistry = "
      "\"sparse+" +
          registry_.url("/cargo/index/") + "\"\n");
  give_to(who(), ws_.path());
  const RunResult fetch = run("cargo fetch");
  ASSERT_EQ(fetch.code, 0) << describe(fetch);
  EXPECT_NE(registry_.requests().find("GET /cargo/dl/sbxdemo/0.1.0/download"), std::string::npos)
      << registry_.requests();
  const std::string data = data_of(ws_.path());
  ASSERT_FALSE(data.empty());
  if (cow_) {
    // CARGO_HOME is the host's ~/.cargo, copy-on-write: the crate is in the project's layer.
    const std::string upper = upper_of(home() + "/.cargo");
    ASSERT_FALSE(upper.empty());
    bool crate = false;
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(upper, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error))
      crate = crate || it->path().filename() == "sbxdemo-0.1.0.crate";
    EXPECT_TRUE(crate) << "no sbxdemo-0.1.0.crate below " << upper;
  } else {
    // The host's configuration is linked in; its credentials are not.
    EXPECT_EQ(fs::read_symlink(data + "/cargo/config.toml").string(),
              home() + "/.cargo/config.toml");
  }
  registry_.clear_requests();
  const RunResult offline = run("cargo fetch --offline");
  ASSERT_EQ(offline.code, 0) << describe(offline);
  EXPECT_EQ(registry_.requests(), "");
  EXPECT_EQ(digest(home()), before) << "the host's caches changed";
}

TEST_P(ToolchainCaches, GoCachesNeedGo) {
  const RunResult go = run_as(who(), {"/bin/sh", "-c", "command -v go"}, env());
  if (go.code != 0)
    GTEST_SKIP() << "go is not installed here: GOCACHE and GOMODCACHE are checked by the "
                    "variables a run gets (CacheEnvironment.*, sbx_unit_policy) only";
  const RunResult r = run("go env GOCACHE GOMODCACHE");
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::string data = data_of(ws_.path());
  EXPECT_NE(r.out.find(data + "/go-build"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find(data + "/go-mod"), std::string::npos) << describe(r);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + name_of(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Backends, ToolchainCaches,
                         ::testing::Combine(::testing::Values("bwrap", "landlock"),
                                            ::testing::ValuesIn(kIdentities)),
                         param_name);

}  // namespace
