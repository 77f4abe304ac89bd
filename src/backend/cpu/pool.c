/* CPU 2-d max and average pooling, forward and backward.
 *
 * Shapes: x (N, C, H, W) -> out (N, C, Ho, Wo), contiguous; the N*C planes are
 * independent and split across threads. Window of output (oh, ow): rows
 * oh*sh - ph .. + kH, columns likewise; max ignores padding (-inf), nan wins
 * (as torch), the first maximum wins ties; indices hold h*W + w in the plane.
 * Average: the divisor counts the window clipped to the padded image
 * (count_include_pad, torch's default) or to the image itself. f32 and f64
 * natively; f16/bf16 computed in f32. */
#include <math.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include "backend/cpu/nn_util.h"

typedef struct pool_ctx {
  bool is_max;
  int64_t H, W, Ho, Wo;
  const ct_pool2d_params *p;
  char *x, *out; /* forward: x in, out out; backward: x = grad_x, out = grad_out */
  int64_t *idx;
  const int64_t *cidx;
} pool_ctx;

/* Window bounds clipped to the image; *div: the average's divisor. */
static inline void window(const pool_ctx *c, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                          int64_t *w0, int64_t *w1, int64_t *div) {
  const ct_pool2d_params *p = c->p;
  int64_t hs = oh * p->stride[0] - p->padding[0], ws = ow * p->stride[1] - p->padding[1];
  int64_t he = hs + p->kernel[0], we = ws + p->kernel[1];
  if (he > c->H + p->padding[0]) he = c->H + p->padding[0];
  if (we > c->W + p->padding[1]) we = c->W + p->padding[1];
  int64_t full = (he - hs) * (we - ws);
  if (hs < 0) hs = 0;
  if (ws < 0) ws = 0;
  if (he > c->H) he = c->H;
  if (we > c->W) we = c->W;
  *h0 = hs, *h1 = he, *w0 = ws, *w1 = we;
  *div = p->count_include_pad ? full : (he - hs) * (we - ws);
}

#ifdef __AVX512F__
/* 2x2 stride-2 max of rows r0, r1 for outputs [0, n), 16 at a time (masked tail):
 * the tree ((v0, v1), (v2, v3)) below with AVX-512 masks; indices
 * base + 2*ow + offset in the window (base + 2*Wo + W must fit in int32).
 * Returns n, the outputs done. */
static int64_t max2x2_row_avx512(const float *r0, const float *r1, float *o, int64_t *ix,
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
    __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
    __m512 v0 = _mm512_permutex2var_ps(a0, ev, a1), v1 = _mm512_permutex2var_ps(a0, od, a1);
    __m512 v2 = _mm512_permutex2var_ps(b0, ev, b1), v3 = _mm512_permutex2var_ps(b0, od, b1);
    /* u: the later element replaces the earlier (earlier not nan, later > or nan) */
    __mmask16 u0 = _mm512_cmp_ps_mask(v0, v0, _CMP_ORD_Q) &
                   (_mm512_cmp_ps_mask(v1, v0, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q));
    __mmask16 u1 = _mm512_cmp_ps_mask(v2, v2, _CMP_ORD_Q) &
                   (_mm512_cmp_ps_mask(v3, v2, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v3, v3, _CMP_UNORD_Q));
    __m512 h0 = _mm512_mask_blend_ps(u0, v0, v1), h1 = _mm512_mask_blend_ps(u1, v2, v3);
    __mmask16 u = _mm512_cmp_ps_mask(h0, h0, _CMP_ORD_Q) &
                  (_mm512_cmp_ps_mask(h1, h0, _CMP_GT_OQ) | _mm512_cmp_ps_mask(h1, h1, _CMP_UNORD_Q));
    _mm512_mask_storeu_ps(o + ow, om, _mm512_mask_blend_ps(u, h0, h1));
    if (ix) {
      __m512i k0 = _mm512_maskz_mov_epi32(u0, one);                       /* row 0: u0 */
      __m512i k1 = _mm512_add_epi32(wv, _mm512_maskz_mov_epi32(u1, one)); /* row 1: W + u1 */
      __m512i k = _mm512_mask_blend_epi32(u, k0, k1);
      k = _mm512_add_epi32(k, _mm512_add_epi32(step, _mm512_set1_epi32((int)(base + 2 * ow))));
      _mm512_mask_storeu_epi64(ix + ow, (__mmask8)om, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(k)));
      _mm512_mask_storeu_epi64(ix + ow + 8, (__mmask8)(om >> 8),
                               _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(k, 1)));
    }
  }
  return n;
}
#endif

