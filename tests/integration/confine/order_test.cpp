// The one confinement order (linux/confine/order.hpp, issue #36) against what runs: every launch
// path of both Linux backends and every network mode, through the installed `sbx exec`, as root
// and as user 65534, with the order's trace (SBX_CONFINE_TRACE_FD, checked builds:
// linux/confine/steps.hpp) on a file the caller opened.
//
// For each run it checks that
//  * sbx's own performers (the launcher child, the pause check, stage 2, the direct launch's
//    waiter) recorded exactly the order's rows of theirs, in the order's order;
//  * what each of them saw of its own process at each step (no_new_privs, capabilities, the
//    number of seccomp filters) is what every row before it leaves, bwrap's rows included: so
//    bwrap did set no_new_privs, drop the capabilities and load its filter where the order says,
//    before sbx's next step;
//  * the command itself ends with what the whole order leaves: no_new_privs, no capability,
//    every filter of the order, and descriptors 0-2 only.
#include "order.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"
#include "steps.hpp"

namespace {

using namespace sbx::test;
namespace confine = sbx::confine;

struct OrderCase {
  const char* name;
  const char* backend;
  confine::Route route;
  confine::Network network;
  bool restricted_fs;  // a restricted filesystem (bwrap: the write layer), else full access
  Identity who;
};

void PrintTo(const OrderCase& c, std::ostream* os) { *os << c.name << "/" << name_of(c.who); }

std::string order_case_name(const ::testing::TestParamInfo<OrderCase>& info) {
  return std::string(info.param.name) +
         (info.param.who == Identity::kRoot ? "AsRoot" : "AsUser65534");
}

// The kernel's Landlock ABI (landlock_create_ruleset(2), LANDLOCK_CREATE_RULESET_VERSION), 0
// without Landlock.
int landlock_abi() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u << 0);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

// The shape the run must have: the route's and mode's steps, with the conditional ones this
// kernel and the case's policy allow (order.hpp, Shape).
confine::Shape expected_shape(const OrderCase& c) {
  confine::Shape shape = confine::shape_of(c.route, c.network);
  if (c.route == confine::Route::kLandlock) return shape;
  shape.landlock_scope = landlock_abi() >= 6;
  // The direct launch's waiter enters no write layer below ABI 2 (write_layer.hpp); stage 2 runs
  // the layer's code anyway, which enters nothing there.
  shape.write_layer =
      c.restricted_fs && (c.route == confine::Route::kBwrapStage2 || landlock_abi() >= 2);
  shape.cache_overlays = false;  // no case has ":caches"
  return shape;
}

// The rows sbx's own performers record: all but bwrap's.
std::vector<confine::StepAt> recorded_rows(const confine::Order& order) {
  std::vector<confine::StepAt> rows;
  for (const confine::StepAt& row : order)
    if (row.actor != confine::Actor::kBwrap) rows.push_back(row);
  return rows;
}

std::string describe_rows(const std::vector<confine::StepAt>& rows) {
  std::string text;
  for (const confine::StepAt& row : rows)
    text +=
        std::string(confine::actor_name(row.actor)) + ": " + confine::step_name(row.step) + "\n";
  return text;
}

std::vector<confine::TraceRecord> read_trace(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<confine::TraceRecord> records(bytes.size() / sizeof(confine::TraceRecord));
  std::memcpy(records.data(), bytes.data(), records.size() * sizeof(confine::TraceRecord));
  return records;
}

// What the steps up to and including a row leave in the process that performs the next one.
struct Effects {
  bool no_new_privs = false;
  bool capabilities_dropped = false;
  int seccomp_filters = 0;  // above the caller's own
};

void apply(Effects& effects, confine::Step step) {
  if (step == confine::Step::kNoNewPrivs) effects.no_new_privs = true;
  if (step == confine::Step::kCapabilities) effects.capabilities_dropped = true;
  effects.seccomp_filters += confine::seccomp_filters_of(step);
}

// The fields of /proc/self/status the command printed ("Key:\tvalue" lines).
std::string status_field(const std::string& out, const std::string& key) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key + ":", 0) == 0)
      return line.substr(line.find_first_not_of(" \t", key.size() + 1));
  }
  return "";
}

