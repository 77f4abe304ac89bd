/* progress.c: the progress of an epoch on stderr. On a terminal, one line
 * redrawn with '\r' at most 10 times a second (bar, batches, running loss,
 * images/s, ETA); otherwise a plain line every 10% of the epoch. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_begin(cli_progress *p, bool quiet, int64_t epoch, int64_t epochs, int64_t total,
                        int64_t start_batch) {
  *p = (cli_progress){.tty = isatty(STDERR_FILENO) == 1,
                      .quiet = quiet,
                      .epoch = epoch,
                      .epochs = epochs,
                      .total = total,
                      .start_batch = start_batch,
                      .t0 = cli_now()};
  int64_t step = total / 10 > 0 ? total / 10 : 1;
  p->next_line = (start_batch / step + 1) * step;
}

static void format_eta(double s, char *buf, size_t n) {
  if (!(s >= 0) || s > 99 * 3600) {
    snprintf(buf, n, "--:--");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, n, "%02ld:%02ld", t / 60, t % 60);
}

/* Whether a line is due at `now` (a tty: 0.1 s since the last draw; else a
 * new tenth of the epoch; always at the end). */
static bool due_at(const cli_progress *p, int64_t done, double now) {
  if (p->quiet) return false;
  if (done >= p->total) return true;
  return p->tty ? now - p->last_draw >= 0.1 : done >= p->next_line;
}

bool cli_progress_due(const cli_progress *p, int64_t done) { return due_at(p, done, cli_now()); }

void cli_progress_update(cli_progress *p, int64_t done, double loss, int64_t images) {
  double now = cli_now(), elapsed = now - p->t0;
  if (!due_at(p, done, now)) return;
  p->last_draw = now;
  double ips = elapsed > 0 ? (double)images / elapsed : 0;
  int64_t batches_here = done - p->start_batch;
  double eta = batches_here > 0 ? elapsed / (double)batches_here * (double)(p->total - done) : -1;
  char etas[24];
  format_eta(eta, etas, sizeof etas);
  if (p->tty) {
    enum { BAR = 24 };
    char bar[BAR + 1];
    int fill = p->total > 0 ? (int)(BAR * done / p->total) : BAR;
    for (int i = 0; i < BAR; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[BAR] = '\0';
    char line[200];
    int len =
        snprintf(line, sizeof line, "epoch %lld/%lld [%s] %lld/%lld loss %.4f %.0f img/s ETA %s",
                 (long long)p->epoch + 1, (long long)p->epochs, bar, (long long)done,
                 (long long)p->total, loss, ips, etas);
    if (len < 0) return;
    if (len >= (int)sizeof line) len = (int)sizeof line - 1;
    /* Pad over a longer previous line instead of relying on terminal escapes. */
    fprintf(stderr, "\r%s%*s", line, p->width > len ? p->width - len : 0, "");
    p->width = len;
    fflush(stderr);
  } else {
    int64_t step = p->total / 10 > 0 ? p->total / 10 : 1;
    while (p->next_line <= done) p->next_line += step;
    fprintf(stderr, "epoch %lld/%lld: batch %lld/%lld (%.0f%%) loss %.4f %.0f img/s ETA %s\n",
            (long long)p->epoch + 1, (long long)p->epochs, (long long)done, (long long)p->total,
            p->total > 0 ? 100.0 * (double)done / (double)p->total : 100.0, loss, ips, etas);
  }
}

void cli_progress_end(cli_progress *p) {
  if (p->quiet || !p->tty || p->width == 0) return;
  fprintf(stderr, "\r%*s\r", p->width, "");
  fflush(stderr);
  p->width = 0;
}
