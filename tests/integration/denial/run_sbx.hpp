// Helpers of the denial integration tests: run the installed sbx (SBX_TEST_PREFIX) and capture
// its exit status, stdout and stderr; split `sbx exec --json`'s report (the last stderr line)
// from the command's own stderr.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "sbx/sdk/types.hpp"

namespace sbx::testing_sbx {

namespace fs = std::filesystem;

inline const std::string kPrefix = SBX_TEST_PREFIX;
inline const std::string kSbx = kPrefix + "/bin/sbx";

struct Outcome {
  ExitStatus status;
  std::string out;
  std::string err;
};

inline std::string drain(int fd) {
  std::string text;
  std::array<char, 4096> buffer{};
  for (ssize_t got; (got = ::read(fd, buffer.data(), buffer.size())) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
  return text;
}

// Runs argv with stdout and stderr captured (stdout first to a file, so neither pipe can
// block the other).
inline Outcome run(const std::vector<std::string>& argv, const std::string& cwd = "/") {
  int err_pipe[2];
  EXPECT_EQ(::pipe(err_pipe), 0);
  FILE* out_file = std::tmpfile();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fileno(out_file), 1);
    ::dup2(err_pipe[1], 2);
    ::close(err_pipe[0]);
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(121);
  }
  ::close(err_pipe[1]);
  Outcome result;
  result.err = drain(err_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.status =
      WIFSIGNALED(status) ? ExitStatus{0, WTERMSIG(status)} : ExitStatus{WEXITSTATUS(status), 0};
  std::rewind(out_file);
  result.out = drain(fileno(out_file));
  std::fclose(out_file);
  return result;
}

// `sbx exec --json` writes its report as the last line of stderr; the rest is the command's.
struct ExecResult {
  Outcome run;
  boost::json::object report;
  std::string command_stderr;
};

inline ExecResult sbx_exec(const std::vector<std::string>& sbx_args, const std::string& cwd) {
  std::vector<std::string> argv = {kSbx};
  argv.insert(argv.end(), sbx_args.begin(), sbx_args.end());
  ExecResult result{run(argv, cwd), {}, {}};
  std::string err = result.run.err;
  if (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t last = err.rfind('\n');
  const std::string line = last == std::string::npos ? err : err.substr(last + 1);
  result.command_stderr = last == std::string::npos ? "" : err.substr(0, last + 1);
  boost::json::error_code ec;
  boost::json::value value = boost::json::parse(line, ec);
  EXPECT_FALSE(ec) << "no JSON report as the last stderr line:\n" << result.run.err;
  if (!ec && value.is_object()) result.report = value.as_object();
  return result;
}

// "" when the installed backend `name` is loaded and available, else why not (for GTEST_SKIP).
inline std::string backend_unavailable(const std::string& name) {
  const Outcome probe = run({kSbx, "backends", "--probe", "--json"});
  boost::json::error_code ec;
  const boost::json::value listing = boost::json::parse(probe.out, ec);
  if (ec) return "sbx backends --probe --json printed no JSON: " + probe.err;
  for (const auto& backend : listing.at("backends").as_array()) {
    if (backend.at("name").as_string() != name.c_str()) continue;
    if (backend.at("available").as_bool()) return "";
    return "the " + name + " backend is installed but unavailable here: " +
           std::string(backend.at("summary").as_string());
  }
  return "the " + name + " backend is not installed under " + kPrefix +
         " (its plugin may still be landing)";
}

}  // namespace sbx::testing_sbx

// In a test body: skip the test, with the reason, unless the backend is available (GTEST_SKIP
// must be expanded in the test body itself to end it).
#define SBX_REQUIRE_BACKEND(name)                                                      \
  do {                                                                                 \
    const std::string sbx_backend_why = ::sbx::testing_sbx::backend_unavailable(name); \
    if (!sbx_backend_why.empty()) GTEST_SKIP() << sbx_backend_why;                     \
  } while (0)
#define SBX_REQUIRE_BWRAP() SBX_REQUIRE_BACKEND("bwrap")
