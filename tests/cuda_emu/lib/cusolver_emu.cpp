/* Host stand-in of the dense cuSOLVER calls of src/backend/cuda/solver.cu
 * (declared in shim/cusolverDn.h): handles, getrf / getrs / potrf / syevd /
 * gesvd / geqrf / orgqr, and potrf, syevj, gesvdj batched, computed on the
 * CPU by the host LAPACK (OpenBLAS's), column-major, for the emulated CUDA
 * runtime (tests/cuda_emu). The batched Jacobi calls give LAPACK's results
 * with cuSOLVER's conventions (V, not V^T; info n + 1 when not converged).
 *
 * Arguments are validated as cuSOLVER documents it: an unknown handle is
 * CUSOLVER_STATUS_NOT_INITIALIZED; negative sizes, a leading dimension below
 * max(1, rows), an unknown op or fill mode, a workspace smaller than the
 * buffer size asked for are CUSOLVER_STATUS_INVALID_VALUE. Every pointer the
 * call touches (the matrices, pivots, info, workspace) must pass
 * emu_lib_check_device, else CUSOLVER_STATUS_INVALID_VALUE (a GPU would
 * fault on it). A call that passes its checks queues its computation on the
 * handle's stream (emu_lib_enqueue), as cuSOLVER returns before the GPU has
 * run it; info is written there, in device memory, and the workspace is
 * filled with garbage first. */
#include "cusolverDn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <new>
#include <unordered_set>
#include <vector>

#include "emu_calls.h"
#include "emu_lib.h"

extern "C" {
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetrs_(const char *trans, const int *n, const int *nrhs, const float *a, const int *lda,
             const int *ipiv, float *b, const int *ldb, int *info, size_t len);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
             const int *ipiv, double *b, const int *ldb, int *info, size_t len);
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t len);
void ssyevd_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w,
             float *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t l1,
             size_t l2);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t l1,
             size_t l2);
void sgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, float *a,
             const int *lda, float *s, float *u, const int *ldu, float *vt, const int *ldvt,
             float *work, const int *lwork, int *info, size_t l1, size_t l2);
void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
             const int *lda, double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *info, size_t l1, size_t l2);
void sgeqrf_(const int *m, const int *n, float *a, const int *lda, float *tau, float *work,
             const int *lwork, int *info);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void sorgqr_(const int *m, const int *n, const int *k, float *a, const int *lda, const float *tau,
             float *work, const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau,
             double *work, const int *lwork, int *info);
}

struct cusolverDnContext {
  cudaStream_t stream = nullptr;
};

