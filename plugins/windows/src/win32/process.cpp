// Starting the command with the restricted token inside a kill-on-close job object.
#include "sbx/windows/command_line.hpp"
#include "win32.hpp"

namespace sbx::windows::win32 {
namespace {

// "K=V\0K=V\0\0" in UTF-16, as CREATE_UNICODE_ENVIRONMENT expects (already sorted).
Result<std::wstring> environment_block(const std::vector<std::string>& env) {
  std::wstring block;
  for (const std::string& entry : env) {
    Result<std::wstring> w = wide(entry);
    if (!w.ok()) return w.failure();
    block += *w;
    block += L'\0';
  }
  if (env.empty()) block += L'\0';
  block += L'\0';
  return block;
}

// Inheritable duplicates of our standard handles: the only handles the command inherits.
std::vector<UniqueHandle> inheritable_std_handles(HANDLE out[3]) {
  std::vector<UniqueHandle> owned;
  const DWORD ids[3] = {STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE};
  for (int i = 0; i < 3; ++i) {
    out[i] = nullptr;
    HANDLE h = GetStdHandle(ids[i]);
    HANDLE dup = nullptr;
    if (h == nullptr || h == INVALID_HANDLE_VALUE) continue;
    if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, TRUE,
                         DUPLICATE_SAME_ACCESS))
      continue;
    out[i] = dup;
    owned.emplace_back(dup);
  }
  return owned;
}

// A PROC_THREAD_ATTRIBUTE_HANDLE_LIST so no other inheritable handle leaks into the sandbox.
class HandleListAttribute {
 public:
  Status init(std::vector<HANDLE> handles) {
    handles_ = std::move(handles);
    SIZE_T size = 0;
    InitializeProcThreadAttributeList(nullptr, 1, 0, &size);
    buffer_.resize(size);
    list_ = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(buffer_.data());
    if (!InitializeProcThreadAttributeList(list_, 1, 0, &size))
      return system_error("InitializeProcThreadAttributeList");
    initialized_ = true;
    if (!handles_.empty() &&
        !UpdateProcThreadAttribute(list_, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, handles_.data(),
                                   handles_.size() * sizeof(HANDLE), nullptr, nullptr))
      return system_error("UpdateProcThreadAttribute(HANDLE_LIST)");
    return {};
  }
  ~HandleListAttribute() {
    if (initialized_) DeleteProcThreadAttributeList(list_);
  }
  LPPROC_THREAD_ATTRIBUTE_LIST get() const { return list_; }

 private:
  std::vector<HANDLE> handles_;
  std::vector<unsigned char> buffer_;
  LPPROC_THREAD_ATTRIBUTE_LIST list_ = nullptr;
  bool initialized_ = false;
};

// While the command runs, Ctrl+C and Ctrl+Break reach it directly (same console); sbx must
// survive them to restore the ACLs. A handler (unlike ignoring) is not inherited.
BOOL WINAPI keep_running(DWORD /*event*/) { return TRUE; }

struct Launch {
  std::wstring application, command_line, cwd, environment, desktop;
};

Result<Launch> launch_strings(const WindowsPlan& plan) {
  Result<std::wstring> application = wide(plan.argv.at(0));
  Result<std::wstring> command_line = wide(plan.command_line);
  Result<std::wstring> cwd = wide(plan.cwd);
  Result<std::wstring> environment = environment_block(plan.env);
  Result<std::wstring> desktop = wide(plan.desktop);
  for (const Result<std::wstring>* r :
       {&application, &command_line, &cwd, &environment, &desktop}) {
    if (!r->ok()) return Error{r->error()};
  }
  return Launch{*application, *command_line, *cwd, *environment, *desktop};
}

Result<ExitStatus> wait_for(const PROCESS_INFORMATION& pi) {
  if (WaitForSingleObject(pi.hProcess, INFINITE) != WAIT_OBJECT_0)
    return system_error("WaitForSingleObject");
  DWORD code = 0;
  if (!GetExitCodeProcess(pi.hProcess, &code)) return system_error("GetExitCodeProcess");
  ExitStatus status;
  status.exit_code = static_cast<int>(code);  // NTSTATUS crash codes come out negative
  return status;
}

}  // namespace

