/* Host EMULATION of cusolverDn.h (tests/cuda_emu/lib): the subset of the
 * dense cuSOLVER API that src/backend/cuda/solver.cu uses (getrf, getrs,
 * potrf, syevd, gesvd, geqrf, orgqr and their buffer sizes, f32/f64; potrf,
 * syevj and gesvdj batched), with the real library's names, enum values and
 * signatures (CUDA 13 headers). Implemented on the host by cusolver_emu.cpp
 * through the host LAPACK; no GPU is involved. */
#ifndef CT_EMU_CUSOLVERDN_H
#define CT_EMU_CUSOLVERDN_H

#include "cublas_v2.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CUSOLVER_STATUS_SUCCESS = 0,
  CUSOLVER_STATUS_NOT_INITIALIZED = 1,
  CUSOLVER_STATUS_ALLOC_FAILED = 2,
  CUSOLVER_STATUS_INVALID_VALUE = 3,
  CUSOLVER_STATUS_ARCH_MISMATCH = 4,
  CUSOLVER_STATUS_EXECUTION_FAILED = 6,
  CUSOLVER_STATUS_INTERNAL_ERROR = 7,
  CUSOLVER_STATUS_NOT_SUPPORTED = 9
} cusolverStatus_t;

#ifndef CT_EMU_CUBLAS_FILL_MODE
#define CT_EMU_CUBLAS_FILL_MODE
typedef enum {
  CUBLAS_FILL_MODE_LOWER = 0,
  CUBLAS_FILL_MODE_UPPER = 1,
  CUBLAS_FILL_MODE_FULL = 2
} cublasFillMode_t;
#endif

typedef enum { CUSOLVER_EIG_MODE_NOVECTOR = 0, CUSOLVER_EIG_MODE_VECTOR = 1 } cusolverEigMode_t;

typedef struct cusolverDnContext *cusolverDnHandle_t;

cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle);
cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle);
cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId);

cusolverStatus_t cusolverDnSgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *A,
                                             int lda, int *Lwork);
cusolverStatus_t cusolverDnDgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *A,
                                             int lda, int *Lwork);
cusolverStatus_t cusolverDnSgetrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                  float *Workspace, int *devIpiv, int *devInfo);
cusolverStatus_t cusolverDnDgetrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                  double *Workspace, int *devIpiv, int *devInfo);
cusolverStatus_t cusolverDnSgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n,
                                  int nrhs, const float *A, int lda, const int *devIpiv, float *B,
                                  int ldb, int *devInfo);
cusolverStatus_t cusolverDnDgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n,
                                  int nrhs, const double *A, int lda, const int *devIpiv, double *B,
                                  int ldb, int *devInfo);
cusolverStatus_t cusolverDnSpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                             int n, float *A, int lda, int *Lwork);
cusolverStatus_t cusolverDnDpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                             int n, double *A, int lda, int *Lwork);
cusolverStatus_t cusolverDnSpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, float *A,
                                  int lda, float *Workspace, int Lwork, int *devInfo);
cusolverStatus_t cusolverDnDpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                  double *A, int lda, double *Workspace, int Lwork, int *devInfo);

cusolverStatus_t cusolverDnSsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                             cublasFillMode_t uplo, int n, const float *A, int lda,
                                             const float *W, int *lwork);
cusolverStatus_t cusolverDnDsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                             cublasFillMode_t uplo, int n, const double *A, int lda,
                                             const double *W, int *lwork);
cusolverStatus_t cusolverDnSsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                  cublasFillMode_t uplo, int n, float *A, int lda, float *W,
                                  float *work, int lwork, int *info);
cusolverStatus_t cusolverDnDsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                  cublasFillMode_t uplo, int n, double *A, int lda, double *W,
                                  double *work, int lwork, int *info);

cusolverStatus_t cusolverDnSgesvd_bufferSize(cusolverDnHandle_t handle, int m, int n, int *lwork);
cusolverStatus_t cusolverDnDgesvd_bufferSize(cusolverDnHandle_t handle, int m, int n, int *lwork);
cusolverStatus_t cusolverDnSgesvd(cusolverDnHandle_t handle, signed char jobu, signed char jobvt,
                                  int m, int n, float *A, int lda, float *S, float *U, int ldu,
                                  float *VT, int ldvt, float *work, int lwork, float *rwork,
                                  int *info);
cusolverStatus_t cusolverDnDgesvd(cusolverDnHandle_t handle, signed char jobu, signed char jobvt,
                                  int m, int n, double *A, int lda, double *S, double *U, int ldu,
                                  double *VT, int ldvt, double *work, int lwork, double *rwork,
                                  int *info);

