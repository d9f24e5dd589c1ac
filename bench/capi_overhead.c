/* Exec overhead of the C API on a warm manager (sbx/sbx.h).
 *
 *   sbx_bench_capi LIBSBX CWD RUNS [BARE-BWRAP-ARGV...]
 *
 * Loads LIBSBX once (dlopen, as a binding would: the installed copy, next to its trusted
 * plugins), creates one manager per backend and runs, interleaved run by run so that load
 * changes hit both sides alike:
 *  - bwrap: sbx_exec of workspace-write /bin/true in CWD against BARE-BWRAP-ARGV (the same
 *    plan's bwrap arguments running /bin/true directly; bench/capi_overhead.sh builds it from
 *    `sbx debug bwrap`), target ratio <= 1.10;
 *  - landlock: sbx_exec of read-only /bin/true against /bin/true itself, target < +0.5 ms.
 * Each manager runs once before timing, so its backend's probe is kept (a warm manager) and the
 * timed calls cost the transform and the spawn. Prints medians, and the ratio and difference.
 * SBX_BENCH_BARE_MOUNT_POINTS (colon-separated) names the plan's mount points for missing
 * protected names: the bare bwrap creates them itself (as empty files) and nothing removes them,
 * so from the second round on the sbx runs would find the names existing and never mask missing
 * ones; each one missing before a bare run and an empty file or directory after it is removed.
 * Then the CPU time (user + system of this process and every child it waited for, getrusage)
 * of RUNS landlock sbx_exec calls against RUNS /bin/true spawns, per run: on a machine shared
 * with other work the wall-clock figures mostly measure scheduling delays, the CPU time much
 * less so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sbx/sbx.h"

extern char** environ;

typedef sbx_manager* (*manager_new_fn)(const char*, sbx_error**);
typedef void (*manager_free_fn)(sbx_manager*);
typedef char* (*exec_fn)(sbx_manager*, const char*, const char*, const char* const*, const char*,
                         unsigned, sbx_error**);
typedef void (*string_free_fn)(char*);
typedef const char* (*error_message_fn)(const sbx_error*);

static struct {
  manager_new_fn manager_new;
  manager_free_fn manager_free;
  exec_fn exec;
  string_free_fn string_free;
  error_message_fn error_message;
} api;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void* need_symbol(void* lib, const char* name) {
  void* symbol = dlsym(lib, name);
  if (symbol == NULL) {
    fprintf(stderr, "libsbx has no %s: %s\n", name, dlerror());
    exit(2);
  }
  return symbol;
}

static void load_api(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    exit(2);
  }
  /* ISO C has no object-to-function pointer cast; POSIX guarantees the representations match. */
  void* symbol = need_symbol(lib, "sbx_manager_new");
  memcpy(&api.manager_new, &symbol, sizeof symbol);
  symbol = need_symbol(lib, "sbx_manager_free");
  memcpy(&api.manager_free, &symbol, sizeof symbol);
  symbol = need_symbol(lib, "sbx_exec");
  memcpy(&api.exec, &symbol, sizeof symbol);
  symbol = need_symbol(lib, "sbx_string_free");
  memcpy(&api.string_free, &symbol, sizeof symbol);
  symbol = need_symbol(lib, "sbx_error_message");
  memcpy(&api.error_message, &symbol, sizeof symbol);
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

/* One sbx_exec of /bin/true; exits unless the command ran and exited 0. */
static double time_sbx_exec(sbx_manager* manager, const char* policy, const char* cwd) {
  static const char* const argv[] = {"/bin/true", NULL};
  sbx_error* error = NULL;
  const double start = now_ms();
  char* report = api.exec(manager, policy, cwd, argv, NULL, 0, &error);
  const double took = now_ms() - start;
  if (report == NULL || strstr(report, "\"code\":0") == NULL) {
    fprintf(stderr, "sbx_exec failed: %s\n", report != NULL ? report : api.error_message(error));
    exit(1);
  }
  api.string_free(report);
  return took;
}

static double time_spawn(char* const* argv) {
  pid_t pid;
  int status = 0;
  const double start = now_ms();
  if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
      waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "%s did not run and exit 0\n", argv[0]);
    exit(1);
  }
  return now_ms() - start;
}

/* CPU time of this process and of the children it waited for, in ms. */
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

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* samples, int count) {
  qsort(samples, (size_t)count, sizeof samples[0], by_value);
  return samples[count / 2];
}

/* The mount points bare bwrap may make (SBX_BENCH_BARE_MOUNT_POINTS), and which of them were
 * missing before the current bare run. */
enum { kMaxMountPoints = 16 };
static char* mount_points[kMaxMountPoints];
static int mount_point_count;
static int missing_before[kMaxMountPoints];