namespace {

std::mutex live_mu;
std::unordered_set<const cusolverDnContext *> &live() {
  static std::unordered_set<const cusolverDnContext *> s;
  return s;
}
bool alive(cusolverDnHandle_t h) {
  std::lock_guard<std::mutex> lock(live_mu);
  return h && live().count(h) != 0;
}

int max1(int v) { return v > 1 ? v : 1; }

/* The workspace (elements) the emulation asks for: a panel of 64 columns. */
int getrf_lwork(int m, int n) { return max1(m) * (n < 64 ? max1(n) : 64); }
int potrf_lwork(int n) { return max1(n) * (n < 64 ? max1(n) : 64); }

/* A (rows x cols) column-major matrix with leading dim lda: its bytes. */
size_t span(int rows, int cols, int lda, size_t es) {
  return cols == 0 || rows == 0 ? 0 : ((size_t)(cols - 1) * (size_t)lda + (size_t)rows) * es;
}

bool check(const void *p, size_t bytes, const char *what) {
  return bytes == 0 || emu_lib_check_device(p, bytes, what);
}

template <typename T>
cusolverStatus_t getrf(cusolverDnHandle_t h, int m, int n, T *A, int lda, T *ws, int *ipiv,
                       int *info, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || lda < max1(m)) return CUSOLVER_STATUS_INVALID_VALUE;
  int mn = m < n ? m : n;
  if (!check(A, span(m, n, lda, sizeof(T)), name) ||
      !check(ws, (size_t)getrf_lwork(m, n) * sizeof(T), name) ||
      !check(ipiv, (size_t)mn * sizeof(int), name) || !check(info, sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  size_t wsb = (size_t)getrf_lwork(m, n) * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb); /* what it held is gone */
    int inf = 0;
    if constexpr (sizeof(T) == 8)
      dgetrf_(&m, &n, (double *)A, &lda, ipiv, &inf);
    else
      sgetrf_(&m, &n, (float *)A, &lda, ipiv, &inf);
    *info = inf;
  });
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
cusolverStatus_t getrs(cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs, const T *A,
                       int lda, const int *ipiv, T *B, int ldb, int *info, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C)
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (n < 0 || nrhs < 0 || lda < max1(n) || ldb < max1(n)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!check(A, span(n, n, lda, sizeof(T)), name) || !check(ipiv, (size_t)n * sizeof(int), name) ||
      !check(B, span(n, nrhs, ldb, sizeof(T)), name) || !check(info, sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  char t = trans == CUBLAS_OP_N ? 'N' : 'T';
  emu_lib_enqueue(h->stream, name, [=] {
    int inf = 0;
    if constexpr (sizeof(T) == 8)
      dgetrs_(&t, &n, &nrhs, (const double *)A, &lda, ipiv, (double *)B, &ldb, &inf, 1);
    else
      sgetrs_(&t, &n, &nrhs, (const float *)A, &lda, ipiv, (float *)B, &ldb, &inf, 1);
    *info = inf;
  });
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
cusolverStatus_t potrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T *A, int lda, T *ws,
                       int lwork, int *info, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER)
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (n < 0 || lda < max1(n) || lwork < potrf_lwork(n)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!check(A, span(n, n, lda, sizeof(T)), name) || !check(ws, (size_t)lwork * sizeof(T), name) ||
      !check(info, sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  char u = uplo == CUBLAS_FILL_MODE_UPPER ? 'U' : 'L';
  size_t wsb = (size_t)lwork * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb);
    int inf = 0;
    if constexpr (sizeof(T) == 8)
      dpotrf_(&u, &n, (double *)A, &lda, &inf, 1);
    else
      spotrf_(&u, &n, (float *)A, &lda, &inf, 1);
    *info = inf;
  });
  return CUSOLVER_STATUS_SUCCESS;
}

int syevd_lwork(int n) { return 1 + 6 * max1(n) + 2 * max1(n) * max1(n); }

/* The host LAPACK's syevd, with its own workspace (queried). */
template <typename T>
int host_syevd(char jobz, char uplo, int n, T *A, int lda, T *W) {
  int info = 0, lwork = -1, liwork = -1, iq = 0;
  T wq = 0;
  if constexpr (sizeof(T) == 8)
    dsyevd_(&jobz, &uplo, &n, (double *)A, &lda, (double *)W, (double *)&wq, &lwork, &iq, &liwork,
            &info, 1, 1);
  else
    ssyevd_(&jobz, &uplo, &n, (float *)A, &lda, (float *)W, (float *)&wq, &lwork, &iq, &liwork,
            &info, 1, 1);
  lwork = (int)wq + 1, liwork = iq > 0 ? iq : 1;
  std::vector<T> work((size_t)lwork);
  std::vector<int> iwork((size_t)liwork);
  if constexpr (sizeof(T) == 8)
    dsyevd_(&jobz, &uplo, &n, (double *)A, &lda, (double *)W, (double *)work.data(), &lwork,
            iwork.data(), &liwork, &info, 1, 1);
  else
    ssyevd_(&jobz, &uplo, &n, (float *)A, &lda, (float *)W, (float *)work.data(), &lwork,
            iwork.data(), &liwork, &info, 1, 1);
  return info;
}

