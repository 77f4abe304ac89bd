/* The NCCL engine's watchdog (src/dist/watchdog.c) on the CPU, with fake
 * items in place of CUDA events: done items are released and fire nothing,
 * an item never done fires timed_out once with its op's name, a failed item
 * or group fires failed, nothing fires after that, items still watched at
 * stop are released and the thread ends. Several threads watch while another
 * completes the items (labelled tsan: ctest -L tsan in a
 * CTENSOR_SANITIZE_THREAD build). Waits are for events, bounded only as a
 * guard against a hang. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "ct_test.h"
#include "dist/watchdog.h"

typedef struct fake_item {
  atomic_int state; /* ct_watch_state */
  atomic_int polls;
  atomic_bool released;
} fake_item;

/* What the hooks saw. */
typedef struct watch_log {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int timeouts, failures, thread_starts;
  char op[64], msg[128];
  double waited, limit;
  atomic_bool group_error;
} watch_log;

static void log_init(watch_log *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->changed, NULL);
}

static void log_destroy(watch_log *l) {
  pthread_cond_destroy(&l->changed);
  pthread_mutex_destroy(&l->lock);
}

static void on_thread_start(void *ctx) {
  watch_log *l = ctx;
  pthread_mutex_lock(&l->lock);
  l->thread_starts++;
  pthread_mutex_unlock(&l->lock);
}

static ct_watch_state poll_fake(void *ctx, void *item, char *msg, size_t size) {
  (void)ctx;
  fake_item *f = item;
  atomic_fetch_add(&f->polls, 1);
  int s = atomic_load(&f->state);
  if (s == CT_WATCH_FAILED) snprintf(msg, size, "fake failure of item %p", item);
  return (ct_watch_state)s;
}

static bool group_fake(void *ctx, char *msg, size_t size) {
  watch_log *l = ctx;
  if (!atomic_load(&l->group_error)) return false;
  snprintf(msg, size, "remote rank disconnected");
  return true;
}

static void on_timeout(void *ctx, const char *op, double waited, double limit) {
  watch_log *l = ctx;
  pthread_mutex_lock(&l->lock);
  l->timeouts++;
  snprintf(l->op, sizeof l->op, "%s", op);
  l->waited = waited;
  l->limit = limit;
  pthread_cond_broadcast(&l->changed);
  pthread_mutex_unlock(&l->lock);
}

static void on_failed(void *ctx, const char *op, const char *msg) {
  watch_log *l = ctx;
  pthread_mutex_lock(&l->lock);
  l->failures++;
  snprintf(l->op, sizeof l->op, "%s", op ? op : "(group)");
  snprintf(l->msg, sizeof l->msg, "%s", msg);
  pthread_cond_broadcast(&l->changed);
  pthread_mutex_unlock(&l->lock);
}

static void release_fake(void *ctx, void *item) {
  (void)ctx;
  atomic_store(&((fake_item *)item)->released, true);
}

static ct_watchdog_hooks hooks_for(watch_log *l) {
  return (ct_watchdog_hooks){.ctx = l,
                             .thread_start = on_thread_start,
                             .poll = poll_fake,
                             .group_failed = group_fake,
                             .timed_out = on_timeout,
                             .failed = on_failed,
                             .release = release_fake};
}

/* Waits until timeouts + failures reaches n (a guard of 120 s against a hang). */
static bool wait_fired(watch_log *l, int n) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 120;
  pthread_mutex_lock(&l->lock);
  while (l->timeouts + l->failures < n)
    if (pthread_cond_timedwait(&l->changed, &l->lock, &until) != 0) break;
  bool ok = l->timeouts + l->failures >= n;
  pthread_mutex_unlock(&l->lock);
  return ok;
}

static void nap_ms(int ms) { nanosleep(&(struct timespec){0, ms * 1000000L}, NULL); }

/* Waits until the watchdog has no pending item (the same guard). */
static bool wait_drained(ct_watchdog *w) {
  for (int i = 0; i < 120000 && ct__watchdog_pending(w) > 0; i++) nap_ms(1);
  return ct__watchdog_pending(w) == 0;
}