#ifdef __AVX512F__
/* Backward of the 2x2 stride-2 max above for one plane: every grad_x element
 * lies in at most one window, so each is written once (go where the saved
 * index points, else 0) instead of zeroing the plane and scattering. */
static void max2x2_bwd_plane_avx512(float *gx, const float *go, const int64_t *ix, int64_t H,
                                    int64_t W, int64_t Ho, int64_t Wo) {
  const __m512i il_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i il_hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
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
      k = _mm512_sub_epi32(k, _mm512_add_epi32(step, _mm512_set1_epi32((int)(2 * oh * W + 2 * ow))));
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

/* Whether every max window lies inside the image (no padding, no partial
 * ceil_mode window): the fast path without clipping. */
static bool max_unclipped(const pool_ctx *c) {
  const ct_pool2d_params *p = c->p;
  return c->is_max && p->padding[0] == 0 && p->padding[1] == 0 && c->Ho > 0 && c->Wo > 0 &&
         (c->Ho - 1) * p->stride[0] + p->kernel[0] <= c->H &&
         (c->Wo - 1) * p->stride[1] + p->kernel[1] <= c->W;
}

/* Max of one window: the first nan wins, else the first maximum (as the
 * clipped loop below). MAX_STEP folds in element v at plane offset i. */
#define MAX_STEP(v, i)                                                                         \
  do {                                                                                         \
    if (best == best && ((v) > best || (v) != (v))) best = (v), bi = (i);                      \
  } while (0)

#ifdef __AVX512F__
#define ROW_MAX2X2_VEC_f32                                                                     \
  if (c->H * c->W + W < INT32_MAX) ow0 = max2x2_row_avx512(r0, r1, orow, irow, c->Wo, base, W)
#else
#define ROW_MAX2X2_VEC_f32 (void)0
#endif
#define ROW_MAX2X2_VEC_f64 (void)0
/* The plane-at-once backward applies when the forward took the 2x2 fast path. */
#ifdef __AVX512F__
#define BWD_MAX2X2_VEC_f32(c)                                                                  \
  (max_unclipped(c) && (c)->p->kernel[0] == 2 && (c)->p->kernel[1] == 2 &&                     \
   (c)->p->stride[0] == 2 && (c)->p->stride[1] == 2 && (c)->H * (c)->W + (c)->W < INT32_MAX)
#else
#define BWD_MAX2X2_VEC_f32(c) false
#define max2x2_bwd_plane_avx512(...) (void)0
#endif
#define BWD_MAX2X2_VEC_f64(c) false

#define DEFINE_POOL(T, SUF)                                                                    \
  static void fwd_max_fast_##SUF(const pool_ctx *c, int64_t pl) {                              \
    const T *x = (const T *)c->x + pl * c->H * c->W;                                           \
    T *o = (T *)c->out + pl * c->Ho * c->Wo;                                                   \
    int64_t *ix = c->idx ? c->idx + pl * c->Ho * c->Wo : NULL;                                 \
    const int64_t W = c->W, kH = c->p->kernel[0], kW = c->p->kernel[1];                        \
    const int64_t sh = c->p->stride[0], sw = c->p->stride[1];                                  \
    if (kH == 2 && kW == 2 && sh == 2 && sw == 2) {                                            \
      for (int64_t oh = 0; oh < c->Ho; oh++) {                                                 \
        const T *r0 = x + 2 * oh * W, *r1 = r0 + W;                                            \
        T *orow = o + oh * c->Wo;                                                              \
        int64_t *irow = ix ? ix + oh * c->Wo : NULL;                                           \
        int64_t base = 2 * oh * W, ow0 = 0;                                                    \
        ROW_MAX2X2_VEC_##SUF;                                                                  \
        /* A tree ((v0, v1), (v2, v3)) of the window in order: the same first nan or   */   \
        /* first maximum as the sequential loop; branch-free selects, vectorizable.    */   \
        for (int64_t ow = ow0; ow < c->Wo; ow++) {                                             \
          T v0 = r0[2 * ow], v1 = r0[2 * ow + 1], v2 = r1[2 * ow], v3 = r1[2 * ow + 1];        \
          int u0 = (v0 == v0) & ((v1 > v0) | (v1 != v1));                                     \
          int u1 = (v2 == v2) & ((v3 > v2) | (v3 != v3));                                     \
          T h0 = u0 ? v1 : v0, h1 = u1 ? v3 : v2;                                              \
          int u = (h0 == h0) & ((h1 > h0) | (h1 != h1));                                       \
          orow[ow] = u ? h1 : h0;                                                              \
          if (irow) irow[ow] = base + 2 * ow + (u ? W + u1 : u0);                              \
        }                                                                                      \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t oh = 0; oh < c->Ho; oh++)                                                     \
      for (int64_t ow = 0; ow < c->Wo; ow++) {                                                 \
        int64_t i0 = oh * sh * W + ow * sw, bi = i0;                                           \
        T best = x[i0];                                                                        \
        for (int64_t h = 0; h < kH; h++)                                                       \
          for (int64_t w = 0; w < kW; w++) MAX_STEP(x[i0 + h * W + w], i0 + h * W + w);        \
        o[oh * c->Wo + ow] = best;                                                             \
        if (ix) ix[oh * c->Wo + ow] = bi;                                                      \
      }                                                                                        \
  }                                                                                            \
  static void fwd_##SUF(int64_t b, int64_t e, void *vctx) {                                    \
    const pool_ctx *c = vctx;                                                                  \
    if (max_unclipped(c)) {                                                                    \
      for (int64_t pl = b; pl < e; pl++) fwd_max_fast_##SUF(c, pl);                            \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t pl = b; pl < e; pl++) {                                                       \
      const T *x = (const T *)c->x + pl * c->H * c->W;                                         \
      T *o = (T *)c->out + pl * c->Ho * c->Wo;                                                 \
      int64_t *ix = c->idx ? c->idx + pl * c->Ho * c->Wo : NULL;                               \
      for (int64_t oh = 0; oh < c->Ho; oh++)                                                   \
        for (int64_t ow = 0; ow < c->Wo; ow++) {                                               \
          int64_t h0, h1, w0, w1, div;                                                         \
          window(c, oh, ow, &h0, &h1, &w0, &w1, &div);                                         \
          if (c->is_max) {                                                                     \
            T best = -INFINITY;                                                                \
            int64_t bi = h0 * c->W + w0;                                                       \
            for (int64_t h = h0; h < h1; h++)                                                  \
              for (int64_t w = w0; w < w1; w++) {                                              \
                T v = x[h * c->W + w];                                                         \
                if (v > best || isnan(v)) {                                                    \
                  best = v;                                                                    \
                  bi = h * c->W + w;                                                           \
                  if (isnan(v)) goto done_##SUF;                                               \
                }                                                                              \
              }                                                                                \
          done_##SUF:                                                                          \
            o[oh * c->Wo + ow] = best;                                                         \
            if (ix) ix[oh * c->Wo + ow] = bi;                                                  \
          } else {                                                                             \
            T s = 0;                                                                           \
            for (int64_t h = h0; h < h1; h++)                                                  \
              for (int64_t w = w0; w < w1; w++) s += x[h * c->W + w];                          \
            o[oh * c->Wo + ow] = div > 0 ? s / (T)div : (T)NAN;                                \
          }                                                                                    \
        }                                                                                      \
    }                                                                                          \
  }                                                                                            \
  static void bwd_##SUF(int64_t b, int64_t e, void *vctx) {                                    \
    const pool_ctx *c = vctx;                                                                  \
    if (BWD_MAX2X2_VEC_##SUF(c)) {                                                             \
      for (int64_t pl = b; pl < e; pl++)                                                       \
        max2x2_bwd_plane_avx512((float *)c->x + pl * c->H * c->W,                              \
                                (const float *)c->out + pl * c->Ho * c->Wo,                    \
                                c->cidx + pl * c->Ho * c->Wo, c->H, c->W, c->Ho, c->Wo);       \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t pl = b; pl < e; pl++) {                                                       \
      T *gx = (T *)c->x + pl * c->H * c->W;                                                    \
      const T *go = (const T *)c->out + pl * c->Ho * c->Wo;                                    \
      for (int64_t i = 0; i < c->H * c->W; i++) gx[i] = 0;                                     \
      if (c->is_max) {                                                                         \
        const int64_t *ix = c->cidx + pl * c->Ho * c->Wo;                                      \
        for (int64_t q = 0; q < c->Ho * c->Wo; q++) gx[ix[q]] += go[q];                        \
        continue;                                                                              \
      }                                                                                        \
      for (int64_t oh = 0; oh < c->Ho; oh++)                                                   \
        for (int64_t ow = 0; ow < c->Wo; ow++) {                                               \
          int64_t h0, h1, w0, w1, div;                                                         \
          window(c, oh, ow, &h0, &h1, &w0, &w1, &div);                                         \
          if (div <= 0) continue;                                                              \
          T v = go[oh * c->Wo + ow] / (T)div;                                                  \
          for (int64_t h = h0; h < h1; h++)                                                    \
            for (int64_t w = w0; w < w1; w++) gx[h * c->W + w] += v;                           \
        }                                                                                      \
    }                                                                                          \
  }

