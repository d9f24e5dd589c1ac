// The probe: can this host build the restricted token and the job the plan needs?
#include "sbx/windows/identity.hpp"
#include "win32.hpp"

namespace sbx::windows::win32 {
namespace {

ProbeCheck token_check() {
  ProbeCheck check{"restricted_token", CheckStatus::kFail, "", ""};
  Result<UniqueHandle> base = open_own_token();
  Result<std::string> user =
      base.ok() ? user_sid_string(base->get()) : Result<std::string>(Error{base.error()});
  Result<RunSids> sids = user.ok() ? make_run_sids(base->get(), capability_sid_for(*user, {}))
                                   : Result<RunSids>(Error{user.error()});
  if (!sids.ok()) {
    check.observed = sids.error();
    check.remedy = "run sbx as an ordinary interactive user";
    return check;
  }
  const TokenPlan plan = write_restricted_token();
  Result<UniqueHandle> token = make_restricted_token(base->get(), plan, *sids);
  if (!token.ok()) {
    check.observed = token.error();
    check.remedy = "CreateRestrictedToken must work for this user (Windows 10 or later)";
    return check;
  }
  check.status = CheckStatus::kPass;
  check.observed = "CreateRestrictedToken(DISABLE_MAX_PRIVILEGE|LUA_TOKEN|WRITE_RESTRICTED) ok";
  return check;
}

ProbeCheck job_check() {
  ProbeCheck check{"job_object", CheckStatus::kFail, "", ""};
  Result<UniqueHandle> job = make_kill_on_close_job();
  if (!job.ok()) {
    check.observed = job.error();
    check.remedy = "allow nested job objects (Windows 8 or later), or run sbx outside a job "
                   "that forbids them";
    return check;
  }
  check.status = CheckStatus::kPass;
  check.observed = "job object with KILL_ON_JOB_CLOSE ok";
  return check;
}

}  // namespace

ProbeReport probe() {
  ProbeReport report;
  report.checks = {token_check(), job_check()};
  report.available = true;
  for (const ProbeCheck& check : report.checks) {
    if (check.status == CheckStatus::kFail) report.available = false;
  }
  if (report.available) {
    report.capabilities = windows_capabilities();
    report.summary = "restricted token + ACLs: write restriction and protected names; reads "
                     "and network are not restricted";
  } else {
    report.summary = "cannot build the restricted token or job object (see checks)";
  }
  return report;
}

}  // namespace sbx::windows::win32
