/* CPU least squares through LAPACK's rank-revealing drivers (backend.h's
 * lstsq slot): gelsy (complete orthogonal factorization with column
 * pivoting), gelsd (SVD, divide and conquer) and gelss (SVD), the drivers
 * torch.linalg.lstsq offers on the CPU besides gels (which the op composes
 * from QR on every device).
 *
 * As lapack.c: the routines are resolved from the library blas.c opened
 * (OpenBLAS ships LAPACK), declared here without lapack.h, one call per
 * matrix, the batch spread over the pool with at most
 * ct__blas_max_threads() callers. Workspace sizes are asked once (they
 * depend on the shapes only) and each task allocates its own. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_kernels.h"
#include "core/alloc.h"
#include "core/parallel.h"

typedef int lapack_int; /* Debian's OpenBLAS: 32-bit integers (LP64) */

/* rcond is a float for the s routines, a double for the d ones (void *) */
typedef void gelsy_fn(const lapack_int *m, const lapack_int *n, const lapack_int *nrhs, void *a,
                      const lapack_int *lda, void *b, const lapack_int *ldb, lapack_int *jpvt,
                      const void *rcond, lapack_int *rank, void *work, const lapack_int *lwork,
                      lapack_int *info);
typedef void gelsd_fn(const lapack_int *m, const lapack_int *n, const lapack_int *nrhs, void *a,
                      const lapack_int *lda, void *b, const lapack_int *ldb, void *s,
                      const void *rcond, lapack_int *rank, void *work, const lapack_int *lwork,
                      lapack_int *iwork, lapack_int *info);
typedef void gelss_fn(const lapack_int *m, const lapack_int *n, const lapack_int *nrhs, void *a,
                      const lapack_int *lda, void *b, const lapack_int *ldb, void *s,
                      const void *rcond, lapack_int *rank, void *work, const lapack_int *lwork,
                      lapack_int *info);

/* [0]: f32 (s...), [1]: f64 (d...) */
static struct {
  pthread_once_t once;
  bool ok;
  char missing[16];
  gelsy_fn *gelsy[2];
  gelsd_fn *gelsd[2];
  gelss_fn *gelss[2];
} drivers = {.once = PTHREAD_ONCE_INIT};

static void resolve(void) {
  static const char *const names[6] = {"sgelsy_", "dgelsy_", "sgelsd_",
                                       "dgelsd_", "sgelss_", "dgelss_"};
  void *h = ct__blas_handle(), *fns[6];
  for (int i = 0; i < 6; i++)
    if (!(fns[i] = h ? dlsym(h, names[i]) : NULL)) {
      snprintf(drivers.missing, sizeof drivers.missing, "%s", names[i]);
      return;
    }
  for (int p = 0; p < 2; p++) {
    *(void **)&drivers.gelsy[p] = fns[p];
    *(void **)&drivers.gelsd[p] = fns[2 + p];
    *(void **)&drivers.gelss[p] = fns[4 + p];
  }
  drivers.ok = true;
}

typedef struct lstsq_job {
  ct_lstsq_driver driver;
  int p;                   /* 0: f32, 1: f64 */
  size_t es;               /* element size */
  lapack_int m, n, k, ldb; /* a is m x n, k right-hand sides of ldb rows */
  char *a, *b, *s;         /* (B, n, m), (B, k, ldb), (B, min(m, n)) or NULL */
  int64_t *rank;           /* (B) */
  lapack_int *info;        /* (B) */
  union {
    float f;
    double d;
  } rcond;
  lapack_int lwork, liwork; /* per call */
  atomic_bool failed;       /* a task's workspace could not be allocated */
  atomic_bool no_room;      /* a call was not made: ct__blas_call_begin refused it */
} lstsq_job;

/* One driver call on matrix i; work NULL with lwork -1: the workspace query
 * (its size lands in *work_query, liwork in *iwork). */
static void call(const lstsq_job *j, int64_t i, void *work, lapack_int lwork, lapack_int *iwork,
                 lapack_int *jpvt) {
  lapack_int m = j->m, n = j->n, k = j->k, lda = m > 1 ? m : 1, ldb = j->ldb, rank = 0;
  lapack_int mn = m < n ? m : n;
  char *a = j->a ? j->a + (size_t)i * (size_t)m * (size_t)n * j->es : NULL;
  char *b = j->b ? j->b + (size_t)i * (size_t)k * (size_t)ldb * j->es : NULL;
  char *s = j->s ? j->s + (size_t)i * (size_t)mn * j->es : NULL;
  lapack_int info = 0;
  switch (j->driver) {
    case CT_LSTSQ_GELSY:
      drivers.gelsy[j->p](&m, &n, &k, a, &lda, b, &ldb, jpvt, &j->rcond, &rank, work, &lwork,
                          &info);
      break;
    case CT_LSTSQ_GELSD:
      drivers.gelsd[j->p](&m, &n, &k, a, &lda, b, &ldb, s, &j->rcond, &rank, work, &lwork, iwork,
                          &info);
      break;
    default:
      drivers.gelss[j->p](&m, &n, &k, a, &lda, b, &ldb, s, &j->rcond, &rank, work, &lwork, &info);
      break;
  }
  if (lwork >= 0) j->rank[i] = rank, j->info[i] = info;
}

