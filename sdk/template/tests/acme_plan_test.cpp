// The template's mapping without sbx: the plan it makes, and each rule it refuses by name.
// Prints "N passed, N failed"; exits 1 on a failure.
#include "acme_plan.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

int passed = 0;
int failed = 0;

void check(bool ok, const std::string& what) {
  (ok ? passed : failed)++;
  if (!ok) std::printf("FAILED: %s\n", what.c_str());
}

sbx::TransformRequest request() {
  sbx::TransformRequest r;
  r.argv = {"/bin/sh", "-c", "true"};
  r.cwd = "/work/proj";
  r.env = {"PATH=/usr/bin:/bin"};
  r.policy.rules = {{"/", sbx::Access::kRead}, {"/work/proj", sbx::Access::kWrite}};
  r.policy.cwd = "/work/proj";
  return r;
}

bool has_pair(const std::vector<std::string>& argv, const std::string& a, const std::string& b) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == a && argv[i + 1] == b) return true;
  return false;
}

// The refusal for `r`, or "" when it is planned.
std::string refusal(const sbx::TransformRequest& r) {
  sbx::Result<sbx::ExecPlan> plan = acme::make_plan(r, "/usr/libexec/sbx/sbx-stage2", {"usr"});
  return plan.ok() ? "" : plan.error();
}

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

int main() {
  const std::vector<std::string> root = {"usr", "dev", "etc", "work"};
  sbx::Result<sbx::ExecPlan> plan = acme::make_plan(request(), "/usr/libexec/sbx/sbx-stage2", root);
  check(plan.ok(), "workspace writes and a blocked network are planned");
  if (plan.ok()) {
    const std::vector<std::string>& argv = plan->argv;
    check(argv.front() == "/usr/libexec/sbx/sbx-stage2", "sbx-stage2 runs the command");
    check(has_pair(argv, "--ll-write", "/work/proj"), "the writable root is writable");
    check(has_pair(argv, "--ll-read", "/usr") && has_pair(argv, "--ll-read", "/etc"),
          "every entry of / is readable");
    check(has_pair(argv, "--ll-list", "/dev") && !has_pair(argv, "--ll-read", "/dev"),
          "/dev is only listed");
    check(has_pair(argv, "--ll-dev", "/dev/null"), "/dev/null can be written");
    check(has_pair(argv, "--net", "blocked"), "the network is blocked");
    check(argv[argv.size() - 4] == "--" && argv.back() == "true", "the command follows --");
    check(plan->cwd == "/work/proj" && plan->env == request().env, "cwd and env as asked");
  }

  sbx::TransformRequest r = request();
  r.policy.protected_paths = {{"/work/proj/.git", "/work/proj", true, true}};
  check(mentions(refusal(r), "protected_names"), "protected names are refused");
  r = request();
  r.policy.network.mode = sbx::NetworkMode::kEnabled;
  check(mentions(refusal(r), "network mode is enabled"), "an open network is refused");
  r = request();
  r.policy.network.mode = sbx::NetworkMode::kProxy;
  check(mentions(refusal(r), "network mode is proxy"), "proxy mode is refused");
  r = request();
  r.policy.rules = {{"/usr", sbx::Access::kRead}, {"/work/proj", sbx::Access::kWrite}};
  check(mentions(refusal(r), "read_restriction"), "restricted reads are refused");
  r = request();
  r.policy.rules.push_back({"/work/proj/secret", sbx::Access::kDeny});
  check(mentions(refusal(r), "'/work/proj/secret' is denied"), "a denied path is refused");
  r = request();
  r.policy.rules.push_back({"/work/proj/docs", sbx::Access::kRead});
  check(mentions(refusal(r), "write_carveouts"), "a read-only path in a root is refused");
  r = request();
  r.policy.deny_globs = {"/work/proj/**/*.pem"};
  check(mentions(refusal(r), "deny_globs"), "deny globs are refused");
  r = request();
  r.policy.filesystem_kind = sbx::FilesystemKind::kUnrestricted;
  check(mentions(refusal(r), "restricted filesystem only"),
        "an unrestricted filesystem is refused");
  check(mentions(acme::make_plan(request(), "", root).error(), "sbx-stage2"),
        "no sbx-stage2, no plan");

  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
