/* AVX-512 kernels of the CPU convolution (conv.c selects them through
 * cpu_arch.h when the build targets AVX-512): im2col/col2im of f32 rows with
 * unit stride and dilation along W, and direct forward and grad_w kernels for
 * layers with few input channels. Same results as conv.c's paths up to the
 * order of the float additions. */
#include "backend/cpu/conv.h"

#if CT_CPU_AVX512
#include <immintrin.h>

/* f32, stride 1 and dilation 1 along W: each output row is one shifted run
 * of an input row, copied (im2col) or added (col2im) 16 lanes at a time with
 * masked loads and stores (lanes outside the image read as 0 and are never
 * touched; masked-off lanes do not fault). Same results as the loops above. */
static inline __mmask16 lanes_below(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

void ct__conv_im2col_f32_w1(const conv_geom *g, const float *x, float *col, int64_t ld) {
  for (int64_t c = 0; c < g->Cg; c++)
    for (int64_t i = 0; i < g->kH; i++)
      for (int64_t j = 0; j < g->kW; j++) {
        float *row = col + ((c * g->kH + i) * g->kW + j) * ld;
        const float *xc = x + c * g->H * g->W;
        int64_t off_w = j - g->pw, ow0 = off_w >= 0 ? 0 : -off_w, ow1 = g->W - off_w;
        /* rows oh in [oh0, oh1) read the image; the others are padding */
        int64_t off_h = i * g->dh - g->ph;
        int64_t oh0 = off_h >= 0 ? 0 : (-off_h + g->sh - 1) / g->sh;
        int64_t oh1 = g->H - off_h <= 0 ? 0 : (g->H - off_h + g->sh - 1) / g->sh;
        if (oh1 > g->Ho) oh1 = g->Ho;
        if (oh0 > oh1) oh0 = oh1;
        for (int64_t ow = 0; ow < g->Wo; ow += 16) { /* masks fixed for the column block */
          __mmask16 st = lanes_below(g->Wo - ow);
          __mmask16 m = st & lanes_below(ow1 - ow) & (__mmask16)~lanes_below(ow0 - ow);
          const __m512 z = _mm512_setzero_ps();
          float *r = row + ow;
          const float *xr = xc + off_h * g->W + off_w + ow; /* + oh*sh*W: read only in range */
          for (int64_t oh = 0; oh < oh0; oh++) _mm512_mask_storeu_ps(r + oh * g->Wo, st, z);
          for (int64_t oh = oh0; oh < oh1; oh++)
            _mm512_mask_storeu_ps(r + oh * g->Wo, st,
                                  _mm512_maskz_loadu_ps(m, xr + oh * g->sh * g->W));
          for (int64_t oh = oh1; oh < g->Ho; oh++) _mm512_mask_storeu_ps(r + oh * g->Wo, st, z);
        }
      }
}

/* x (Cg, H, W) = col2im(col), overwriting x (no zeroing needed): each input
 * row gathers its (i, j) contributions in registers and is stored once (no
 * read-modify-write of overlapping runs, which stalls on store forwarding). */
void ct__conv_col2im_f32_w1(const conv_geom *g, const float *col, float *x, int64_t ld) {
  /* mk[block][j]: the lanes of input block p0 = 16*block that tap j maps to an output
   * column (computed per use when the table would be too large) */
  enum { MB = 8, MJ = 16 };
  __mmask16 mk[MB][MJ];
  bool table = g->W <= 16 * MB && g->kW <= MJ;
  for (int64_t bl = 0; table && bl * 16 < g->W; bl++)
    for (int64_t j = 0; j < g->kW; j++) {
      int64_t q0 = bl * 16 - (j - g->pw);
      mk[bl][j] =
          lanes_below(g->W - bl * 16) & lanes_below(g->Wo - q0) & (__mmask16)~lanes_below(-q0);
    }
  for (int64_t c = 0; c < g->Cg; c++)
    for (int64_t ih = 0; ih < g->H; ih++) {
      float *xr = x + (c * g->H + ih) * g->W;
      for (int64_t p0 = 0; p0 < g->W; p0 += 16) {
        __mmask16 st = lanes_below(g->W - p0);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < g->kH; i++) {
          int64_t t = ih + g->ph - i * g->dh; /* = oh * sh */
          if (t < 0 || (g->sh > 1 && t % g->sh)) continue;
          int64_t oh = g->sh > 1 ? t / g->sh : t;
          if (oh >= g->Ho) continue;
          const float *rows = col + (c * g->kH + i) * g->kW * ld + oh * g->Wo;
          for (int64_t j = 0; j < g->kW; j++) {
            int64_t off_w = j - g->pw, q0 = p0 - off_w; /* ow of lane 0 */
            __mmask16 m = table ? mk[p0 / 16][j]
                                : st & lanes_below(g->Wo - q0) & (__mmask16)~lanes_below(-q0);
            acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, rows + j * ld + q0));
          }
        }
        _mm512_mask_storeu_ps(xr + p0, st, acc);
      }
    }
}

