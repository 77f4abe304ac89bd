/* ctensor's CPU thread pool (core/parallel.h).
 *
 * One job at a time. The caller that takes the pool (a compare-and-swap on
 * `busy`) stores the job's function and context, then publishes its tasks in
 * one word, `claim` = (number of tasks << 24) | next task, bumps `generation`
 * and wakes the workers that sleep on it. Everyone, the caller included,
 * claims a task with a compare-and-swap of `claim` from (n, i) to (n, i + 1),
 * i < n. A successful claim is always a task of the current job: the caller
 * waits until all its tasks are done (`done` == n) before it lets go of the
 * pool, so no claim word of a finished job can come back with tasks left, and
 * a worker reads the function and context only after its claim succeeded. A
 * worker that slept through a whole job just finds no task.
 *
 * Idle workers and the waiting caller spin for CT_SPIN_NS, then sleep on a
 * futex: sleeping at once would add a wake-up (several microseconds) to every
 * parallel loop of a training step; spinning long (libgomp spins for
 * milliseconds unless told otherwise) takes the CPU from the data loader's
 * threads and from other processes exactly when they need it.
 *
 * Sleeping handshakes are Dekker-style (each side stores, then loads the
 * other's word, all sequentially consistent): a worker counts itself in
 * `sleepers` before it looks for work, the caller publishes work before it
 * reads `sleepers`, so either the worker sees the work or the caller sees the
 * sleeper; the same between `caller_sleeps` and `done`. */
#define _GNU_SOURCE
#include "core/parallel.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

/* How long an idle thread spins before it sleeps. */
#define CT_SPIN_NS 20000
#define CT_MAX_WORKERS 255
/* Tasks per job in the claim word (more are grouped into blocks). */
#define CT_TASK_BITS 24
#define CT_MAX_TASKS ((int64_t)1 << CT_TASK_BITS)

static struct {
  pthread_mutex_t lifecycle; /* starting and stopping workers */
  int nworkers;              /* running workers */
  pthread_t threads[CT_MAX_WORKERS];
  atomic_bool busy;       /* a caller holds the pool */
  atomic_bool stop;       /* workers exit */
  atomic_uint generation; /* bumped for each job: the workers' futex word */
  atomic_int sleepers;    /* workers asleep, or about to be, on generation */
  _Atomic(ct_task_fn) fn;
  _Atomic(void *) ctx;
  _Atomic uint64_t claim; /* (tasks << CT_TASK_BITS) | next task */
  atomic_uint done;       /* tasks finished: the waiting caller's futex word */
  atomic_int caller_sleeps;
} pool = {.lifecycle = PTHREAD_MUTEX_INITIALIZER};

