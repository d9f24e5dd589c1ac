/* sbx_manager_new_with_options' plugin_dirs, from C (issue #39 point 5): a plugin in a trusted
 * extra directory loads; the same plugin in a directory others can write is refused with the
 * reason; a relative directory is a C error. Against the libsbx of the build tree, with a
 * directory made below a trusted base (argv[1]: the install prefix, root-owned from "/"), and the
 * fixture plugin argv[2]. Prints "N passed, N failed"; exits 77 (skipped, with the reason) where
 * no directory can be trusted. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbx/sbx.h"

static int passed = 0;
static int failed = 0;

static void check(int ok, const char* what, const char* detail) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    fprintf(stderr, "FAILED: %s\n%s\n", what, detail != NULL ? detail : "");
  }
}

static int copy_file(const char* from, const char* to) {
  FILE* in = fopen(from, "rb");
  FILE* out = in != NULL ? fopen(to, "wb") : NULL;
  char buffer[65536];
  size_t n;
  int ok = in != NULL && out != NULL;
  while (ok && (n = fread(buffer, 1, sizeof buffer, in)) > 0) ok = fwrite(buffer, 1, n, out) == n;
  if (in != NULL) fclose(in);
  if (out != NULL && fclose(out) != 0) ok = 0;
  return ok && chmod(to, 0644) == 0;
}

/* sbx_backends_json of a manager over `dir`; NULL with the error printed. */
static char* backends_with(const char* dir) {
  const char* dirs[] = {dir, NULL};
  sbx_manager_options options;
  sbx_error* error = NULL;
  sbx_manager* manager;
  char* json;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.plugin_dirs = dirs;
  manager = sbx_manager_new_with_options(&options, &error);
  if (manager == NULL) {
    fprintf(stderr, "sbx_manager_new_with_options: %s\n", sbx_error_message(error));
    sbx_error_free(error);
    return NULL;
  }
  json = sbx_backends_json(manager, 0, &error);
  if (json == NULL) {
    fprintf(stderr, "sbx_backends_json: %s\n", sbx_error_message(error));
    sbx_error_free(error);
  }
  sbx_manager_free(manager);
  return json;
}

int main(int argc, char** argv) {
  char dir[4096];
  char plugin[4200];
  char* json;
  struct stat st;
  if (argc != 3) {
    fprintf(stderr, "usage: %s TRUSTED_BASE FIXTURE_PLUGIN\n", argv[0]);
    return 2;
  }
  if (geteuid() != 0 || stat(argv[1], &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0) {
    printf(
        "skipped: needs root and a root-owned base %s without group/other write, so that a "
        "directory below it passes the trusted loader\n",
        argv[1]);
    return 77;
  }
  snprintf(dir, sizeof dir, "%s/capi-plugin-dir-XXXXXX", argv[1]);
  if (mkdtemp(dir) == NULL || chmod(dir, 0755) != 0) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(plugin, sizeof plugin, "%s/sbx-backend-fixture-good.so", dir);
  if (!copy_file(argv[2], plugin)) {
    perror(argv[2]);
    return 1;
  }

  /* A trusted directory: the plugin loads, isolated as every vendor's. */
  json = backends_with(dir);
  check(json != NULL && strstr(json, "\"name\": \"fixture-good\"") != NULL &&
            strstr(json, plugin) != NULL,
        "the plugin in the trusted plugin_dirs entry loads", json);
  sbx_string_free(json);

  /* The same directory writable by others: refused, with the reason. */
  chmod(dir, 0777);
  json = backends_with(dir);
  check(json != NULL && strstr(json, "\"name\": \"fixture-good\"") == NULL &&
            strstr(json, "is writable by group and others (mode 0777)") != NULL,
        "the plugin in a directory others can write is rejected with the reason", json);
  sbx_string_free(json);
  chmod(dir, 0755);

  /* A relative directory is the caller's error. */
  {
    const char* dirs[] = {"plugins", NULL};
    sbx_manager_options options;
    sbx_error* error = NULL;
    sbx_manager* manager;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.plugin_dirs = dirs;
    manager = sbx_manager_new_with_options(&options, &error);
    check(
        manager == NULL && error != NULL && sbx_error_kind(error) == SBX_ERROR_INVALID_INPUT &&
            strstr(sbx_error_message(error), "'plugins' is not an absolute directory path") != NULL,
        "a relative plugin directory is an invalid-input error",
        error != NULL ? sbx_error_message(error) : "no error");
    sbx_manager_free(manager);
    sbx_error_free(error);
  }

  /* A struct_size below the first version is refused. */
  {
    sbx_manager_options options;
    sbx_error* error = NULL;
    sbx_manager* manager;
    memset(&options, 0, sizeof options);
    options.struct_size = 1;
    manager = sbx_manager_new_with_options(&options, &error);
    check(manager == NULL && error != NULL &&
              strstr(sbx_error_message(error), "set it to sizeof(sbx_manager_options)") != NULL,
          "a struct_size below the first version is refused",
          error != NULL ? sbx_error_message(error) : "no error");
    sbx_manager_free(manager);
    sbx_error_free(error);
  }

  unlink(plugin);
  rmdir(dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