template <typename T>
cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,
                       T *A, int lda, T *W, T *ws, int lwork, int *info, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if ((jobz != CUSOLVER_EIG_MODE_VECTOR && jobz != CUSOLVER_EIG_MODE_NOVECTOR) ||
      (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER))
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (n < 0 || lda < max1(n) || lwork < syevd_lwork(n)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!check(A, span(n, n, lda, sizeof(T)), name) || !check(W, (size_t)n * sizeof(T), name) ||
      !check(ws, (size_t)lwork * sizeof(T), name) || !check(info, sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  char jz = jobz == CUSOLVER_EIG_MODE_VECTOR ? 'V' : 'N';
  char u = uplo == CUBLAS_FILL_MODE_UPPER ? 'U' : 'L';
  size_t wsb = (size_t)lwork * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb);
    *info = n ? host_syevd<T>(jz, u, n, A, lda, W) : 0;
  });
  return CUSOLVER_STATUS_SUCCESS;
}

int gesvd_lwork(int m, int n) { return 5 * max1(m) + 5 * max1(n) + 64; }

template <typename T>
int host_gesvd(char jobu, char jobvt, int m, int n, T *A, int lda, T *S, T *U, int ldu, T *VT,
               int ldvt) {
  int info = 0, lwork = -1;
  T wq = 0;
  auto call = [&](T *work) {
    if constexpr (sizeof(T) == 8)
      dgesvd_(&jobu, &jobvt, &m, &n, (double *)A, &lda, (double *)S, (double *)U, &ldu,
              (double *)VT, &ldvt, (double *)work, &lwork, &info, 1, 1);
    else
      sgesvd_(&jobu, &jobvt, &m, &n, (float *)A, &lda, (float *)S, (float *)U, &ldu, (float *)VT,
              &ldvt, (float *)work, &lwork, &info, 1, 1);
  };
  call(&wq);
  lwork = (int)wq + 1;
  std::vector<T> work((size_t)lwork);
  call(work.data());
  return info;
}

template <typename T>
cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char jobu, signed char jobvt, int m, int n,
                       T *A, int lda, T *S, T *U, int ldu, T *VT, int ldvt, T *ws, int lwork,
                       T *rwork, int *info, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  auto job_ok = [](signed char c) { return c == 'A' || c == 'S' || c == 'O' || c == 'N'; };
  if (!job_ok(jobu) || !job_ok(jobvt) || jobu == 'O' || jobvt == 'O')
    return CUSOLVER_STATUS_INVALID_VALUE;          /* the emulation computes no overwrite modes */
  if (m < n) return CUSOLVER_STATUS_INVALID_VALUE; /* cuSOLVER's gesvd: m >= n only */
  if (n < 0 || lda < max1(m) || lwork < gesvd_lwork(m, n)) return CUSOLVER_STATUS_INVALID_VALUE;
  int ucols = jobu == 'A' ? m : n;
  if ((jobu != 'N' && ldu < max1(m)) || (jobvt != 'N' && ldvt < max1(n)))
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (!check(A, span(m, n, lda, sizeof(T)), name) || !check(S, (size_t)n * sizeof(T), name) ||
      (jobu != 'N' && !check(U, span(m, ucols, ldu, sizeof(T)), name)) ||
      (jobvt != 'N' && !check(VT, span(n, n, ldvt, sizeof(T)), name)) ||
      !check(ws, (size_t)lwork * sizeof(T), name) || !check(info, sizeof(int), name) ||
      (rwork && !check(rwork, (size_t)(n > 1 ? n - 1 : 0) * sizeof(T), name)))
    return CUSOLVER_STATUS_INVALID_VALUE;
  size_t wsb = (size_t)lwork * sizeof(T);
  char ju = (char)jobu, jv = (char)jobvt;
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb);
    *info = n ? host_gesvd<T>(ju, jv, m, n, A, lda, S, U, ldu, VT, ldvt) : 0;
  });
  return CUSOLVER_STATUS_SUCCESS;
}

int qr_lwork(int n) { return 64 * max1(n); }

