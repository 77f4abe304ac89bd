/* main.c: the `ctensor` program: dispatches to a command (info, train, eval).
 * Each command parses its own options with getopt_long (options.c). */
#define _GNU_SOURCE /* setenv, execv */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* OpenMP threads that wait for work sleep instead of spinning.
 *
 * libgomp spins (OMP_WAIT_POLICY unset: up to ~300k iterations) at every
 * barrier and between parallel regions. A training step runs hundreds of
 * small parallel regions; when another process holds one of the cores, a
 * spinning thread burns the time slice its preempted team mate needs, and an
 * epoch of the default CNN on 2 cores went from 8 s to 70-85 s (measured with
 * one other busy process; with OMP_WAIT_POLICY=PASSIVE: 8-15 s, and no slower
 * on a quiet machine). libgomp reads the variable when it loads, before main,
 * so the program sets it and executes itself again, once; an explicit
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT is left alone. */
static void prefer_passive_wait(char **argv) {
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  /* The resolved path, not /proc/self/exe: ps and top name the process after
   * the file executed. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0 || n >= (ssize_t)sizeof self - 1) return;
  self[n] = '\0';
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv(self, argv);
  /* No /proc: go on with the policy as it is (the variable now set reaches
   * no one but child processes). */
}

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
  prefer_passive_wait(argv);
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
