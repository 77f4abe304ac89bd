/* A program under an address-space limit (`ulimit -v`, set by
 * check_low_vmem.sh): every allocation the limit refuses is a CT_ERR_OOM
 * naming the operation, never a crash or a hang, and the library goes on
 * working once memory is given back.
 *   low_vmem LIMIT_MIB BLAS
 * LIMIT_MIB is the limit the script set; BLAS is "fits" when the limit leaves
 * room for the CPU BLAS (a matmul must work), "none" when it does not (a
 * matmul must fail with CT_ERR_OOM naming the limit). With room, memory
 * taken after the BLAS was loaded must not make a product hang: new
 * threads multiply at once with the address space nearly full (OpenBLAS
 * would wait forever for new buffers; ctensor's loop runs instead). The
 * same for LAPACK's routines, which have no loop of ctensor's: each ends
 * with its result or CT_ERR_OOM naming the limit. */
#include <ctensor.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;
#define EXPECT(cond, ...)                                                        \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "low_vmem: line %d: ", __LINE__);                          \
      fprintf(stderr, __VA_ARGS__);                                              \
      fprintf(stderr, " (last error %s: %s)\n", ct_status_name(ct_last_error()), \
              ct_last_error_message());                                          \
      failures++;                                                                \
    }                                                                            \
  } while (0)

/* The call returned NULL with CT_ERR_OOM and a message containing `says`
 * (the allocator's message gives the size and what ctensor holds). */
static void expect_oom(const void *result, const char *op, const char *says) {
  EXPECT(result == NULL, "%s succeeded beyond the limit", op);
  EXPECT(ct_last_error() == CT_ERR_OOM, "%s: not CT_ERR_OOM", op);
  EXPECT(strstr(ct_last_error_message(), says) != NULL, "%s: the message does not say '%s'", op,
         says);
  ct_clear_error();
}

enum { THREADS = 6 };
static pthread_barrier_t up, go;
static bool use_lapack; /* the threads invert instead of multiplying */
static _Atomic int lapack_refused;
static void *matmul_thread(void *a) {
  ct_free(ct_ones(CT_SHAPE(16), NULL)); /* its malloc arena, before memory is filled */
  pthread_barrier_wait(&up);
  pthread_barrier_wait(&go); /* all at once: more calls than the BLAS has buffers */
  if (!use_lapack) return ct_matmul(a, a);
  ct_tensor *inv = ct_linalg_inv(a);
  if (!inv) { /* a refusal must name the limit (error state is per thread) */
    EXPECT(ct_last_error() == CT_ERR_OOM && strstr(ct_last_error_message(), "ulimit -v"),
           "inv refused with another error");
    lapack_refused++;
  }
  return inv;
}

/* a @ a on THREADS new threads at once (more concurrent BLAS calls than ever
 * before, so OpenBLAS wants new buffers) with all but ~96 MiB of the address
 * space taken: every product ends and equals `expected` (computed before).
 * The threads start (stacks, malloc arenas) before memory is filled. */