/* geqrf (k < 0) or orgqr with k reflectors, on the host with its own workspace. */
template <typename T>
void host_householder(int m, int n, int k, T *A, int lda, T *tau) {
  int info = 0, lwork = 64 * max1(n);
  std::vector<T> work((size_t)lwork);
  if constexpr (sizeof(T) == 8) {
    if (k < 0)
      dgeqrf_(&m, &n, (double *)A, &lda, (double *)tau, (double *)work.data(), &lwork, &info);
    else
      dorgqr_(&m, &n, &k, (double *)A, &lda, (const double *)tau, (double *)work.data(), &lwork,
              &info);
  } else {
    if (k < 0)
      sgeqrf_(&m, &n, (float *)A, &lda, (float *)tau, (float *)work.data(), &lwork, &info);
    else
      sorgqr_(&m, &n, &k, (float *)A, &lda, (const float *)tau, (float *)work.data(), &lwork,
              &info);
  }
}

/* geqrf (k < 0) or orgqr: cuSOLVER's checks, then the host LAPACK on the
 * stream. */
template <typename T>
cusolverStatus_t householder(cusolverDnHandle_t h, int m, int n, int k, T *A, int lda, T *tau,
                             T *ws, int lwork, int *info, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  int mn = m < n ? m : n;
  if (m < 0 || n < 0 || lda < max1(m) || lwork < qr_lwork(n)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (k >= 0 && (n > m || k > n)) return CUSOLVER_STATUS_INVALID_VALUE; /* orgqr: m >= n >= k */
  int ntau = k < 0 ? mn : k;
  if (!check(A, span(m, n, lda, sizeof(T)), name) || !check(tau, (size_t)ntau * sizeof(T), name) ||
      !check(ws, (size_t)lwork * sizeof(T), name) || !check(info, sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  size_t wsb = (size_t)lwork * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb);
    if (m > 0 && n > 0) host_householder<T>(m, n, k, A, lda, tau);
    *info = 0;
  });
  return CUSOLVER_STATUS_SUCCESS;
}

/* ---- Batched calls ---- */

int syevj_lwork(int n, int batch) { return max1(n) * max1(n) * max1(batch) + 64; }
int gesvdj_lwork(int m, int n, int batch) {
  return (max1(m) + max1(n)) * max1(n) * max1(batch) + 64;
}

/* Matrix i of a device pointer array, read when the work runs (a kernel queued
 * before may write the array); one outside device memory is a fault there,
 * as on a GPU. */
void *batch_ptr(void *const *arr, int i, size_t bytes, const char *name) {
  void *p = arr[i];
  if (!emu_lib_check_device(p, bytes, name)) {
    fprintf(stderr, "%s: matrix %d of the batch at %p is not device memory (a GPU faults)\n", name,
            i, p);
    abort();
  }
  return p;
}

