/* An agent embedding libsbx through its C API, as a vendor's customer would: it dlopens the
 * libsbx.so named on its command line, makes a manager for one backend and asks it for a plan
 * (sbx_transform), a run on its own thread (sbx_exec) and a run with a time-out
 * (sbx_run_start, sbx_run_wait), printing one line per call: "transform: ...", "exec: ...",
 * "run: ..." (the JSON, or "error: " and the C error), then "alive" when it got through all of
 * them. Used by plugin_calls_test.cpp with misbehaving third-party plugins: a crash there must
 * come back as an error, never end this process.
 *
 *   capi_plugin_calls LIBSBX BACKEND CWD TIMEOUT_MS COMMAND...
 *
 * TIMEOUT_MS is the time-out of the sbx_run_start run; when it is not 0, sbx_exec (which has
 * none, and would wait for ever on a plugin that never returns) is skipped: "exec: skipped".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/sbx.h"

typedef sbx_manager* (*manager_new_fn)(const char*, sbx_error**);
typedef void (*manager_free_fn)(sbx_manager*);
typedef char* (*transform_fn)(sbx_manager*, const char*, const char*, const char* const*,
                              const char*, sbx_error**);
typedef char* (*exec_fn)(sbx_manager*, const char*, const char*, const char* const*, const char*,
                         unsigned, sbx_error**);
typedef sbx_run* (*run_start_fn)(sbx_manager*, const sbx_run_options*, sbx_error**);
typedef char* (*run_wait_fn)(sbx_run*, sbx_error**);
typedef void (*run_free_fn)(sbx_run*);
typedef const char* (*error_message_fn)(const sbx_error*);
typedef void (*error_free_fn)(sbx_error*);
typedef void (*string_free_fn)(char*);

static void* symbol(void* library, const char* name) {
  void* found = dlsym(library, name);
  if (found == NULL) {
    fprintf(stderr, "capi_plugin_calls: %s: %s\n", name, dlerror());
    exit(2);
  }
  return found;
}

/* A function pointer from dlsym's object pointer (POSIX guarantees the conversion; ISO C has
 * none, so the bytes are copied). */
#define LOAD(variable, name)                     \
  do {                                           \
    void* found_ = symbol(library, name);        \
    memcpy(&(variable), &found_, sizeof found_); \
  } while (0)

static error_message_fn error_message;
static error_free_fn error_free;
static string_free_fn string_free;

/* "<what>: <json>" or "<what>: error: <message>", one line. */
static void print_result(const char* what, char* json, sbx_error* error) {
  if (json != NULL) {
    printf("%s: %s\n", what, json);
    string_free(json);
  } else {
    printf("%s: error: %s\n", what, error != NULL ? error_message(error) : "(none)");
  }
  if (error != NULL) error_free(error);
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: capi_plugin_calls LIBSBX BACKEND CWD TIMEOUT_MS COMMAND...\n");
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "capi_plugin_calls: %s\n", dlerror());
    return 2;
  }
  manager_new_fn manager_new;
  LOAD(manager_new, "sbx_manager_new");
  manager_free_fn manager_free;
  LOAD(manager_free, "sbx_manager_free");
  transform_fn transform;
  LOAD(transform, "sbx_transform");
  exec_fn exec;
  LOAD(exec, "sbx_exec");
  run_start_fn run_start;
  LOAD(run_start, "sbx_run_start");
  run_wait_fn run_wait;
  LOAD(run_wait, "sbx_run_wait");
  run_free_fn run_free;
  LOAD(run_free, "sbx_run_free");
  LOAD(error_message, "sbx_error_message");
  LOAD(error_free, "sbx_error_free");
  LOAD(string_free, "sbx_string_free");

  const char* backend = argv[2];
  const char* cwd = argv[3];
  const unsigned long long timeout_ms = strtoull(argv[4], NULL, 10);
  const char* const* command = (const char* const*)(argv + 5);
  const char* policy =
      "{\"version\": 1, \"filesystem\": {\"kind\": \"restricted\", \"entries\": [{\"path\": "
      "\":root\", \"access\": \"read\"}, {\"path\": \":cwd\", \"access\": \"write\"}]}, "
      "\"network\": {\"mode\": \"restricted\"}}";

  sbx_error* error = NULL;
  sbx_manager* manager = manager_new(backend, &error);
  if (manager == NULL) {
    print_result("manager", NULL, error);
    return 1;
  }
  error = NULL;
  char* plan = transform(manager, policy, cwd, command, "require", &error);
  print_result("transform", plan, error);

  if (timeout_ms == 0) {
    error = NULL;
    char* report = exec(manager, policy, cwd, command, "require", 0, &error);
    print_result("exec", report, error);
  } else {
    printf("exec: skipped\n");
  }

  sbx_run_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.policy_json = policy;
  options.cwd = cwd;
  options.argv = command;
  options.preference = "require";
  options.timeout_ms = timeout_ms;
  error = NULL;
  sbx_run* run = run_start(manager, &options, &error);
  if (run == NULL) {
    print_result("run", NULL, error);
  } else {
    error = NULL;
    char* report = run_wait(run, &error);
    print_result("run", report, error);
    run_free(run);
  }
  manager_free(manager);
  printf("alive\n");
  return 0;
}
