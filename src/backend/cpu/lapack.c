/* CPU factorizations through LAPACK (linalg family): LU (getrf), solves with
 * it (getrs) and Cholesky (potrf), batched over the leading dim.
 *
 * LAPACK comes with the BLAS: OpenBLAS ships it, and its routines are
 * resolved from the library blas.c opens on first use (same file, same
 * single-threaded setup), so ctensor still links no BLAS. The Fortran
 * routines are declared here (no lapack.h needed at build time), with the
 * hidden length of their character arguments that gfortran-built routines
 * expect. Each matrix is one LAPACK call; a batch is split across ctensor's
 * pool, at most ct__blas_max_threads() calls at a time, since OpenBLAS's
 * buffers are per calling thread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_kernels.h"
#include "core/alloc.h"
#include "core/parallel.h"

typedef int lapack_int; /* Debian's OpenBLAS: 32-bit integers (LP64) */

typedef void getrf_fn(const lapack_int *m, const lapack_int *n, void *a, const lapack_int *lda,
                      lapack_int *ipiv, lapack_int *info);
typedef void getrs_fn(const char *trans, const lapack_int *n, const lapack_int *nrhs, const void *a,
                      const lapack_int *lda, const lapack_int *ipiv, void *b, const lapack_int *ldb,
                      lapack_int *info, size_t trans_len);
typedef void syevd_fn(const char *jobz, const char *uplo, const lapack_int *n, void *a,
                      const lapack_int *lda, void *w, void *work, const lapack_int *lwork,
                      lapack_int *iwork, const lapack_int *liwork, lapack_int *info,
                      size_t jobz_len, size_t uplo_len);
typedef void gesdd_fn(const char *jobz, const lapack_int *m, const lapack_int *n, void *a,
                      const lapack_int *lda, void *s, void *u, const lapack_int *ldu, void *vt,
                      const lapack_int *ldvt, void *work, const lapack_int *lwork,
                      lapack_int *iwork, lapack_int *info, size_t jobz_len);
typedef void geqrf_fn(const lapack_int *m, const lapack_int *n, void *a, const lapack_int *lda,
                      void *tau, void *work, const lapack_int *lwork, lapack_int *info);
typedef void orgqr_fn(const lapack_int *m, const lapack_int *n, const lapack_int *k, void *a,
                      const lapack_int *lda, const void *tau, void *work, const lapack_int *lwork,
                      lapack_int *info);
typedef void potrf_fn(const char *uplo, const lapack_int *n, void *a, const lapack_int *lda,
                      lapack_int *info, size_t uplo_len);

/* [0]: f32 (s...), [1]: f64 (d...) */
static struct {
  pthread_once_t once;
  ct_status status;
  char error[256];
  getrf_fn *getrf[2];
  getrs_fn *getrs[2];
  potrf_fn *potrf[2];
  syevd_fn *syevd[2];
  gesdd_fn *gesdd[2];
  geqrf_fn *geqrf[2];
  orgqr_fn *orgqr[2];
} lapack = {.once = PTHREAD_ONCE_INIT};

static void resolve(void) {
  void *h = ct__blas_handle();
  enum { N = 14 };
  static const char *const names[N] = {"sgetrf_", "dgetrf_", "sgetrs_", "dgetrs_", "spotrf_",
                                       "dpotrf_", "ssyevd_", "dsyevd_", "sgesdd_", "dgesdd_",
                                       "sgeqrf_", "dgeqrf_", "sorgqr_", "dorgqr_"};
  void *fns[N];
  for (int i = 0; i < N; i++) {
    fns[i] = h ? dlsym(h, names[i]) : NULL;
    if (!fns[i]) {
      lapack.status = CT_ERR_UNAVAILABLE;
      snprintf(lapack.error, sizeof lapack.error,
               "the BLAS (%s) has no LAPACK routine %s: install OpenBLAS's LAPACK "
               "(libopenblas0-pthread)",
               ct__blas_describe(), names[i]);
      return;
    }
  }
  for (int p = 0; p < 2; p++) {
    *(void **)&lapack.getrf[p] = fns[p];
    *(void **)&lapack.getrs[p] = fns[2 + p];
    *(void **)&lapack.potrf[p] = fns[4 + p];
    *(void **)&lapack.syevd[p] = fns[6 + p];
    *(void **)&lapack.gesdd[p] = fns[8 + p];
    *(void **)&lapack.geqrf[p] = fns[10 + p];
    *(void **)&lapack.orgqr[p] = fns[12 + p];
  }
  lapack.status = CT_OK;
}

