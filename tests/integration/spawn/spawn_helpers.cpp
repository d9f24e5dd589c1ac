#include "spawn_helpers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "sbx_test/capture.hpp"

namespace sbx::spawn_test {
namespace {

// ---------------------------------------------------------------------------------------------
// Helper mode. When this executable is started with SBX_SPAWN_HELPER set, it runs the helper
// from a static initializer and never reaches gtest's main().

volatile sig_atomic_t g_caught_mask = 0;
volatile sig_atomic_t g_stop_signal = 0;

void on_recorded(int signal_number) { g_caught_mask = g_caught_mask | (1 << signal_number); }
void on_stop(int signal_number) { g_stop_signal = signal_number; }

void handle(int signal_number, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigfillset(&action.sa_mask);  // handlers never interleave: the mask update is not atomic
  sigaction(signal_number, &action, nullptr);
}

void write_text(const char* path, const std::string& text) {
  const std::string temporary = std::string(path) + ".tmp";
  {
    std::ofstream out(temporary);
    out << text;
  }
  std::rename(temporary.c_str(), path);  // appears complete or not at all
}

int run_record_helper() {
  if (std::getenv("SBX_OWN_PGRP") != nullptr) setpgid(0, 0);
  for (int sig : {SIGINT, SIGHUP, SIGQUIT, SIGUSR2, SIGWINCH, SIGCONT}) handle(sig, on_recorded);
  handle(SIGTERM, on_stop);
  handle(SIGUSR1, on_stop);
  const char* ready = std::getenv("SBX_READY");
  const char* result = std::getenv("SBX_RESULT");
  if (ready == nullptr || result == nullptr) return 98;
  write_text(ready, "ready");
  // <result>.caught follows the mask as signals arrive, for the test to wait on.
  const std::string caught = std::string(result) + ".caught";
  int written = 0;
  for (int i = 0; i < 1000 && g_stop_signal == 0; ++i) {
    if (g_caught_mask != written) {
      written = g_caught_mask;
      write_text(caught.c_str(), std::to_string(written));
    }
    usleep(10000);
  }
  write_text(result, std::to_string(g_caught_mask));
  if (g_stop_signal == SIGTERM) return 1;
  if (g_stop_signal == SIGUSR1) return 2;
  return 99;  // timed out
}

struct HelperHook {
  HelperHook() {
    const char* mode = std::getenv("SBX_SPAWN_HELPER");
    if (mode == nullptr) return;
    _exit(std::string(mode) == "record" ? run_record_helper() : 97);
  }
};
const HelperHook g_helper_hook;

}  // namespace

Captured run_capturing(const ExecPlan& plan, const std::string* stdin_text) {
  Captured captured;
  captured.out =
      sbx::test::capture_stdout([&] { captured.status = spawn_and_wait(plan); }, stdin_text);
  return captured;
}

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

ExecPlan record_helper_plan(const std::string& ready_file, const std::string& result_file,
                            bool own_process_group) {
  ExecPlan plan;
  plan.argv = {self_exe()};
  plan.env = {"SBX_SPAWN_HELPER=record", "SBX_READY=" + ready_file, "SBX_RESULT=" + result_file};
  if (own_process_group) plan.env.push_back("SBX_OWN_PGRP=1");
  plan.cwd.assign(1, '/');  // not = "/": GCC 12 reports a false -Wrestrict on that here
  return plan;
}

}  // namespace sbx::spawn_test