static void products_with_memory_full(ct_tensor *a, const ct_tensor *expected) {
  pthread_t t[THREADS];
  void *got[THREADS] = {0};
  int started = 0;
  pthread_barrier_init(&up, NULL, THREADS + 1);
  pthread_barrier_init(&go, NULL, THREADS + 1);
  while (started < THREADS && pthread_create(&t[started], NULL, matmul_thread, a) == 0) started++;
  EXPECT(started == THREADS, "%d of %d threads started", started, THREADS);
  if (started < THREADS) _exit(1); /* the others wait at the barrier */
  pthread_barrier_wait(&up);
  enum { most = 4096 };
  static ct_tensor *held[most];
  int n = 0;
  while (n < most && (held[n] = ct_empty(CT_SHAPE(1 << 20), NULL))) n++; /* 4 MiB each */
  EXPECT(n > 24 && n < most, "filling memory: %d MiB held at the refusal", n * 4);
  ct_clear_error();
  for (int i = 0; i < 24 && n > 0; i++) ct_free(held[--n]);
  ct_empty_cache(ct_cpu());
  pthread_barrier_wait(&go);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], &got[i]);
  pthread_barrier_destroy(&up);
  pthread_barrier_destroy(&go);
  for (int i = 0; i < n; i++) ct_free(held[i]);
  for (int i = 0; i < THREADS; i++) {
    EXPECT(got[i] != NULL || use_lapack, "matmul on thread %d with the address space nearly full",
           i);
    if (!got[i]) continue;
    ct_tensor *d = ct_sub(got[i], expected);
    ct_tensor *worst = d ? ct_max(ct_abs(d), NULL) : NULL;
    double w = 1;
    EXPECT(worst && ct_item(worst, &w) == CT_OK && w < 1e-3,
           "thread %d: the product with the memory full differs from the BLAS's by %g", i, w);
    ct_free(got[i]);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: low_vmem LIMIT_MIB fits|none\n");
    return 2;
  }
  int64_t limit = (int64_t)atoi(argv[1]) << 20;
  bool blas_fits = strcmp(argv[2], "fits") == 0;
  ct_set_num_threads(4); /* workers' stacks count against the limit too */

  /* Small work runs. */
  ct_tensor *x = ct_randn(CT_SHAPE(1000), NULL);
  ct_tensor *y = x ? ct_relu(ct_add(x, x)) : NULL;
  EXPECT(y != NULL, "small ops under the limit");

  /* One tensor larger than the limit, and one near it. */
  expect_oom(ct_empty(CT_SHAPE(limit), NULL), "empty", "out of host memory allocating");
  expect_oom(ct_zeros(CT_SHAPE(limit / 4), NULL), "zeros", "out of host memory allocating");

  /* A result that does not fit next to its input. */
  ct_tensor *big = ct_ones(CT_SHAPE(limit * 3 / 5 / 4), NULL);
  EXPECT(big != NULL, "a tensor of 3/5 of the limit");
  if (big) {
    expect_oom(ct_mul_scalar(big, 2.0), "mul", "out of host memory allocating");
    ct_free(big);
  }

  /* Tensors of 8 MiB until the limit refuses one; then all given back. */
  enum { most = 4096 };
  static ct_tensor *held[most];
  int n = 0;
  while (n < most && (held[n] = ct_empty(CT_SHAPE(2 << 20), NULL))) n++;
  EXPECT(n < most && ct_last_error() == CT_ERR_OOM, "filling memory ends in CT_ERR_OOM");
  ct_clear_error();
  for (int i = 0; i < n; i++) ct_free(held[i]);
  ct_empty_cache(ct_cpu());
  ct_tensor *again = ct_ones(CT_SHAPE(limit / 4 / 4), NULL);
  EXPECT(again != NULL, "memory given back can be used again");
  ct_free(again);

  /* The BLAS needs room for its buffers. */
  ct_tensor *a = ct_randn(CT_SHAPE(256, 256), NULL);
  ct_tensor *c = a ? ct_matmul(a, a) : NULL;
  if (blas_fits) {
    EXPECT(c != NULL, "matmul with room for the BLAS");
  } else {
    expect_oom(c, "matmul", "matmul: the address-space limit (ulimit -v)");
  }
  if (blas_fits && c) {
    ct_tensor *b = ct_randn(CT_SHAPE(512, 512), NULL), *bb = b ? ct_matmul(b, b) : NULL;
    EXPECT(bb != NULL, "a 512 x 512 matmul");
    if (bb) products_with_memory_full(b, bb);
    /* LAPACK (inv: getrf + getrs) the same way: a well-conditioned matrix */
    ct_tensor *m = ct_mul_scalar(ct_randn(CT_SHAPE(256, 256), NULL), 0.01);
    ct_tensor *w = m ? ct_add(m, ct_eye(256, 256, NULL)) : NULL, *wi = w ? ct_linalg_inv(w) : NULL;
    EXPECT(wi != NULL, "inv with room for the BLAS");
    if (wi) {
      use_lapack = true;
      products_with_memory_full(w, wi);
      use_lapack = false;
      printf("low_vmem: %d of %d inversions with the memory full refused (CT_ERR_OOM)\n",
             (int)lapack_refused, THREADS);
    }
  }
  /* Everything else still works after a refusal. */
  double sum = 0;
  ct_tensor *s = ct_sum(ct_mul(x, x), NULL);
  EXPECT(s != NULL && ct_item(s, &sum) == CT_OK && sum > 0, "ops after the refusals");
  if (failures == 0) printf("low_vmem: limit %s MiB, blas %s: ok\n", argv[1], argv[2]);
  return failures ? 1 : 0;
}
