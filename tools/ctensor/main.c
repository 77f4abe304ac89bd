/* main.c: the `ctensor` program: dispatches to a command (info, train, eval).
 * Each command parses its own options with getopt_long (options.c). */
#include <string.h>

#include "cli.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    cli_usage(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  /* Commands see argv from their own name on. */
  if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
  if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    cli_usage(stdout);
    return CLI_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("ctensor %s\n", ct_library_version());
    return CLI_OK;
  }
  fprintf(stderr, "ctensor: unknown command '%s'\n\n", cmd);
  cli_usage(stderr);
  return CLI_USAGE;
}