/* Loads the BLAS and LAPACK's routines (once); an error naming op if not. */
static ct_status lapack_load(const char *op) {
  ct_status st = ct__blas_load(op);
  if (st != CT_OK) return st;
  pthread_once(&lapack.once, resolve);
  if (lapack.status == CT_OK) return CT_OK;
  return ct__fail_status(lapack.status, "%s: %s", op, lapack.error);
}

static bool fits_int(int64_t v) { return v <= (int64_t)INT32_MAX; }

/* ---- One job: a routine over the matrices of a batch ------------------------ */

typedef enum {
  JOB_GETRF,
  JOB_GETRS,
  JOB_POTRF,
  JOB_SYEVD,
  JOB_GESDD,
  JOB_GEQRF,
  JOB_ORGQR
} job_kind;

typedef struct lapack_job {
  job_kind kind;
  int p;            /* 0: f32, 1: f64 */
  size_t es;        /* element size */
  int64_t batch;    /* matrices */
  lapack_int n, k;  /* order; right-hand sides per matrix (getrs) */
  char *a;          /* (batch or 1, n, n) */
  lapack_int *piv;  /* (batch or 1, n) */
  lapack_int *info; /* (batch), getrf/potrf */
  char *rhs;        /* (batch, k, n), getrs */
  bool shared_lu;   /* getrs: one LU for every batch */
  char trans;
  char *w;           /* (batch, n), syevd; s (batch, n), gesdd */
  lapack_int rows;   /* gesdd: a is rows x n, rows >= n */
  char *u, *vt;      /* gesdd: (batch, ucols, rows), (batch, n, n) */
  lapack_int ucols;  /* gesdd */
  char uplo;         /* syevd */
  char *work;        /* syevd: lwork elements per worker */
  lapack_int *iwork; /* syevd: liwork per worker */
  lapack_int lwork, liwork;
  int workers;
  const char *op;
  atomic_bool no_room; /* a call was not made: ct__blas_call_begin refused it */
} lapack_job;

static void run_one(const lapack_job *j, int64_t i, int64_t worker) {
  lapack_int n = j->n, lda = n > 1 ? n : 1, info = 0;
  size_t mat = (size_t)n * (size_t)n * j->es;
  switch (j->kind) {
    case JOB_GETRF:
      lapack.getrf[j->p](&n, &n, j->a + (size_t)i * mat, &lda, j->piv + (size_t)i * (size_t)n,
                         &j->info[i]);
      break;
    case JOB_GETRS: {
      int64_t l = j->shared_lu ? 0 : i;
      lapack.getrs[j->p](&j->trans, &n, &j->k, j->a + (size_t)l * mat, &lda,
                         j->piv + (size_t)l * (size_t)n,
                         j->rhs + (size_t)i * (size_t)j->k * (size_t)n * j->es, &lda, &info, 1);
      break;
    }
    case JOB_POTRF:
      lapack.potrf[j->p]("U", &n, j->a + (size_t)i * mat, &lda, &j->info[i], 1);
      break;
    case JOB_GESDD: {
      lapack_int r = j->rows, ldr = r > 1 ? r : 1;
      size_t ws = (size_t)worker * (size_t)j->lwork;
      lapack.gesdd[j->p](j->ucols == r && r > n ? "A" : "S", &r, &n,
                         j->a + (size_t)i * (size_t)r * (size_t)n * j->es, &ldr,
                         j->w + (size_t)i * (size_t)n * j->es,
                         j->u + (size_t)i * (size_t)r * (size_t)j->ucols * j->es, &ldr,
                         j->vt + (size_t)i * mat, &lda, j->work + ws * j->es, &j->lwork,
                         j->iwork + (size_t)worker * (size_t)j->liwork, &j->info[i], 1);
      break;
    }
    case JOB_GEQRF:
    case JOB_ORGQR: { /* a: rows x n; tau: k (j->k) per matrix */
      lapack_int r = j->rows, ldr = r > 1 ? r : 1, kk = j->k;
      char *am = j->a + (size_t)i * (size_t)r * (size_t)n * j->es;
      char *tau = j->w + (size_t)i * (size_t)kk * j->es;
      char *work = j->work + (size_t)worker * (size_t)j->lwork * j->es;
      if (j->kind == JOB_GEQRF)
        lapack.geqrf[j->p](&r, &n, am, &ldr, tau, work, &j->lwork, &info);
      else
        lapack.orgqr[j->p](&r, &n, &kk, am, &ldr, tau, work, &j->lwork, &info);
      break;
    }
    case JOB_SYEVD:
      lapack.syevd[j->p](
          "V", &j->uplo, &n, j->a + (size_t)i * mat, &lda, j->w + (size_t)i * (size_t)n * j->es,
          j->work + (size_t)worker * (size_t)j->lwork * j->es, &j->lwork,
          j->iwork + (size_t)worker * (size_t)j->liwork, &j->liwork, &j->info[i], 1, 1);
      break;
  }
}

