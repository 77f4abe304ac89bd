/* CUDA factorizations through cuSOLVER (linalg family): LU (getrf), solves
 * with it (getrs) and Cholesky (potrf), f32/f64, one cuSOLVER call per matrix
 * of the batch, all queued on the current stream; a batch of small matrices
 * (order <= SOLVER_BATCHED_MAX_N) in one batched call instead (run_batched).
 * Contracts:
 * backend/backend.h, "Linear algebra: factorizations" (column-major
 * matrices, LAPACK's info per matrix left on the device for the op layer).
 *
 * Handles: one per device, created lazily; a mutex serializes
 * cusolverDnSetStream + the calls, since threads share the handle (as
 * matmul.cu does for cuBLAS). syevd: the symmetric eigendecomposition. Workspaces come from the
 * stream-ordered caching allocator. getrs reports only bad arguments in its info, which go to a
 * scratch int: the arguments are checked here. */
#include <cublas_v2.h>
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

/* ---- Batched calls ---------------------------------------------------------------------- */
/* A batch of two or more matrices of order <= SOLVER_BATCHED_MAX_N goes to
 * one batched call: cuBLAS's getrfBatched / getrsBatched (LU has no batched
 * cuSOLVER call), cuSOLVER's potrfBatched, syevjBatched and gesvdjBatched
 * (Jacobi; these two take at most 32 rows and columns). One call does what
 * `batch` calls, each a few tiny kernels, did; the per-matrix calls stay for
 * large matrices (blocked algorithms) and for a single one. getrf/getrs and
 * potrf take arrays of matrix pointers in device memory (ptrs_kernel). */
#define SOLVER_BATCHED_MAX_N 32

static cublasHandle_t blas_handles[CTC_SOLVER_MAX_DEV];
static syevjInfo_t syevj_params[CTC_SOLVER_MAX_DEV];
static gesvdjInfo_t gesvdj_params[CTC_SOLVER_MAX_DEV];

static bool use_batched(const solver_job &j) {
  if (j.batch < 2 || j.batch > INT32_MAX || j.n < 1 || j.n > SOLVER_BATCHED_MAX_N) return false;
  switch (j.kind) {
    case SOLVER_GETRF:
    case SOLVER_POTRF:
    case SOLVER_SYEVD:
      return true;
    case SOLVER_GETRS:
      return !j.shared_lu;
    case SOLVER_GESVD:
      return j.rows <= SOLVER_BATCHED_MAX_N;
    default:
      return false;
  }
}

/* p[i] = base + i * bytes: the matrices of a batch, for the pointer-array calls. */
__global__ void ptrs_kernel(char **p, char *base, size_t bytes, int64_t batch) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < batch;
       i += (int64_t)gridDim.x * blockDim.x)
    p[i] = base + (size_t)i * bytes;
}

/* gesvdjBatched gives U (m x m) and V (n x n): u takes U's first uc columns
 * (m x uc, the leading part of a column-major U), vt = V^T. uf == u when U
 * was written in place. */
template <typename T>
__global__ void svd_out_kernel(const T *uf, T *u, const T *v, T *vt, int m, int uc, int n,
                               int64_t batch) {
  int64_t nu = uf != u ? (int64_t)m * uc : 0, nv = (int64_t)n * n;
  int64_t per = nu > nv ? nu : nv;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < batch * per;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = e / per, i = e - b * per;
    if (i < nu) u[b * nu + i] = uf[b * m * m + i];
    if (i < nv) {
      int64_t r = i % n, c = i / n;
      vt[b * nv + i] = v[b * nv + c + r * n];
    }
  }
}

static ct_status blas_fail(const char *op, const char *call, cublasStatus_t s, int dev) {
  return ct__fail_status(s == CUBLAS_STATUS_ALLOC_FAILED ? CT_ERR_OOM : CT_ERR_CUDA,
                         "%s: %s failed on cuda:%d (cublasStatus_t %d)", op, call, dev, (int)s);
}

/* The batched call of j (caller holds handle_mu, the solver handle is on
 * stream s). ptrs: the pointer arrays (a's, then rhs's); ws: lwork elements;
 * uf, v: gesvdj's full U (when u is reduced) and V. *blas tells a cuBLAS
 * status from a cuSOLVER one. */
