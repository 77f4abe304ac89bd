/* CPU 2-d convolution (cross-correlation, as PyTorch) by im2col + GEMM.
 *
 * Shapes: x (N, C, H, W), w (Co, C/G, kH, kW), out (N, Co, Ho, Wo); per group
 * g: Cg = C/G input channels, Cog = Co/G outputs, K = Cg*kH*kW, P = Ho*Wo.
 *   forward   out[n,g] (Cog, P) = w[g] (Cog, K) @ col (K, P) (+ bias)
 *   grad_x    dcol (K, P) = w[g]^T (K, Cog) @ gout[n,g] (Cog, P); col2im
 *   grad_w    gw[g] (Cog, K) += gout[n,g] (Cog, P) @ col^T (P, K)
 *   grad_b    sum of gout over n and P
 * col (K, P): row (c*kH + i)*kW + j holds x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]
 * (0 outside the image). A 1x1 kernel with stride 1 and no padding uses x as col.
 * Small images run nb samples per GEMM (chunk_of): their columns side by side
 * in one (K, nb*P) buffer, out[n..n+nb, g] computed as one (Cog, nb*P) product
 * and scattered into place; backward gathers grad_out into (Cog, nb*P) likewise,
 * so grad_w accumulates over the chunk in one GEMM and grad_x is one GEMM plus
 * nb col2im.
 *
 * Parallel decomposition: the batch is split across the threads of ctensor's
 * pool, each with its own column buffer (and its own grad_w accumulator,
 * summed at the end), calling single-threaded GEMMs (the small CNN shapes are
 * far below the size where a threaded GEMM pays). When there are fewer
 * samples than threads and each product is large, samples run one after
 * another and each GEMM is split across the pool instead (gemm.c). f32 and
 * f64 natively; f16/bf16 computed in f32. */
#include <stdlib.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include "backend/cpu/gemm.h"
#include "backend/cpu/nn_util.h"
#include "core/parallel.h"

typedef struct conv_geom {
  int64_t N, C, H, W, Co, kH, kW, Ho, Wo, G, Cg, Cog, K, P;
  int64_t sh, sw, ph, pw, dh, dw;
  bool direct; /* 1x1, stride 1, no padding: col is x itself */
} conv_geom;

static conv_geom geom_of(const ct_tensor *x, const ct_tensor *w, const int64_t *oshape,
                         const ct_conv2d_params *p) {
  conv_geom g;
  g.N = x->shape[0], g.C = x->shape[1], g.H = x->shape[2], g.W = x->shape[3];
  g.Co = w->shape[0], g.kH = w->shape[2], g.kW = w->shape[3];
  g.Ho = oshape[2], g.Wo = oshape[3];
  g.G = p->groups, g.Cg = g.C / g.G, g.Cog = g.Co / g.G;
  g.K = g.Cg * g.kH * g.kW, g.P = g.Ho * g.Wo;
  g.sh = p->stride[0], g.sw = p->stride[1], g.ph = p->padding[0], g.pw = p->padding[1];
  g.dh = p->dilation[0], g.dw = p->dilation[1];
  g.direct = g.kH == 1 && g.kW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  return g;
}

/* ---- im2col / col2im, one sample and one group ------------------------------ */