/* Worker w takes matrices w, w + workers, ...: at most `workers` threads
 * are inside LAPACK at once. */
static void worker(int64_t w, void *ctx) {
  lapack_job *j = ctx;
  for (int64_t i = w; i < j->batch; i += j->workers) {
    bool holds;
    if (!ct__blas_call_begin(&holds)) {
      atomic_store(&j->no_room, true);
      return;
    }
    run_one(j, i, w);
    ct__blas_call_end(holds);
  }
}

/* How many threads call LAPACK for j. */
static int workers_for(const lapack_job *j) {
  int nt = ct__num_threads(), bt = ct__blas_max_threads();
  if (bt < nt) nt = bt;
  /* small matrices: one thread (the pool's wake-up costs more) */
  double work = (double)j->n * (double)j->n * (double)(j->n + j->k) * (double)j->batch;
  return work < 65536.0 || j->batch < 2 ? 1 : (int)(j->batch < nt ? j->batch : nt);
}

/* Runs j's calls; CT_ERR_OOM when the address-space limit left no room for
 * one (its matrices are then not all computed). */
static ct_status run(lapack_job *j) {
  if (!j->workers) j->workers = workers_for(j);
  if (j->workers == 1)
    worker(0, j);
  else
    ct__parallel_run(j->workers, worker, j);
  return atomic_load(&j->no_room) ? ct__blas_no_room(j->op) : CT_OK;
}

static ct_status init_job(lapack_job *j, const char *op, job_kind kind, const ct_tensor *a) {
  ct_status st = lapack_load(op);
  if (st != CT_OK) return st;
  int64_t n = a->shape[2];
  if (!fits_int(n))
    return ct__fail_status(CT_ERR_ARG, "%s: order %lld exceeds LAPACK's int range", op,
                           (long long)n);
  *j = (lapack_job){.kind = kind,
                    .p = a->dtype == CT_F64,
                    .es = ct_dtype_size(a->dtype),
                    .batch = a->shape[0],
                    .n = (lapack_int)n,
                    .a = ct__data(a),
                    .op = op};
  return CT_OK;
}

ct_status ct__cpu_lu_factor(ct_tensor *a, ct_tensor *piv, ct_tensor *info) {
  lapack_job j;
  ct_status st = init_job(&j, "lu_factor", JOB_GETRF, a);
  if (st != CT_OK) return st;
  j.piv = ct__data(piv);
  j.info = ct__data(info);
  return run(&j);
}

ct_status ct__cpu_lu_solve(const ct_tensor *lu, const ct_tensor *piv, ct_tensor *rhs, bool trans) {
  lapack_job j;
  ct_status st = init_job(&j, "lu_solve", JOB_GETRS, lu);
  if (st != CT_OK) return st;
  int64_t k = rhs->shape[1];
  bool shared = lu->shape[0] == 1;
  int64_t batch = rhs->shape[0];
  if (shared) { /* one system with every right-hand side of the batch */
    k *= batch;
    batch = 1;
  }
  if (!fits_int(k))
    return ct__fail_status(CT_ERR_ARG, "lu_solve: %lld right-hand sides exceed LAPACK's int range",
                           (long long)k);
  if (k == 0 || batch == 0 || j.n == 0) return CT_OK;
  j.batch = batch;
  j.k = (lapack_int)k;
  j.piv = ct__data(piv);
  j.rhs = ct__data(rhs);
  j.shared_lu = shared;
  j.trans = trans ? 'T' : 'N';
  return run(&j);
}

ct_status ct__cpu_cholesky(ct_tensor *a, ct_tensor *info) {
  lapack_job j;
  ct_status st = init_job(&j, "cholesky", JOB_POTRF, a);
  if (st != CT_OK) return st;
  j.info = ct__data(info);
  return run(&j);
}

/* The workspace of j (lwork elements, liwork ints) for each of its workers:
 * one buffer, or NULL with an error naming op. */
static char *workspace(lapack_job *j, const char *op, double lwork) {
  j->lwork = (lapack_int)lwork + 1;
  j->workers = workers_for(j);
  size_t per = (size_t)j->lwork * j->es + (size_t)j->liwork * sizeof(lapack_int);
  char *buf = ct__malloc(per * (size_t)j->workers);
  if (!buf) {
    ct__fail(CT_ERR_OOM, "%s: out of memory for %zu bytes of LAPACK workspace", op,
             per * (size_t)j->workers);
    return NULL;
  }
  j->work = buf;
  j->iwork = (lapack_int *)(void *)(buf + (size_t)j->lwork * j->es * (size_t)j->workers);
  return buf;
}