cusolverStatus_t cusolverDnSgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *A,
                                             int lda, int *lwork);
cusolverStatus_t cusolverDnDgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *A,
                                             int lda, int *lwork);
cusolverStatus_t cusolverDnSgeqrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                  float *TAU, float *Workspace, int Lwork, int *devInfo);
cusolverStatus_t cusolverDnDgeqrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                  double *TAU, double *Workspace, int Lwork, int *devInfo);
cusolverStatus_t cusolverDnSorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                             const float *A, int lda, const float *tau, int *lwork);
cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                             const double *A, int lda, const double *tau,
                                             int *lwork);
cusolverStatus_t cusolverDnSorgqr(cusolverDnHandle_t handle, int m, int n, int k, float *A, int lda,
                                  const float *tau, float *work, int lwork, int *info);
cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t handle, int m, int n, int k, double *A,
                                  int lda, const double *tau, double *work, int lwork, int *info);

/* Batched calls for small matrices: Cholesky of Aarray[i] (a device array
 * of pointers), info per matrix; Jacobi eigendecomposition / SVD of a
 * contiguous batch (n, and m, at most 32), info per matrix (n + 1, or
 * min(m, n) + 1: no convergence), their parameters from Create*Info (default
 * tolerance and sweeps, sorted results: eigenvalues ascending, singular
 * values descending). gesvdj gives U (m x m) and V (n x n), not V^T. */
cusolverStatus_t cusolverDnSpotrfBatched(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                         float *Aarray[], int lda, int *infoArray, int batchSize);
cusolverStatus_t cusolverDnDpotrfBatched(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                         double *Aarray[], int lda, int *infoArray, int batchSize);

typedef struct syevjInfo *syevjInfo_t;
typedef struct gesvdjInfo *gesvdjInfo_t;
cusolverStatus_t cusolverDnCreateSyevjInfo(syevjInfo_t *info);
cusolverStatus_t cusolverDnDestroySyevjInfo(syevjInfo_t info);
cusolverStatus_t cusolverDnCreateGesvdjInfo(gesvdjInfo_t *info);
cusolverStatus_t cusolverDnDestroyGesvdjInfo(gesvdjInfo_t info);

cusolverStatus_t cusolverDnSsyevjBatched_bufferSize(cusolverDnHandle_t handle,
                                                    cusolverEigMode_t jobz, cublasFillMode_t uplo,
                                                    int n, const float *A, int lda, const float *W,
                                                    int *lwork, syevjInfo_t params, int batchSize);
cusolverStatus_t cusolverDnDsyevjBatched_bufferSize(cusolverDnHandle_t handle,
                                                    cusolverEigMode_t jobz, cublasFillMode_t uplo,
                                                    int n, const double *A, int lda,
                                                    const double *W, int *lwork, syevjInfo_t params,
                                                    int batchSize);
cusolverStatus_t cusolverDnSsyevjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                         cublasFillMode_t uplo, int n, float *A, int lda, float *W,
                                         float *work, int lwork, int *info, syevjInfo_t params,
                                         int batchSize);
cusolverStatus_t cusolverDnDsyevjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                         cublasFillMode_t uplo, int n, double *A, int lda,
                                         double *W, double *work, int lwork, int *info,
                                         syevjInfo_t params, int batchSize);

cusolverStatus_t cusolverDnSgesvdjBatched_bufferSize(cusolverDnHandle_t handle,
                                                     cusolverEigMode_t jobz, int m, int n,
                                                     const float *A, int lda, const float *S,
                                                     const float *U, int ldu, const float *V,
                                                     int ldv, int *lwork, gesvdjInfo_t params,
                                                     int batchSize);
cusolverStatus_t cusolverDnDgesvdjBatched_bufferSize(cusolverDnHandle_t handle,
                                                     cusolverEigMode_t jobz, int m, int n,
                                                     const double *A, int lda, const double *S,
                                                     const double *U, int ldu, const double *V,
                                                     int ldv, int *lwork, gesvdjInfo_t params,
                                                     int batchSize);
cusolverStatus_t cusolverDnSgesvdjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int m,
                                          int n, float *A, int lda, float *S, float *U, int ldu,
                                          float *V, int ldv, float *work, int lwork, int *info,
                                          gesvdjInfo_t params, int batchSize);
cusolverStatus_t cusolverDnDgesvdjBatched(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int m,
                                          int n, double *A, int lda, double *S, double *U, int ldu,
                                          double *V, int ldv, double *work, int lwork, int *info,
                                          gesvdjInfo_t params, int batchSize);

#ifdef __cplusplus
}
#endif

#endif /* CT_EMU_CUSOLVERDN_H */
