/* The C API of sbx.dll (core/cross/capi.cmake) from a C program, under Wine
 * (core/cross/run_cli_tests.sh): capi_smoke EXIT_WITH_EXE WORK_DIR. Prints one "ok: ..." line
 * per check and "FAIL: ..." for each failure; exits 0 only when every check passed. */
#include <stdio.h>
#include <string.h>

#include "sbx/sbx.h"

static int failures = 0;

static void check(int passed, const char* what, const char* detail) {
  if (passed) {
    printf("ok: %s\n", what);
  } else {
    printf("FAIL: %s: %s\n", what, detail != NULL ? detail : "(null)");
    ++failures;
  }
}

static const char* message_of(const sbx_error* error) {
  return error != NULL ? sbx_error_message(error) : "no error";
}

int main(int argc, char** argv) {
  if (argc != 3) {
    printf("usage: capi_smoke EXIT_WITH_EXE WORK_DIR\n");
    return 2;
  }
  const char* exit_with = argv[1];
  const char* work = argv[2];
  sbx_error* error = NULL;

  check(strlen(sbx_version()) > 0, "sbx_version", sbx_version());

  sbx_manager* manager = sbx_manager_new("windows", &error);
  check(manager != NULL, "sbx_manager_new(\"windows\")", message_of(error));
  if (manager == NULL) return 1;

  /* The plugin comes from the install beside sbx.dll, not from this program's directory. */
  char* backends = sbx_backends_json(manager, 1, &error);
  check(backends != NULL && strstr(backends, "\"name\": \"windows\"") != NULL &&
            strstr(backends, "sbx-stage/lib/sbx/backends/sbx-backend-windows.dll") != NULL &&
            strstr(backends, "\"rejected\": []") != NULL,
        "sbx_backends_json lists the installed windows backend", backends);
  sbx_string_free(backends);

  /* Explain: both questions for a Windows cwd; the default policy needs what the windows
   * backend does not claim, which is said, not hidden. */
  char* explained =
      sbx_explain(manager, "{\"version\":1,\"preset\":\"workspace-write\"}", work, NULL, &error);
  check(explained != NULL && strstr(explained, "\"should_sandbox\": true") != NULL &&
            strstr(explained, "syscall_filter") != NULL,
        "sbx_explain", explained != NULL ? explained : message_of(error));
  sbx_string_free(explained);

  /* Transform of a policy that wants a sandbox no backend here can give: a C error. */
  const char* const refused_argv[] = {exit_with, "0", NULL};
  sbx_error* refusal = NULL;
  char* plan = sbx_transform(manager, "{\"version\":1,\"preset\":\"workspace-write\"}", work,
                             refused_argv, NULL, &refusal);
  check(plan == NULL && refusal != NULL, "sbx_transform refuses an unenforceable policy",
        plan != NULL ? plan : "no error");
  sbx_string_free(plan);
  sbx_error_free(refusal);

  /* Exec of a policy that needs no sandbox: the program's exit status comes back. */
  const char* const run_argv[] = {exit_with, "7", "two words", NULL};
  char* report = sbx_exec(manager, "{\"version\":1,\"preset\":\"danger-full-access\"}", work,
                          run_argv, NULL, 0, &error);
  check(report != NULL && strstr(report, "\"code\":7") != NULL, "sbx_exec: status 7",
        report != NULL ? report : message_of(error));
  sbx_string_free(report);

  /* Exec of the unenforceable policy: a report with the refusal, nothing run. */
  char* refused = sbx_exec(manager, "{\"version\":1,\"preset\":\"workspace-write\"}", work,
                           refused_argv, NULL, 0, &error);
  check(refused != NULL && strstr(refused, "\"exit\":null") != NULL &&
            strstr(refused, "\"error\":null") == NULL,
        "sbx_exec refuses an unenforceable policy in its report",
        refused != NULL ? refused : message_of(error));
  sbx_string_free(refused);

  /* (The JSON of these calls is pretty-printed: `"key": value`.) The pure parts: the model-facing
   * context and the permission algebra. */
  char* context = sbx_context("{\"version\":1,\"preset\":\"read-only\"}", work, 1, &error);
  check(context != NULL && strstr(context, "\"network\"") != NULL, "sbx_context",
        context != NULL ? context : message_of(error));
  sbx_string_free(context);
  char* widened = sbx_policy_widen("{\"version\":1,\"preset\":\"read-only\"}",
                                   "{\"version\":1,\"preset\":\"workspace-write\"}", &error);
  check(widened != NULL && strstr(widened, "\"write\"") != NULL, "sbx_policy_widen",
        widened != NULL ? widened : message_of(error));
  sbx_string_free(widened);

  /* Bad input is a C error, never a crash. */
  sbx_error* bad = NULL;
  char* none = sbx_explain(manager, "{ not json", work, NULL, &bad);
  check(none == NULL && bad != NULL, "malformed policy is an error", none);
  sbx_error_free(bad);

  sbx_manager_free(manager);
  if (failures == 0)
    printf("capi_smoke: ok\n");
  else
    printf("capi_smoke: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
