/* A watchdog for work that completes asynchronously: the NCCL engine's
 * collectives (nccl.c), which it cannot wait for with a deadline on the
 * calling thread, since the GPU runs them after the call returns. As
 * PyTorch's ProcessGroupNCCL watchdog: a thread, started with the
 * communicator, polls each watched item (nccl.c: a CUDA event recorded after
 * the collective on the NCCL stream) every period; an item that stays
 * pending past the time limit, or an item or group that reports an error,
 * fires the timed_out or failed hook once, on the watchdog's thread (nccl.c:
 * aborts the communicator and ends the job). After that the watchdog polls
 * nothing more and waits to be stopped.
 *
 * Plain C and threads, no CUDA or NCCL: tests/test_dist_watchdog.c drives it
 * with fake items on the CPU (and under ThreadSanitizer). */
#ifndef CT_DIST_WATCHDOG_H
#define CT_DIST_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>

#include "ctensor.h"

typedef enum { CT_WATCH_PENDING, CT_WATCH_DONE, CT_WATCH_FAILED } ct_watch_state;

/* What the watchdog asks of its user; every hook runs on the watchdog's
 * thread (release also on the thread that stops it), never two at once.
 * poll, group_failed and release run with the watchdog's lock held (they
 * must not call the watchdog back); timed_out and failed without it. ctx is
 * passed to each. */
typedef struct ct_watchdog_hooks {
  void *ctx;
  /* Optional: first thing on the watchdog's thread (nccl.c: makes the
   * communicator's device current for the event queries). */
  void (*thread_start)(void *ctx);
  /* Whether the work behind item has ended; on CT_WATCH_FAILED writes why
   * into msg (size bytes). */
  ct_watch_state (*poll)(void *ctx, void *item, char *msg, size_t size);
  /* Optional: an error of the whole group (NCCL's asynchronous error),
   * checked every period; true, writing why into msg, when there is one. */
  bool (*group_failed)(void *ctx, char *msg, size_t size);
  /* Item of op has been pending waited_s > limit_s seconds. */
  void (*timed_out)(void *ctx, const char *op, double waited_s, double limit_s);
  /* Item of op (op NULL: the group) failed, saying msg. */
  void (*failed)(void *ctx, const char *op, const char *msg);
  /* Optional: frees an item the watchdog no longer watches (done, fired,
   * or still pending when it stops). */
  void (*release)(void *ctx, void *item);
} ct_watchdog_hooks;

typedef struct ct_watchdog ct_watchdog;

/* Starts the thread, which polls every period_s seconds (> 0) and fires
 * after limit_s seconds (> 0). NULL on failure, with the error recorded
 * (naming op). hooks is copied. */
ct_watchdog *ct__watchdog_start(const char *op, const ct_watchdog_hooks *hooks, double limit_s,
                                double period_s);
/* Watches item for op (copied; at most 63 characters kept) from now on. On
 * failure (CT_ERR_OOM, recorded naming op) the caller keeps item. */
ct_status ct__watchdog_watch(ct_watchdog *w, const char *op, void *item);
/* Items watched and not yet done or fired. */
int ct__watchdog_pending(ct_watchdog *w);
/* Whether timed_out or failed has fired. */
bool ct__watchdog_fired(ct_watchdog *w);
/* Stops and joins the thread, releases the items still watched and frees
 * w. NULL is a no-op. */
void ct__watchdog_stop(ct_watchdog *w);

#endif /* CT_DIST_WATCHDOG_H */
