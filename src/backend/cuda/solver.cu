/* CUDA factorizations through cuSOLVER (linalg family): LU (getrf), solves
 * with it (getrs) and Cholesky (potrf), f32/f64, one cuSOLVER call per matrix
 * of the batch, all queued on the current stream. Contracts:
 * backend/backend.h, "Linear algebra: factorizations" (column-major
 * matrices, LAPACK's info per matrix left on the device for the op layer).
 *
 * Handles: one per device, created lazily; a mutex serializes
 * cusolverDnSetStream + the calls, since threads share the handle (as
 * matmul.cu does for cuBLAS). syevd: the symmetric eigendecomposition. Workspaces come from the
 * stream-ordered caching allocator. getrs reports only bad arguments in its info, which go to a
 * scratch int: the arguments are checked here. */
#include <cusolverDn.h>
#include <pthread.h>

#include "backend/cuda/common.cuh"

#define CTC_SOLVER_MAX_DEV 64
static cusolverDnHandle_t handles[CTC_SOLVER_MAX_DEV];
static pthread_mutex_t handle_mu = PTHREAD_MUTEX_INITIALIZER;

static ct_status solver_fail(const char *op, const char *call, cusolverStatus_t s, int dev) {
  return ct__fail_status(s == CUSOLVER_STATUS_ALLOC_FAILED ? CT_ERR_OOM : CT_ERR_CUDA,
                         "%s: %s failed on cuda:%d (cusolverStatus_t %d)", op, call, dev, (int)s);
}

/* The device's handle on stream s, created on first use. Caller holds
 * handle_mu. */
static cusolverStatus_t handle_on(int dev, cudaStream_t s, const char **call) {
  if (!handles[dev]) {
    *call = "cusolverDnCreate";
    cusolverDnHandle_t h;
    cusolverStatus_t cs = cusolverDnCreate(&h);
    if (cs != CUSOLVER_STATUS_SUCCESS) return cs;
    handles[dev] = h;
  }
  *call = "cusolverDnSetStream";
  return cusolverDnSetStream(handles[dev], s);
}

enum solver_kind {
  SOLVER_GETRF,
  SOLVER_GETRS,
  SOLVER_POTRF,
  SOLVER_SYEVD,
  SOLVER_GESVD,
  SOLVER_GEQRF,
  SOLVER_ORGQR
};

struct solver_job {
  const char *op;
  solver_kind kind;
  bool f64;
  int n, k;        /* order; right-hand sides per call (getrs) */
  int64_t batch;   /* calls */
  char *a;         /* (batch or 1, n, n) */
  int *piv, *info; /* (batch or 1, n); (batch) */
  char *rhs;       /* getrs: (batch, k, n) */
  bool shared_lu;
  cublasOperation_t trans;
  char *w;               /* syevd: (batch, n) */
  cublasFillMode_t uplo; /* syevd */
  int rows, ucols;       /* gesvd: a is rows x n (rows >= n); u is rows x ucols */
  char *u, *vt, *rwork;  /* gesvd */
};