#define DEFINE_IM2COL(T, SUF)                                                                  \
  static void im2col_##SUF(const conv_geom *g, const T *x, T *col, int64_t ld) {              \
    for (int64_t c = 0; c < g->Cg; c++)                                                        \
      for (int64_t i = 0; i < g->kH; i++)                                                      \
        for (int64_t j = 0; j < g->kW; j++) {                                                  \
          T *row = col + ((c * g->kH + i) * g->kW + j) * ld;                                    \
          const T *xc = x + c * g->H * g->W;                                                   \
          int64_t off_w = j * g->dw - g->pw;                                                   \
          /* valid ow range: 0 <= ow*sw + off_w < W */                                         \
          int64_t ow0 = off_w >= 0 ? 0 : (-off_w + g->sw - 1) / g->sw;                         \
          int64_t ow1 = g->W - off_w <= 0 ? 0 : (g->W - off_w + g->sw - 1) / g->sw;            \
          if (ow1 > g->Wo) ow1 = g->Wo;                                                        \
          if (ow0 > ow1) ow0 = ow1;                                                            \
          for (int64_t oh = 0; oh < g->Ho; oh++) {                                             \
            T *r = row + oh * g->Wo;                                                           \
            int64_t ih = oh * g->sh - g->ph + i * g->dh;                                       \
            if (ih < 0 || ih >= g->H) {                                                        \
              for (int64_t ow = 0; ow < g->Wo; ow++) r[ow] = 0;                                \
              continue;                                                                        \
            }                                                                                  \
            const T *xr = xc + ih * g->W + off_w;                                              \
            for (int64_t ow = 0; ow < ow0; ow++) r[ow] = 0;                                    \
            if (g->sw == 1)                                                                    \
              for (int64_t ow = ow0; ow < ow1; ow++) r[ow] = xr[ow];                           \
            else                                                                               \
              for (int64_t ow = ow0; ow < ow1; ow++) r[ow] = xr[ow * g->sw];                   \
            for (int64_t ow = ow1; ow < g->Wo; ow++) r[ow] = 0;                                \
          }                                                                                    \
        }                                                                                      \
  }                                                                                            \
  /* x (Cg, H, W) += col2im(col); x must be zeroed beforehand. */                              \
  static void col2im_##SUF(const conv_geom *g, const T *col, T *x, int64_t ld) {              \
    for (int64_t c = 0; c < g->Cg; c++)                                                        \
      for (int64_t i = 0; i < g->kH; i++)                                                      \
        for (int64_t j = 0; j < g->kW; j++) {                                                  \
          const T *row = col + ((c * g->kH + i) * g->kW + j) * ld;                              \
          T *xc = x + c * g->H * g->W;                                                         \
          int64_t off_w = j * g->dw - g->pw;                                                   \
          int64_t ow0 = off_w >= 0 ? 0 : (-off_w + g->sw - 1) / g->sw;                         \
          int64_t ow1 = g->W - off_w <= 0 ? 0 : (g->W - off_w + g->sw - 1) / g->sw;            \
          if (ow1 > g->Wo) ow1 = g->Wo;                                                        \
          if (ow0 > ow1) ow0 = ow1;                                                            \
          for (int64_t oh = 0; oh < g->Ho; oh++) {                                             \
            int64_t ih = oh * g->sh - g->ph + i * g->dh;                                       \
            if (ih < 0 || ih >= g->H) continue;                                                \
            const T *r = row + oh * g->Wo;                                                     \
            T *xr = xc + ih * g->W + off_w;                                                    \
            if (g->sw == 1)                                                                    \
              for (int64_t ow = ow0; ow < ow1; ow++) xr[ow] += r[ow];                          \
            else                                                                               \
              for (int64_t ow = ow0; ow < ow1; ow++) xr[ow * g->sw] += r[ow];                  \
          }                                                                                    \
        }                                                                                      \
  }

DEFINE_IM2COL(float, f32)
DEFINE_IM2COL(double, f64)

#ifdef __AVX512F__
/* f32, stride 1 and dilation 1 along W: each output row is one shifted run
 * of an input row, copied (im2col) or added (col2im) 16 lanes at a time with
 * masked loads and stores (lanes outside the image read as 0 and are never
 * touched; masked-off lanes do not fault). Same results as the loops above. */
static inline __mmask16 lanes_below(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

static void im2col_f32_w1(const conv_geom *g, const float *x, float *col, int64_t ld) {
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
            _mm512_mask_storeu_ps(r + oh * g->Wo, st, _mm512_maskz_loadu_ps(m, xr + oh * g->sh * g->W));
          for (int64_t oh = oh1; oh < g->Ho; oh++) _mm512_mask_storeu_ps(r + oh * g->Wo, st, z);
        }
      }
}

/* x (Cg, H, W) = col2im(col), overwriting x (no zeroing needed): each input
 * row gathers its (i, j) contributions in registers and is stored once (no
 * read-modify-write of overlapping runs, which stalls on store forwarding). */
