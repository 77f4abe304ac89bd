/* bf16 matrix products on CPUs with AVX512-BF16 (gemm_bf16.c): bf16 inputs,
 * f32 accumulation and result, at up to twice the multiply-adds per cycle of
 * an f32 GEMM. Autocast's bf16 products (matmul.c) take it when
 * ct__gemm_bf16_available(); elsewhere they convert to f32 for the BLAS. */
#ifndef CT_BACKEND_CPU_GEMM_BF16_H
#define CT_BACKEND_CPU_GEMM_BF16_H

#include <stdbool.h>
#include <stdint.h>

/* Whether the build has the kernel and this CPU runs it (AVX512-BF16), and
 * CTENSOR_CPU_BF16_GEMM is not "0" (the f32 path then, for comparison). */
bool ct__gemm_bf16_available(void);

/* C (M, N) f32, rows ldc apart, = A (M, K) @ B (K, N), or += with beta_one.
 * Element (i, p) of A is A[i*ars + p*acs], (p, j) of B is B[p*brs + j*bcs]
 * (any layout: transposes are strides). Splits C across ctensor's pool (in
 * turn when called from a pool task). Without the kernel (a build or a CPU
 * without AVX512-BF16) it is a plain loop: callers check
 * ct__gemm_bf16_available() first. */
void ct__gemm_bf16(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t ars, int64_t acs,
                   const uint16_t *B, int64_t brs, int64_t bcs, float *C, int64_t ldc,
                   bool beta_one);

/* The same product of f32 operands rounded to bf16 as they are packed (the
 * rounding autocast's casts would do: exact for values that came from bf16),
 * in gemm.h's terms: row-major op(A) (M, K), op(B) (K, N), transposed with
 * ta/tb. Convolutions in bf16 (conv.c) compute on f32 copies this way. */
void ct__gemm_bf16_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                       int64_t lda, const float *B, int64_t ldb, bool beta_one, float *C,
                       int64_t ldc);

#endif /* CT_BACKEND_CPU_GEMM_BF16_H */
