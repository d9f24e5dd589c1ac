/* An embedder's C program, built against the packaged libsbx through pkg-config (sbx.pc):
 *   cc consumer.c $(pkg-config --cflags --libs sbx)
 * Usage: consumer WORKSPACE OUTSIDE_FILE. Runs a write inside WORKSPACE (must pass) and a write
 * to OUTSIDE_FILE (must be denied and classified as the sandbox's doing). Exit 0 = all held. */
#include <sbx/sbx.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char* kPolicy = "{\"version\":1,\"preset\":\"workspace-write\"}";

static int fail(const char* what, sbx_error* error) {
  fprintf(stderr, "FAIL %s: %s\n", what, error ? sbx_error_message(error) : "");
  if (error) sbx_error_free(error);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: consumer WORKSPACE OUTSIDE_FILE", NULL);
  const char* workspace = argv[1];
  const char* outside = argv[2];
  printf("libsbx %s\n", sbx_version());

  sbx_error* error = NULL;
  sbx_manager* manager = sbx_manager_new(NULL, &error);
  if (!manager) return fail("sbx_manager_new", error);

  const char* inside_argv[] = {"sh", "-c", "echo hello > made-by-c.txt", NULL};
  char* report = sbx_exec(manager, kPolicy, workspace, inside_argv, "require", 0, &error);
  if (!report) return fail("sbx_exec inside", error);
  printf("inside: %s\n", report);
  int ok = strstr(report, "\"code\":0") != NULL && strstr(report, "\"final\":\"none\"") == NULL;
  sbx_string_free(report);
  char made[4096];
  snprintf(made, sizeof made, "%s/made-by-c.txt", workspace);
  if (!ok || access(made, F_OK) != 0)
    return fail("a write inside the workspace did not pass", NULL);

  char script[4096];
  snprintf(script, sizeof script, "echo x > '%s'", outside);
  const char* outside_argv[] = {"sh", "-c", script, NULL};
  report = sbx_exec(manager, kPolicy, workspace, outside_argv, "require", SBX_EXEC_CAPTURE_STDERR,
                    &error);
  if (!report) return fail("sbx_exec outside", error);
  printf("outside: %s\n", report);
  ok = strstr(report, "\"code\":0") == NULL &&
       strstr(report, "\"likely_sandbox_denial\":true") != NULL;
  sbx_string_free(report);
  if (!ok || access(outside, F_OK) == 0)
    return fail("a write outside the workspace was not denied and classified", NULL);

  sbx_manager_free(manager);
  printf("all checks passed\n");
  return 0;
}
