// The installed sbx in Docker's default confinement, without a daemon (issue #38):
// sbx_docker_default_exec gives it moby's default capability set and seccomp profile (no user
// namespaces: clone and unshare with namespace flags are refused without CAP_SYS_ADMIN), as root
// and as user 65534, the two ways agents run in containers. There:
//  - `sbx backends --probe` (text and --json) says bwrap is unavailable because this process's
//    seccomp filter refuses user namespaces, with a fix that makes sense in a container, never
//    blames the seccomp support of the kernel, selects Landlock, and its container line says
//    what the runtime allowed;
//  - `sbx exec --preset read-only` runs under Landlock;
//  - a kept probe answer is never reused across the boundary, in either direction.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "sbx_test/docker_default.hpp"
#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;
namespace json = boost::json;

// A field of /proc/self/status of this test process ("" when absent).
std::string own_status(const std::string& field) {
  const std::string text = read_file("/proc/self/status");
  const std::size_t at = text.find("\n" + field + ":");
  if (at == std::string::npos) return {};
  const std::size_t start = text.find_first_not_of(" \t", at + field.size() + 2);
  return text.substr(start, text.find('\n', start) - start);
}

// Seccomp_filters of a process started by the launcher from this one: one more.
int filters_inside() {
  const std::string own = own_status("Seccomp_filters");
  return (own.empty() ? 0 : std::stoi(own)) + 1;
}

int capabilities_known() { return std::stoi(read_file("/proc/sys/kernel/cap_last_cap")) + 1; }

std::vector<std::string> docker_names() {
  std::vector<std::string> names;
  for (const auto& [number, name] : docker_default_capabilities()) names.emplace_back(name);
  return names;
}

std::vector<std::string> names_of(const json::value& array) {
  std::vector<std::string> names;
  for (const json::value& item : array.as_array()) names.emplace_back(item.as_string());
  return names;
}

const json::object* backend_named(const json::value& doc, const std::string& name) {
  for (const json::value& b : doc.at("backends").as_array())
    if (b.at("name").as_string() == name) return &b.as_object();
  return nullptr;
}

const json::object* check_named(const json::object& backend, const std::string& name) {
  for (const json::value& c : backend.at("checks").as_array())
    if (c.at("name").as_string() == name) return &c.as_object();
  return nullptr;
}

class ContainerDefault : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (::geteuid() != 0)
      GTEST_SKIP() << "sbx_docker_default_exec must start as root: it loads the profile without "
                      "no_new_privs, as runc does, which needs CAP_SYS_ADMIN";
    SBX_REQUIRE_IDENTITY(who(), "landlock");
    give_to(who(), runtime_.path());
    give_to(who(), ws_.path());
    const RunResult launcher = inside({"/bin/true"});
    if (launcher.code == 77) GTEST_SKIP() << describe(launcher);
    ASSERT_EQ(launcher.code, 0) << describe(launcher);
  }

  Identity who() const { return GetParam(); }
  bool root() const { return who() == Identity::kRoot; }

  // HOME and a runtime directory of its own, where sbx keeps its probe answers.
  std::vector<std::string> env() const {
    std::vector<std::string> e = env_for(who());
    e.push_back("XDG_RUNTIME_DIR=" + runtime_.path());
    return e;
  }

  // `ptrace`: the container also has CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE), so its
  // profile allows pidfd_getfd and the like.
  RunResult inside(const std::vector<std::string>& argv, bool ptrace = false) const {
    std::vector<std::string> launched = {SBX_DOCKER_DEFAULT_EXEC};
    if (!root()) launched.insert(launched.end(), {"--user", "65534:65534"});
    if (ptrace) launched.insert(launched.end(), {"--cap-add", "SYS_PTRACE"});
    launched.emplace_back("--");
    launched.insert(launched.end(), argv.begin(), argv.end());
    return run(launched, env());
  }
  RunResult outside(const std::vector<std::string>& argv) const {
    return run_as(who(), argv, env());
  }

  // `sbx [--backends B] exec --dry-run --preset read-only -- /bin/true`: the plan's backend.
  std::vector<std::string> dry_run(const std::string& backend = "") const {
    std::vector<std::string> argv = {sbx_path()};
    if (!backend.empty()) argv.insert(argv.end(), {"--backends", backend});
    argv.insert(argv.end(), {"exec", "--dry-run", "--preset", "read-only", "--cwd", ws_.path(),
                             "--", "/bin/true"});
    return argv;
  }
  static std::string planned_backend(const RunResult& r) {
    if (r.code != 0) return "exit " + std::to_string(r.code) + ": " + r.err;
    return std::string(json::parse(r.out).at("backend").as_string());
  }

  // The answer kept for `backend` in this test's store ("" when none).
  std::string answer(const std::string& backend) const {
    const std::string store = runtime_ / "sbx-probe";
    for (const std::string& name : listing(store))
      if (name.rfind(backend + "-", 0) == 0 && name.size() > 7 &&
          name.compare(name.size() - 7, 7, ".answer") == 0)
        return read_file(store + "/" + name);
    return {};
  }
  static std::string key_of(const std::string& answer) {
    return answer.substr(0, answer.find('\n'));
  }

  TempDir runtime_{private_parent()};  // below /tmp it would not count as a runtime directory
  TempDir ws_{"/var/tmp"};
};