// The descriptor numbers the command listed (`ls /proc/$$/fd`: one number a line).
std::set<std::string> listed_descriptors(const std::string& out) {
  std::set<std::string> fds;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos)
      fds.insert(line);
  return fds;
}

// "" when bwrap mounts a procfs here (the command reads its own /proc/self/status), else why not.
std::string no_procfs_reason() {
  const RunResult r = run({sbx_path(), "backends", "--probe", "--json"}, base_env());
  if (r.code != 0) return "sbx backends --probe failed: " + describe(r);
  const boost::json::value probe = boost::json::parse(r.out);
  for (const boost::json::value& backend : probe.at("backends").as_array()) {
    if (backend.at("name").as_string() != "bwrap") continue;
    for (const boost::json::value& check : backend.at("checks").as_array()) {
      if (check.at("name").as_string() == "proc_mount" && check.at("status").as_string() == "pass")
        return "";
    }
  }
  return "bwrap cannot mount a procfs here (probe check proc_mount): the command cannot read "
         "its own /proc/self/status";
}

class ConfinementOrder : public ::testing::TestWithParam<OrderCase> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!confine::kChecked)
      GTEST_SKIP() << "built without SBX_CONFINEMENT_CHECKS: nothing records the order";
    SBX_REQUIRE_IDENTITY(GetParam().who, GetParam().backend);
    if (GetParam().route != confine::Route::kLandlock) {
      const std::string why = no_procfs_reason();
      if (!why.empty()) GTEST_SKIP() << why;
    }
    if (GetParam().network == confine::Network::kProxy &&
        GetParam().route == confine::Route::kLandlock) {
      const auto caps = backend_capabilities("landlock");
      if (!caps || std::find(caps->begin(), caps->end(), "proxy_network") == caps->end())
        GTEST_SKIP() << "the landlock backend cannot enforce network mode proxy here";
    }
  }

  // Reads everything, writes the workspace (no protected names: the landlock backend cannot keep
  // missing ones, and they change no step of the order). Stage 2: PWD set elsewhere, which bwrap
  // 0.8 would overwrite, so the direct launch is not taken (plugins/bwrap/README.md, "The direct
  // launch").
  std::string policy(const TempDir& dir) const {
    const OrderCase& c = GetParam();
    const char* network = c.network == confine::Network::kProxy
                              ? R"({"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]})"
                          : c.network == confine::Network::kEnabled ? R"({"mode": "enabled"})"
                                                                    : R"({"mode": "restricted"})";
    const char* filesystem =
        c.restricted_fs
            ? R"({"kind": "restricted", "entries": [{"path": ":root", "access": "read"},)"
              R"( {"path": ":cwd", "access": "write"}], "protected_names": []})"
            : R"({"kind": "unrestricted"})";
    const std::string environment =
        c.route == confine::Route::kBwrapStage2 ? R"(, "environment": {"set": {"PWD": "/"}})" : "";
    const std::string path = dir / "policy.json";
    write_file(path, std::string(R"({"version": 1, "filesystem": )") + filesystem +
                         R"(, "network": )" + network + environment + "}");
    ::chmod(dir.path().c_str(), 0755);
    ::chmod(path.c_str(), 0644);
    return path;
  }
};

