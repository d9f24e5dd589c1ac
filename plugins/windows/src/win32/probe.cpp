// The probe: can this host build the restricted token and the job the plan needs?
#include "sbx/windows/identity.hpp"
#include "win32.hpp"

namespace sbx::windows::win32 {
namespace {

ProbeCheck token_check() {
  ProbeCheck check{"restricted_token", CheckStatus::kFail, "", ""};
  Result<UniqueHandle> base = open_own_token();
  Result<std::string> user =
      base.ok() ? user_sid_string(base->get()) : Result<std::string>(base.failure());
  Result<RunSids> sids = user.ok() ? make_run_sids(base->get(), capability_sid_for(*user, {}))
                                   : Result<RunSids>(user.failure());
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
  Result<std::vector<std::string>> privileges = privilege_names(token->get());
  std::string kept;
  for (const std::string& name : privileges.ok() ? *privileges : std::vector<std::string>{})
    kept += (kept.empty() ? "" : " ") + name;
  check.status = CheckStatus::kPass;
  check.observed =
      "CreateRestrictedToken(DISABLE_MAX_PRIVILEGE|LUA_TOKEN|WRITE_RESTRICTED) ok; "
      "privileges kept: " +
      (kept.empty() ? std::string("none") : kept);
  return check;
}

ProbeCheck job_check() {
  ProbeCheck check{"job_object", CheckStatus::kFail, "", ""};
  Result<UniqueHandle> job = make_kill_on_close_job();
  if (!job.ok()) {
    check.observed = job.error();
    check.remedy =
        "allow nested job objects (Windows 8 or later), or run sbx outside a job "
        "that forbids them";
    return check;
  }
  if (Status status = limit_job_ui(job->get()); !status.ok()) {
    check.observed = status.error();
    check.remedy = "the job's UI limits (JOB_OBJECT_UILIMIT_*) must be settable";
    return check;
  }
  check.status = CheckStatus::kPass;
  check.observed = "job object with KILL_ON_JOB_CLOSE and UI limits ok";
  return check;
}

// Never a failure: the network modes this backend cannot enforce are refused at transform.
ProbeCheck network_check() {
  bool elevated = false;
  if (Result<UniqueHandle> token = open_own_token(); token.ok()) {
    TOKEN_ELEVATION elevation{};
    DWORD size = 0;
    if (GetTokenInformation(token->get(), TokenElevation, &elevation, sizeof elevation, &size))
      elevated = elevation.TokenIsElevated != 0;
  }
  bool appcontainer_api = false;
  if (HMODULE userenv = LoadLibraryExW(L"userenv.dll", nullptr, LOAD_LIBRARY_SEARCH_SYSTEM32)) {
    appcontainer_api = GetProcAddress(userenv, "CreateAppContainerProfile") != nullptr;
    FreeLibrary(userenv);
  }
  const NetworkMechanismReport mechanism = network_mechanism(elevated, appcontainer_api);
  return {"network_restriction", CheckStatus::kWarn, mechanism.observed, mechanism.remedy};
}

}  // namespace

ProbeReport probe() {
  ProbeReport report;
  report.checks = {token_check(), job_check(), network_check()};
  report.available = true;
  for (const ProbeCheck& check : report.checks) {
    if (check.status == CheckStatus::kFail) report.available = false;
  }
  if (report.available) {
    report.capabilities = windows_capabilities();
    report.summary =
        "restricted token + ACLs: write restriction and protected names; reads "
        "and network are not restricted";
  } else {
    report.summary = "cannot build the restricted token or job object (see checks)";
  }
  return report;
}

}  // namespace sbx::windows::win32