TEST_P(ContainerDefault, TheLauncherGivesDockersDefaults) {
  const RunResult status = inside({"/bin/cat", "/proc/self/status"});
  ASSERT_EQ(status.code, 0) << describe(status);
  char mask[17];
  std::snprintf(mask, sizeof mask, "%016llx", docker_default_capability_mask());
  EXPECT_NE(status.out.find("CapBnd:\t" + std::string(mask)), std::string::npos) << status.out;
  const std::string held = root() ? std::string(mask) : std::string(16, '0');
  EXPECT_NE(status.out.find("CapEff:\t" + held), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("CapPrm:\t" + held), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("CapInh:\t0000000000000000"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("CapAmb:\t0000000000000000"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("NoNewPrivs:\t0"), std::string::npos) << "Docker sets none";
  EXPECT_NE(status.out.find("Seccomp:\t2"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("Seccomp_filters:\t" + std::to_string(filters_inside())),
            std::string::npos)
      << status.out;
  const std::string uid = root() ? "0" : "65534";
  EXPECT_NE(status.out.find("Uid:\t" + uid + "\t" + uid), std::string::npos) << status.out;
  // The profile refuses a new user namespace (unshare without CAP_SYS_ADMIN) with EPERM.
  const RunResult userns = inside({"/usr/bin/unshare", "--user", "/bin/true"});
  EXPECT_NE(userns.code, 0) << describe(userns);
  EXPECT_NE(userns.err.find("Operation not permitted"), std::string::npos) << describe(userns);
}

TEST_P(ContainerDefault, ProbeNamesTheRealCauseAndSelectsLandlock) {
  const RunResult r = inside({sbx_path(), "backends", "--probe"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("NOT AVAILABLE - user_namespaces: this process's seccomp filter refuses "
                       "them ("),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fix: give the container a seccomp profile that allows clone and unshare "
                       "with CLONE_NEWUSER"),
            std::string::npos)
      << r.out;
  // Never the kernel's seccomp support: the caller's filter is no reason to pass bwrap over.
  EXPECT_EQ(r.out.find("NOT AVAILABLE - seccomp"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("CONFIG_SECCOMP_FILTER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("landlock 0.1.0  available"), std::string::npos) << r.out;
  // The container line: what the runtime allowed.
  const std::size_t line = r.out.find("container (every backend): ");
  ASSERT_NE(line, std::string::npos) << r.out;
  const std::string text = r.out.substr(line, r.out.find('\n', line) - line);
  EXPECT_NE(text.find(exists("/.dockerenv") ? "inside a container (/.dockerenv"
                                            : "confined like a container"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("seccomp: " + std::to_string(filters_inside()) + " filter"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("user namespaces: no - this process's seccomp filter refuses them"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(fix: give the container a seccomp profile"), std::string::npos) << text;
  const std::string caps = "capabilities: " + std::to_string(root() ? 14 : 0) + " of " +
                           std::to_string(capabilities_known()) +
                           " effective, 14 in the bounding set, no CAP_SYS_ADMIN";
  EXPECT_NE(text.find(caps), std::string::npos) << text;
  EXPECT_NE(text.find("no_new_privs: 0"), std::string::npos) << text;
}

TEST_P(ContainerDefault, ProbeJsonSaysWhatTheRuntimeAllowed) {
  const RunResult r = inside({sbx_path(), "backends", "--probe", "--json"});
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::value doc = json::parse(r.out);
  const json::object* bwrap = backend_named(doc, "bwrap");
  ASSERT_NE(bwrap, nullptr) << r.out;
  EXPECT_FALSE(bwrap->at("available").as_bool());
  EXPECT_EQ(bwrap->at("summary").as_string().find("user_namespaces: this process's seccomp filter"),
            0u)
      << r.out;
  const json::object* userns = check_named(*bwrap, "user_namespaces");
  ASSERT_NE(userns, nullptr) << r.out;
  EXPECT_EQ(userns->at("status").as_string(), "fail");
  EXPECT_NE(std::string(userns->at("observed").as_string())
                .find("clone with CLONE_NEWUSER fails "
                      "with EPERM"),
            std::string::npos)
      << r.out;
  EXPECT_NE(std::string(userns->at("observed").as_string()).find("no CAP_SYS_ADMIN"),
            std::string::npos)
      << r.out;
  EXPECT_NE(std::string(userns->at("remedy").as_string()).find("seccomp profile"),
            std::string::npos)
      << r.out;
  const json::object* seccomp = check_named(*bwrap, "seccomp");
  ASSERT_NE(seccomp, nullptr) << r.out;
  EXPECT_EQ(seccomp->at("status").as_string(), "pass") << r.out;
  // The trials that need a user namespace say so instead of bwrap's bare failure.
  const json::object* net = check_named(*bwrap, "network_namespace");
  ASSERT_NE(net, nullptr) << r.out;
  EXPECT_EQ(std::string(net->at("observed").as_string()).find("not tried"), 0u) << r.out;
  const json::object* landlock = backend_named(doc, "landlock");
  ASSERT_NE(landlock, nullptr) << r.out;
  EXPECT_TRUE(landlock->at("available").as_bool()) << r.out;

  const json::object& c = doc.at("container").as_object();
  const std::string verdict(c.at("verdict").as_string());
  EXPECT_EQ(verdict, exists("/.dockerenv") ? "inside" : "like") << r.out;
  EXPECT_EQ(c.at("seccomp").as_string(), "filter");
  EXPECT_EQ(c.at("seccomp_filters").as_int64(), filters_inside());
  EXPECT_FALSE(c.at("no_new_privs").as_bool());
  const json::object& u = c.at("user_namespaces").as_object();
  EXPECT_FALSE(u.at("allowed").as_bool());
  EXPECT_EQ(std::string(u.at("observed").as_string()).find("this process's seccomp filter"), 0u);
  EXPECT_NE(std::string(u.at("fix").as_string()).find("Landlock"), std::string::npos);
  const json::object& caps = c.at("capabilities").as_object();
  EXPECT_EQ(names_of(caps.at("bounding")), docker_names());
  EXPECT_EQ(names_of(caps.at("effective")), root() ? docker_names() : std::vector<std::string>{});
  EXPECT_EQ(caps.at("known").as_int64(), capabilities_known());
}

TEST_P(ContainerDefault, ReadOnlyRunsUnderLandlock) {
  const RunResult r = inside({sbx_path(), "exec", "--json", "--preset", "read-only", "--cwd",
                              ws_.path(), "--", "/bin/cat", "/etc/hostname"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, read_file("/etc/hostname"));
  const std::string report = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  const json::value doc = json::parse(report);
  EXPECT_EQ(doc.at("backend").as_string(), "landlock") << r.err;
  // And it is confined: a write into the workspace is refused.
  const RunResult w = inside({sbx_path(), "exec", "--preset", "read-only", "--cwd", ws_.path(),
                              "--", "/bin/sh", "-c", "echo x > " + ws_ / "out"});
  EXPECT_NE(w.code, 0) << describe(w);
  EXPECT_FALSE(exists(ws_ / "out"));
}

// The declared subset today (issue #38 point 2 is open): what Landlock cannot enforce is refused
// with the reason, and nothing runs.
TEST_P(ContainerDefault, WhatLandlockCannotEnforceIsRefusedWithTheReason) {
  const std::string marker = ws_ / "ran";
  const RunResult protected_names = inside({sbx_path(), "exec", "--preset", "workspace-write",
                                            "--cwd", ws_.path(), "--", "/usr/bin/touch", marker});
  EXPECT_EQ(protected_names.code, 125) << describe(protected_names);
  EXPECT_NE(protected_names.err.find("passed over bwrap: unavailable: user_namespaces: this "
                                     "process's seccomp filter refuses them"),
            std::string::npos)
      << describe(protected_names);
  EXPECT_NE(protected_names.err.find("passed over landlock: cannot enforce what the policy needs "
                                     "here: protected_names"),
            std::string::npos)
      << describe(protected_names);
  // The network enabled needs Landlock's unix connect guard, whose supervisor takes the
  // caller's socket with pidfd_getfd: Docker's default profile allows that only with
  // CAP_SYS_PTRACE, so the probe's trial fails and says so (with it, the next case runs).
  const RunResult network =
      inside({sbx_path(), "exec", "--preset", "read-only", "--network", "enabled", "--cwd",
              ws_.path(), "--", "/usr/bin/touch", marker});
  EXPECT_EQ(network.code, 125) << describe(network);
  EXPECT_NE(network.err.find("passed over landlock: cannot enforce what the policy needs here: "
                             "unix_socket_block"),
            std::string::npos)
      << describe(network);
  EXPECT_FALSE(exists(marker));
  const RunResult probe =
      inside({sbx_path(), "--backends", "landlock", "backends", "--probe", "--json"});
  ASSERT_EQ(probe.code, 0) << describe(probe);
  const json::value doc = json::parse(probe.out);
  const json::object* landlock = backend_named(doc, "landlock");
  ASSERT_NE(landlock, nullptr) << probe.out;
  const json::object* unix_block = check_named(*landlock, "unix_socket_block");
  ASSERT_NE(unix_block, nullptr) << probe.out;
  EXPECT_EQ(unix_block->at("status").as_string(), "warn");
  EXPECT_NE(std::string(unix_block->at("observed").as_string())
                .find("CAP_SYS_PTRACE: docker run --cap-add SYS_PTRACE"),
            std::string::npos)
      << probe.out;
}

// With CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) the unix connect guard holds inside:
// the network enabled runs under Landlock, with a host unix socket refused and loopback TCP
// reachable (issue #35 point 6: `npm install` in a container without user namespaces).
TEST_P(ContainerDefault, NetworkEnabledRunsUnderLandlockWithSysPtrace) {
  if (!exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  TempDir host_dir{"/var/tmp"};
  ::chmod(host_dir.path().c_str(), 0777);
  const std::string host = host_dir / "host.sock";
  Listener unix_listener(Listener::kUnix, host);
  Listener tcp(Listener::kTcp4);
  ASSERT_TRUE(unix_listener.ok() && tcp.ok());
  ::chmod(host.c_str(), 0777);
  const std::string script =
      "import errno, socket, sys\n"
      "s = socket.socket(socket.AF_UNIX)\n"
      "try:\n"
      "    s.connect(sys.argv[1]); print('unix connected')\n"
      "except OSError as e:\n"
      "    print('unix', errno.errorcode[e.errno])\n"
      "socket.create_connection(('127.0.0.1', int(sys.argv[2])), timeout=10).close()\n"
      "print('tcp connected')\n";
  const RunResult r =
      inside({sbx_path(), "exec", "--preset", "read-only", "--network", "enabled", "--cwd",
              ws_.path(), "--", "/usr/bin/python3", "-c", script, host, std::to_string(tcp.port())},
             true);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "unix EACCES\ntcp connected\n") << describe(r);
  EXPECT_EQ(unix_listener.hits_before_now(), 0);
  EXPECT_EQ(tcp.hits_before_now(), 1);
}

TEST_P(ContainerDefault, AnAnswerKeptOutsideIsNotReusedInside) {
  // Outside: bwrap is chosen and its answer kept.
  const RunResult before = outside(dry_run());
  if (planned_backend(before) != "bwrap")
    GTEST_SKIP() << "bwrap is not chosen outside the container here: " << describe(before);
  const std::string kept_bwrap = answer("bwrap");
  ASSERT_FALSE(kept_bwrap.empty()) << "no bwrap answer kept outside";
  ASSERT_EQ(planned_backend(outside(dry_run("landlock"))), "landlock");
  const std::string kept_landlock = answer("landlock");
  ASSERT_FALSE(kept_landlock.empty());

  // Inside: bwrap's answer is not reused (it would be chosen); probed afresh it is unavailable,
  // and an unavailable answer is not kept.
  EXPECT_EQ(planned_backend(inside(dry_run())), "landlock");
  EXPECT_EQ(answer("bwrap"), "") << "the outside answer is dropped";
  // Landlock's answer is probed afresh and kept under the key of the confinement inside.
  EXPECT_EQ(planned_backend(inside(dry_run("landlock"))), "landlock");
  const std::string inside_landlock = answer("landlock");
  EXPECT_NE(key_of(inside_landlock), key_of(kept_landlock));
  EXPECT_NE(key_of(inside_landlock).find("Seccomp_filters:" + std::to_string(filters_inside())),
            std::string::npos)
      << key_of(inside_landlock);
  // Neither sbx's kept answers nor bwrap's own trial cache speak for the inside.
  const RunResult probe = inside({sbx_path(), "--backends", "bwrap", "backends", "--probe"});
  EXPECT_EQ(probe.out.find("tried earlier this boot; cached"), std::string::npos) << probe.out;
  EXPECT_EQ(probe.out.find("kept: the answer of an earlier probe"), std::string::npos) << probe.out;
}

TEST_P(ContainerDefault, AnAnswerKeptInsideIsNotReusedOutside) {
  // Inside: Landlock's answer is kept, and reused by the next run inside (unchanged).
  ASSERT_EQ(planned_backend(inside(dry_run())), "landlock");
  const std::string kept = answer("landlock");
  ASSERT_FALSE(kept.empty()) << "no Landlock answer kept inside";
  EXPECT_EQ(answer("bwrap"), "") << "bwrap's failure is not kept";
  ASSERT_EQ(planned_backend(inside(dry_run())), "landlock");
  EXPECT_EQ(answer("landlock"), kept) << "reused inside, not probed again";
  // Outside: probed afresh under the outside key, and bwrap is chosen where it works.
  ASSERT_EQ(planned_backend(outside(dry_run("landlock"))), "landlock");
  EXPECT_NE(key_of(answer("landlock")), key_of(kept));
  const std::string host_bwrap = identity_unavailable(who(), "bwrap");
  if (!host_bwrap.empty()) GTEST_SKIP() << "bwrap outside: " << host_bwrap;
  EXPECT_EQ(planned_backend(outside(dry_run())), "bwrap");
}

INSTANTIATE_TEST_SUITE_P(Identities, ContainerDefault, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