cusolverStatus_t syevj_batched_lwork(cusolverDnHandle_t h, int n, int *lwork, bool params,
                                     int batch) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!lwork || !params || n < 0 || n > 32 || batch < 0) return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = syevj_lwork(n, batch);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t gesvdj_batched_lwork(cusolverDnHandle_t h, int m, int n, int *lwork, bool params,
                                      int batch) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!lwork || !params || m < 0 || n < 0 || m > 32 || n > 32 || batch < 0)
    return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = gesvdj_lwork(m, n, batch);
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
cusolverStatus_t potrf_batched(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T *A[], int lda,
                               int *info, int batch, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER)
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (n < 0 || lda < max1(n) || batch < 0) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!check(A, (size_t)batch * sizeof(T *), name) ||
      !check(info, (size_t)batch * sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  char u = uplo == CUBLAS_FILL_MODE_UPPER ? 'U' : 'L';
  size_t bytes = span(n, n, lda, sizeof(T));
  emu_lib_enqueue(h->stream, name, [=] {
    for (int i = 0; i < batch; i++) {
      T *a = (T *)batch_ptr((void *const *)A, i, bytes, name);
      int inf = 0;
      if constexpr (sizeof(T) == 8)
        dpotrf_(&u, &n, (double *)a, &lda, &inf, 1);
      else
        spotrf_(&u, &n, (float *)a, &lda, &inf, 1);
      info[i] = inf;
    }
  });
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
cusolverStatus_t syevj_batched(cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo,
                               int n, T *A, int lda, T *W, T *ws, int lwork, int *info, bool params,
                               int batch, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!params || (jobz != CUSOLVER_EIG_MODE_VECTOR && jobz != CUSOLVER_EIG_MODE_NOVECTOR) ||
      (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER))
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (n < 0 || n > 32 || lda < max1(n) || batch < 0 || lwork < syevj_lwork(n, batch))
    return CUSOLVER_STATUS_INVALID_VALUE;
  size_t mat = (size_t)lda * (size_t)n;
  if (!check(A, mat * (size_t)batch * sizeof(T), name) ||
      !check(W, (size_t)n * (size_t)batch * sizeof(T), name) ||
      !check(ws, (size_t)lwork * sizeof(T), name) ||
      !check(info, (size_t)batch * sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  char jz = jobz == CUSOLVER_EIG_MODE_VECTOR ? 'V' : 'N';
  char u = uplo == CUBLAS_FILL_MODE_UPPER ? 'U' : 'L';
  size_t wsb = (size_t)lwork * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb);
    for (int i = 0; i < batch; i++) {
      int inf = n ? host_syevd<T>(jz, u, n, A + (size_t)i * mat, lda, W + (size_t)i * n) : 0;
      info[i] = inf ? n + 1 : 0; /* syevj: n + 1 when it does not converge */
    }
  });
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, cusolverEigMode_t jobz, int m, int n, T *A,
                                int lda, T *S, T *U, int ldu, T *V, int ldv, T *ws, int lwork,
                                int *info, bool params, int batch, const char *name) {
  if (!alive(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!params || (jobz != CUSOLVER_EIG_MODE_VECTOR && jobz != CUSOLVER_EIG_MODE_NOVECTOR))
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || m > 32 || n > 32 || lda < max1(m) || batch < 0 ||
      lwork < gesvdj_lwork(m, n, batch))
    return CUSOLVER_STATUS_INVALID_VALUE;
  bool vec = jobz == CUSOLVER_EIG_MODE_VECTOR;
  if (vec && (ldu < max1(m) || ldv < max1(n))) return CUSOLVER_STATUS_INVALID_VALUE;
  int mn = m < n ? m : n;
  size_t am = (size_t)lda * n, um = (size_t)ldu * m, vm = (size_t)ldv * n;
  if (!check(A, am * batch * sizeof(T), name) || !check(S, (size_t)mn * batch * sizeof(T), name) ||
      (vec &&
       (!check(U, um * batch * sizeof(T), name) || !check(V, vm * batch * sizeof(T), name))) ||
      !check(ws, (size_t)lwork * sizeof(T), name) ||
      !check(info, (size_t)batch * sizeof(int), name))
    return CUSOLVER_STATUS_INVALID_VALUE;
  size_t wsb = (size_t)lwork * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    memset((void *)ws, 0xa5, wsb);
    std::vector<T> vt((size_t)max1(n) * max1(n));
    for (int i = 0; i < batch; i++) {
      T *a = A + i * am, *u = U + i * um, *v = V + i * vm;
      int inf = 0;
      if (mn > 0)
        inf = host_gesvd<T>(vec ? 'A' : 'N', vec ? 'A' : 'N', m, n, a, lda, S + (size_t)i * mn, u,
                            vec ? ldu : 1, vt.data(), vec ? max1(n) : 1);
      if (vec) /* gesvdj gives V */
        for (int c = 0; c < n; c++)
          for (int r = 0; r < n; r++) v[(size_t)c * ldv + r] = vt[(size_t)r * max1(n) + c];
      info[i] = inf ? mn + 1 : 0;
    }
  });
  return CUSOLVER_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle) {
  EMU_CALL();
  if (!handle) return CUSOLVER_STATUS_INVALID_VALUE;
  cusolverDnContext *h = new (std::nothrow) cusolverDnContext();
  if (!h) return CUSOLVER_STATUS_ALLOC_FAILED;
  std::lock_guard<std::mutex> lock(live_mu);
  live().insert(h);
  *handle = h;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle) {
  EMU_CALL();
  {
    std::lock_guard<std::mutex> lock(live_mu);
    if (!handle || live().erase(handle) == 0) return CUSOLVER_STATUS_NOT_INITIALIZED;
  }
  delete handle;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t cusolverDnSgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *,
                                             int lda, int *Lwork) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || lda < max1(m) || !Lwork) return CUSOLVER_STATUS_INVALID_VALUE;
  *Lwork = getrf_lwork(m, n);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *,
                                             int lda, int *Lwork) {
  return cusolverDnSgetrf_bufferSize(handle, m, n, nullptr, lda, Lwork);
}
cusolverStatus_t cusolverDnSgetrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                  float *Workspace, int *devIpiv, int *devInfo) {
  EMU_CALL();
  return getrf(handle, m, n, A, lda, Workspace, devIpiv, devInfo, "cusolverDnSgetrf");
}
cusolverStatus_t cusolverDnDgetrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                  double *Workspace, int *devIpiv, int *devInfo) {
  EMU_CALL();
  return getrf(handle, m, n, A, lda, Workspace, devIpiv, devInfo, "cusolverDnDgetrf");
}
cusolverStatus_t cusolverDnSgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n,
                                  int nrhs, const float *A, int lda, const int *devIpiv, float *B,
                                  int ldb, int *devInfo) {
  EMU_CALL();
  return getrs(handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo, "cusolverDnSgetrs");
}
cusolverStatus_t cusolverDnDgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n,
                                  int nrhs, const double *A, int lda, const int *devIpiv, double *B,
                                  int ldb, int *devInfo) {
  EMU_CALL();
  return getrs(handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo, "cusolverDnDgetrs");
}
cusolverStatus_t cusolverDnSpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                             int n, float *, int lda, int *Lwork) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if ((uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) || n < 0 ||
      lda < max1(n) || !Lwork)
    return CUSOLVER_STATUS_INVALID_VALUE;
  *Lwork = potrf_lwork(n);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                             int n, double *, int lda, int *Lwork) {
  return cusolverDnSpotrf_bufferSize(handle, uplo, n, nullptr, lda, Lwork);
}
cusolverStatus_t cusolverDnSpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, float *A,
                                  int lda, float *Workspace, int Lwork, int *devInfo) {
  EMU_CALL();
  return potrf(handle, uplo, n, A, lda, Workspace, Lwork, devInfo, "cusolverDnSpotrf");
}
cusolverStatus_t cusolverDnDpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                  double *A, int lda, double *Workspace, int Lwork, int *devInfo) {
  EMU_CALL();
  return potrf(handle, uplo, n, A, lda, Workspace, Lwork, devInfo, "cusolverDnDpotrf");
}