/* ---- Direct forward for few input channels (f32, AVX-512) -------------------
 * A first layer (C*kH*kW small: 3x5x5, 1x3x3) makes im2col a 9-75x copy of the
 * image feeding a GEMM with K <= 96, bound by that copy. Instead, for each
 * output row block of 16 pixels and 8 output channels, 8 accumulators gather
 * the K shifted input rows (masked loads: padding reads as 0) times the
 * weights, packed (Co/8, K, 8) with zeros past Co. Groups 1, stride and
 * dilation 1. */
#define DIRECT_MAX_K 96
bool ct__conv_direct_fwd_ok(ct_dtype dt, const conv_geom *g) {
  return dt == CT_F32 && g->G == 1 && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 &&
         !g->direct && g->K <= DIRECT_MAX_K && g->kW <= 16;
}

/* Output row oh, pixels [ow, ow + 16*NB), channels cb*8 .. + nco: NB blocks of
 * 16 lanes x 8 channels of accumulators; mk[b][j]: the lanes of block b that
 * tap j reads inside the image. */
static inline __attribute__((always_inline)) void direct_fwd_tile(
    const conv_geom *g, const float *x, const float *wb, const float *bias, float *out, int64_t cb,
    int64_t oh, int64_t ow, const __mmask16 (*mk)[16], __mmask16 *st, const int NB, const int COB) {
  __m512 acc[2][8];
  _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++)
      _Pragma("GCC unroll 8") for (int k = 0; k < COB; k++) acc[b][k] = _mm512_setzero_ps();
  for (int64_t ci = 0; ci < g->C; ci++)
    for (int64_t i = 0; i < g->kH; i++) {
      int64_t ih = oh + i - g->ph;
      if (ih < 0 || ih >= g->H) continue;
      const float *xr = x + (ci * g->H + ih) * g->W + ow - g->pw;
      const float *wk = wb + (ci * g->kH + i) * g->kW * 8;
      for (int64_t j = 0; j < g->kW; j++) {
        __m512 xv[2];
        _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++) xv[b] =
            _mm512_maskz_loadu_ps(mk[b][j], xr + j + 16 * b);
        _Pragma("GCC unroll 8") for (int k = 0; k < COB; k++) {
          __m512 wv = _mm512_set1_ps(wk[j * 8 + k]);
          _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++) acc[b][k] =
              _mm512_fmadd_ps(wv, xv[b], acc[b][k]);
        }
      }
    }
  _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++)
      _Pragma("GCC unroll 8") for (int k = 0; k < COB; k++) /* constant trips: acc in registers */
      /* bias added last, as GEMM with beta = 1 onto the bias does */
      _mm512_mask_storeu_ps(
          out + ((cb * 8 + k) * g->Ho + oh) * g->Wo + ow + 16 * b, st[b],
          bias ? _mm512_add_ps(acc[b][k], _mm512_set1_ps(bias[cb * 8 + k])) : acc[b][k]);
}

/* The tile with NB blocks of 16 pixels and COB = nco channels as constants,
 * so that the accumulators stay in registers. */