static void col2im_f32_w1(const conv_geom *g, const float *col, float *x, int64_t ld) {
  /* mk[block][j]: the lanes of input block p0 = 16*block that tap j maps to an output
   * column (computed per use when the table would be too large) */
  enum { MB = 8, MJ = 16 };
  __mmask16 mk[MB][MJ];
  bool table = g->W <= 16 * MB && g->kW <= MJ;
  for (int64_t bl = 0; table && bl * 16 < g->W; bl++)
    for (int64_t j = 0; j < g->kW; j++) {
      int64_t q0 = bl * 16 - (j - g->pw);
      mk[bl][j] = lanes_below(g->W - bl * 16) & lanes_below(g->Wo - q0) & (__mmask16)~lanes_below(-q0);
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
#define CT_CONV_W1(dt, g) ((dt) == CT_F32 && (g)->sw == 1 && (g)->dw == 1)
#else
#define CT_CONV_W1(dt, g) false
#define im2col_f32_w1 im2col_f32
#define col2im_f32_w1 col2im_f32
#endif

/* col: rows of `ld` elements (ld = P for one sample; nb*P when the columns
 * of nb samples sit side by side, sample s at column s*P). */
static void im2col(ct_dtype dt, const conv_geom *g, const void *x, void *col, int64_t ld) {
  if (CT_CONV_W1(dt, g)) im2col_f32_w1(g, x, col, ld);
  else if (dt == CT_F32) im2col_f32(g, x, col, ld);
  else im2col_f64(g, x, col, ld);
}
/* x += col2im(col) (x zeroed beforehand), except the f32 W1 path, which
 * overwrites x. */
static void col2im(ct_dtype dt, const conv_geom *g, const void *col, void *x, int64_t ld) {
  if (CT_CONV_W1(dt, g)) col2im_f32_w1(g, col, x, ld);
  else if (dt == CT_F32) col2im_f32(g, col, x, ld);
  else col2im_f64(g, col, x, ld);
}

/* Row-major C (M, N) = alpha * op(A) @ op(B) + beta * C. */
static void gemm(ct_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  ct__gemm(dt == CT_F64, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* Whether to split the batch across threads (each with single-threaded
 * GEMMs) rather than run samples in turn with threaded GEMMs. */
static int batch_threads(const conv_geom *g) {
  int nt = ct__num_threads();
  if (ct__blas_max_threads() < nt) nt = ct__blas_max_threads();
  if (nt <= 1 || g->N <= 1) return 1;
  double flops = (double)g->Cog * (double)g->K * (double)g->P * (double)g->G;
  if (g->N < nt && flops > 4.0 * 262144.0) return 1;
  if (flops * (double)g->N < 65536.0) return 1; /* too small to pay for threads */
  return (int)(g->N < nt ? g->N : nt);
}

/* Samples per GEMM: the columns of nb samples side by side make one (K, nb*P)
 * column buffer and one GEMM (small images give GEMMs too narrow for BLAS
 * one sample at a time). About CHUNK_COLS columns, at most the samples one
 * thread handles; 1 for the direct (1x1) case, which reads x in place. */
#ifndef CT_CONV_CHUNK_COLS
#define CT_CONV_CHUNK_COLS 384
#endif
static int64_t chunk_of(const conv_geom *g, int nt) {
  if (g->direct || g->P >= CT_CONV_CHUNK_COLS) return 1;
  int64_t nb = (CT_CONV_CHUNK_COLS + g->P - 1) / g->P;
  int64_t per = (g->N + nt - 1) / nt;
  return nb < per ? nb : (per > 0 ? per : 1);
}

/* Scratch elements one thread needs: the column buffer (K, nb*P), and for
 * nb > 1 a (Cog, nb*P) buffer for the GEMM result / gathered grad_out. */
static size_t scratch_elems(const conv_geom *g, int64_t nb) {
  return (size_t)(g->K * nb * g->P) + (nb > 1 ? (size_t)(g->Cog * nb * g->P) : 0);
}

/* dst (m samples of (rows, P) at stride dstride) <-> src (rows, m*P): the
 * (sample, row) blocks of a chunk between BLAS layout and tensor layout. */
static void scatter_rows(ct_dtype dt, const void *src, void *dst, int64_t m, int64_t rows,
                         int64_t P, int64_t dstride, const void *bias, bool to_tensor) {
  size_t es = dt == CT_F32 ? 4 : 8;
  int64_t ld = m * P;
  for (int64_t s = 0; s < m; s++)
    for (int64_t o = 0; o < rows; o++) {
      char *t = (char *)dst + (size_t)(s * dstride + o * P) * es;
      char *b = (char *)src + (size_t)(o * ld + s * P) * es;
      if (!to_tensor) {
        memcpy(b, t, (size_t)P * es);
      } else if (!bias) {
        memcpy(t, b, (size_t)P * es);
      } else if (dt == CT_F32) {
        float v = ((const float *)bias)[o], *d = (float *)t;
        const float *r = (const float *)b;
        for (int64_t q = 0; q < P; q++) d[q] = r[q] + v;
      } else {
        double v = ((const double *)bias)[o], *d = (double *)t;
        const double *r = (const double *)b;
        for (int64_t q = 0; q < P; q++) d[q] = r[q] + v;
      }
    }
}

/* Runs body(tid, n0, n1, ctx) over sample ranges as `nt` tasks on the pool
 * (tid: the task, which owns scratch buffer tid). */
typedef void (*range_body)(int tid, int64_t n0, int64_t n1, void *ctx);
typedef struct batch_tasks {
  int nt;
  int64_t N;
  range_body body;
  void *ctx;
} batch_tasks;
static void batch_task(int64_t t, void *vk) {
  const batch_tasks *k = vk;
  k->body((int)t, k->N * t / k->nt, k->N * (t + 1) / k->nt, k->ctx);
}
static void run_batches(int nt, int64_t N, range_body body, void *ctx) {
  if (nt <= 1) {
    body(0, 0, N, ctx);
    return;
  }
  batch_tasks k = {nt, N, body, ctx};
  ct__parallel_run(nt, batch_task, &k);
}

/* ---- Forward ---------------------------------------------------------------- */

typedef struct fwd_ctx {
  conv_geom g;
  ct_dtype dt;
  size_t es;
  int64_t nb; /* samples per GEMM */
  const char *x, *w, *b;
  char *out;
  char *scratch; /* nt buffers of scratch_elems(g, nb) elements */
} fwd_ctx;

static void fwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  fwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  size_t es = c->es;
  char *col = c->scratch ? c->scratch + (size_t)tid * scratch_elems(g, c->nb) * es : NULL;
  char *res = col ? col + (size_t)(g->K * c->nb * g->P) * es : NULL;
  for (int64_t n = n0; n < n1; n += c->nb) {
    int64_t m = n1 - n < c->nb ? n1 - n : c->nb, ld = m * g->P;
    for (int64_t gr = 0; gr < g->G; gr++) {
      const char *wg = c->w + (size_t)(gr * g->Cog * g->K) * es;
      const char *bg = c->b ? c->b + (size_t)(gr * g->Cog) * es : NULL;
      if (m > 1) { /* m samples: one GEMM into res, scattered (+ bias) into out */
        for (int64_t s = 0; s < m; s++)
          im2col(c->dt, g, c->x + (size_t)(((n + s) * g->C + gr * g->Cg) * g->H * g->W) * es,
                 col + (size_t)(s * g->P) * es, ld);
        gemm(c->dt, false, false, g->Cog, ld, g->K, wg, g->K, col, ld, 0.0, res, ld);
        scatter_rows(c->dt, res, c->out + (size_t)((n * g->Co + gr * g->Cog) * g->P) * es, m,
                     g->Cog, g->P, g->Co * g->P, bg, true);
        continue;
      }
      const char *xg = c->x + (size_t)((n * g->C + gr * g->Cg) * g->H * g->W) * es;
      char *og = c->out + (size_t)((n * g->Co + gr * g->Cog) * g->P) * es;
      if (bg)
        for (int64_t o = 0; o < g->Cog; o++) {
          if (c->dt == CT_F32) {
            float v = ((const float *)bg)[o], *r = (float *)og + o * g->P;
            for (int64_t q = 0; q < g->P; q++) r[q] = v;
          } else {
            double v = ((const double *)bg)[o], *r = (double *)og + o * g->P;
            for (int64_t q = 0; q < g->P; q++) r[q] = v;
          }
        }
      const void *src = xg;
      if (!g->direct) {
        im2col(c->dt, g, xg, col, g->P);
        src = col;
      }
      gemm(c->dt, false, false, g->Cog, g->P, g->K, wg, g->K, src, g->P, bg ? 1.0 : 0.0, og, g->P);
    }
  }
}

#ifdef __AVX512F__
/* ---- Direct forward for few input channels (f32, AVX-512) -------------------
 * A first layer (C*kH*kW small: 3x5x5, 1x3x3) makes im2col a 9-75x copy of the
 * image feeding a GEMM with K <= 96, bound by that copy. Instead, for each
 * output row block of 16 pixels and 8 output channels, 8 accumulators gather
 * the K shifted input rows (masked loads: padding reads as 0) times the
 * weights, packed (Co/8, K, 8) with zeros past Co. Groups 1, stride and
 * dilation 1. */
#define DIRECT_MAX_K 96
static bool use_direct_fwd(ct_dtype dt, const conv_geom *g) {
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
        _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++)
          xv[b] = _mm512_maskz_loadu_ps(mk[b][j], xr + j + 16 * b);
        _Pragma("GCC unroll 8") for (int k = 0; k < COB; k++) {
          __m512 wv = _mm512_set1_ps(wk[j * 8 + k]);
          _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++)
            acc[b][k] = _mm512_fmadd_ps(wv, xv[b], acc[b][k]);
        }
      }
    }
  _Pragma("GCC unroll 2") for (int b = 0; b < NB; b++)
    _Pragma("GCC unroll 8") for (int k = 0; k < COB; k++) /* constant trips: acc in registers */
      /* bias added last, as GEMM with beta = 1 onto the bias does */
      _mm512_mask_storeu_ps(out + ((cb * 8 + k) * g->Ho + oh) * g->Wo + ow + 16 * b, st[b],
                            bias ? _mm512_add_ps(acc[b][k], _mm512_set1_ps(bias[cb * 8 + k]))
                                 : acc[b][k]);
}