cusolverStatus_t cusolverDnSsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t,
                                             cublasFillMode_t, int n, const float *, int lda,
                                             const float *, int *lwork) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (n < 0 || lda < max1(n) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = syevd_lwork(n);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                             cublasFillMode_t uplo, int n, const double *, int lda,
                                             const double *, int *lwork) {
  return cusolverDnSsyevd_bufferSize(handle, jobz, uplo, n, nullptr, lda, nullptr, lwork);
}
cusolverStatus_t cusolverDnSsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                  cublasFillMode_t uplo, int n, float *A, int lda, float *W,
                                  float *work, int lwork, int *info) {
  EMU_CALL();
  return syevd(handle, jobz, uplo, n, A, lda, W, work, lwork, info, "cusolverDnSsyevd");
}
cusolverStatus_t cusolverDnDsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                  cublasFillMode_t uplo, int n, double *A, int lda, double *W,
                                  double *work, int lwork, int *info) {
  EMU_CALL();
  return syevd(handle, jobz, uplo, n, A, lda, W, work, lwork, info, "cusolverDnDsyevd");
}

cusolverStatus_t cusolverDnSgesvd_bufferSize(cusolverDnHandle_t handle, int m, int n, int *lwork) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = gesvd_lwork(m, n);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgesvd_bufferSize(cusolverDnHandle_t handle, int m, int n, int *lwork) {
  return cusolverDnSgesvd_bufferSize(handle, m, n, lwork);
}
cusolverStatus_t cusolverDnSgesvd(cusolverDnHandle_t handle, signed char jobu, signed char jobvt,
                                  int m, int n, float *A, int lda, float *S, float *U, int ldu,
                                  float *VT, int ldvt, float *work, int lwork, float *rwork,
                                  int *info) {
  EMU_CALL();
  return gesvd(handle, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, work, lwork, rwork, info,
               "cusolverDnSgesvd");
}
cusolverStatus_t cusolverDnDgesvd(cusolverDnHandle_t handle, signed char jobu, signed char jobvt,
                                  int m, int n, double *A, int lda, double *S, double *U, int ldu,
                                  double *VT, int ldvt, double *work, int lwork, double *rwork,
                                  int *info) {
  EMU_CALL();
  return gesvd(handle, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, work, lwork, rwork, info,
               "cusolverDnDgesvd");
}