static cusolverStatus_t run_calls(cusolverDnHandle_t h, const solver_job &j, void *ws, int lwork,
                                  int *scratch_info, const char **call) {
  size_t es = j.f64 ? sizeof(double) : sizeof(float);
  size_t mat = (size_t)j.n * (size_t)j.n * es;
  int lda = j.n > 1 ? j.n : 1;
  cusolverStatus_t cs = CUSOLVER_STATUS_SUCCESS;
  for (int64_t i = 0; i < j.batch && cs == CUSOLVER_STATUS_SUCCESS; i++) {
    char *a = j.a + (size_t)i * mat;
    switch (j.kind) {
      case SOLVER_GETRF:
        *call = j.f64 ? "cusolverDnDgetrf" : "cusolverDnSgetrf";
        cs = j.f64 ? cusolverDnDgetrf(h, j.n, j.n, (double *)a, lda, (double *)ws,
                                      j.piv + (size_t)i * (size_t)j.n, j.info + i)
                   : cusolverDnSgetrf(h, j.n, j.n, (float *)a, lda, (float *)ws,
                                      j.piv + (size_t)i * (size_t)j.n, j.info + i);
        break;
      case SOLVER_GETRS: {
        int64_t l = j.shared_lu ? 0 : i;
        const char *lu = j.a + (size_t)l * mat;
        const int *piv = j.piv + (size_t)l * (size_t)j.n;
        char *b = j.rhs + (size_t)i * (size_t)j.k * (size_t)j.n * es;
        *call = j.f64 ? "cusolverDnDgetrs" : "cusolverDnSgetrs";
        cs = j.f64 ? cusolverDnDgetrs(h, j.trans, j.n, j.k, (const double *)lu, lda, piv,
                                      (double *)b, lda, scratch_info)
                   : cusolverDnSgetrs(h, j.trans, j.n, j.k, (const float *)lu, lda, piv, (float *)b,
                                      lda, scratch_info);
        break;
      }
      case SOLVER_POTRF:
        *call = j.f64 ? "cusolverDnDpotrf" : "cusolverDnSpotrf";
        cs = j.f64 ? cusolverDnDpotrf(h, CUBLAS_FILL_MODE_UPPER, j.n, (double *)a, lda,
                                      (double *)ws, lwork, j.info + i)
                   : cusolverDnSpotrf(h, CUBLAS_FILL_MODE_UPPER, j.n, (float *)a, lda, (float *)ws,
                                      lwork, j.info + i);
        break;
      case SOLVER_GESVD: {
        size_t am = (size_t)j.rows * (size_t)j.n * es;
        char *s_i = j.w + (size_t)i * (size_t)j.n * es;
        char *u = j.u + (size_t)i * (size_t)j.rows * (size_t)j.ucols * es;
        char *vt = j.vt + (size_t)i * mat;
        signed char jobu = j.ucols == j.rows && j.rows > j.n ? 'A' : 'S';
        int ldr = j.rows > 1 ? j.rows : 1;
        a = j.a + (size_t)i * am;
        *call = j.f64 ? "cusolverDnDgesvd" : "cusolverDnSgesvd";
        cs = j.f64 ? cusolverDnDgesvd(h, jobu, 'A', j.rows, j.n, (double *)a, ldr, (double *)s_i,
                                      (double *)u, ldr, (double *)vt, lda, (double *)ws, lwork,
                                      (double *)j.rwork, j.info + i)
                   : cusolverDnSgesvd(h, jobu, 'A', j.rows, j.n, (float *)a, ldr, (float *)s_i,
                                      (float *)u, ldr, (float *)vt, lda, (float *)ws, lwork,
                                      (float *)j.rwork, j.info + i);
        break;
      }
      case SOLVER_GEQRF:
      case SOLVER_ORGQR: { /* a: rows x n; tau: k per matrix */
        int ldr = j.rows > 1 ? j.rows : 1;
        a = j.a + (size_t)i * (size_t)j.rows * (size_t)j.n * es;
        char *tau = j.w + (size_t)i * (size_t)j.k * es;
        if (j.kind == SOLVER_GEQRF) {
          *call = j.f64 ? "cusolverDnDgeqrf" : "cusolverDnSgeqrf";
          cs = j.f64 ? cusolverDnDgeqrf(h, j.rows, j.n, (double *)a, ldr, (double *)tau,
                                        (double *)ws, lwork, scratch_info)
                     : cusolverDnSgeqrf(h, j.rows, j.n, (float *)a, ldr, (float *)tau, (float *)ws,
                                        lwork, scratch_info);
        } else {
          *call = j.f64 ? "cusolverDnDorgqr" : "cusolverDnSorgqr";
          cs = j.f64 ? cusolverDnDorgqr(h, j.rows, j.n, j.k, (double *)a, ldr, (const double *)tau,
                                        (double *)ws, lwork, scratch_info)
                     : cusolverDnSorgqr(h, j.rows, j.n, j.k, (float *)a, ldr, (const float *)tau,
                                        (float *)ws, lwork, scratch_info);
        }
        break;
      }
      case SOLVER_SYEVD: {
        char *w = j.w + (size_t)i * (size_t)j.n * es;
        *call = j.f64 ? "cusolverDnDsyevd" : "cusolverDnSsyevd";
        cs = j.f64 ? cusolverDnDsyevd(h, CUSOLVER_EIG_MODE_VECTOR, j.uplo, j.n, (double *)a, lda,
                                      (double *)w, (double *)ws, lwork, j.info + i)
                   : cusolverDnSsyevd(h, CUSOLVER_EIG_MODE_VECTOR, j.uplo, j.n, (float *)a, lda,
                                      (float *)w, (float *)ws, lwork, j.info + i);
        break;
      }
    }
  }
  return cs;
}