static void direct_fwd_tiles(const conv_geom *g, const float *x, const float *wb, const float *bias,
                             float *out, int64_t cb, int64_t oh, int64_t ow,
                             const __mmask16 (*mk)[16], __mmask16 *st, int nb, int nco) {
#define TILE(NB, COB)                                                  \
  case NB * 16 + COB:                                                  \
    direct_fwd_tile(g, x, wb, bias, out, cb, oh, ow, mk, st, NB, COB); \
    break;
  switch (nb * 16 + nco) {
    TILE(1, 1)
    TILE(1, 2) TILE(1, 3) TILE(1, 4) TILE(1, 5) TILE(1, 6) TILE(1, 7) TILE(1, 8) TILE(2, 1)
        TILE(2, 2) TILE(2, 3) TILE(2, 4) TILE(2, 5) TILE(2, 6) TILE(2, 7) TILE(2, 8) default
        : break;
  }
#undef TILE
}

void ct__conv_direct_fwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  (void)tid;
  const fwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  const float *wpk = (const float *)c->scratch, *bias = (const float *)c->b;
  for (int64_t ow = 0; ow < g->Wo; ow += 32) {
    __mmask16 mk[2][16], st[2] = {lanes_below(g->Wo - ow), lanes_below(g->Wo - ow - 16)};
    for (int b = 0; b < 2; b++)
      for (int64_t j = 0; j < g->kW; j++) {
        int64_t iw0 = ow + 16 * b + j - g->pw;
        mk[b][j] = st[b] & lanes_below(g->W - iw0) & (__mmask16)~lanes_below(-iw0);
      }
    for (int64_t n = n0; n < n1; n++) {
      const float *x = (const float *)c->x + n * g->C * g->H * g->W;
      float *out = (float *)c->out + n * g->Co * g->P;
      for (int64_t cb = 0; cb * 8 < g->Co; cb++) {
        const float *wb = wpk + cb * g->K * 8;
        int64_t nco = g->Co - cb * 8 < 8 ? g->Co - cb * 8 : 8;
        for (int64_t oh = 0; oh < g->Ho; oh++) {
          direct_fwd_tiles(g, x, wb, bias, out, cb, oh, ow, (const __mmask16(*)[16])mk, st,
                           st[1] ? 2 : 1, (int)nco);
        }
      }
    }
  }
}

/* Packs w (Co, K) into (ceil(Co/8), K, 8), zero past Co. */
void ct__conv_direct_pack_w(const conv_geom *g, const float *w, float *wpk) {
  for (int64_t cb = 0; cb * 8 < g->Co; cb++)
    for (int64_t kk = 0; kk < g->K; kk++)
      for (int64_t k = 0; k < 8; k++)
        wpk[(cb * g->K + kk) * 8 + k] = cb * 8 + k < g->Co ? w[(cb * 8 + k) * g->K + kk] : 0.0f;
}

/* ---- Direct grad_w for few input channels (f32, AVX-512) -------------------
 * The layers of use_direct_fwd with kW <= 5: grad_w[co, (c, i, j)] = sum over
 * n, oh, ow of gout[n, co, oh, ow] * x[n, c, oh + i - ph, ow + j - pw] with,
 * per (4 output channels, c, i), 4*kW vector accumulators over all samples
 * of the thread, reduced once at the end (instead of an im2col copy per sample
 * and a GEMM with K = P). Adds into the thread's zeroed grad_w accumulator. */