cusolverStatus_t cusolverDnSgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *,
                                             int lda, int *lwork) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || lda < max1(m) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = qr_lwork(n);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *,
                                             int lda, int *lwork) {
  return cusolverDnSgeqrf_bufferSize(handle, m, n, nullptr, lda, lwork);
}
cusolverStatus_t cusolverDnSgeqrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                  float *TAU, float *Workspace, int Lwork, int *devInfo) {
  EMU_CALL();
  return householder(handle, m, n, -1, A, lda, TAU, Workspace, Lwork, devInfo, "cusolverDnSgeqrf");
}
cusolverStatus_t cusolverDnDgeqrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                  double *TAU, double *Workspace, int Lwork, int *devInfo) {
  EMU_CALL();
  return householder(handle, m, n, -1, A, lda, TAU, Workspace, Lwork, devInfo, "cusolverDnDgeqrf");
}
cusolverStatus_t cusolverDnSorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                             const float *, int lda, const float *, int *lwork) {
  EMU_CALL();
  if (!alive(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || lda < max1(m) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = qr_lwork(n);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                             const double *, int lda, const double *, int *lwork) {
  return cusolverDnSorgqr_bufferSize(handle, m, n, k, nullptr, lda, nullptr, lwork);
}
cusolverStatus_t cusolverDnSorgqr(cusolverDnHandle_t handle, int m, int n, int k, float *A, int lda,
                                  const float *tau, float *work, int lwork, int *info) {
  EMU_CALL();
  return householder(handle, m, n, k, A, lda, (float *)tau, work, lwork, info, "cusolverDnSorgqr");
}
cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t handle, int m, int n, int k, double *A,
                                  int lda, const double *tau, double *work, int lwork, int *info) {
  EMU_CALL();
  return householder(handle, m, n, k, A, lda, (double *)tau, work, lwork, info, "cusolverDnDorgqr");
}

/* ---- Batched calls ---- */

cusolverStatus_t cusolverDnSpotrfBatched(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                         float *Aarray[], int lda, int *infoArray, int batchSize) {
  EMU_CALL();
  return potrf_batched(handle, uplo, n, Aarray, lda, infoArray, batchSize,
                       "cusolverDnSpotrfBatched");
}
cusolverStatus_t cusolverDnDpotrfBatched(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                         double *Aarray[], int lda, int *infoArray, int batchSize) {
  EMU_CALL();
  return potrf_batched(handle, uplo, n, Aarray, lda, infoArray, batchSize,
                       "cusolverDnDpotrfBatched");
}

/* The parameters hold nothing the emulation reads: the defaults. */
struct syevjInfo {
  int unused;
};
struct gesvdjInfo {
  int unused;
};
cusolverStatus_t cusolverDnCreateSyevjInfo(syevjInfo_t *info) {
  EMU_CALL();
  if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
  *info = new (std::nothrow) syevjInfo();
  return *info ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}
cusolverStatus_t cusolverDnDestroySyevjInfo(syevjInfo_t info) {
  EMU_CALL();
  delete info;
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnCreateGesvdjInfo(gesvdjInfo_t *info) {
  EMU_CALL();
  if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
  *info = new (std::nothrow) gesvdjInfo();
  return *info ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}
cusolverStatus_t cusolverDnDestroyGesvdjInfo(gesvdjInfo_t info) {
  EMU_CALL();
  delete info;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t cusolverDnSsyevjBatched_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t,
                                                    cublasFillMode_t, int n, const float *, int,
                                                    const float *, int *lwork, syevjInfo_t params,
                                                    int batchSize) {
  EMU_CALL();
  return syevj_batched_lwork(handle, n, lwork, params != nullptr, batchSize);
}
cusolverStatus_t cusolverDnDsyevjBatched_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t,
                                                    cublasFillMode_t, int n, const double *, int,
                                                    const double *, int *lwork, syevjInfo_t params,
                                                    int batchSize) {
  EMU_CALL();
  return syevj_batched_lwork(handle, n, lwork, params != nullptr, batchSize);
}
cusolverStatus_t cusolverDnSsyevjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                         cublasFillMode_t uplo, int n, float *A, int lda, float *W,
                                         float *work, int lwork, int *info, syevjInfo_t params,
                                         int batchSize) {
  EMU_CALL();
  return syevj_batched(handle, jobz, uplo, n, A, lda, W, work, lwork, info, params != nullptr,
                       batchSize, "cusolverDnSsyevjBatched");
}
cusolverStatus_t cusolverDnDsyevjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                         cublasFillMode_t uplo, int n, double *A, int lda,
                                         double *W, double *work, int lwork, int *info,
                                         syevjInfo_t params, int batchSize) {
  EMU_CALL();
  return syevj_batched(handle, jobz, uplo, n, A, lda, W, work, lwork, info, params != nullptr,
                       batchSize, "cusolverDnDsyevjBatched");
}