DEFINE_POOL(float, f32)
DEFINE_POOL(double, f64)

static int64_t grain_for(int64_t per_plane) {
  int64_t g = CT_PARALLEL_GRAIN / (per_plane > 0 ? per_plane : 1);
  return g > 0 ? g : 1;
}

ct_status ct__cpu_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x,
                         const ct_pool2d_params *p) {
  if (ct__is_half(x->dtype)) {
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *of = ct__nn_f32(out, false, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_pool2d(is_max, of, indices, xf, p);
    ct__release(xf);
    return ct__nn_back(out, of, st);
  }
  pool_ctx c = {.is_max = is_max, .H = x->shape[2], .W = x->shape[3], .Ho = out->shape[2],
                .Wo = out->shape[3], .p = p, .x = ct__data(x), .out = ct__data(out),
                .idx = indices ? ct__data(indices) : NULL};
  int64_t planes = x->shape[0] * x->shape[1];
  int64_t work = c.Ho * c.Wo * p->kernel[0] * p->kernel[1];
  ct__parallel_for(planes, grain_for(work), x->dtype == CT_F32 ? fwd_f32 : fwd_f64, &c);
  return CT_OK;
}

ct_status ct__cpu_pool2d_backward(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                  const ct_tensor *indices, const ct_pool2d_params *p) {
  if (ct__is_half(grad_x->dtype)) {
    bool fail = false;
    ct_tensor *gof = ct__nn_f32(grad_out, true, &fail), *gxf = ct__nn_f32(grad_x, false, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_pool2d_backward(is_max, gxf, gof, indices, p);
    ct__release(gof);
    return ct__nn_back(grad_x, gxf, st);
  }
  pool_ctx c = {.is_max = is_max, .H = grad_x->shape[2], .W = grad_x->shape[3],
                .Ho = grad_out->shape[2], .Wo = grad_out->shape[3], .p = p,
                .x = ct__data(grad_x), .out = ct__data(grad_out),
                .cidx = indices ? ct__data(indices) : NULL};
  int64_t planes = grad_x->shape[0] * grad_x->shape[1];
  int64_t work = c.H * c.W + c.Ho * c.Wo * (is_max ? 1 : p->kernel[0] * p->kernel[1]);
  ct__parallel_for(planes, grain_for(work), grad_x->dtype == CT_F32 ? bwd_f32 : bwd_f64, &c);
  return CT_OK;
}
