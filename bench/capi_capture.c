/* Captured output against today's exec, on a warm manager (sbx/sbx.h).
 *
 *   sbx_bench_capi_capture LIBSBX CWD RUNS
 *
 * Loads LIBSBX once (dlopen, as a binding would: the installed copy, next to its trusted
 * plugins), makes one manager per backend and times, interleaved run by run (the order swapped
 * every round) so that load changes hit both sides alike:
 *  - exec:    sbx_exec, the command writing to this process's stdout (here /dev/null), as today;
 *  - capture: sbx_run_start with stdout SBX_STDIO_CAPTURE (default cap), sbx_run_wait,
 *             sbx_run_output, sbx_run_free: the same command, its output in memory;
 *  - run-inherit: the same run handle with this process's stdout (what the handle's thread
 *             costs without the stdio thread), for reading the difference;
 * for bwrap (workspace-write) and landlock (read-only), each with a command printing a line
 * (`/bin/echo hello`) and one printing 256 KiB (`head -c 262144 /dev/zero`). Prints the median
 * and p90 of each side, the ratio of the medians (target: capture <= 1.05 x exec), and the CPU
 * time per run of each side (getrusage: this process's threads and the children it waited for),
 * which a loaded host moves much less than wall-clock time. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sbx/sbx.h"

typedef sbx_manager* (*manager_new_fn)(const char*, sbx_error**);
typedef char* (*exec_fn)(sbx_manager*, const char*, const char*, const char* const*, const char*,
                         unsigned, sbx_error**);
typedef sbx_run* (*run_start_fn)(sbx_manager*, const sbx_run_options*, sbx_error**);
typedef char* (*run_wait_fn)(sbx_run*, sbx_error**);
typedef const char* (*run_output_fn)(sbx_run*, int, size_t*);
typedef void (*run_free_fn)(sbx_run*);
typedef void (*string_free_fn)(char*);
typedef const char* (*error_message_fn)(const sbx_error*);

static struct {
  manager_new_fn manager_new;
  exec_fn exec;
  run_start_fn run_start;
  run_wait_fn run_wait;
  run_output_fn run_output;
  run_free_fn run_free;
  string_free_fn string_free;
  error_message_fn error_message;
} api;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU time of this process (every thread) and of the children it waited for, in ms. */
static double cpu_ms(void) {
  struct rusage self, children;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  const struct timeval* t[] = {&self.ru_utime, &self.ru_stime, &children.ru_utime,
                               &children.ru_stime};
  double ms = 0;
  for (int i = 0; i < 4; ++i) ms += (double)t[i]->tv_sec * 1e3 + (double)t[i]->tv_usec / 1e3;
  return ms;
}

/* CPU time each side spent, summed over the loop. */
static double cpu_exec, cpu_capture;

static void bind(void* lib, const char* name, void* out) {
  void* symbol = dlsym(lib, name);
  if (symbol == NULL) {
    fprintf(stderr, "libsbx has no %s: %s\n", name, dlerror());
    exit(2);
  }
  /* ISO C has no object-to-function pointer cast; POSIX guarantees the representations match. */
  memcpy(out, &symbol, sizeof symbol);
}

static void load_api(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    exit(2);
  }
  bind(lib, "sbx_manager_new", &api.manager_new);
  bind(lib, "sbx_exec", &api.exec);
  bind(lib, "sbx_run_start", &api.run_start);
  bind(lib, "sbx_run_wait", &api.run_wait);
  bind(lib, "sbx_run_output", &api.run_output);
  bind(lib, "sbx_run_free", &api.run_free);
  bind(lib, "sbx_string_free", &api.string_free);
  bind(lib, "sbx_error_message", &api.error_message);
}

static void check(char* report, sbx_error* error, const char* what) {
  if (report == NULL || strstr(report, "\"code\":0") == NULL) {
    fprintf(stderr, "%s failed: %s\n", what, report != NULL ? report : api.error_message(error));
    exit(1);
  }
  api.string_free(report);
}

static double time_exec(sbx_manager* manager, const char* policy, const char* cwd,
                        const char* const* argv) {
  sbx_error* error = NULL;
  const double start = now_ms();
  char* report = api.exec(manager, policy, cwd, argv, NULL, 0, &error);
  const double took = now_ms() - start;
  check(report, error, "sbx_exec");
  return took;
}

/* sbx_run_start with stdout captured (capture != 0) or this process's own (the run handle's
 * thread alone, no stdio thread). */