static void read_mount_points(void) {
  const char* list = getenv("SBX_BENCH_BARE_MOUNT_POINTS");
  if (list == NULL || *list == '\0') return;
  char* copy = strdup(list);
  for (char *save = NULL, *point = strtok_r(copy, ":", &save);
       point != NULL && mount_point_count < kMaxMountPoints; point = strtok_r(NULL, ":", &save))
    mount_points[mount_point_count++] = point;
}

static void note_missing_mount_points(void) {
  struct stat st;
  for (int i = 0; i < mount_point_count; ++i) missing_before[i] = lstat(mount_points[i], &st) != 0;
}

/* Only what this bare run made: an empty regular file or an empty directory (rmdir). */
static void remove_bare_mount_points(void) {
  struct stat st;
  for (int i = 0; i < mount_point_count; ++i) {
    if (!missing_before[i] || lstat(mount_points[i], &st) != 0) continue;
    if (S_ISREG(st.st_mode) && st.st_size == 0) unlink(mount_points[i]);
    if (S_ISDIR(st.st_mode)) rmdir(mount_points[i]);
  }
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LIBSBX CWD RUNS [BARE-BWRAP-ARGV...]\n", argv[0]);
    return 2;
  }
  const char* cwd = argv[2];
  const int runs = atoi(argv[3]);
  char** bare = argc > 4 ? argv + 4 : NULL;
  if (runs < 1) return 2;
  load_api(argv[1]);
  read_mount_points();
  double* sbx_bwrap = calloc((size_t)runs, sizeof(double));
  double* bare_bwrap = calloc((size_t)runs, sizeof(double));
  double* sbx_landlock = calloc((size_t)runs, sizeof(double));
  double* bare_true = calloc((size_t)runs, sizeof(double));
  if (!sbx_bwrap || !bare_bwrap || !sbx_landlock || !bare_true) return 2;
  static const char kWorkspace[] = "{\"version\":1,\"preset\":\"workspace-write\"}";
  static const char kReadOnly[] = "{\"version\":1,\"preset\":\"read-only\"}";
  char* true_argv[] = {"/bin/true", NULL};
  sbx_manager* bwrap = bare != NULL ? manager_for("bwrap") : NULL;
  sbx_manager* landlock = manager_for("landlock");
  /* Warm: the first call on each manager probes its backend and keeps the answer. */
  if (bwrap != NULL) time_sbx_exec(bwrap, kWorkspace, cwd);
  time_sbx_exec(landlock, kReadOnly, cwd);
  for (int i = 0; i < runs; ++i) {
    if (bwrap != NULL) {
      sbx_bwrap[i] = time_sbx_exec(bwrap, kWorkspace, cwd);
      note_missing_mount_points();
      bare_bwrap[i] = time_spawn(bare);
      remove_bare_mount_points();
    }
    sbx_landlock[i] = time_sbx_exec(landlock, kReadOnly, cwd);
    bare_true[i] = time_spawn(true_argv);
  }
  printf("runs: %d interleaved (medians), libsbx loaded once, one warm manager per backend\n",
         runs);
  if (bwrap != NULL) {
    const double s = median(sbx_bwrap, runs), b = median(bare_bwrap, runs);
    printf("sbx_exec (bwrap, workspace-write):   %.2f ms\n", s);
    printf("bare bwrap, same mounts:             %.2f ms\n", b);
    printf("ratio: %.2fx (target <= 1.10x)\n", s / b);
  }
  const double l = median(sbx_landlock, runs), t = median(bare_true, runs);
  printf("sbx_exec (landlock, read-only):      %.2f ms\n", l);
  printf("/bin/true:                           %.2f ms\n", t);
  printf("difference: %+.2f ms (target < +0.5 ms), ratio %.2fx\n", l - t, l / t);
  const double cpu_start = cpu_ms();
  for (int i = 0; i < runs; ++i) time_sbx_exec(landlock, kReadOnly, cwd);
  const double cpu_landlock = (cpu_ms() - cpu_start) / runs;
  const double cpu_middle = cpu_ms();
  for (int i = 0; i < runs; ++i) time_spawn(true_argv);
  const double cpu_true = (cpu_ms() - cpu_middle) / runs;
  printf(
      "CPU per run (user + system, children included): sbx_exec (landlock) %.2f ms, "
      "/bin/true %.2f ms, added %+.2f ms\n",
      cpu_landlock, cpu_true, cpu_landlock - cpu_true);
  if (bwrap != NULL) api.manager_free(bwrap);
  api.manager_free(landlock);
  free(sbx_bwrap);
  free(bare_bwrap);
  free(sbx_landlock);
  free(bare_true);
  return 0;
}
