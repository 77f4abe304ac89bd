/* fork() in a program whose other threads use ctensor: the child inherits
 * every lock as it was at the fork, held by threads it does not have. The
 * host block cache, the random generators and the thread pool must still
 * work in the child (the pool starts workers of its own), and CUDA, whose
 * driver state does not survive a fork, fails there with a clear error.
 *
 * No time is measured: each child arms an alarm as a hang guard only, so a
 * child that deadlocks dies of SIGALRM and the test names it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"

#define CHILDREN 60
#define HANG_GUARD_S 120       /* far beyond what a child needs, even on a loaded machine */
#define BIG ((int64_t)1 << 20) /* floats: host cache blocks, split across the pool */

static atomic_bool stop;
static atomic_long rounds;

/* Loops that keep the locks busy, so that forks land while they are held:
 * cached blocks taken and given back, random draws (the generator's lock),
 * parallel ops (the pool) in scopes. */
static void *churn_alloc(void *unused) {
  (void)unused;
  while (!atomic_load(&stop)) {
    ct_tensor *a = ct_empty(CT_SHAPE(64 * 1024), NULL);
    ct_free(a);
    atomic_fetch_add(&rounds, 1);
  }
  return NULL;
}
static void *churn_random(void *unused) {
  (void)unused;
  while (!atomic_load(&stop)) ct_free(ct_randn(CT_SHAPE(4), NULL));
  return NULL;
}
static void *churn_parallel(void *unused) {
  (void)unused;
  while (!atomic_load(&stop)) {
    ct_scope_begin();
    ct_tensor *x = ct_ones(CT_SHAPE(BIG), NULL);
    (void)(x ? ct_add(x, x) : NULL);
    ct_scope_end();
    ct_empty_cache(ct_cpu());
  }
  return NULL;
}

/* The child's work: 0 when the sum of 1 + 2 over BIG elements is right. */
static int child_main(void) {
  alarm(HANG_GUARD_S);
  ct_tensor *a = ct_full(CT_SHAPE(BIG), 1.0, NULL);
  ct_tensor *b = ct_full(CT_SHAPE(BIG), 2.0, NULL);
  ct_tensor *c = a && b ? ct_add(a, b) : NULL;
  ct_tensor *r = ct_rand(CT_SHAPE(1000), NULL);
  ct_tensor *s = c ? ct_sum(c, NULL) : NULL;
  double sum = 0;
  if (!r || !s || ct_item(s, &sum) != CT_OK || sum != 3.0 * (double)BIG) {
    fprintf(stderr, "child %d: sum %g, expected %g (%s)\n", (int)getpid(), sum, 3.0 * (double)BIG,
            ct_last_error_message());
    return 1;
  }
  return 0;
}

/* Waits for pid; "" when it exited 0, else what happened. */
static const char *outcome(pid_t pid, char *buf, size_t size) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return "waitpid failed";
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "";
  if (WIFSIGNALED(st))
    snprintf(buf, size, "killed by signal %d%s", WTERMSIG(st),
             WTERMSIG(st) == SIGALRM ? " (the hang guard: it deadlocked)" : "");
  else
    snprintf(buf, size, "exit status %d", WEXITSTATUS(st));
  return buf;
}

/* AddressSanitizer's allocator (GCC 12's libsanitizer) does not take its
 * own locks around fork(): a child forked while another thread is inside
 * asan_malloc waits forever in SizeClassAllocator64::GetFromAllocator, before
 * any of ctensor's code runs. The case is the library's, so it runs in the
 * other builds (Release, ThreadSanitizer, portable). */
#if defined(__SANITIZE_ADDRESS__)
#define CT_ASAN_FORK_UNSAFE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_ASAN_FORK_UNSAFE 1
#endif
#endif

CT_TEST(fork_while_threads_allocate) {
#ifdef CT_ASAN_FORK_UNSAFE
  ct_test_skip("AddressSanitizer's allocator is not fork-safe while threads allocate");
  return;
#endif
  ct_set_num_threads(4);
  enum { THREADS = 4 };
  void *(*const churn[THREADS])(void *) = {churn_alloc, churn_alloc, churn_random, churn_parallel};
  pthread_t t[THREADS];
  atomic_store(&stop, false);
  for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, churn[i], NULL) == 0);
  while (atomic_load(&rounds) < 10) sched_yield(); /* every lock in use */
  pid_t kids[CHILDREN];
  for (int i = 0; i < CHILDREN; i++) {
    fflush(NULL);
    kids[i] = fork();
    if (kids[i] == 0) _exit(child_main());
    CHECK_MSG(kids[i] > 0, "fork %d failed", i);
    long seen = atomic_load(&rounds); /* the next fork lands in other work */
    while (kids[i] > 0 && atomic_load(&rounds) == seen) sched_yield();
  }
  int hung = 0;
  for (int i = 0; i < CHILDREN; i++) {
    if (kids[i] <= 0) continue;
    char why[96];
    const char *what = outcome(kids[i], why, sizeof why);
    CHECK_MSG(!*what, "child %d of %d: %s", i, CHILDREN, what);
    hung += *what != '\0';
  }
  CHECK_MSG(hung == 0, "%d of %d children failed", hung, CHILDREN);
  atomic_store(&stop, true);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  /* The parent goes on as before. */
  ct_tensor *x = ct_full(CT_SHAPE(BIG), 1.0, NULL);
  ct_tensor *s = x ? ct_sum(ct_add(x, x), NULL) : NULL;
  double sum = 0;
  CHECK(s && ct_item(s, &sum) == CT_OK && sum == 2.0 * (double)BIG);
}

/* The CUDA backend, once loaded in the parent, is refused in the child with
 * a message saying why (whether or not this machine has a GPU). */
CT_TEST(fork_child_refuses_cuda) {
  ct_backend_info info;
  CHECK_STATUS_OK(ct_backend_get_info(1, &info));
  if (!info.available) return; /* a build without the CUDA backend: nothing to refuse */
  (void)ct_cuda_device_count();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(HANG_GUARD_S);
    ct_tensor *t = ct_empty(CT_SHAPE(4), &(ct_tensor_opts){.device = ct_cuda(0)});
    bool refused = !t && strstr(ct_last_error_message(), "fork()") != NULL;
    if (!refused) fprintf(stderr, "child: CUDA not refused: %s\n", ct_last_error_message());
    /* The CPU still works. */
    ct_tensor *c = ct_ones(CT_SHAPE(10), NULL);
    _exit(refused && c ? 0 : 1);
  }
  CHECK(pid > 0);
  char why[96];
  const char *what = pid > 0 ? outcome(pid, why, sizeof why) : "";
  CHECK_MSG(!*what, "the child: %s", what);
  /* The parent keeps its backend. */
  CHECK(ct_backend_get_info(1, &info) == CT_OK && info.available);
}