ct_status ct__cpu_eigh(ct_tensor *a, ct_tensor *w, ct_tensor *info, bool upper) {
  lapack_job j;
  ct_status st = init_job(&j, "eigh", JOB_SYEVD, a);
  if (st != CT_OK || j.batch == 0 || j.n == 0) return st;
  j.w = ct__data(w);
  j.info = ct__data(info);
  j.uplo = upper ? 'U' : 'L';
  /* the workspace sizes depend on n only: asked once, one per worker */
  union {
    double d;
    float f;
  } wq = {0}; /* the size comes back as a number of the dtype */
  lapack_int iq = 0, minus1 = -1, qinfo = 0, lda = j.n;
  lapack.syevd[j.p]("V", &j.uplo, &j.n, NULL, &lda, NULL, &wq, &minus1, &iq, &minus1, &qinfo, 1, 1);
  double lw = j.p ? wq.d : (double)wq.f;
  j.liwork = iq > 0 ? iq : 1;
  char *buf = workspace(&j, "eigh", lw);
  if (!buf) return ct_last_error();
  st = run(&j);
  ct__free(buf);
  return st;
}

ct_status ct__cpu_svd(ct_tensor *a, ct_tensor *s, ct_tensor *u, ct_tensor *vt, ct_tensor *info,
                      bool full) {
  lapack_job j;
  ct_status st = init_job(&j, "svd", JOB_GESDD, a); /* n: a's columns (its dim 1) */
  if (st != CT_OK) return st;
  int64_t rows = a->shape[2], cols = a->shape[1];
  if (!fits_int(rows))
    return ct__fail_status(CT_ERR_ARG, "svd: %lld rows exceed LAPACK's int range", (long long)rows);
  j.n = (lapack_int)cols;
  j.rows = (lapack_int)rows;
  j.ucols = full ? j.rows : j.n;
  if (j.batch == 0 || j.n == 0) return CT_OK;
  j.w = ct__data(s);
  j.u = ct__data(u);
  j.vt = ct__data(vt);
  j.info = ct__data(info);
  union {
    double d;
    float f;
  } wq = {0};
  lapack_int minus1 = -1, qinfo = 0, r = j.rows, n = j.n, iq[1] = {0};
  lapack.gesdd[j.p](j.ucols == r && r > n ? "A" : "S", &r, &n, NULL, &r, NULL, NULL, &r, NULL, &n,
                    &wq, &minus1, iq, &qinfo, 1);
  j.liwork = 8 * n;
  char *buf = workspace(&j, "svd", j.p ? wq.d : (double)wq.f);
  if (!buf) return ct_last_error();
  st = run(&j);
  ct__free(buf);
  return st;
}

/* geqrf (orgqr: !factor) over a (B, c, r) with tau (B, k). */
static ct_status householder(const char *op, ct_tensor *a, const ct_tensor *tau, bool factor) {
  lapack_job j;
  ct_status st = init_job(&j, op, factor ? JOB_GEQRF : JOB_ORGQR, a);
  if (st != CT_OK) return st;
  int64_t rows = a->shape[2], cols = a->shape[1];
  if (!fits_int(rows))
    return ct__fail_status(CT_ERR_ARG, "%s: %lld rows exceed LAPACK's int range", op,
                           (long long)rows);
  j.n = (lapack_int)cols;
  j.rows = (lapack_int)rows;
  j.k = (lapack_int)tau->shape[1];
  if (j.batch == 0 || j.n == 0 || j.rows == 0) return CT_OK;
  j.w = ct__data(tau);
  union {
    double d;
    float f;
  } wq = {0};
  lapack_int minus1 = -1, qinfo = 0, r = j.rows, n = j.n, kk = j.k;
  if (factor)
    lapack.geqrf[j.p](&r, &n, NULL, &r, NULL, &wq, &minus1, &qinfo);
  else
    lapack.orgqr[j.p](&r, &n, &kk, NULL, &r, NULL, &wq, &minus1, &qinfo);
  j.liwork = 0;
  char *buf = workspace(&j, op, j.p ? wq.d : (double)wq.f);
  if (!buf) return ct_last_error();
  st = run(&j);
  ct__free(buf);
  return st;
}

ct_status ct__cpu_geqrf(ct_tensor *a, ct_tensor *tau) { return householder("qr", a, tau, true); }

ct_status ct__cpu_orgqr(ct_tensor *q, const ct_tensor *tau) {
  return householder("qr", q, tau, false);
}
