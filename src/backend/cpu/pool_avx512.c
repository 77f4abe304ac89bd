/* AVX-512 kernels of the CPU's 2x2 stride-2 max pooling (pool.c selects them
 * through cpu_arch.h when the build targets AVX-512: the library is built
 * with -march=native). Same results as pool_t.h's loops: the first nan, else
 * the first maximum of each window. */
#include "backend/cpu/cpu_arch.h"

#if CT_CPU_AVX512
#include <immintrin.h>

/* 2x2 stride-2 max of rows r0, r1 for outputs [0, n), 16 at a time (masked tail):
 * the tree ((v0, v1), (v2, v3)) below with AVX-512 masks; indices
 * base + 2*ow + offset in the window (base + 2*Wo + W must fit in int32).
 * Returns n, the outputs done. */
int64_t ct__pool_max2x2_row_avx512(const float *r0, const float *r1, float *o, int64_t *ix,
                                   int64_t n, int64_t base, int64_t W) {
  const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
  const __m512i step = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i wv = _mm512_set1_epi32((int)W), one = _mm512_set1_epi32(1);
  for (int64_t ow = 0; ow < n; ow += 16) {
    int64_t m = n - ow < 16 ? n - ow : 16; /* the last block of a row: masked */
    __mmask16 lo = m >= 8 ? 0xFFFF : (__mmask16)((1u << (2 * m)) - 1);
    __mmask16 hi = m > 8 ? (__mmask16)((1u << (2 * m - 16)) - 1) : 0;
    __mmask16 om = (__mmask16)((1u << m) - 1);
    __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow),
           a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow),
           b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
    __m512 v0 = _mm512_permutex2var_ps(a0, ev, a1), v1 = _mm512_permutex2var_ps(a0, od, a1);
    __m512 v2 = _mm512_permutex2var_ps(b0, ev, b1), v3 = _mm512_permutex2var_ps(b0, od, b1);
    /* u: the later element replaces the earlier (earlier not nan, later > or nan) */
    __mmask16 u0 =
        _mm512_cmp_ps_mask(v0, v0, _CMP_ORD_Q) &
        (_mm512_cmp_ps_mask(v1, v0, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q));
    __mmask16 u1 =
        _mm512_cmp_ps_mask(v2, v2, _CMP_ORD_Q) &
        (_mm512_cmp_ps_mask(v3, v2, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v3, v3, _CMP_UNORD_Q));
    __m512 h0 = _mm512_mask_blend_ps(u0, v0, v1), h1 = _mm512_mask_blend_ps(u1, v2, v3);
    __mmask16 u =
        _mm512_cmp_ps_mask(h0, h0, _CMP_ORD_Q) &
        (_mm512_cmp_ps_mask(h1, h0, _CMP_GT_OQ) | _mm512_cmp_ps_mask(h1, h1, _CMP_UNORD_Q));
    _mm512_mask_storeu_ps(o + ow, om, _mm512_mask_blend_ps(u, h0, h1));
    if (ix) {
      __m512i k0 = _mm512_maskz_mov_epi32(u0, one);                       /* row 0: u0 */
      __m512i k1 = _mm512_add_epi32(wv, _mm512_maskz_mov_epi32(u1, one)); /* row 1: W + u1 */
      __m512i k = _mm512_mask_blend_epi32(u, k0, k1);
      k = _mm512_add_epi32(k, _mm512_add_epi32(step, _mm512_set1_epi32((int)(base + 2 * ow))));
      _mm512_mask_storeu_epi64(ix + ow, (__mmask8)om,
                               _mm512_cvtepi32_epi64(_mm512_castsi512_si256(k)));
      _mm512_mask_storeu_epi64(ix + ow + 8, (__mmask8)(om >> 8),
                               _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(k, 1)));
    }
  }
  return n;
}

/* Backward of the 2x2 stride-2 max above for one plane: every grad_x element
 * lies in at most one window, so each is written once (go where the saved
 * index points, else 0) instead of zeroing the plane and scattering. */
void ct__pool_max2x2_bwd_plane_avx512(float *gx, const float *go, const int64_t *ix, int64_t H,
                                      int64_t W, int64_t Ho, int64_t Wo) {
  const __m512i il_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i il_hi =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512i step = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i w0 = _mm512_set1_epi32((int)W), w1 = _mm512_set1_epi32((int)W + 1);
  const __m512i one = _mm512_set1_epi32(1);
  for (int64_t oh = 0; oh < Ho; oh++) {
    float *g0 = gx + 2 * oh * W, *g1 = g0 + W;
    for (int64_t ow = 0; ow < Wo; ow += 16) {
      int64_t m = Wo - ow < 16 ? Wo - ow : 16;
      __mmask16 om = (__mmask16)((1u << m) - 1);
      __mmask16 lo = m >= 8 ? 0xFFFF : (__mmask16)((1u << (2 * m)) - 1);
      __mmask16 hi = m > 8 ? (__mmask16)((1u << (2 * m - 16)) - 1) : 0;
      const int64_t *iq = ix + oh * Wo + ow;
      __m512 gv = _mm512_maskz_loadu_ps(om, go + oh * Wo + ow);
      __m256i i0 = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)om, iq));
      __m256i i1 = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)(om >> 8), iq + 8));
      __m512i k = _mm512_inserti64x4(_mm512_castsi256_si512(i0), i1, 1);
      k = _mm512_sub_epi32(k,
                           _mm512_add_epi32(step, _mm512_set1_epi32((int)(2 * oh * W + 2 * ow))));
      __m512 a = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, _mm512_setzero_si512()), gv);
      __m512 b = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, one), gv);
      _mm512_mask_storeu_ps(g0 + 2 * ow, lo, _mm512_permutex2var_ps(a, il_lo, b));
      _mm512_mask_storeu_ps(g0 + 2 * ow + 16, hi, _mm512_permutex2var_ps(a, il_hi, b));
      a = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, w0), gv);
      b = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, w1), gv);
      _mm512_mask_storeu_ps(g1 + 2 * ow, lo, _mm512_permutex2var_ps(a, il_lo, b));
      _mm512_mask_storeu_ps(g1 + 2 * ow + 16, hi, _mm512_permutex2var_ps(a, il_hi, b));
    }
    for (int64_t w = 2 * Wo; w < W; w++) g0[w] = 0, g1[w] = 0; /* columns no window covers */
  }
  for (int64_t i = 2 * Ho * W; i < H * W; i++) gx[i] = 0; /* rows no window covers */
}
#endif