CT_TEST(done_items_are_released_and_fire_nothing) {
  watch_log l;
  log_init(&l);
  ct_watchdog_hooks h = hooks_for(&l);
  ct_watchdog *w = ct__watchdog_start("test", &h, 3600, 0.001);
  CHECK_OK(w);
  if (!w) return;
  fake_item it[4] = {0};
  for (int i = 0; i < 4; i++) {
    atomic_store(&it[i].state, i < 2 ? CT_WATCH_DONE : CT_WATCH_PENDING);
    CHECK(ct__watchdog_watch(w, "dist_all_reduce", &it[i]) == CT_OK);
  }
  /* the last two complete later, as a GPU would */
  nap_ms(5);
  atomic_store(&it[2].state, CT_WATCH_DONE);
  atomic_store(&it[3].state, CT_WATCH_DONE);
  CHECK(wait_drained(w));
  ct__watchdog_stop(w);
  for (int i = 0; i < 4; i++) {
    CHECK(atomic_load(&it[i].released));
    CHECK(atomic_load(&it[i].polls) >= 1);
  }
  CHECK(l.timeouts == 0 && l.failures == 0);
  CHECK(l.thread_starts == 1);
  log_destroy(&l);
}

CT_TEST(an_item_never_done_times_out_once_with_its_op) {
  watch_log l;
  log_init(&l);
  ct_watchdog_hooks h = hooks_for(&l);
  ct_watchdog *w = ct__watchdog_start("test", &h, 0.05, 0.002);
  CHECK_OK(w);
  if (!w) return;
  fake_item done = {0}, stuck = {0}, later = {0};
  atomic_store(&done.state, CT_WATCH_DONE);
  atomic_store(&stuck.state, CT_WATCH_PENDING);
  atomic_store(&later.state, CT_WATCH_PENDING);
  CHECK(ct__watchdog_watch(w, "dist_broadcast", &done) == CT_OK);
  CHECK(ct__watchdog_watch(w, "dist_all_reduce", &stuck) == CT_OK);
  CHECK(wait_fired(&l, 1));
  CHECK(ct__watchdog_fired(w));
  /* fired: nothing is polled any more, so a second stuck item fires nothing */
  CHECK(ct__watchdog_watch(w, "dist_barrier", &later) == CT_OK);
  nap_ms(30);
  int later_polls = atomic_load(&later.polls);
  ct__watchdog_stop(w);
  pthread_mutex_lock(&l.lock);
  CHECK(l.timeouts == 1 && l.failures == 0);
  CHECK_MSG(strcmp(l.op, "dist_all_reduce") == 0, "timed out op '%s'", l.op);
  CHECK_MSG(l.waited > 0.05 && l.limit == 0.05, "waited %g s, limit %g s", l.waited, l.limit);
  pthread_mutex_unlock(&l.lock);
  CHECK(later_polls == 0);
  CHECK(atomic_load(&done.released) && atomic_load(&stuck.released) &&
        atomic_load(&later.released));
  log_destroy(&l);
}

CT_TEST(a_failed_item_fires_failed_with_its_message) {
  watch_log l;
  log_init(&l);
  ct_watchdog_hooks h = hooks_for(&l);
  ct_watchdog *w = ct__watchdog_start("test", &h, 3600, 0.001);
  CHECK_OK(w);
  if (!w) return;
  fake_item ok = {0}, bad = {0};
  atomic_store(&ok.state, CT_WATCH_PENDING);
  atomic_store(&bad.state, CT_WATCH_PENDING);
  CHECK(ct__watchdog_watch(w, "dist_all_reduce", &ok) == CT_OK);
  CHECK(ct__watchdog_watch(w, "dist_broadcast", &bad) == CT_OK);
  atomic_store(&bad.state, CT_WATCH_FAILED);
  CHECK(wait_fired(&l, 1));
  ct__watchdog_stop(w);
  CHECK(l.failures == 1 && l.timeouts == 0);
  CHECK_MSG(strcmp(l.op, "dist_broadcast") == 0, "failed op '%s'", l.op);
  CHECK_MSG(strstr(l.msg, "fake failure") != NULL, "message '%s'", l.msg);
  CHECK(atomic_load(&ok.released) && atomic_load(&bad.released));
  log_destroy(&l);
}

CT_TEST(a_group_error_fires_failed_without_an_op) {
  watch_log l;
  log_init(&l);
  ct_watchdog_hooks h = hooks_for(&l);
  ct_watchdog *w = ct__watchdog_start("test", &h, 3600, 0.001);
  CHECK_OK(w);
  if (!w) return;
  nap_ms(5);
  CHECK(!ct__watchdog_fired(w));
  atomic_store(&l.group_error, true);
  CHECK(wait_fired(&l, 1));
  ct__watchdog_stop(w);
  CHECK(l.failures == 1 && l.timeouts == 0);
  CHECK(strcmp(l.op, "(group)") == 0);
  CHECK_MSG(strcmp(l.msg, "remote rank disconnected") == 0, "message '%s'", l.msg);
  log_destroy(&l);
}