static void direct_fwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
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
          /* NB blocks of 16 pixels x COB = nco channels: constants, so acc stays in registers */
#define DIRECT_FWD_TILE(NBV, COBV)                                                                 \
  direct_fwd_tile(g, x, wb, bias, out, cb, oh, ow, (const __mmask16(*)[16])mk, st, NBV, COBV)
#define DIRECT_FWD_CASES(NBV)                                                                      \
  switch (nco) {                                                                                   \
    case 1: DIRECT_FWD_TILE(NBV, 1); break;                                                        \
    case 2: DIRECT_FWD_TILE(NBV, 2); break;                                                        \
    case 3: DIRECT_FWD_TILE(NBV, 3); break;                                                        \
    case 4: DIRECT_FWD_TILE(NBV, 4); break;                                                        \
    case 5: DIRECT_FWD_TILE(NBV, 5); break;                                                        \
    case 6: DIRECT_FWD_TILE(NBV, 6); break;                                                        \
    case 7: DIRECT_FWD_TILE(NBV, 7); break;                                                        \
    default: DIRECT_FWD_TILE(NBV, 8); break;                                                       \
  }
          if (st[1]) {
            DIRECT_FWD_CASES(2)
          } else {
            DIRECT_FWD_CASES(1)
          }
#undef DIRECT_FWD_CASES
#undef DIRECT_FWD_TILE
        }
      }
    }
  }
}