static double time_run(sbx_manager* manager, const char* policy, const char* cwd,
                       const char* const* argv, size_t expected, int capture) {
  sbx_run_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.policy_json = policy;
  options.cwd = cwd;
  options.argv = argv;
  options.stdio[1].mode = capture ? SBX_STDIO_CAPTURE : SBX_STDIO_INHERIT;
  sbx_error* error = NULL;
  const double start = now_ms();
  sbx_run* run = api.run_start(manager, &options, &error);
  if (run == NULL) {
    fprintf(stderr, "sbx_run_start failed: %s\n", api.error_message(error));
    exit(1);
  }
  char* report = api.run_wait(run, &error);
  size_t length = 0;
  (void)api.run_output(run, 1, &length);
  api.run_free(run);
  const double took = now_ms() - start;
  check(report, error, "sbx_run_wait");
  if (capture && length != expected) {
    fprintf(stderr, "captured %zu bytes, expected %zu\n", length, expected);
    exit(1);
  }
  return took;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double at(double* samples, int count, double fraction) {
  qsort(samples, (size_t)count, sizeof samples[0], by_value);
  return samples[(int)(fraction * (count - 1) + 0.5)];
}

static sbx_manager* manager_for(const char* backend) {
  sbx_error* error = NULL;
  sbx_manager* manager = api.manager_new(backend, &error);
  if (manager == NULL) {
    fprintf(stderr, "sbx_manager_new(%s): %s\n", backend, api.error_message(error));
    exit(2);
  }
  return manager;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s LIBSBX CWD RUNS\n", argv[0]);
    return 2;
  }
  const char* cwd = argv[2];
  const int runs = atoi(argv[3]);
  if (runs < 1) return 2;
  load_api(argv[1]);
  /* The commands' output goes to /dev/null for sbx_exec (this process's stdout); the results
   * go to the saved stdout. */
  fflush(stdout);
  const int results = dup(1);
  const int null_fd = open("/dev/null", O_WRONLY);
  if (results < 0 || null_fd < 0 || dup2(null_fd, 1) != 1) return 2;
  FILE* out = fdopen(results, "w");
  static const char* const echo[] = {"/bin/echo", "hello", NULL};
  static const char* const big[] = {"/usr/bin/head", "-c", "262144", "/dev/zero", NULL};
  struct {
    const char* backend;
    const char* policy;
  } backends[] = {{"bwrap", "{\"version\":1,\"preset\":\"workspace-write\"}"},
                  {"landlock", "{\"version\":1,\"preset\":\"read-only\"}"}};
  struct {
    const char* name;
    const char* const* argv;
    size_t bytes;
  } commands[] = {{"echo hello", echo, 6}, {"256 KiB", big, 262144}};
  double* exec = calloc((size_t)runs, sizeof(double));
  double* capture = calloc((size_t)runs, sizeof(double));
  double* plain = calloc((size_t)runs, sizeof(double));
  if (exec == NULL || capture == NULL || plain == NULL || out == NULL) return 2;
  fprintf(out, "%-9s %-11s %18s %18s %8s %14s %12s\n", "backend", "command", "exec med/p90 ms",
          "capture med/p90 ms", "ratio", "cpu ms/run e/c", "inherit med");
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; ++b) {
    sbx_manager* manager = manager_for(backends[b].backend);
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; ++c) {
      /* Warm: the first call probes the backend and keeps the answer. */
      const char* policy = backends[b].policy;
      cpu_exec = cpu_capture = 0;
      const char* const* command = commands[c].argv;
      const size_t bytes = commands[c].bytes;
      time_exec(manager, policy, cwd, command);
      time_run(manager, policy, cwd, command, bytes, 1);
      for (int i = 0; i < runs; ++i) {
        if (i % 2 == 0) {
          double cpu = cpu_ms();
          exec[i] = time_exec(manager, policy, cwd, command);
          cpu_exec += cpu_ms() - cpu;
          cpu = cpu_ms();
          capture[i] = time_run(manager, policy, cwd, command, bytes, 1);
          cpu_capture += cpu_ms() - cpu;
          plain[i] = time_run(manager, policy, cwd, command, bytes, 0);
        } else {
          plain[i] = time_run(manager, policy, cwd, command, bytes, 0);
          double cpu = cpu_ms();
          capture[i] = time_run(manager, policy, cwd, command, bytes, 1);
          cpu_capture += cpu_ms() - cpu;
          cpu = cpu_ms();
          exec[i] = time_exec(manager, policy, cwd, command);
          cpu_exec += cpu_ms() - cpu;
        }
      }
      const double exec_p90 = at(exec, runs, 0.9), exec_med = at(exec, runs, 0.5);
      const double capture_p90 = at(capture, runs, 0.9), capture_med = at(capture, runs, 0.5);
      fprintf(out, "%-9s %-11s %8.2f / %7.2f %8.2f / %7.2f %7.3fx %6.2f / %5.2f %12.2f\n",
              backends[b].backend, commands[c].name, exec_med, exec_p90, capture_med, capture_p90,
              capture_med / exec_med, cpu_exec / runs, cpu_capture / runs, at(plain, runs, 0.5));
      fflush(out);
    }
  }
  return 0;
}
