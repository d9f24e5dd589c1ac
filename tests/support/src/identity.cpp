#include "sbx_test/identity.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx::test {
namespace {

constexpr uid_t kUnprivilegedId = 65534;  // nobody/nogroup on Debian, Fedora and Alpine
constexpr const char* kSetpriv = "/usr/bin/setpriv";

bool running_as_root() { return ::geteuid() == 0; }
// A switch happens only from root to 65534; an ordinary user is the unprivileged identity.
bool switches(Identity who) { return who == Identity::kUnprivileged && running_as_root(); }

// A home directory of the unprivileged identity's own for this test process: sbx keeps per-user
// state below HOME (~/.cache/sbx) when there is no runtime directory, and root's /root is not
// the user's. Below private_parent() (root's 0755 /var/lib/sbx-test-homes when root), never
// /var/tmp or /tmp: sbx refuses state below a directory others may write (issue #32).
class UnprivilegedHome {
 public:
  UnprivilegedHome() {
    std::string pattern = private_parent() + "/sbx-test-home-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed under " + private_parent());
    path_ = pattern;
    if (running_as_root() && ::chown(path_.c_str(), kUnprivilegedId, kUnprivilegedId) != 0)
      throw std::runtime_error("cannot give " + path_ + " to user 65534");
  }
  ~UnprivilegedHome() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& unprivileged_home() {
  static const UnprivilegedHome home;
  return home.path();
}

std::string why_unavailable(Identity who, const std::string& backend,
                            const std::vector<std::string>& programs) {
  if (who == Identity::kRoot)
    return running_as_root() ? ""
                             : "the tests do not run as root, so sbx cannot be started by root";
  if (!switches(who)) return "";  // the test's own ordinary user
  if (::access(kSetpriv, X_OK) != 0)
    return std::string("setpriv (util-linux) is not installed at ") + kSetpriv +
           ": cannot switch to user 65534";
  std::vector<std::string> needed = {sbx_path()};
  needed.insert(needed.end(), programs.begin(), programs.end());
  for (const std::string& program : needed) {
    const RunResult reachable = run_as(who, {"/usr/bin/test", "-x", program}, base_env());
    if (reachable.code != 0)
      return "user 65534 cannot execute " + program +
             " (a parent directory of the build or install tree is private to its owner)";
  }
  if (backend == "bwrap") {
    const RunResult userns = run_as(
        who, {"/usr/bin/bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true"}, base_env());
    if (userns.code != 0)
      return "user 65534 cannot create user namespaces here (bwrap: " + userns.err + ")";
  }
  return "";
}

// The uid of the process running `program` with `arg` among its arguments; -1 when none is.
long uid_of_process_running(const std::string& program, const std::string& arg) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path().string() + "/cmdline");
    if (cmdline.rfind(program + '\0', 0) != 0) continue;
    if (cmdline.find('\0' + arg + '\0') == std::string::npos) continue;
    std::ifstream status(entry.path().string() + "/status");
    for (std::string line; std::getline(status, line);) {
      // "Uid:\treal\teffective\tsaved\tfilesystem": all four must be the identity's.
      if (line.rfind("Uid:", 0) != 0) continue;
      unsigned long real = 0, effective = 0, saved = 0, filesystem = 0;
      if (std::sscanf(line.c_str(), "Uid: %lu %lu %lu %lu", &real, &effective, &saved,
                      &filesystem) != 4)
        return -1;
      if (real != effective || real != saved || real != filesystem) return -2;
      return static_cast<long>(real);
    }
  }
  return -1;
}

}  // namespace

const char* name_of(Identity who) { return who == Identity::kRoot ? "root" : "user"; }

uid_t uid_of(Identity who) {
  if (who == Identity::kRoot) return 0;
  return switches(who) ? kUnprivilegedId : ::getuid();
}

gid_t gid_of(Identity who) {
  if (who == Identity::kRoot) return 0;
  return switches(who) ? kUnprivilegedId : ::getgid();
}

std::string identity_unavailable(Identity who, const std::string& backend,
                                 const std::vector<std::string>& programs) {
  static std::mutex mutex;
  static std::map<std::string, std::string> answers;
  std::string key = std::string(name_of(who)) + '\0' + backend;
  for (const std::string& program : programs) key += '\0' + program;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto known = answers.find(key);
  if (known != answers.end()) return known->second;
  return answers[key] = why_unavailable(who, backend, programs);
}