static void run_task(int64_t i, void *ctx) {
  lstsq_job *j = ctx;
  /* work (lwork elements), then iwork (liwork) and gelsy's column pivots (n) */
  size_t bytes = (size_t)j->lwork * j->es + sizeof(lapack_int) * (size_t)(j->liwork + j->n + 1);
  char *w = ct__malloc(bytes);
  if (!w) {
    atomic_store(&j->failed, true);
    return;
  }
  lapack_int *iwork = (lapack_int *)(void *)(w + (size_t)j->lwork * j->es);
  lapack_int *jpvt = iwork + j->liwork;
  for (lapack_int c = 0; c < j->n; c++) jpvt[c] = 0; /* every column free to move */
  bool holds;
  if (ct__blas_call_begin(&holds)) {
    call(j, i, w, j->lwork, iwork, jpvt);
    ct__blas_call_end(holds);
  } else {
    atomic_store(&j->no_room, true);
  }
  ct__free(w);
}

ct_status ct__cpu_lstsq(ct_tensor *a, ct_tensor *b, ct_tensor *rank, ct_tensor *s, ct_tensor *info,
                        ct_lstsq_driver driver, double rcond) {
  static const char op[] = "linalg_lstsq";
  ct_status st = ct__blas_load(op);
  if (st != CT_OK) return st;
  pthread_once(&drivers.once, resolve);
  if (!drivers.ok)
    return ct__fail_status(CT_ERR_UNAVAILABLE,
                           "%s: the BLAS (%s) has no LAPACK routine %s: install OpenBLAS's "
                           "LAPACK (libopenblas0-pthread)",
                           op, ct__blas_describe(), drivers.missing);
  int64_t batch = a->shape[0], n = a->shape[1], m = a->shape[2];
  int64_t k = b->shape[1], ldb = b->shape[2];
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || ldb > INT32_MAX)
    return ct__fail_status(CT_ERR_ARG, "%s: a %lld x %lld matrix exceeds LAPACK's int range", op,
                           (long long)m, (long long)n);
  lstsq_job j = {.driver = driver,
                 .p = a->dtype == CT_F64,
                 .es = a->dtype == CT_F64 ? 8 : 4,
                 .m = (lapack_int)m,
                 .n = (lapack_int)n,
                 .k = (lapack_int)k,
                 .ldb = (lapack_int)ldb,
                 .a = ct__data(a),
                 .b = ct__data(b),
                 .s = s ? ct__data(s) : NULL,
                 .rank = ct__data(rank),
                 .info = ct__data(info)};
  if (j.p)
    j.rcond.d = rcond;
  else
    j.rcond.f = (float)rcond;
  if (batch == 0) return CT_OK;
  if (m == 0 || n == 0) { /* nothing to factor: rank 0, a zero solution (b is zeroed) */
    memset(j.b, 0, (size_t)(batch * k * ldb) * j.es);
    memset(j.rank, 0, sizeof(int64_t) * (size_t)batch);
    memset(j.info, 0, sizeof(lapack_int) * (size_t)batch);
    return CT_OK;
  }
  union {
    float f;
    double d;
  } wq = {0};
  lapack_int iq[2] = {0, 0}, pv = 0;
  lstsq_job q = j;
  q.a = q.b = q.s = NULL;
  call(&q, 0, &wq, -1, iq, &pv); /* the workspace query */
  double lw = j.p ? wq.d : (double)wq.f;
  j.lwork = (lapack_int)(lw > 1 ? lw : 1);
  j.liwork = driver == CT_LSTSQ_GELSD ? (iq[0] > 1 ? iq[0] : 1) : 0;
  if (ct__blas_max_threads() < ct__num_threads() || batch == 1)
    for (int64_t i = 0; i < batch; i++) run_task(i, &j);
  else
    ct__parallel_run(batch, run_task, &j);
  if (atomic_load(&j.failed))
    return ct__fail_status(CT_ERR_OOM, "%s: out of host memory for LAPACK's workspace", op);
  if (atomic_load(&j.no_room)) return ct__blas_no_room(op);
  return CT_OK;
}
