/* The AVX-512 kernel of the packed recurrent GEMM (rnn_gemm.c): up to 8 rows
 * of C by one 32-column panel, 16 accumulators (2 vectors per row) over K;
 * each step of K loads the panel's two vectors once and broadcasts one
 * element of each row of A. Compiles to nothing without AVX-512. */
#include "backend/cpu/cpu_arch.h"

#if CT_CPU_AVX512
#include <immintrin.h>

static inline __attribute__((always_inline)) void panel_rows(const int mr, __mmask16 m0,
                                                             __mmask16 m1, int64_t K,
                                                             const float *A, int64_t lda,
                                                             const float *P, float *C, int64_t ldc,
                                                             bool beta_one) {
  __m512 c0[8], c1[8];
  for (int r = 0; r < mr; r++) {
    c0[r] = beta_one ? _mm512_maskz_loadu_ps(m0, C + r * ldc) : _mm512_setzero_ps();
    c1[r] = beta_one ? _mm512_maskz_loadu_ps(m1, C + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < K; k++) {
    __m512 b0 = _mm512_loadu_ps(P + k * 32), b1 = _mm512_loadu_ps(P + k * 32 + 16);
    for (int r = 0; r < mr; r++) {
      __m512 a = _mm512_set1_ps(A[r * lda + k]);
      c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
    }
  }
  for (int r = 0; r < mr; r++) {
    _mm512_mask_storeu_ps(C + r * ldc, m0, c0[r]);
    _mm512_mask_storeu_ps(C + r * ldc + 16, m1, c1[r]);
  }
}

void ct__rnn_panel_avx512(int64_t mr, int64_t nc, int64_t K, const float *A, int64_t lda,
                          const float *P, float *C, int64_t ldc, bool beta_one) {
  __mmask16 m0 = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
  __mmask16 m1 = nc >= 32 ? 0xFFFF : nc > 16 ? (__mmask16)((1u << (nc - 16)) - 1) : 0;
  /* full blocks with a constant row count, so that the accumulators stay in
   * registers; the last block of a batch that is not a multiple of 8 through
   * the same code with a run-time count */
  if (mr == 8)
    panel_rows(8, m0, m1, K, A, lda, P, C, ldc, beta_one);
  else
    panel_rows((int)mr, m0, m1, K, A, lda, P, C, ldc, beta_one);
}
#endif