static ct_status run(int dev, solver_job &j) {
  ct_status st = ctc_use_device(j.op, dev);
  if (st != CT_OK) return st;
  if (dev < 0 || dev >= CTC_SOLVER_MAX_DEV)
    return ct__fail_status(CT_ERR_CUDA, "%s: cuda:%d beyond the %d devices supported", j.op, dev,
                           CTC_SOLVER_MAX_DEV);
  cudaStream_t s = ctc_stream(dev);
  size_t es = j.f64 ? sizeof(double) : sizeof(float);
  int lda = j.n > 1 ? j.n : 1;
  ctc_scratch ws(dev), info_buf(dev); /* freed (stream-ordered) after the unlock */
  int *scratch_info = (int *)info_buf.get(sizeof(int));
  if (!scratch_info) return ct_last_error();
  ctc_scratch rwork(dev); /* gesvd: the unconverged superdiagonal */
  if (j.kind == SOLVER_GESVD && !(j.rwork = (char *)rwork.get((size_t)(j.n > 1 ? j.n : 1) * es)))
    return ct_last_error();
  pthread_mutex_lock(&handle_mu);
  const char *call = "cusolverDnCreate";
  cusolverStatus_t cs = handle_on(dev, s, &call);
  int lwork = 0;
  if (cs == CUSOLVER_STATUS_SUCCESS && j.kind == SOLVER_GETRF) {
    call = j.f64 ? "cusolverDnDgetrf_bufferSize" : "cusolverDnSgetrf_bufferSize";
    cs = j.f64 ? cusolverDnDgetrf_bufferSize(handles[dev], j.n, j.n, (double *)j.a, lda, &lwork)
               : cusolverDnSgetrf_bufferSize(handles[dev], j.n, j.n, (float *)j.a, lda, &lwork);
  } else if (cs == CUSOLVER_STATUS_SUCCESS && j.kind == SOLVER_POTRF) {
    call = j.f64 ? "cusolverDnDpotrf_bufferSize" : "cusolverDnSpotrf_bufferSize";
    cs = j.f64 ? cusolverDnDpotrf_bufferSize(handles[dev], CUBLAS_FILL_MODE_UPPER, j.n,
                                             (double *)j.a, lda, &lwork)
               : cusolverDnSpotrf_bufferSize(handles[dev], CUBLAS_FILL_MODE_UPPER, j.n,
                                             (float *)j.a, lda, &lwork);
  } else if (cs == CUSOLVER_STATUS_SUCCESS && j.kind == SOLVER_SYEVD) {
    call = j.f64 ? "cusolverDnDsyevd_bufferSize" : "cusolverDnSsyevd_bufferSize";
    cs = j.f64 ? cusolverDnDsyevd_bufferSize(handles[dev], CUSOLVER_EIG_MODE_VECTOR, j.uplo, j.n,
                                             (const double *)j.a, lda, (const double *)j.w, &lwork)
               : cusolverDnSsyevd_bufferSize(handles[dev], CUSOLVER_EIG_MODE_VECTOR, j.uplo, j.n,
                                             (const float *)j.a, lda, (const float *)j.w, &lwork);
  }
  if (cs == CUSOLVER_STATUS_SUCCESS && j.kind == SOLVER_GESVD) {
    call = j.f64 ? "cusolverDnDgesvd_bufferSize" : "cusolverDnSgesvd_bufferSize";
    cs = j.f64 ? cusolverDnDgesvd_bufferSize(handles[dev], j.rows, j.n, &lwork)
               : cusolverDnSgesvd_bufferSize(handles[dev], j.rows, j.n, &lwork);
  }
  if (cs == CUSOLVER_STATUS_SUCCESS && (j.kind == SOLVER_GEQRF || j.kind == SOLVER_ORGQR)) {
    int ldr = j.rows > 1 ? j.rows : 1;
    bool f = j.kind == SOLVER_GEQRF;
    call = f ? (j.f64 ? "cusolverDnDgeqrf_bufferSize" : "cusolverDnSgeqrf_bufferSize")
             : (j.f64 ? "cusolverDnDorgqr_bufferSize" : "cusolverDnSorgqr_bufferSize");
    if (f)
      cs = j.f64
               ? cusolverDnDgeqrf_bufferSize(handles[dev], j.rows, j.n, (double *)j.a, ldr, &lwork)
               : cusolverDnSgeqrf_bufferSize(handles[dev], j.rows, j.n, (float *)j.a, ldr, &lwork);
    else
      cs = j.f64 ? cusolverDnDorgqr_bufferSize(handles[dev], j.rows, j.n, j.k, (const double *)j.a,
                                               ldr, (const double *)j.w, &lwork)
                 : cusolverDnSorgqr_bufferSize(handles[dev], j.rows, j.n, j.k, (const float *)j.a,
                                               ldr, (const float *)j.w, &lwork);
  }
  void *wsp = nullptr;
  if (cs == CUSOLVER_STATUS_SUCCESS && !(wsp = ws.get((size_t)(lwork > 0 ? lwork : 1) * es))) {
    pthread_mutex_unlock(&handle_mu);
    return ct_last_error();
  }
  if (cs == CUSOLVER_STATUS_SUCCESS)
    cs = run_calls(handles[dev], j, wsp, lwork, scratch_info, &call);
  pthread_mutex_unlock(&handle_mu);
  if (cs != CUSOLVER_STATUS_SUCCESS) return solver_fail(j.op, call, cs, dev);
  if (ctc_launch_blocking()) CT_CUDA_CHECK(j.op, dev, cudaStreamSynchronize(s));
  return CT_OK;
}