/* Packs w (Co, K) into (ceil(Co/8), K, 8), zero past Co. */
static void direct_pack_w(const conv_geom *g, const float *w, float *wpk) {
  for (int64_t cb = 0; cb * 8 < g->Co; cb++)
    for (int64_t kk = 0; kk < g->K; kk++)
      for (int64_t k = 0; k < 8; k++)
        wpk[(cb * g->K + kk) * 8 + k] = cb * 8 + k < g->Co ? w[(cb * 8 + k) * g->K + kk] : 0.0f;
}
#else
#define use_direct_fwd(dt, g) false
#define direct_fwd_body fwd_body
#define direct_pack_w(g, w, wpk) (void)0
#endif

static ct_status conv2d_half(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *bias, const ct_conv2d_params *p) {
  bool fail = false;
  ct_tensor *xf = ct__nn_f32(x, true, &fail), *wf = ct__nn_f32(w, true, &fail);
  ct_tensor *bf = ct__nn_f32(bias, true, &fail), *of = ct__nn_f32(out, false, &fail);
  ct_status st = fail ? ct_last_error() : ct__cpu_conv2d(of, xf, wf, bf, p);
  ct__release(xf), ct__release(wf), ct__release(bf);
  return ct__nn_back(out, of, st);
}

ct_status ct__cpu_conv2d(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias, const ct_conv2d_params *p) {
  if (ct__is_half(x->dtype)) return conv2d_half(out, x, w, bias, p);
  ct_status loaded = ct__blas_load("conv2d");
  if (loaded != CT_OK) return loaded;
  fwd_ctx c = {.g = geom_of(x, w, out->shape, p), .dt = x->dtype, .es = ct__elsize(x->dtype)};
  if (out->numel == 0) return CT_OK;
  c.x = ct__data(x), c.w = ct__data(w), c.b = bias ? ct__data(bias) : NULL, c.out = ct__data(out);
  if (c.g.K == 0) { /* no input channels: bias only */
    for (int64_t n = 0; n < c.g.N; n++)
      for (int64_t o = 0; o < c.g.Co; o++)
        for (int64_t q = 0; q < c.g.P; q++) {
          double v = c.b ? (c.dt == CT_F32 ? ((const float *)c.b)[o] : ((const double *)c.b)[o]) : 0;
          if (c.dt == CT_F32) ((float *)c.out)[(n * c.g.Co + o) * c.g.P + q] = (float)v;
          else ((double *)c.out)[(n * c.g.Co + o) * c.g.P + q] = v;
        }
    return CT_OK;
  }
  int nt = batch_threads(&c.g);
  if (use_direct_fwd(c.dt, &c.g)) {
    size_t wbytes = (size_t)((c.g.Co + 7) / 8 * 8 * c.g.K) * sizeof(float);
    c.scratch = ct__host_alloc(wbytes);
    if (!c.scratch)
      return ct__fail_status(CT_ERR_OOM, "conv2d: out of memory for %zu bytes of packed weights",
                             wbytes);
    direct_pack_w(&c.g, (const float *)c.w, (float *)c.scratch);
    run_batches(nt, c.g.N, direct_fwd_body, &c);
    ct__host_free(c.scratch, wbytes);
    return CT_OK;
  }
  c.nb = chunk_of(&c.g, nt);
  size_t sbytes = c.g.direct ? 0 : (size_t)nt * scratch_elems(&c.g, c.nb) * c.es;
  if (sbytes) {
    c.scratch = ct__host_alloc(sbytes);
    if (!c.scratch) return ct__fail_status(CT_ERR_OOM, "conv2d: out of memory for %zu bytes of im2col buffers", sbytes);
  }
  run_batches(nt, c.g.N, fwd_body, &c);
  if (sbytes) ct__host_free(c.scratch, sbytes);
  return CT_OK;
}