static void futex_wait(atomic_uint *addr, unsigned expected) {
  syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static void futex_wake(atomic_uint *addr, int n) {
  syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins until cond() or CT_SPIN_NS pass; true if cond() became true. */
static bool spin_until(bool (*cond)(void)) {
  int64_t deadline = 0;
  for (unsigned i = 1;; i++) {
    if (cond()) return true;
    cpu_relax();
    if ((i & 63) == 0) {
      int64_t t = now_ns();
      if (!deadline)
        deadline = t + CT_SPIN_NS;
      else if (t > deadline)
        return false;
    }
  }
}

static inline uint64_t claim_tasks(uint64_t v) { return v >> CT_TASK_BITS; }
static inline uint64_t claim_next(uint64_t v) { return v & (CT_MAX_TASKS - 1); }

/* Claims and runs tasks of the current job until none is left. */
static void work(void) {
  uint64_t v = atomic_load(&pool.claim);
  for (;;) {
    uint64_t n = claim_tasks(v), i = claim_next(v);
    if (i >= n) return;
    if (!atomic_compare_exchange_weak(&pool.claim, &v, v + 1)) continue;
    atomic_load_explicit(&pool.fn, memory_order_relaxed)(
        (int64_t)i, atomic_load_explicit(&pool.ctx, memory_order_relaxed));
    if (atomic_fetch_add(&pool.done, 1) + 1 == n && atomic_load(&pool.caller_sleeps))
      futex_wake(&pool.done, 1);
    v = atomic_load(&pool.claim);
  }
}

static bool work_or_stop(void) {
  uint64_t v = atomic_load_explicit(&pool.claim, memory_order_relaxed);
  return claim_next(v) < claim_tasks(v) || atomic_load_explicit(&pool.stop, memory_order_relaxed);
}

static void *worker_main(void *unused) {
  (void)unused;
  for (;;) {
    if (!spin_until(work_or_stop)) {
      unsigned g = atomic_load(&pool.generation);
      atomic_fetch_add(&pool.sleepers, 1);
      while (!work_or_stop() && atomic_load(&pool.generation) == g) futex_wait(&pool.generation, g);
      atomic_fetch_sub(&pool.sleepers, 1);
    }
    if (atomic_load(&pool.stop)) return NULL;
    work();
  }
}

static void stop_workers_locked(void) {
  if (pool.nworkers == 0) return;
  atomic_store(&pool.stop, true);
  atomic_fetch_add(&pool.generation, 1);
  futex_wake(&pool.generation, INT_MAX);
  for (int i = 0; i < pool.nworkers; i++) pthread_join(pool.threads[i], NULL);
  pool.nworkers = 0;
  atomic_store(&pool.stop, false);
}

/* A forked child has none of the parent's threads: it starts afresh. */
static void after_fork_child(void) {
  pool.nworkers = 0;
  atomic_store(&pool.busy, false);
  atomic_store(&pool.stop, false);
  atomic_store(&pool.sleepers, 0);
  atomic_store(&pool.claim, 0);
  pthread_mutex_init(&pool.lifecycle, NULL);
}
static void register_fork_handler(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Runs `want` workers (starting or restarting them); returns how many run.
 * Workers block every signal, so the program's handlers run on its threads. */
static int ensure_workers(int want) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_fork_handler);
  if (want > CT_MAX_WORKERS) want = CT_MAX_WORKERS;
  pthread_mutex_lock(&pool.lifecycle);
  if (pool.nworkers != want) {
    stop_workers_locked();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (pool.nworkers < want &&
           pthread_create(&pool.threads[pool.nworkers], NULL, worker_main, NULL) == 0)
      pool.nworkers++; /* if one cannot start, the others do its share */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  int n = pool.nworkers;
  pthread_mutex_unlock(&pool.lifecycle);
  return n;
}

static bool job_done(void) {
  uint64_t v = atomic_load_explicit(&pool.claim, memory_order_relaxed);
  return atomic_load_explicit(&pool.done, memory_order_acquire) == claim_tasks(v);
}

/* More than CT_MAX_TASKS tasks: each pool task runs a block of them. */
typedef struct blocks {
  int64_t ntasks, per;
  ct_task_fn fn;
  void *ctx;
} blocks;
static void run_block(int64_t b, void *vctx) {
  const blocks *k = vctx;
  int64_t end = (b + 1) * k->per < k->ntasks ? (b + 1) * k->per : k->ntasks;
  for (int64_t i = b * k->per; i < end; i++) k->fn(i, k->ctx);
}

void ct__parallel_run(int64_t ntasks, ct_task_fn fn, void *ctx) {
  if (ntasks <= 0) return;
  if (ntasks >= CT_MAX_TASKS) {
    blocks k = {ntasks, (ntasks + CT_MAX_TASKS / 2 - 1) / (CT_MAX_TASKS / 2), fn, ctx};
    ct__parallel_run((ntasks + k.per - 1) / k.per, run_block, &k);
    return;
  }
  int nt = ct__num_threads();
  bool free_pool = false;
  if (ntasks == 1 || nt <= 1 || !atomic_compare_exchange_strong(&pool.busy, &free_pool, true)) {
    for (int64_t i = 0; i < ntasks; i++) fn(i, ctx); /* serial, nested or concurrent */
    return;
  }
  if (ensure_workers(nt - 1) == 0) {
    atomic_store(&pool.busy, false);
    for (int64_t i = 0; i < ntasks; i++) fn(i, ctx);
    return;
  }
  atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
  atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
  atomic_store(&pool.done, 0);
  atomic_store(&pool.caller_sleeps, 0);
  atomic_store(&pool.claim, (uint64_t)ntasks << CT_TASK_BITS);
  atomic_fetch_add(&pool.generation, 1);
  if (atomic_load(&pool.sleepers) > 0) futex_wake(&pool.generation, INT_MAX);
  work();
  if (!spin_until(job_done)) {
    atomic_store(&pool.caller_sleeps, 1);
    for (unsigned d; (d = atomic_load(&pool.done)) != (unsigned)ntasks;) futex_wait(&pool.done, d);
  }
  atomic_store_explicit(&pool.busy, false, memory_order_release);
}