static int call_batched(int dev, cudaStream_t s, const solver_job &j, char **ptrs, void *ws,
                        int lwork, char *uf, char *v, const char **call, bool *blas) {
  cusolverDnHandle_t h = handles[dev];
  int n = j.n, nb = (int)j.batch, lda = j.n;
  *blas = j.kind == SOLVER_GETRF || j.kind == SOLVER_GETRS;
  if (*blas) {
    if (!blas_handles[dev]) {
      *call = "cublasCreate";
      cublasStatus_t bs = cublasCreate(&blas_handles[dev]);
      if (bs != CUBLAS_STATUS_SUCCESS) return (int)bs;
    }
    *call = "cublasSetStream";
    cublasStatus_t bs = cublasSetStream(blas_handles[dev], s);
    if (bs != CUBLAS_STATUS_SUCCESS) return (int)bs;
    cublasHandle_t bh = blas_handles[dev];
    if (j.kind == SOLVER_GETRF) {
      *call = j.f64 ? "cublasDgetrfBatched" : "cublasSgetrfBatched";
      return (int)(j.f64 ? cublasDgetrfBatched(bh, n, (double **)ptrs, lda, j.piv, j.info, nb)
                         : cublasSgetrfBatched(bh, n, (float **)ptrs, lda, j.piv, j.info, nb));
    }
    int arg = 0; /* getrsBatched's info (host): a bad argument, checked here */
    *call = j.f64 ? "cublasDgetrsBatched" : "cublasSgetrsBatched";
    bs = j.f64 ? cublasDgetrsBatched(bh, j.trans, n, j.k, (const double *const *)ptrs, lda, j.piv,
                                     (double *const *)(ptrs + nb), lda, &arg, nb)
               : cublasSgetrsBatched(bh, j.trans, n, j.k, (const float *const *)ptrs, lda, j.piv,
                                     (float *const *)(ptrs + nb), lda, &arg, nb);
    return (int)(bs == CUBLAS_STATUS_SUCCESS && arg != 0 ? CUBLAS_STATUS_INVALID_VALUE : bs);
  }
  switch (j.kind) {
    case SOLVER_POTRF:
      *call = j.f64 ? "cusolverDnDpotrfBatched" : "cusolverDnSpotrfBatched";
      return (int)(j.f64 ? cusolverDnDpotrfBatched(h, CUBLAS_FILL_MODE_UPPER, n, (double **)ptrs,
                                                   lda, j.info, nb)
                         : cusolverDnSpotrfBatched(h, CUBLAS_FILL_MODE_UPPER, n, (float **)ptrs,
                                                   lda, j.info, nb));
    case SOLVER_SYEVD:
      *call = j.f64 ? "cusolverDnDsyevjBatched" : "cusolverDnSsyevjBatched";
      return (int)(j.f64 ? cusolverDnDsyevjBatched(h, CUSOLVER_EIG_MODE_VECTOR, j.uplo, n,
                                                   (double *)j.a, lda, (double *)j.w, (double *)ws,
                                                   lwork, j.info, syevj_params[dev], nb)
                         : cusolverDnSsyevjBatched(h, CUSOLVER_EIG_MODE_VECTOR, j.uplo, n,
                                                   (float *)j.a, lda, (float *)j.w, (float *)ws,
                                                   lwork, j.info, syevj_params[dev], nb));
    default: { /* SOLVER_GESVD: a is rows x n */
      int m = j.rows;
      *call = j.f64 ? "cusolverDnDgesvdjBatched" : "cusolverDnSgesvdjBatched";
      return (
          int)(j.f64
                   ? cusolverDnDgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, (double *)j.a, m,
                                              (double *)j.w, (double *)uf, m, (double *)v, n,
                                              (double *)ws, lwork, j.info, gesvdj_params[dev], nb)
                   : cusolverDnSgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, (float *)j.a, m,
                                              (float *)j.w, (float *)uf, m, (float *)v, n,
                                              (float *)ws, lwork, j.info, gesvdj_params[dev], nb));
    }
  }
}

/* The workspace of syevjBatched / gesvdjBatched (their parameters created on
 * first use: default tolerance and sweeps, sorted results). */
