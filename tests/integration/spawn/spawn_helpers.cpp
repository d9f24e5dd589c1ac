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
  for (int i = 0; i < 1000 && g_stop_signal == 0; ++i) usleep(10000);
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

std::string read_fd(int fd) {
  std::string out;
  char buffer[65536];
  lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

int temp_fd() {
  char name[] = "/tmp/sbx-spawn-capture-XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  unlink(name);
  return fd;
}

}  // namespace

TempDir::TempDir() {
  char name[] = "/tmp/sbx-spawn-test-XXXXXX";
  if (mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = std::filesystem::canonical(name).string();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& content,
                           unsigned mode) const {
  const std::string path = file(name);
  {
    std::ofstream out(path, std::ios::binary);
    out << content;
  }
  chmod(path.c_str(), static_cast<mode_t>(mode));
  return path;
}

Captured run_capturing(const ExecPlan& plan, const std::string* stdin_text) {
  Captured captured;
  const int out_fd = temp_fd();
  int in_fd = -1;
  if (stdin_text != nullptr) {
    in_fd = temp_fd();
    if (write(in_fd, stdin_text->data(), stdin_text->size()) !=
        static_cast<ssize_t>(stdin_text->size()))
      throw std::runtime_error("cannot write stdin file");
    lseek(in_fd, 0, SEEK_SET);
  }
  std::fflush(stdout);
  const int saved_out = dup(1);
  const int saved_in = dup(0);
  dup2(out_fd, 1);
  if (in_fd >= 0) dup2(in_fd, 0);
  captured.status = spawn_and_wait(plan);
  dup2(saved_out, 1);
  dup2(saved_in, 0);
  close(saved_out);
  close(saved_in);
  captured.out = read_fd(out_fd);
  close(out_fd);
  if (in_fd >= 0) close(in_fd);
  return captured;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool wait_for_file(const std::string& path, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (access(path.c_str(), F_OK) == 0) return true;
    usleep(10000);
  }
  return false;
}

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

ExecPlan record_helper_plan(const std::string& ready_file, const std::string& result_file,
                            bool own_process_group) {
  ExecPlan plan;
  plan.argv = {self_exe()};
  plan.env = {"SBX_SPAWN_HELPER=record", "SBX_READY=" + ready_file, "SBX_RESULT=" + result_file};
  if (own_process_group) plan.env.push_back("SBX_OWN_PGRP=1");
  plan.cwd = "/";
  return plan;
}

}  // namespace sbx::spawn_test