static inline __attribute__((always_inline)) void direct_gw_tile(
    const conv_geom *g, const float *xs, const float *gs, int64_t n0, int64_t n1, int64_t cb,
    int64_t ci, int64_t i, const __mmask16 (*mk)[8], float *gw, const int KW, const int COB) {
  __m512 acc[5][4];
  _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++)
      _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++) acc[j][k] = _mm512_setzero_ps();
  for (int64_t n = n0; n < n1; n++) {
    const float *xn = xs + (n * g->C + ci) * g->H * g->W;
    const float *gn = gs + (n * g->Co + cb * 4) * g->P;
    for (int64_t oh = 0; oh < g->Ho; oh++) {
      int64_t ih = oh + i - g->ph;
      if (ih < 0 || ih >= g->H) continue;
      const float *xr = xn + ih * g->W - g->pw;
      const float *gr = gn + oh * g->Wo;
      int64_t ow = 0, b = 0;
      /* blocks of 16 whole pixels, all taps inside the image: no masks */
      for (; ow + 16 <= g->Wo && ow >= g->pw && ow + 15 + KW - 1 - g->pw < g->W; ow += 16, b++) {
        __m512 gv[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++) gv[k] =
            _mm512_loadu_ps(gr + k * g->P + ow);
        _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++) {
          __m512 xv = _mm512_loadu_ps(xr + ow + j);
          _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++) acc[j][k] =
              _mm512_fmadd_ps(gv[k], xv, acc[j][k]);
        }
      }
      for (; ow < g->Wo; ow += 16, b++) {
        __mmask16 st = lanes_below(g->Wo - ow);
        __m512 gv[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++) gv[k] =
            _mm512_maskz_loadu_ps(st, gr + k * g->P + ow);
        _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++) {
          __m512 xv = _mm512_maskz_loadu_ps(mk[b][j], xr + ow + j);
          _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++) acc[j][k] =
              _mm512_fmadd_ps(gv[k], xv, acc[j][k]);
        }
      }
    }
  }
  _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++)
      _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++)
          gw[(cb * 4 + k) * g->K + (ci * g->kH + i) * g->kW + j] += _mm512_reduce_add_ps(acc[j][k]);
}

#define DIRECT_GW_MAX_WO (16 * 8)
bool ct__conv_direct_gw_ok(ct_dtype dt, const conv_geom *g) {
  return ct__conv_direct_fwd_ok(dt, g) && g->kW <= 5 && g->Wo <= DIRECT_GW_MAX_WO;
}

/* The tile with kW and the channel count as constants, so that the
 * accumulators stay in registers. */
static void direct_gw_tiles(const conv_geom *g, const float *xs, const float *gs, int64_t n0,
                            int64_t n1, int64_t cb, int64_t ci, int64_t i, const __mmask16 (*mk)[8],
                            float *gw, int kw, int nco) {
#define TILE(KW, COB)                                              \
  case KW * 16 + COB:                                              \
    direct_gw_tile(g, xs, gs, n0, n1, cb, ci, i, mk, gw, KW, COB); \
    break;
  switch (kw * 16 + nco) {
    TILE(1, 1)
    TILE(1, 2) TILE(1, 3) TILE(1, 4) TILE(2, 1) TILE(2, 2) TILE(2, 3) TILE(2, 4) TILE(3, 1)
        TILE(3, 2) TILE(3, 3) TILE(3, 4) TILE(4, 1) TILE(4, 2) TILE(4, 3) TILE(4, 4) TILE(5, 1)
            TILE(5, 2) TILE(5, 3) TILE(5, 4) default : break;
  }
#undef TILE
}

void ct__conv_direct_gw_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  const bwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  float *gw = (float *)(tid == 0 ? c->gw_final
                                 : c->gw + (size_t)(tid - 1) * (size_t)(g->Co * g->K) * c->es);
  __mmask16 mk[8][8]; /* [ow block][j]: lanes whose input column is inside the image */
  for (int64_t b = 0; b * 16 < g->Wo; b++)
    for (int64_t j = 0; j < g->kW; j++) {
      int64_t iw0 = b * 16 + j - g->pw;
      mk[b][j] =
          lanes_below(g->Wo - b * 16) & lanes_below(g->W - iw0) & (__mmask16)~lanes_below(-iw0);
    }
  const float *xs = (const float *)c->x, *gs = (const float *)c->gout;
  for (int64_t cb = 0; cb * 4 < g->Co; cb++) {
    int64_t nco = g->Co - cb * 4 < 4 ? g->Co - cb * 4 : 4;
    for (int64_t ci = 0; ci < g->C; ci++)
      for (int64_t i = 0; i < g->kH; i++) {
        const __mmask16(*m)[8] = (const __mmask16(*)[8])mk;
        direct_gw_tiles(g, xs, gs, n0, n1, cb, ci, i, m, gw, (int)g->kW, (int)nco);
      }
  }
}
#endif
