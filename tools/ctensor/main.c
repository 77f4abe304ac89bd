/* main.c: the `ctensor` program: dispatches to a command (info, train, eval,
 * generate, predict).
 * Each command parses its own options with getopt_long (options.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int run_command(int argc, char **argv) {
  if (argc < 2) {
    cli_usage(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  /* Commands see argv from their own name on. */
  if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
  if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
  if (!strcmp(cmd, "generate")) return cmd_generate(argc - 1, argv + 1);
  if (!strcmp(cmd, "predict")) return cmd_predict(argc - 1, argv + 1);
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    cli_usage(stdout);
    return CLI_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("ctensor %s\n", ct_library_version());
    return CLI_OK;
  }
  fprintf(stderr, "ctensor: unknown command '%s'\n\n", cli_shown(cmd));
  cli_usage(stderr);
  return CLI_USAGE;
}

int main(int argc, char **argv) {
  int rc = run_command(argc, argv);
  /* The results (the accuracy lines) go to stdout: one that could not be
   * written (a full disk, a closed file) must not end in exit 0. */
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "ctensor: writing the output: %s\n", errno ? strerror(errno) : "write error");
    if (rc == CLI_OK) rc = CLI_FAIL;
  }
  return rc;
}