/* ---- Backward --------------------------------------------------------------- */

typedef struct bwd_ctx {
  conv_geom g;
  ct_dtype dt;
  size_t es;
  int64_t nb;         /* samples per GEMM */
  const char *x, *w, *gout;
  char *gx, *gw;      /* gw: nt accumulators of Co*K elements (thread 0: grad_w itself) */
  char *scratch;      /* nt buffers of scratch_elems(g, nb) elements */
  char *gw_final;
} bwd_ctx;

static void bwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  bwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  size_t es = c->es;
  char *col = c->scratch ? c->scratch + (size_t)tid * scratch_elems(g, c->nb) * es : NULL;
  char *gbuf = col ? col + (size_t)(g->K * c->nb * g->P) * es : NULL;
  char *gw = NULL;
  if (c->gw_final) /* zeroed by the caller */
    gw = tid == 0 ? c->gw_final : c->gw + (size_t)(tid - 1) * (size_t)(g->Co * g->K) * es;
  for (int64_t n = n0; n < n1; n += c->nb) {
    int64_t m = n1 - n < c->nb ? n1 - n : c->nb, ld = m * g->P;
    for (int64_t gr = 0; gr < g->G; gr++) {
      size_t xoff = (size_t)((n * g->C + gr * g->Cg) * g->H * g->W) * es;
      size_t xstride = (size_t)(g->C * g->H * g->W) * es;
      const char *go = c->gout + (size_t)((n * g->Co + gr * g->Cog) * g->P) * es;
      const char *wg = c->w + (size_t)(gr * g->Cog * g->K) * es;
      char *gwg = gw ? gw + (size_t)(gr * g->Cog * g->K) * es : NULL;
      if (m > 1) { /* m samples: grad_out gathered to (Cog, m*P), one GEMM each */
        scatter_rows(c->dt, gbuf, (void *)go, m, g->Cog, g->P, g->Co * g->P, NULL, false);
        if (gwg) {
          for (int64_t s = 0; s < m; s++)
            im2col(c->dt, g, c->x + xoff + (size_t)s * xstride, col + (size_t)(s * g->P) * es, ld);
          gemm(c->dt, false, true, g->Cog, g->K, ld, gbuf, ld, col, ld, 1.0, gwg, g->K);
        }
        if (c->gx) {
          gemm(c->dt, true, false, g->K, ld, g->Cog, wg, g->K, gbuf, ld, 0.0, col, ld);
          for (int64_t s = 0; s < m; s++) {
            char *gxs = c->gx + xoff + (size_t)s * xstride;
            if (!CT_CONV_W1(c->dt, g)) memset(gxs, 0, (size_t)(g->Cg * g->H * g->W) * es);
            col2im(c->dt, g, col + (size_t)(s * g->P) * es, gxs, ld);
          }
        }
        continue;
      }
      if (gwg) {
        const void *src = c->x + xoff;
        if (!g->direct) {
          im2col(c->dt, g, c->x + xoff, col, g->P);
          src = col;
        }
        gemm(c->dt, false, true, g->Cog, g->K, g->P, go, g->P, src, g->P, 1.0, gwg, g->K);
      }
      if (c->gx) {
        if (g->direct) {
          gemm(c->dt, true, false, g->K, g->P, g->Cog, wg, g->K, go, g->P, 0.0, c->gx + xoff, g->P);
        } else {
          gemm(c->dt, true, false, g->K, g->P, g->Cog, wg, g->K, go, g->P, 0.0, col, g->P);
          if (!CT_CONV_W1(c->dt, g)) memset(c->gx + xoff, 0, (size_t)(g->Cg * g->H * g->W) * es);
          col2im(c->dt, g, col, c->gx + xoff, g->P);
        }
      }
    }
  }
}