static ct_status init_job(solver_job &j, const char *op, solver_kind kind, const ctc_t *a) {
  if (a->shape[2] > INT32_MAX)
    return ct__fail_status(CT_ERR_ARG, "%s: order %lld exceeds cuSOLVER's int range", op,
                           (long long)a->shape[2]);
  j = solver_job{};
  j.op = op;
  j.kind = kind;
  j.f64 = a->dtype == CT_F64;
  j.n = (int)a->shape[2];
  j.batch = a->shape[0];
  j.a = a->data;
  return CT_OK;
}

extern "C" ct_status ct__cuda_lu_factor(const ctc_t *a, const ctc_t *piv, const ctc_t *info) {
  solver_job j{};
  ct_status st = init_job(j, "lu_factor", SOLVER_GETRF, a);
  if (st != CT_OK || j.batch == 0) return st;
  j.piv = (int *)piv->data;
  j.info = (int *)info->data;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_lu_solve(const ctc_t *lu, const ctc_t *piv, const ctc_t *rhs,
                                       bool trans) {
  solver_job j{};
  ct_status st = init_job(j, "lu_solve", SOLVER_GETRS, lu);
  if (st != CT_OK) return st;
  int64_t k = rhs->shape[1], batch = rhs->shape[0];
  j.shared_lu = lu->shape[0] == 1;
  if (j.shared_lu) { /* one system with every right-hand side of the batch */
    k *= batch;
    batch = 1;
  }
  if (k > INT32_MAX)
    return ct__fail_status(
        CT_ERR_ARG, "lu_solve: %lld right-hand sides exceed cuSOLVER's int range", (long long)k);
  if (k == 0 || batch == 0 || j.n == 0) return CT_OK;
  j.k = (int)k;
  j.batch = batch;
  j.piv = (int *)piv->data;
  j.rhs = rhs->data;
  j.trans = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  return run(lu->device, j);
}

extern "C" ct_status ct__cuda_cholesky(const ctc_t *a, const ctc_t *info) {
  solver_job j{};
  ct_status st = init_job(j, "cholesky", SOLVER_POTRF, a);
  if (st != CT_OK || j.batch == 0) return st;
  j.info = (int *)info->data;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_eigh(const ctc_t *a, const ctc_t *w, const ctc_t *info, bool upper) {
  solver_job j{};
  ct_status st = init_job(j, "eigh", SOLVER_SYEVD, a);
  if (st != CT_OK || j.batch == 0 || j.n == 0) return st;
  j.w = w->data;
  j.info = (int *)info->data;
  j.uplo = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_svd(const ctc_t *a, const ctc_t *s, const ctc_t *u, const ctc_t *vt,
                                  const ctc_t *info, bool full) {
  solver_job j{};
  ct_status st = init_job(j, "svd", SOLVER_GESVD, a); /* n: the columns, a's dim 1 */
  if (st != CT_OK) return st;
  if (a->shape[2] > INT32_MAX)
    return ct__fail_status(CT_ERR_ARG, "svd: %lld rows exceed cuSOLVER's int range",
                           (long long)a->shape[2]);
  j.n = (int)a->shape[1];
  j.rows = (int)a->shape[2];
  j.ucols = full ? j.rows : j.n;
  if (j.batch == 0 || j.n == 0) return CT_OK;
  j.w = s->data;
  j.u = u->data;
  j.vt = vt->data;
  j.info = (int *)info->data;
  return run(a->device, j);
}

static ct_status householder(const char *op, solver_kind kind, const ctc_t *a, const ctc_t *tau) {
  solver_job j{};
  ct_status st = init_job(j, op, kind, a); /* n: the columns, a's dim 1 */
  if (st != CT_OK) return st;
  if (a->shape[2] > INT32_MAX)
    return ct__fail_status(CT_ERR_ARG, "%s: %lld rows exceed cuSOLVER's int range", op,
                           (long long)a->shape[2]);
  j.n = (int)a->shape[1];
  j.rows = (int)a->shape[2];
  j.k = (int)tau->shape[1];
  if (j.batch == 0 || j.n == 0 || j.rows == 0) return CT_OK;
  j.w = tau->data;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_geqrf(const ctc_t *a, const ctc_t *tau) {
  return householder("qr", SOLVER_GEQRF, a, tau);
}

extern "C" ct_status ct__cuda_orgqr(const ctc_t *q, const ctc_t *tau) {
  return householder("qr", SOLVER_ORGQR, q, tau);
}