Result<UniqueHandle> make_kill_on_close_job() {
  UniqueHandle job(CreateJobObjectW(nullptr, nullptr));
  if (!job) return system_error("CreateJobObjectW");
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  // Closing our handle (also when sbx dies) kills every process the command started.
  limits.BasicLimitInformation.LimitFlags =
      JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
  if (!SetInformationJobObject(job.get(), JobObjectExtendedLimitInformation, &limits,
                               sizeof limits))
    return system_error("SetInformationJobObject(KILL_ON_JOB_CLOSE)");
  return job;
}

Status limit_job_ui(HANDLE job) {
  // The command shares the interactive desktop with the user's other windows; these limits
  // keep it from using their window handles (no SendMessage/PostMessage into a terminal outside
  // the job), from the clipboard, global atoms, desktop switching, system settings and logoff.
  JOBOBJECT_BASIC_UI_RESTRICTIONS ui{};
  ui.UIRestrictionsClass = JOB_OBJECT_UILIMIT_HANDLES | JOB_OBJECT_UILIMIT_READCLIPBOARD |
                           JOB_OBJECT_UILIMIT_WRITECLIPBOARD | JOB_OBJECT_UILIMIT_GLOBALATOMS |
                           JOB_OBJECT_UILIMIT_DESKTOP | JOB_OBJECT_UILIMIT_DISPLAYSETTINGS |
                           JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS | JOB_OBJECT_UILIMIT_EXITWINDOWS;
  if (!SetInformationJobObject(job, JobObjectBasicUIRestrictions, &ui, sizeof ui))
    return system_error("SetInformationJobObject(JobObjectBasicUIRestrictions)");
  return {};
}

Result<ExitStatus> run_in_job(HANDLE token, const WindowsPlan& plan) {
  Result<Launch> strings = launch_strings(plan);
  if (!strings.ok()) return strings.failure();
  Result<UniqueHandle> job = make_kill_on_close_job();
  if (!job.ok()) return job.failure();
  if (plan.job_ui_limits) {
    if (Status status = limit_job_ui(job->get()); !status.ok()) return status.failure();
  }
  HANDLE std_handles[3];
  std::vector<UniqueHandle> owned = inheritable_std_handles(std_handles);
  std::vector<HANDLE> list;
  for (const UniqueHandle& h : owned) list.push_back(h.get());
  HandleListAttribute attribute;
  if (Status status = attribute.init(list); !status.ok()) return status.failure();
  STARTUPINFOEXW startup{};
  startup.StartupInfo.cb = sizeof startup;
  // Explicit, never inherited by accident: the window station and desktop the plan names.
  startup.StartupInfo.lpDesktop = strings->desktop.data();
  startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  startup.StartupInfo.hStdInput = std_handles[0];
  startup.StartupInfo.hStdOutput = std_handles[1];
  startup.StartupInfo.hStdError = std_handles[2];
  startup.lpAttributeList = attribute.get();
  PROCESS_INFORMATION pi{};
  // Suspended until it is in the job, so not one instruction runs outside it. The application
  // name is explicit: no search path, no guessing at where the program name ends.
  if (!CreateProcessAsUserW(
          token, strings->application.c_str(), strings->command_line.data(), nullptr, nullptr,
          list.empty() ? FALSE : TRUE,
          CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT,
          strings->environment.data(), strings->cwd.c_str(), &startup.StartupInfo, &pi))
    return system_error("windows backend: CreateProcessAsUserW('" + plan.argv[0] + "')");
  UniqueHandle process(pi.hProcess), thread(pi.hThread);
  if (!AssignProcessToJobObject(job->get(), pi.hProcess)) {
    Error error = system_error("windows backend: AssignProcessToJobObject");
    TerminateProcess(pi.hProcess, 125);
    return error;
  }
  SetConsoleCtrlHandler(keep_running, TRUE);
  ResumeThread(pi.hThread);
  Result<ExitStatus> status = wait_for(pi);
  SetConsoleCtrlHandler(keep_running, FALSE);
  return status;  // the job handle closes here: leftover descendants are killed
}

}  // namespace sbx::windows::win32