static cusolverStatus_t batched_lwork(int dev, const solver_job &j, char *uf, char *v, int *lwork,
                                      const char **call) {
  cusolverDnHandle_t h = handles[dev];
  int n = j.n, nb = (int)j.batch;
  cusolverStatus_t cs = CUSOLVER_STATUS_SUCCESS;
  *lwork = 0;
  if (j.kind == SOLVER_SYEVD) {
    if (!syevj_params[dev]) {
      *call = "cusolverDnCreateSyevjInfo";
      if ((cs = cusolverDnCreateSyevjInfo(&syevj_params[dev])) != CUSOLVER_STATUS_SUCCESS)
        return cs;
    }
    *call = j.f64 ? "cusolverDnDsyevjBatched_bufferSize" : "cusolverDnSsyevjBatched_bufferSize";
    return j.f64 ? cusolverDnDsyevjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, j.uplo, n,
                                                      (const double *)j.a, n, (const double *)j.w,
                                                      lwork, syevj_params[dev], nb)
                 : cusolverDnSsyevjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, j.uplo, n,
                                                      (const float *)j.a, n, (const float *)j.w,
                                                      lwork, syevj_params[dev], nb);
  }
  if (j.kind == SOLVER_GESVD) {
    if (!gesvdj_params[dev]) {
      *call = "cusolverDnCreateGesvdjInfo";
      if ((cs = cusolverDnCreateGesvdjInfo(&gesvdj_params[dev])) != CUSOLVER_STATUS_SUCCESS)
        return cs;
    }
    int m = j.rows;
    *call = j.f64 ? "cusolverDnDgesvdjBatched_bufferSize" : "cusolverDnSgesvdjBatched_bufferSize";
    return j.f64
               ? cusolverDnDgesvdjBatched_bufferSize(
                     h, CUSOLVER_EIG_MODE_VECTOR, m, n, (const double *)j.a, m, (const double *)j.w,
                     (const double *)uf, m, (const double *)v, n, lwork, gesvdj_params[dev], nb)
               : cusolverDnSgesvdjBatched_bufferSize(
                     h, CUSOLVER_EIG_MODE_VECTOR, m, n, (const float *)j.a, m, (const float *)j.w,
                     (const float *)uf, m, (const float *)v, n, lwork, gesvdj_params[dev], nb);
  }
  return cs;
}

static ct_status run_batched(int dev, cudaStream_t s, solver_job &j) {
  size_t es = j.f64 ? sizeof(double) : sizeof(float);
  size_t mat = (size_t)j.n * (size_t)j.n * es;
  int64_t nb = j.batch;
  ctc_scratch pbuf(dev), ws(dev), ubuf(dev), vbuf(dev);
  char **ptrs = nullptr;
  if (j.kind == SOLVER_GETRF || j.kind == SOLVER_POTRF || j.kind == SOLVER_GETRS) {
    int arrays = j.kind == SOLVER_GETRS ? 2 : 1;
    if (!(ptrs = (char **)pbuf.get(sizeof(char *) * (size_t)(arrays * nb)))) return ct_last_error();
    ptrs_kernel<<<ctc_blocks(nb, dev), CTC_THREADS, 0, s>>>(ptrs, j.a, mat, nb);
    CT_CUDA_LAUNCH_CHECK(j.op, dev, s);
    if (arrays == 2) {
      ptrs_kernel<<<ctc_blocks(nb, dev), CTC_THREADS, 0, s>>>(ptrs + nb, j.rhs,
                                                              (size_t)j.k * (size_t)j.n * es, nb);
      CT_CUDA_LAUNCH_CHECK(j.op, dev, s);
    }
  }
  char *uf = nullptr, *v = nullptr;
  if (j.kind == SOLVER_GESVD) {
    size_t m = (size_t)j.rows;
    uf = j.ucols == j.rows ? j.u : (char *)ubuf.get(m * m * es * (size_t)nb);
    v = uf ? (char *)vbuf.get(mat * (size_t)nb) : nullptr;
    if (!v) return ct_last_error();
  }
  pthread_mutex_lock(&handle_mu);
  const char *call = "cusolverDnCreate";
  bool blas = false;
  int lwork = 0;
  cusolverStatus_t cs = handle_on(dev, s, &call);
  if (cs == CUSOLVER_STATUS_SUCCESS) cs = batched_lwork(dev, j, uf, v, &lwork, &call);
  void *wsp = nullptr;
  if (cs == CUSOLVER_STATUS_SUCCESS && !(wsp = ws.get((size_t)(lwork > 0 ? lwork : 1) * es))) {
    pthread_mutex_unlock(&handle_mu);
    return ct_last_error();
  }
  int rs = (int)cs;
  if (cs == CUSOLVER_STATUS_SUCCESS)
    rs = call_batched(dev, s, j, ptrs, wsp, lwork, uf, v, &call, &blas);
  pthread_mutex_unlock(&handle_mu);
  if (rs != 0)
    return blas ? blas_fail(j.op, call, (cublasStatus_t)rs, dev)
                : solver_fail(j.op, call, (cusolverStatus_t)rs, dev);
  if (j.kind == SOLVER_GESVD) {
    int64_t per = (int64_t)j.rows * j.ucols > (int64_t)j.n * j.n ? (int64_t)j.rows * j.ucols
                                                                 : (int64_t)j.n * j.n;
    unsigned g = ctc_blocks(nb * per, dev);
    if (j.f64)
      svd_out_kernel<double><<<g, CTC_THREADS, 0, s>>>((const double *)uf, (double *)j.u,
                                                       (const double *)v, (double *)j.vt, j.rows,
                                                       j.ucols, j.n, nb);
    else
      svd_out_kernel<float><<<g, CTC_THREADS, 0, s>>>((const float *)uf, (float *)j.u,
                                                      (const float *)v, (float *)j.vt, j.rows,
                                                      j.ucols, j.n, nb);
    CT_CUDA_LAUNCH_CHECK(j.op, dev, s);
  }
  if (ctc_launch_blocking()) CT_CUDA_CHECK(j.op, dev, cudaStreamSynchronize(s));
  return CT_OK;
}

