// The fixed sections against what real programs need on macOS (parity with Codex's Seatbelt
// base policy, network policy and restricted read-only platform defaults), evaluated with
// sbpl_eval.hpp: the sysctls the Go runtime and others read, what the developer-tool shims need
// under ":minimal" -- and nothing next to those grants --, host unix sockets with the network
// enabled, and deny rules inside the ":minimal" locations.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sbpl_eval.hpp"
#include "sbx/seatbelt/profile.hpp"
#include "sexpr.hpp"

namespace {

using namespace sbx;
using seatbelt::testing::Node;
using seatbelt::testing::SbplEvaluator;

// Reads limited to the workspace, optionally with ":minimal".
ResolvedPolicy restricted_reads(bool minimal) {
  ResolvedPolicy policy;
  policy.rules = {{"/Users/me/proj", Access::kWrite}};
  policy.platform_defaults_readable = minimal;
  policy.cwd = "/Users/me/proj";
  return policy;
}

SbplEvaluator evaluator_for(const ResolvedPolicy& policy,
                            const std::vector<std::string>& env = {}) {
  Result<seatbelt::Profile> profile = seatbelt::build_profile(policy, env);
  if (!profile.ok()) throw std::runtime_error(profile.error());
  std::vector<Node> forms;
  seatbelt::testing::SexprReader reader(profile->text);
  if (!reader.read_all(forms)) throw std::runtime_error(reader.error());
  std::map<std::string, std::string> params;
  for (const auto& param : profile->params) params[param.key] = param.value;
  return SbplEvaluator(std::move(forms), std::move(params));
}

TEST(SeatbeltParity, RuntimeSysctlsAreReadableUnderEveryPolicy) {
  for (bool minimal : {false, true}) {
    SbplEvaluator eval = evaluator_for(restricted_reads(minimal));
    // Go's runtime aborts at start without hw.pagesize (gh, go, terraform, kubectl).
    for (const char* name : {"hw.pagesize", "hw.cpufrequency", "kern.proc.pgrp.4242",
                             "hw.pagesize_compat", "kern.proc.pid.4242", "hw.ncpu"}) {
      EXPECT_TRUE(eval.allows("sysctl-read", name)) << name << " minimal=" << minimal;
    }
    // The base grants names, not families.
    for (const char* name : {"kern.proc.all", "kern.proc.pgrpx", "hw.pagesizes", "kern.boottime"})
      EXPECT_FALSE(eval.allows("sysctl-read", name)) << name << " minimal=" << minimal;
    EXPECT_FALSE(eval.allows("sysctl-write", "hw.pagesize"));
  }
}

TEST(SeatbeltParity, MinimalLetsTheDeveloperToolShimsFindXcode) {
  SbplEvaluator eval = evaluator_for(restricted_reads(true));
  for (const char* path :
       {"/private/var/db/xcode_select_link", "/Library/Developer/CommandLineTools/usr/bin/git",
        "/Applications/Xcode.app/Contents/Developer/usr/bin/xcodebuild",
        "/Applications/Xcode-beta.app/Contents/Developer/usr/lib/libxcrun.dylib",
        "/Applications/Xcode_15.4.app"}) {
    EXPECT_TRUE(eval.allows("file-read-data", path)) << path;
  }
  EXPECT_TRUE(eval.allows("file-read-metadata", "/Applications"));
  EXPECT_TRUE(eval.allows("file-read-metadata", "/private/var/db"));
  EXPECT_TRUE(eval.allows("file-map-executable",
                          "/Library/Developer/CommandLineTools/usr/lib/libclang.dylib"));
  EXPECT_TRUE(eval.allows("file-map-executable",
                          "/Applications/Xcode.app/Contents/Frameworks/IDEFoundation.framework/x"));
  // Only those: other applications, look-alike names and the rest of /private/var/db stay
  // unreadable, and nothing there becomes writable.
  for (const char* path :
       {"/Applications/Safari.app/Contents/Info.plist", "/Applications/Xcode.appx/secret",
        "/Applications/NotXcode.app/x", "/private/var/db/sudo/ts/me", "/Applications/secret"}) {
    EXPECT_FALSE(eval.allows("file-read-data", path)) << path;
  }
  EXPECT_FALSE(eval.allows("file-write-create", "/Library/Developer/CommandLineTools/x"));
  EXPECT_FALSE(eval.allows("file-write-create", "/Applications/Xcode.app/x"));
}

TEST(SeatbeltParity, WithoutMinimalNoDeveloperToolPathIsReadable) {
  SbplEvaluator eval = evaluator_for(restricted_reads(false));
  for (const char* path :
       {"/private/var/db/xcode_select_link", "/Library/Developer/CommandLineTools/usr/bin/git",
        "/Applications/Xcode.app/Contents/Developer/usr/bin/xcodebuild"}) {
    EXPECT_FALSE(eval.allows("file-read-data", path)) << path;
  }
}

// --- network enabled: the internet, not the host's unix sockets (issue #16's meaning) ------

ResolvedPolicy with_network(NetworkMode mode, std::vector<std::string> sockets) {
  ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/Users/me/proj", Access::kWrite}};
  policy.cwd = "/Users/me/proj";
  policy.network.mode = mode;
  policy.network.unix_sockets = std::move(sockets);
  policy.network.proxy_ports = {3128};
  return policy;
}

const std::string kDockerSock = "unix-socket:/private/var/run/docker.sock";
const std::string kAgentSock = "unix-socket:/Users/me/.ssh/agent.sock";
const std::string kDnsSock = "unix-socket:/private/var/run/mDNSResponder";

TEST(SeatbeltParity, EnabledNetworkRefusesHostUnixSocketsUnlessListed) {
  SbplEvaluator open_net = evaluator_for(with_network(NetworkMode::kEnabled, {}));
  // The internet is open...
  EXPECT_TRUE(open_net.allows("network-outbound", "ip:93.184.216.34:443"));
  EXPECT_TRUE(open_net.allows("network-outbound", "ip:localhost:8080"));
  EXPECT_TRUE(open_net.allows("network-bind", "ip:*:8080"));
  // ...the host's unix sockets are not: docker, ssh-agent, one in the workspace, in /tmp.
  for (const std::string& sock :
       {kDockerSock, kAgentSock, std::string("unix-socket:/Users/me/proj/.s.PGSQL.5432"),
        std::string("unix-socket:/private/tmp/tmux-501/default")}) {
    EXPECT_FALSE(open_net.allows("network-outbound", sock)) << sock;
    EXPECT_FALSE(open_net.allows("network-bind", sock)) << sock;
  }
  // DNS: getaddrinfo() asks mDNSResponder over its socket; nothing next to it.
  EXPECT_TRUE(open_net.allows("network-outbound", kDnsSock));
  EXPECT_FALSE(open_net.allows("network-outbound", kDnsSock + "x"));
  EXPECT_FALSE(open_net.allows("network-bind", kDnsSock));

  SbplEvaluator listed = evaluator_for(
      with_network(NetworkMode::kEnabled, {"/var/run/docker.sock", "/Users/me/.ssh/agent.sock"}));
  EXPECT_TRUE(listed.allows("network-outbound", kDockerSock));
  EXPECT_TRUE(listed.allows("network-outbound", kAgentSock));
  EXPECT_TRUE(listed.allows("network-bind", kAgentSock));
  EXPECT_FALSE(listed.allows("network-outbound", "unix-socket:/private/var/run/other.sock"));
  EXPECT_TRUE(listed.allows("network-outbound", "ip:93.184.216.34:443"));
}

TEST(SeatbeltParity, OnlyTheEnabledNetworkReachesTheDnsSocket) {
  // Proxy mode: the proxy resolves names; a DNS path of the command's own would be a way out.
  SbplEvaluator proxy =
      evaluator_for(with_network(NetworkMode::kProxy, {"/Users/me/.ssh/agent.sock"}));
  EXPECT_FALSE(proxy.allows("network-outbound", kDnsSock));
  EXPECT_FALSE(proxy.allows("network-outbound", kDockerSock));
  EXPECT_TRUE(proxy.allows("network-outbound", kAgentSock));
  EXPECT_TRUE(proxy.allows("network-outbound", "ip:localhost:3128"));
  EXPECT_FALSE(proxy.allows("network-outbound", "ip:93.184.216.34:443"));
  SbplEvaluator none = evaluator_for(with_network(NetworkMode::kRestricted, {}));
  for (const std::string& target : {kDnsSock, kDockerSock, std::string("ip:localhost:3128")})
    EXPECT_FALSE(none.allows("network-outbound", target)) << target;
}

// --- deny rules inside ":minimal" locations ---------------------------------------------------

TEST(SeatbeltParity, DenyPathUnderAMinimalDirectoryIsKeptAndWins) {
  ResolvedPolicy policy = restricted_reads(true);
  policy.rules = {{"/Users/me/proj", Access::kWrite},
                  {"/etc/ssh", Access::kDeny},
                  {"/usr/lib/private", Access::kDeny},
                  {"/etc/ssh/ssh_config", Access::kRead},
                  {"/etc/ssh/ssh_config/inner", Access::kDeny}};
  SbplEvaluator eval = evaluator_for(policy);
  // Denied although /private/etc and /usr/lib are platform locations.
  for (const char* path :
       {"/private/etc/ssh", "/private/etc/ssh/ssh_host_ed25519_key", "/usr/lib/private",
        "/usr/lib/private/x.dylib", "/private/etc/ssh/ssh_config/inner/x"}) {
    EXPECT_FALSE(eval.allows("file-read-data", path)) << path;
    EXPECT_FALSE(eval.allows("file-read-metadata", path)) << path;
    EXPECT_FALSE(eval.allows("file-map-executable", path)) << path;
  }
  // The rest of the platform locations, and a read rule below the deny, stay readable.
  for (const char* path : {"/private/etc/hosts", "/private/etc/sshd", "/usr/lib/libSystem.B.dylib",
                           "/usr/lib/privatex", "/private/etc/ssh/ssh_config"}) {
    EXPECT_TRUE(eval.allows("file-read-data", path)) << path;
  }
  EXPECT_TRUE(eval.allows("file-map-executable", "/usr/lib/libSystem.B.dylib"));
  EXPECT_TRUE(eval.allows("file-write-create", "/Users/me/proj/x"));
}

TEST(SeatbeltParity, WithoutMinimalDenyRulesNeedNoRestatement) {
  ResolvedPolicy policy = restricted_reads(false);
  policy.rules.push_back({"/etc/ssh", Access::kDeny});
  Result<seatbelt::Profile> profile = seatbelt::build_profile(policy, {});
  ASSERT_TRUE(profile.ok()) << profile.error();
  EXPECT_EQ(profile->text.find("DENIED_PATH_"), std::string::npos);
  EXPECT_FALSE(evaluator_for(policy).allows("file-read-data", "/private/etc/ssh/x"));
}

// --- the per-user cache directory next to TMPDIR ---------------------------------------------

ResolvedPolicy workspace_write_with_tmpdir(const std::string& tmp_rule) {
  ResolvedPolicy policy;
  policy.rules = {
      {"/", Access::kRead}, {"/Users/me/proj", Access::kWrite}, {tmp_rule, Access::kWrite}};
  policy.protected_paths = {{tmp_rule + "/.git", tmp_rule, false, false}};
  policy.cwd = "/Users/me/proj";
  return policy;
}

SbplEvaluator evaluator_with_cache(const ResolvedPolicy& policy, const std::string& cache,
                                   std::vector<std::string>* notes = nullptr) {
  const std::vector<std::string> env = {"TMPDIR=/var/folders/ab/xyz/T/"};
  Result<seatbelt::Profile> profile =
      seatbelt::build_profile(policy, env, seatbelt::MacHostFacts{cache});
  if (!profile.ok()) throw std::runtime_error(profile.error());
  if (notes != nullptr) *notes = profile->notes;
  std::vector<Node> forms;
  seatbelt::testing::SexprReader reader(profile->text);
  if (!reader.read_all(forms)) throw std::runtime_error(reader.error());
  std::map<std::string, std::string> params;
  for (const auto& param : profile->params) params[param.key] = param.value;
  return SbplEvaluator(std::move(forms), std::move(params));
}

const char* const kModuleCacheFile =
    "/private/var/folders/ab/xyz/C/org.llvm.clang/ModuleCache/x.pcm";

TEST(SeatbeltParity, UserCacheDirIsWritableWhereTmpdirIs) {
  // The rule in either spelling (/var/... or /private/var/...), the fact with a trailing slash.
  for (const std::string tmp_rule : {"/var/folders/ab/xyz/T", "/private/var/folders/ab/xyz/T"}) {
    SbplEvaluator eval =
        evaluator_with_cache(workspace_write_with_tmpdir(tmp_rule), "/var/folders/ab/xyz/C/");
    EXPECT_TRUE(eval.allows("file-write-create", kModuleCacheFile)) << tmp_rule;
    // TMPDIR's protected names hold there too, and the directory itself cannot be renamed.
    EXPECT_FALSE(eval.allows("file-write-create", "/private/var/folders/ab/xyz/C/.git/config"));
    EXPECT_FALSE(eval.allows("file-write-unlink", "/private/var/folders/ab/xyz/C"));
    // Only that directory: not its parent, not a sibling.
    EXPECT_FALSE(eval.allows("file-write-create", "/private/var/folders/ab/xyz/X/f"));
    EXPECT_FALSE(eval.allows("file-write-create", "/private/var/folders/ab/xyz/f"));
  }
}

TEST(SeatbeltParity, UserCacheDirIsNotWritableWithoutTmpdirOrWithABadFact) {
  // No writable TMPDIR (exclude_tmpdir_env_var): no cache directory either.
  ResolvedPolicy no_tmp = workspace_write_with_tmpdir("/var/folders/ab/xyz/T");
  no_tmp.rules.pop_back();
  no_tmp.protected_paths.clear();
  EXPECT_FALSE(evaluator_with_cache(no_tmp, "/var/folders/ab/xyz/C/")
                   .allows("file-write-create", kModuleCacheFile));
  // A value that is not a canonical directory under /private/var/folders is refused with a note.
  for (const std::string bad : {"/Users/me/.ssh", "/var/folders/ab/../../../Users/me", "relative/C",
                                "/private/var/folders", "/var/folders/ab//C"}) {
    std::vector<std::string> notes;
    SbplEvaluator eval =
        evaluator_with_cache(workspace_write_with_tmpdir("/var/folders/ab/xyz/T"), bad, &notes);
    EXPECT_FALSE(eval.allows("file-write-create", "/Users/me/.ssh/authorized_keys")) << bad;
    EXPECT_FALSE(eval.allows("file-write-create", "/private/var/folders/x")) << bad;
    ASSERT_FALSE(notes.empty()) << bad;
    EXPECT_NE(notes.front().find("not made writable"), std::string::npos) << notes.front();
  }
  // A read rule on exactly that directory is the policy's word: it stays read-only.
  ResolvedPolicy read_only = workspace_write_with_tmpdir("/var/folders/ab/xyz/T");
  read_only.rules.push_back({"/private/var/folders/ab/xyz/C", Access::kRead});
  std::vector<std::string> read_notes;
  SbplEvaluator ro = evaluator_with_cache(read_only, "/var/folders/ab/xyz/C/", &read_notes);
  EXPECT_FALSE(ro.allows("file-write-create", kModuleCacheFile));
  EXPECT_TRUE(ro.allows("file-read-data", kModuleCacheFile));
  ASSERT_FALSE(read_notes.empty());
  EXPECT_NE(read_notes.front().find("stays read-only"), std::string::npos) << read_notes.front();
  // A policy deny over it wins.
  ResolvedPolicy denied = workspace_write_with_tmpdir("/var/folders/ab/xyz/T");
  denied.rules.push_back({"/var/folders/ab/xyz/C", Access::kDeny});
  SbplEvaluator eval = evaluator_with_cache(denied, "/var/folders/ab/xyz/C/");
  EXPECT_FALSE(eval.allows("file-write-create", kModuleCacheFile));
  EXPECT_FALSE(eval.allows("file-read-data", kModuleCacheFile));
}

// --- protected names on a case-insensitive volume ---------------------------------------------

TEST(SeatbeltParity, MissingProtectedNamesCannotBeCreatedInAnotherCase) {
  ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/Users/me/proj", Access::kWrite}};
  policy.protected_paths = {{"/Users/me/proj/.git", "/Users/me/proj", false, false},
                            {"/Users/me/proj/.codex", "/Users/me/proj", false, false}};
  policy.cwd = "/Users/me/proj";
  SbplEvaluator eval = evaluator_for(policy);
  // APFS is case-insensitive by default: `.GIT` would be what git opens as `.git`.
  for (const char* path : {"/Users/me/proj/.git", "/Users/me/proj/.GIT",
                           "/Users/me/proj/.Git/config", "/Users/me/proj/.CODEX/config.toml"}) {
    EXPECT_FALSE(eval.allows("file-write-create", path)) << path;
  }
  for (const char* path :
       {"/Users/me/proj/src/a.c", "/Users/me/proj/.gitignore", "/Users/me/proj/git"})
    EXPECT_TRUE(eval.allows("file-write-create", path)) << path;
}

}  // namespace
