/* Matrix products on ctensor's thread pool (gemm.c): the BLAS, single-
 * threaded, on blocks of the result. Call ct__blas_load first. */
#ifndef CT_BACKEND_CPU_GEMM_H
#define CT_BACKEND_CPU_GEMM_H

#include "backend/cpu/blas.h"

/* Row-major C (M, N) = op(A) (M, K) @ op(B) (K, N) + beta * C; op(X) is X
 * or, with ta/tb, the transpose of the stored X. f64: doubles, else floats. */
void ct__gemm(bool f64, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
              int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);
/* y += op(A) @ x, A stored (rows, cols) row-major; op(A) = A^T with trans. */
void ct__gemv_acc(bool f64, bool trans, int64_t rows, int64_t cols, const void *A, int64_t lda,
                  const void *x, int64_t incx, void *y);

#endif /* CT_BACKEND_CPU_GEMM_H */
