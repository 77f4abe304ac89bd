/* metrics.c: the --metrics file of `ctensor train`, one JSON line per epoch.
 *
 * Every write is checked and flushed: a full disk (or /dev/full) ends the
 * run with exit 1 and the reason, rather than lines vanishing under exit 0.
 * On --resume the lines of epochs the checkpoint does not hold are dropped
 * first, so that each epoch keeps exactly one line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int write_failed(cli_metrics *m, int err) {
  if (m->failed) return CLI_FAIL; /* said once */
  m->failed = true;
  fprintf(stderr, "ctensor train: writing the metrics to %s: %s\n", cli_shown(m->path),
          strerror(err ? err : EIO));
  return CLI_FAIL;
}

/* Drops the lines of epochs past complete_epochs from the regular file at
 * path (a device or a pipe is left as it is: it cannot be rewritten, and
 * reading one may never end). */
static bool trim(const char *path, int64_t complete_epochs) {
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return true; /* nothing to trim */
  FILE *in = fopen(path, "r");
  if (!in) return false;
  size_t len = strlen(path) + 8;
  char *tmp = malloc(len);
  FILE *out = NULL;
  bool ok = false;
  if (!tmp) goto done;
  snprintf(tmp, len, "%s.trim", path);
  if (!(out = fopen(tmp, "w"))) goto done;
  char line[4096];
  while (fgets(line, sizeof line, in)) {
    long long e;
    if (sscanf(line, "{\"epoch\": %lld", &e) == 1 && e > complete_epochs) continue;
    fputs(line, out);
  }
  ok = !ferror(in) && !ferror(out);
done:
  fclose(in);
  if (out && fclose(out) != 0) ok = false;
  if (ok)
    ok = rename(tmp, path) == 0;
  else if (tmp)
    remove(tmp);
  free(tmp);
  return ok;
}

int cli_metrics_open(cli_metrics *m, const char *path, bool resume, int64_t complete_epochs) {
  *m = (cli_metrics){.path = path};
  if (!path) return CLI_OK;
  errno = 0;
  if ((resume && !trim(path, complete_epochs)) || !(m->f = fopen(path, resume ? "a" : "w"))) {
    fprintf(stderr, "ctensor train: cannot open %s: %s\n", cli_shown(path),
            strerror(errno ? errno : EIO));
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* A JSON number, or null for nan/inf. */
static void json_num(FILE *f, const char *key, double v, bool comma) {
  if (isfinite(v))
    fprintf(f, "\"%s\": %.9g%s", key, v, comma ? ", " : "");
  else
    fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
}

int cli_metrics_write(cli_metrics *m, const cli_epoch_report *r) {
  if (!m->f) return CLI_OK;
  FILE *f = m->f;
  fprintf(f, "{\"epoch\": %lld, ", (long long)r->epoch);
  json_num(f, "loss", r->loss, true);
  json_num(f, "accuracy", r->accuracy, true);
  json_num(f, "test_loss", r->test_loss, true);
  fprintf(f, "\"test_correct\": %lld, \"test_samples\": %lld, ", (long long)r->test_correct,
          (long long)r->test_samples);
  json_num(f, "lr", r->lr, true);
  json_num(f, "seconds", r->seconds, true);
  json_num(f, "images_per_second", r->images_per_second, true);
  json_num(f, "data_wait_seconds", r->data_wait_seconds, true);
  json_num(f, "eval_seconds", r->eval_seconds, false);
  fprintf(f, "}\n");
  errno = 0;
  if (fflush(f) != 0 || ferror(f)) return write_failed(m, errno);
  return CLI_OK;
}

int cli_metrics_close(cli_metrics *m) {
  if (!m->f) return CLI_OK;
  bool bad = ferror(m->f) != 0;
  errno = 0;
  bad |= fclose(m->f) != 0;
  m->f = NULL;
  return bad ? write_failed(m, errno) : CLI_OK;
}
