/* The watchdog of asynchronous work (watchdog.h): a list of pending items,
 * each with the time it was enqueued, polled by one thread. The thread
 * sleeps on a condition variable between polls, so stopping it takes no
 * longer than waking it. Allocations through the core's hook (ct__calloc),
 * freed with free() (what ct__free is, and what a plugin can call). */
#define _POSIX_C_SOURCE 200809L
#include "dist/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"

typedef struct watch_item {
  struct watch_item *next;
  void *item;
  double start; /* monotonic seconds */
  char op[64];
} watch_item;

struct ct_watchdog {
  ct_watchdog_hooks hooks;
  double limit_s, period_s;
  pthread_mutex_t lock;
  pthread_cond_t wake; /* signalled by stop */
  pthread_t thread;
  watch_item *head, *tail; /* oldest first */
  int pending;
  bool stopping, fired;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Unlinks it (prev: its predecessor, NULL at the head); lock held. */
static void unlink_item(ct_watchdog *w, watch_item *prev, watch_item *it) {
  if (prev)
    prev->next = it->next;
  else
    w->head = it->next;
  if (w->tail == it) w->tail = prev;
  w->pending--;
}

static void release_item(ct_watchdog *w, watch_item *it) {
  if (w->hooks.release) w->hooks.release(w->hooks.ctx, it->item);
  free(it);
}

/* One poll of every item, oldest first; lock held. Returns the item that
 * failed or timed out (unlinked, *failed telling which, msg why), else NULL. */
static watch_item *poll_items(ct_watchdog *w, bool *failed, char *msg, size_t size) {
  double t = now_s();
  watch_item *prev = NULL;
  for (watch_item *it = w->head; it;) {
    watch_item *next = it->next;
    msg[0] = '\0';
    ct_watch_state s = w->hooks.poll(w->hooks.ctx, it->item, msg, size);
    if (s == CT_WATCH_DONE) {
      unlink_item(w, prev, it);
      release_item(w, it);
    } else if (s == CT_WATCH_FAILED || t - it->start > w->limit_s) {
      unlink_item(w, prev, it);
      *failed = s == CT_WATCH_FAILED;
      return it;
    } else {
      prev = it;
    }
    it = next;
  }
  return NULL;
}

static void *watchdog_main(void *arg) {
  ct_watchdog *w = arg;
  if (w->hooks.thread_start) w->hooks.thread_start(w->hooks.ctx);
  char msg[512];
  pthread_mutex_lock(&w->lock);
  while (!w->stopping) {
    if (!w->fired) {
      bool failed = false;
      watch_item *bad = poll_items(w, &failed, msg, sizeof msg);
      bool group = false;
      if (!bad && w->hooks.group_failed) {
        msg[0] = '\0';
        group = w->hooks.group_failed(w->hooks.ctx, msg, sizeof msg);
      }
      if (bad || group) {
        w->fired = true; /* once: the hooks end the job, or the user stops us */
        pthread_mutex_unlock(&w->lock);
        if (group)
          w->hooks.failed(w->hooks.ctx, NULL, msg);
        else if (failed)
          w->hooks.failed(w->hooks.ctx, bad->op, msg);
        else
          w->hooks.timed_out(w->hooks.ctx, bad->op, now_s() - bad->start, w->limit_s);
        pthread_mutex_lock(&w->lock);
        if (bad) release_item(w, bad);
        continue;
      }
    }
    /* Sleep a period, or until stopped (the realtime clock of the condition
     * variable only bounds the nap: a jump of it shortens or lengthens one
     * period, never the limit, which is measured on the monotonic clock). */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double ns = (double)until.tv_nsec + w->period_s * 1e9;
    until.tv_sec += (time_t)(ns / 1e9);
    until.tv_nsec = (long)(ns - 1e9 * (double)(time_t)(ns / 1e9));
    if (!w->stopping) pthread_cond_timedwait(&w->wake, &w->lock, &until);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

ct_watchdog *ct__watchdog_start(const char *op, const ct_watchdog_hooks *hooks, double limit_s,
                                double period_s) {
  if (!hooks || !hooks->poll || !hooks->timed_out || !hooks->failed || !(limit_s > 0) ||
      !(period_s > 0))
    return ct__fail(CT_ERR_INTERNAL,
                    "%s: watchdog needs poll, timed_out, failed, a limit > 0 "
                    "and a period > 0 (limit %g s, period %g s)",
                    op, limit_s, period_s);
  ct_watchdog *w = ct__calloc(1, sizeof *w);
  if (!w) return ct__fail(CT_ERR_OOM, "%s: out of memory for the collectives' watchdog", op);
  w->hooks = *hooks;
  w->limit_s = limit_s;
  w->period_s = period_s;
  int rc = pthread_mutex_init(&w->lock, NULL);
  if (rc == 0 && (rc = pthread_cond_init(&w->wake, NULL)) != 0) pthread_mutex_destroy(&w->lock);
  if (rc == 0 && (rc = pthread_create(&w->thread, NULL, watchdog_main, w)) != 0) {
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
  }
  if (rc != 0) {
    free(w);
    return ct__fail(rc == ENOMEM || rc == EAGAIN ? CT_ERR_OOM : CT_ERR_INTERNAL,
                    "%s: cannot start the collectives' watchdog thread: %s", op, strerror(rc));
  }
  return w;
}

ct_status ct__watchdog_watch(ct_watchdog *w, const char *op, void *item) {
  watch_item *it = ct__calloc(1, sizeof *it);
  if (!it) return ct__fail_status(CT_ERR_OOM, "%s: out of memory for the watchdog's list", op);
  it->item = item;
  it->start = now_s();
  snprintf(it->op, sizeof it->op, "%s", op);
  pthread_mutex_lock(&w->lock);
  if (w->tail)
    w->tail->next = it;
  else
    w->head = it;
  w->tail = it;
  w->pending++;
  pthread_mutex_unlock(&w->lock);
  return CT_OK;
}

int ct__watchdog_pending(ct_watchdog *w) {
  pthread_mutex_lock(&w->lock);
  int n = w->pending;
  pthread_mutex_unlock(&w->lock);
  return n;
}

bool ct__watchdog_fired(ct_watchdog *w) {
  pthread_mutex_lock(&w->lock);
  bool f = w->fired;
  pthread_mutex_unlock(&w->lock);
  return f;
}

void ct__watchdog_stop(ct_watchdog *w) {
  if (!w) return;
  pthread_mutex_lock(&w->lock);
  w->stopping = true;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  while (w->head) {
    watch_item *it = w->head;
    w->head = it->next;
    release_item(w, it);
  }
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
  free(w);
}