static ct_status run(int dev, solver_job &j) {
  ct_status st = ctc_use_device(j.op, dev);
  if (st != CT_OK) return st;
  if (dev < 0 || dev >= CTC_SOLVER_MAX_DEV)
    return ct__fail_status(CT_ERR_CUDA, "%s: cuda:%d beyond the %d devices supported", j.op, dev,
                           CTC_SOLVER_MAX_DEV);
  cudaStream_t s = ctc_stream(dev);
  if (use_batched(j)) return run_batched(dev, s, j);
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

extern "C" ct_status ct__cuda_lu_factor(ct_tensor *a_t, ct_tensor *piv_t, ct_tensor *info_t) {
  const ctc_view a(a_t), piv(piv_t), info(info_t);
  solver_job j{};
  ct_status st = init_job(j, "lu_factor", SOLVER_GETRF, a);
  if (st != CT_OK || j.batch == 0) return st;
  j.piv = (int *)piv->data;
  j.info = (int *)info->data;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_lu_solve(const ct_tensor *lu_t, const ct_tensor *piv_t,
                                       ct_tensor *rhs_t, bool trans) {
  const ctc_view lu(lu_t), piv(piv_t), rhs(rhs_t);
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

extern "C" ct_status ct__cuda_cholesky(ct_tensor *a_t, ct_tensor *info_t) {
  const ctc_view a(a_t), info(info_t);
  solver_job j{};
  ct_status st = init_job(j, "cholesky", SOLVER_POTRF, a);
  if (st != CT_OK || j.batch == 0) return st;
  j.info = (int *)info->data;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_eigh(ct_tensor *a_t, ct_tensor *w_t, ct_tensor *info_t, bool upper) {
  const ctc_view a(a_t), w(w_t), info(info_t);
  solver_job j{};
  ct_status st = init_job(j, "eigh", SOLVER_SYEVD, a);
  if (st != CT_OK || j.batch == 0 || j.n == 0) return st;
  j.w = w->data;
  j.info = (int *)info->data;
  j.uplo = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  return run(a->device, j);
}

extern "C" ct_status ct__cuda_svd(ct_tensor *a_t, ct_tensor *s_t, ct_tensor *u_t, ct_tensor *vt_t,
                                  ct_tensor *info_t, bool full) {
  const ctc_view a(a_t), s(s_t), u(u_t), vt(vt_t), info(info_t);
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

extern "C" ct_status ct__cuda_geqrf(ct_tensor *a_t, ct_tensor *tau_t) {
  const ctc_view a(a_t), tau(tau_t);
  return householder("qr", SOLVER_GEQRF, a, tau);
}

extern "C" ct_status ct__cuda_orgqr(ct_tensor *q_t, const ct_tensor *tau_t) {
  const ctc_view q(q_t), tau(tau_t);
  return householder("qr", SOLVER_ORGQR, q, tau);
}
