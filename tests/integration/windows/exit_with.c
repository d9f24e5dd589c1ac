/* A small Windows program for the sbx.exe wine test (core/cross/run_cli_tests.sh): prints each
 * argument on its own line ("arg1=..."), then exits with the code its first argument names. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) printf("arg%d=%s\n", i, argv[i]);
  return argc > 1 ? atoi(argv[1]) : 0;
}