cusolverStatus_t cusolverDnSgesvdjBatched_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t,
                                                     int m, int n, const float *, int,
                                                     const float *, const float *, int,
                                                     const float *, int, int *lwork,
                                                     gesvdjInfo_t params, int batchSize) {
  EMU_CALL();
  return gesvdj_batched_lwork(handle, m, n, lwork, params != nullptr, batchSize);
}
cusolverStatus_t cusolverDnDgesvdjBatched_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t,
                                                     int m, int n, const double *, int,
                                                     const double *, const double *, int,
                                                     const double *, int, int *lwork,
                                                     gesvdjInfo_t params, int batchSize) {
  EMU_CALL();
  return gesvdj_batched_lwork(handle, m, n, lwork, params != nullptr, batchSize);
}
cusolverStatus_t cusolverDnSgesvdjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int m,
                                          int n, float *A, int lda, float *S, float *U, int ldu,
                                          float *V, int ldv, float *work, int lwork, int *info,
                                          gesvdjInfo_t params, int batchSize) {
  EMU_CALL();
  return gesvdj_batched(handle, jobz, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info,
                        params != nullptr, batchSize, "cusolverDnSgesvdjBatched");
}
cusolverStatus_t cusolverDnDgesvdjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int m,
                                          int n, double *A, int lda, double *S, double *U, int ldu,
                                          double *V, int ldv, double *work, int lwork, int *info,
                                          gesvdjInfo_t params, int batchSize) {
  EMU_CALL();
  return gesvdj_batched(handle, jobz, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info,
                        params != nullptr, batchSize, "cusolverDnDgesvdjBatched");
}

}  // extern "C"