TEST_P(ConfinementOrder, WhatRunsFollowsTheOrder) {
  const OrderCase& c = GetParam();
  TempDir ws;
  TempDir config;
  give_to(c.who, ws.path());
  const std::string trace = config / "trace";
  write_file(trace, "");
  give_to(c.who, trace);
  // The command prints its own state: grep and ls are its children, with its filters and
  // credentials; ls lists the shell's descriptors, not its own.
  const std::vector<std::string> command = {
      "/bin/sh", "-c",
      "grep -E '^(NoNewPrivs|Seccomp_filters|CapInh|CapPrm|CapEff|CapAmb):' /proc/self/status; "
      "ls /proc/$$/fd"};
  // The caller opens the trace as descriptor 9 of sbx and names it in sbx's environment.
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" 9>>" + trace, "sh"};
  const std::vector<std::string> sbx =
      exec_argv(c.backend, {"--policy", policy(config)}, ws.path(), command);
  argv.insert(argv.end(), sbx.begin(), sbx.end());
  std::vector<std::string> env = with_pwd(env_for(c.who), ws.path());
  env.push_back(std::string(confine::kTraceFdVariable) + "=9");
  const RunResult r = run_as(c.who, argv, env);
  ASSERT_EQ(r.code, 0) << describe(r);

  const confine::Order order = confine::confinement_order(expected_shape(c));
  const std::vector<confine::TraceRecord> records = read_trace(trace);
  std::vector<confine::StepAt> seen;
  for (const confine::TraceRecord& record : records) seen.push_back({record.actor, record.step});
  ASSERT_EQ(describe_rows(seen), describe_rows(recorded_rows(order)));

  // Each performer's view against what the rows before it leave; the first row (the launcher's,
  // before any filter) gives the caller's own filter count.
  const int base = records.front().seccomp_filters;
  Effects effects;
  std::size_t next = 0;
  for (const confine::StepAt& row : order) {
    apply(effects, row.step);
    if (row.actor == confine::Actor::kBwrap) continue;
    const confine::TraceRecord& record = records[next++];
    if (!record.observed) continue;
    const std::string at =
        std::string(confine::actor_name(row.actor)) + ": " + confine::step_name(row.step);
    EXPECT_EQ(int{record.seccomp_filters}, base + effects.seccomp_filters) << at;
    if (effects.no_new_privs) {
      EXPECT_EQ(int{record.no_new_privs}, 1) << at;
    }
    if (effects.capabilities_dropped) {
      EXPECT_EQ(int{record.capabilities}, 0) << at;
    }
  }

  // The command: everything the order leaves.
  EXPECT_EQ(status_field(r.out, "NoNewPrivs"), "1") << describe(r);
  EXPECT_EQ(status_field(r.out, "Seccomp_filters"), std::to_string(base + effects.seccomp_filters))
      << describe(r);
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_EQ(status_field(r.out, set), "0000000000000000") << set << "\n" << describe(r);
  EXPECT_EQ(listed_descriptors(r.out), (std::set<std::string>{"0", "1", "2"})) << describe(r);
}

using confine::Network;
using confine::Route;

// Every launch path and network mode that runs. The landlock backend refuses network mode
// enabled (no Landlock ABI keeps the host's unix sockets closed: plugins/landlock/README.md,
// "Honest capabilities"), so it has two.
constexpr OrderCase kPaths[] = {
    {"BwrapDirectRestricted", "bwrap", Route::kBwrapDirect, Network::kRestricted, true,
     Identity::kRoot},
    {"BwrapDirectEnabled", "bwrap", Route::kBwrapDirect, Network::kEnabled, true, Identity::kRoot},
    {"BwrapDirectFullAccess", "bwrap", Route::kBwrapDirect, Network::kRestricted, false,
     Identity::kRoot},
    {"BwrapStageTwoRestricted", "bwrap", Route::kBwrapStage2, Network::kRestricted, true,
     Identity::kRoot},
    {"BwrapStageTwoEnabled", "bwrap", Route::kBwrapStage2, Network::kEnabled, true,
     Identity::kRoot},
    {"BwrapProxy", "bwrap", Route::kBwrapStage2, Network::kProxy, true, Identity::kRoot},
    {"LandlockRestricted", "landlock", Route::kLandlock, Network::kRestricted, true,
     Identity::kRoot},
    {"LandlockProxy", "landlock", Route::kLandlock, Network::kProxy, true, Identity::kRoot},
};

// Every path, as root and as user 65534.
std::vector<OrderCase> every_case() {
  std::vector<OrderCase> cases;
  for (const Identity who : kIdentities) {
    for (OrderCase c : kPaths) {
      c.who = who;
      cases.push_back(c);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryPathAndIdentity, ConfinementOrder, ::testing::ValuesIn(every_case()),
                         order_case_name);

}  // namespace