#ifdef __AVX512F__
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
        _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++)
          gv[k] = _mm512_loadu_ps(gr + k * g->P + ow);
        _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++) {
          __m512 xv = _mm512_loadu_ps(xr + ow + j);
          _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++)
            acc[j][k] = _mm512_fmadd_ps(gv[k], xv, acc[j][k]);
        }
      }
      for (; ow < g->Wo; ow += 16, b++) {
        __mmask16 st = lanes_below(g->Wo - ow);
        __m512 gv[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++)
          gv[k] = _mm512_maskz_loadu_ps(st, gr + k * g->P + ow);
        _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++) {
          __m512 xv = _mm512_maskz_loadu_ps(mk[b][j], xr + ow + j);
          _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++)
            acc[j][k] = _mm512_fmadd_ps(gv[k], xv, acc[j][k]);
        }
      }
    }
  }
  _Pragma("GCC unroll 5") for (int j = 0; j < KW; j++)
    _Pragma("GCC unroll 4") for (int k = 0; k < COB; k++)
      gw[(cb * 4 + k) * g->K + (ci * g->kH + i) * g->kW + j] += _mm512_reduce_add_ps(acc[j][k]);
}

#define DIRECT_GW_MAX_WO (16 * 8)
static bool use_direct_gw(ct_dtype dt, const conv_geom *g) {
  return use_direct_fwd(dt, g) && g->kW <= 5 && g->Wo <= DIRECT_GW_MAX_WO;
}

static void direct_gw_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  const bwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  float *gw = (float *)(tid == 0 ? c->gw_final
                                 : c->gw + (size_t)(tid - 1) * (size_t)(g->Co * g->K) * c->es);
  __mmask16 mk[8][8]; /* [ow block][j]: lanes whose input column is inside the image */
  for (int64_t b = 0; b * 16 < g->Wo; b++)
    for (int64_t j = 0; j < g->kW; j++) {
      int64_t iw0 = b * 16 + j - g->pw;
      mk[b][j] = lanes_below(g->Wo - b * 16) & lanes_below(g->W - iw0) & (__mmask16)~lanes_below(-iw0);
    }
  const float *xs = (const float *)c->x, *gs = (const float *)c->gout;
  for (int64_t cb = 0; cb * 4 < g->Co; cb++) {
    int64_t nco = g->Co - cb * 4 < 4 ? g->Co - cb * 4 : 4;
    for (int64_t ci = 0; ci < g->C; ci++)
      for (int64_t i = 0; i < g->kH; i++) {
        const __mmask16(*m)[8] = (const __mmask16(*)[8])mk;
        /* kW and the channel count as constants: the accumulators stay in registers */
#define DIRECT_GW_TILE(KWV, COBV) direct_gw_tile(g, xs, gs, n0, n1, cb, ci, i, m, gw, KWV, COBV)
#define DIRECT_GW_CASES(KWV)                                                                       \
  switch (nco) {                                                                                   \
    case 1: DIRECT_GW_TILE(KWV, 1); break;                                                         \
    case 2: DIRECT_GW_TILE(KWV, 2); break;                                                         \
    case 3: DIRECT_GW_TILE(KWV, 3); break;                                                         \
    default: DIRECT_GW_TILE(KWV, 4); break;                                                        \
  }
        switch (g->kW) {
          case 1: DIRECT_GW_CASES(1) break;
          case 2: DIRECT_GW_CASES(2) break;
          case 3: DIRECT_GW_CASES(3) break;
          case 4: DIRECT_GW_CASES(4) break;
          default: DIRECT_GW_CASES(5) break;
        }
#undef DIRECT_GW_CASES
#undef DIRECT_GW_TILE
      }
  }
}
#else
#define use_direct_gw(dt, g) false
#define direct_gw_body bwd_body
#endif

static ct_status conv2d_backward_half(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x,
                                      const ct_tensor *w, const ct_conv2d_params *p) {
  bool fail = false;
  ct_tensor *xf = ct__nn_f32(x, true, &fail), *wf = ct__nn_f32(w, true, &fail);
  ct_tensor *gof = ct__nn_f32(grad_out, true, &fail);
  ct_tensor *gxf = ct__nn_f32(grad_x, false, &fail), *gwf = ct__nn_f32(grad_w, false, &fail);
  ct_tensor *gbf = ct__nn_f32(grad_b, false, &fail);
  ct_status st = fail ? ct_last_error() : ct__cpu_conv2d_backward(gxf, gwf, gbf, gof, xf, wf, p);
  ct__release(xf), ct__release(wf), ct__release(gof);
  st = ct__nn_back(grad_x, gxf, st);
  st = ct__nn_back(grad_w, gwf, st);
  return ct__nn_back(grad_b, gbf, st);
}