void give_to(Identity who, const std::string& path) {
  if (!switches(who)) return;
  // Only what is not the identity's already: a chown changes the inode's ctime, by which a
  // run may recognise the mount point it made (and then not remove it).
  const auto give = [&](const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && st.st_uid == uid_of(who) && st.st_gid == gid_of(who))
      return;
    if (::lchown(p.c_str(), uid_of(who), gid_of(who)) != 0)
      throw std::runtime_error("cannot give " + p.string() + " to user 65534");
  };
  give(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(std::filesystem::symlink_status(path, ec))) return;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec))
    give(entry.path());
}

std::string home_of(Identity who) {
  if (who == Identity::kUnprivileged) {
    // The test's own ordinary user: their home from passwd when it is theirs (not base_env()'s
    // /root; a service account's may be /nonexistent), else one made for this process.
    struct stat st {};
    const passwd* pw = switches(who) ? nullptr : ::getpwuid(::getuid());
    if (pw != nullptr && pw->pw_dir != nullptr && ::stat(pw->pw_dir, &st) == 0 &&
        S_ISDIR(st.st_mode) && st.st_uid == ::getuid())
      return pw->pw_dir;
    return unprivileged_home();
  }
  for (const std::string& entry : base_env())
    if (entry.rfind("HOME=", 0) == 0) return entry.substr(5);
  return "/";
}

std::vector<std::string> env_for(Identity who) {
  std::vector<std::string> env;
  for (const std::string& entry : base_env())
    if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_RUNTIME_DIR=", 0) != 0)
      env.push_back(entry);
  env.push_back("HOME=" + home_of(who));
  return env;
}

std::vector<std::string> argv_as(Identity who, const std::vector<std::string>& argv) {
  if (!switches(who)) return argv;
  const std::string id = std::to_string(kUnprivilegedId);
  std::vector<std::string> switched = {kSetpriv, "--reuid=" + id, "--regid=" + id,
                                       "--clear-groups"};
  switched.insert(switched.end(), argv.begin(), argv.end());
  return switched;
}

RunResult run_as(Identity who, const std::vector<std::string>& argv,
                 const std::vector<std::string>& env, const std::string& input) {
  return run(argv_as(who, argv), env, input);
}

RunResult exec_as(Identity who, const std::string& backend, const std::vector<std::string>& policy,
                  const std::string& cwd, const std::vector<std::string>& command,
                  const std::vector<std::string>& env, const std::string& input) {
  return run_as(who, exec_argv(backend, policy, cwd, command), with_pwd(env, cwd), input);
}

std::string runs_as_problem(Identity who, const std::string& backend,
                            const std::vector<std::string>& policy, const std::string& cwd) {
  const std::string marker = cwd + "/runs-as-started";
  const std::string go = cwd + "/runs-as-go";
  // The command stays alive (at most ~10 s) until the test has looked at the sbx process.
  const std::string script =
      "id -u; echo started > runs-as-started; i=0; "
      "while [ ! -e runs-as-go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done";
  RunResult result;
  std::atomic<bool> ended{false};
  std::thread sbx([&] {
    result = exec_as(who, backend, policy, cwd, {"/bin/sh", "-c", script}, env_for(who));
    ended = true;
  });
  std::string problem;
  long outside_uid = -1;
  bool started = false;
  for (int waited_ms = 0; !started && !ended && waited_ms < 15000; waited_ms += 20) {
    started = exists(marker);
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (started)
    outside_uid = uid_of_process_running(sbx_path(), cwd);
  else
    problem = "the command never started; ";
  std::ofstream(go) << "go\n";
  sbx.join();
  std::filesystem::remove(go);
  const std::string uid = std::to_string(uid_of(who));
  if (result.code != 0) problem += "the run failed: " + describe(result) + "; ";
  if (result.out != uid + "\n")
    problem += "inside, id -u is '" + result.out + "', not " + uid + "; ";
  if (started && outside_uid != uid_of(who))
    problem += "outside, the sbx process runs as uid " + std::to_string(outside_uid) +
               " (-1: not found, -2: mixed ids), not " + uid + "; ";
  struct stat st {};
  if (::lstat(marker.c_str(), &st) != 0 || st.st_uid != uid_of(who))
    problem += "the file the command created is not owned by uid " + uid + " on the host; ";
  std::filesystem::remove(marker);
  return problem;
}

}  // namespace sbx::test