CT_TEST(stop_releases_pending_items_and_ends_the_thread) {
  watch_log l;
  log_init(&l);
  ct_watchdog_hooks h = hooks_for(&l);
  /* a long period: stop must wake the thread, not wait the period out */
  ct_watchdog *w = ct__watchdog_start("test", &h, 3600, 3600);
  CHECK_OK(w);
  if (!w) return;
  fake_item it[5] = {0};
  for (int i = 0; i < 5; i++) {
    atomic_store(&it[i].state, CT_WATCH_PENDING);
    CHECK(ct__watchdog_watch(w, "dist_all_reduce", &it[i]) == CT_OK);
  }
  CHECK(ct__watchdog_pending(w) == 5);
  ct__watchdog_stop(w);
  for (int i = 0; i < 5; i++) CHECK(atomic_load(&it[i].released));
  CHECK(l.timeouts == 0 && l.failures == 0 && l.thread_starts == 1);
  ct__watchdog_stop(NULL); /* no-op */
  log_destroy(&l);
}

CT_TEST(bad_hooks_are_an_error) {
  ct_watchdog_hooks h = {.poll = poll_fake};
  CHECK(ct__watchdog_start("dist_init", &h, 1, 0.1) == NULL);
  CHECK(ct_last_error() == CT_ERR_INTERNAL && strstr(ct_last_error_message(), "dist_init"));
  watch_log l;
  log_init(&l);
  h = hooks_for(&l);
  CHECK(ct__watchdog_start("dist_init", &h, 0, 0.1) == NULL);
  CHECK(ct__watchdog_start("dist_init", &h, 1, -1) == NULL);
  ct_clear_error();
  log_destroy(&l);
}

/* ---- Several threads enqueue while another completes (ThreadSanitizer) ---- */

#define N_WATCHERS 3
#define N_ITEMS 200

typedef struct race {
  ct_watchdog *w;
  fake_item items[N_WATCHERS][N_ITEMS];
  atomic_int enqueued;
} race;

typedef struct watcher_arg {
  race *r;
  int id;
} watcher_arg;

static void *watcher(void *arg) {
  watcher_arg *a = arg;
  for (int i = 0; i < N_ITEMS; i++) {
    fake_item *f = &a->r->items[a->id][i];
    atomic_store(&f->state, CT_WATCH_PENDING);
    if (ct__watchdog_watch(a->r->w, "dist_all_reduce", f) == CT_OK)
      atomic_fetch_add(&a->r->enqueued, 1);
  }
  return NULL;
}

static void *completer(void *arg) {
  race *r = arg;
  for (int i = 0; i < N_ITEMS; i++)
    for (int t = 0; t < N_WATCHERS; t++) {
      /* wait until the watcher has enqueued it (state set), then end it */
      fake_item *f = &r->items[t][i];
      while (atomic_load(&f->state) != CT_WATCH_PENDING) sched_yield();
      atomic_store(&f->state, CT_WATCH_DONE);
    }
  return NULL;
}

CT_TEST(watchers_and_completion_on_other_threads) {
  watch_log l;
  log_init(&l);
  ct_watchdog_hooks h = hooks_for(&l);
  race *r = calloc(1, sizeof *r);
  CHECK(r != NULL);
  if (!r) return;
  for (int t = 0; t < N_WATCHERS; t++)
    for (int i = 0; i < N_ITEMS; i++) atomic_store(&r->items[t][i].state, -1);
  r->w = ct__watchdog_start("test", &h, 3600, 0.0005);
  CHECK_OK(r->w);
  if (r->w) {
    pthread_t th[N_WATCHERS + 1];
    watcher_arg args[N_WATCHERS];
    for (int t = 0; t < N_WATCHERS; t++) {
      args[t] = (watcher_arg){r, t};
      CHECK(pthread_create(&th[t], NULL, watcher, &args[t]) == 0);
    }
    CHECK(pthread_create(&th[N_WATCHERS], NULL, completer, r) == 0);
    for (int t = 0; t <= N_WATCHERS; t++) pthread_join(th[t], NULL);
    CHECK(atomic_load(&r->enqueued) == N_WATCHERS * N_ITEMS);
    CHECK(wait_drained(r->w));
    ct__watchdog_stop(r->w);
    int released = 0;
    for (int t = 0; t < N_WATCHERS; t++)
      for (int i = 0; i < N_ITEMS; i++) released += atomic_load(&r->items[t][i].released);
    CHECK(released == N_WATCHERS * N_ITEMS);
    CHECK(l.timeouts == 0 && l.failures == 0);
  }
  free(r);
  log_destroy(&l);
}