ct_status ct__cpu_conv2d_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                  const ct_tensor *grad_out, const ct_tensor *x, const ct_tensor *w,
                                  const ct_conv2d_params *p) {
  if (ct__is_half(x->dtype))
    return conv2d_backward_half(grad_x, grad_w, grad_b, grad_out, x, w, p);
  ct_status loaded = ct__blas_load("conv2d_backward");
  if (loaded != CT_OK) return loaded;
  bwd_ctx c = {.g = geom_of(x, w, grad_out->shape, p), .dt = x->dtype, .es = ct__elsize(x->dtype)};
  const conv_geom *g = &c.g;
  c.x = ct__data(x), c.w = ct__data(w), c.gout = ct__data(grad_out);
  c.gx = grad_x ? ct__data(grad_x) : NULL;
  c.gw_final = grad_w ? ct__data(grad_w) : NULL;
  if (grad_b) { /* (Co): sum over n and P */
    char *gb = ct__data(grad_b);
    for (int64_t o = 0; o < g->Co; o++) {
      double s = 0;
      for (int64_t n = 0; n < g->N; n++) {
        size_t base = (size_t)((n * g->Co + o) * g->P);
        if (c.dt == CT_F32) {
          const float *r = (const float *)c.gout + base;
          float acc[8] = {0}, fs = 0; /* 8 partial sums: vectorized, no add chain */
          int64_t q = 0;
          for (; q + 8 <= g->P; q += 8)
            for (int k = 0; k < 8; k++) acc[k] += r[q + k];
          for (; q < g->P; q++) fs += r[q];
          for (int k = 0; k < 8; k++) fs += acc[k];
          s += fs;
        } else {
          const double *r = (const double *)c.gout + base;
          for (int64_t q = 0; q < g->P; q++) s += r[q];
        }
      }
      if (c.dt == CT_F32) ((float *)gb)[o] = (float)s;
      else ((double *)gb)[o] = s;
    }
  }
  if (!grad_x && !grad_w) return CT_OK;
  if (g->N == 0 || g->K == 0 || g->P == 0 || g->Co == 0) {
    if (grad_x) memset(c.gx, 0, (size_t)grad_x->numel * c.es);
    if (grad_w) memset(c.gw_final, 0, (size_t)grad_w->numel * c.es);
    return CT_OK;
  }
  int nt = batch_threads(g);
  c.nb = chunk_of(g, nt);
  size_t colbytes = g->direct ? 0 : (size_t)nt * scratch_elems(g, c.nb) * c.es;
  size_t gwbytes = grad_w && nt > 1 ? (size_t)(nt - 1) * (size_t)(g->Co * g->K) * c.es : 0;
  if (colbytes) c.scratch = ct__host_alloc(colbytes);
  if (gwbytes) c.gw = ct__host_alloc(gwbytes);
  if ((colbytes && !c.scratch) || (gwbytes && !c.gw)) {
    if (c.scratch) ct__host_free(c.scratch, colbytes);
    if (c.gw) ct__host_free(c.gw, gwbytes);
    return ct__fail_status(CT_ERR_OOM, "conv2d backward: out of memory for %zu bytes of buffers",
                           colbytes + gwbytes);
  }
  if (grad_w) memset(c.gw_final, 0, (size_t)grad_w->numel * c.es);
  if (gwbytes) memset(c.gw, 0, gwbytes);
  if (grad_w && use_direct_gw(c.dt, g)) { /* grad_w directly; then grad_x (if any) below */
    run_batches(nt, g->N, direct_gw_body, &c);
    char *gw_final = c.gw_final;
    c.gw_final = NULL;
    if (c.gx) run_batches(nt, g->N, bwd_body, &c);
    c.gw_final = gw_final;
  } else {
    run_batches(nt, g->N, bwd_body, &c);
  }
  if (gwbytes) { /* sum the per-thread accumulators into grad_w */
    int64_t m = g->Co * g->K;
    for (int t = 1; t < nt; t++) {
      if (c.dt == CT_F32) {
        float *d = (float *)c.gw_final;
        const float *s = (const float *)c.gw + (size_t)(t - 1) * (size_t)m;
        for (int64_t i = 0; i < m; i++) d[i] += s[i];
      } else {
        double *d = (double *)c.gw_final;
        const double *s = (const double *)c.gw + (size_t)(t - 1) * (size_t)m;
        for (int64_t i = 0; i < m; i++) d[i] += s[i];
      }
    }
    ct__host_free(c.gw, gwbytes);
  }
  if (colbytes) ct__host_free(c.scratch, colbytes);
  return CT_OK;
}
