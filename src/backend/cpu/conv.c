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
 *
 * Parallel decomposition: the batch is split across OpenMP threads, each with
 * its own column buffer (and its own grad_w accumulator, summed at the end),
 * calling single-threaded GEMMs (the small CNN shapes are far below the size
 * where a threaded GEMM pays). When there are fewer samples than threads and
 * each product is large, samples run one after another and OpenBLAS threads
 * each GEMM instead. f32 and f64 natively; f16/bf16 computed in f32. */
#include <cblas.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/nn_util.h"

void ct__blas_set_num_threads(int n); /* cpu_backend.c */

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
  static void im2col_##SUF(const conv_geom *g, const T *x, T *col) {                          \
    for (int64_t c = 0; c < g->Cg; c++)                                                        \
      for (int64_t i = 0; i < g->kH; i++)                                                      \
        for (int64_t j = 0; j < g->kW; j++) {                                                  \
          T *row = col + ((c * g->kH + i) * g->kW + j) * g->P;                                 \
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
  static void col2im_##SUF(const conv_geom *g, const T *col, T *x) {                          \
    for (int64_t c = 0; c < g->Cg; c++)                                                        \
      for (int64_t i = 0; i < g->kH; i++)                                                      \
        for (int64_t j = 0; j < g->kW; j++) {                                                  \
          const T *row = col + ((c * g->kH + i) * g->kW + j) * g->P;                           \
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

static void im2col(ct_dtype dt, const conv_geom *g, const void *x, void *col) {
  if (dt == CT_F32) im2col_f32(g, x, col);
  else im2col_f64(g, x, col);
}
static void col2im(ct_dtype dt, const conv_geom *g, const void *col, void *x) {
  if (dt == CT_F32) col2im_f32(g, col, x);
  else col2im_f64(g, col, x);
}

/* Row-major C (M, N) = alpha * op(A) @ op(B) + beta * C. */
static void gemm(ct_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if (dt == CT_F32)
    cblas_sgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B, (int)ldb,
                (float)beta, C, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B, (int)ldb, beta,
                C, (int)ldc);
}

/* Whether to split the batch across threads (each with single-threaded
 * GEMMs) rather than run samples in turn with threaded GEMMs. */
static int batch_threads(const conv_geom *g) {
  int nt = ct__num_threads();
  if (nt <= 1 || g->N <= 1) return 1;
  double flops = (double)g->Cog * (double)g->K * (double)g->P * (double)g->G;
  if (g->N < nt && flops > 4.0 * 262144.0) return 1;
  if (flops * (double)g->N < 65536.0) return 1; /* too small to pay for threads */
  return (int)(g->N < nt ? g->N : nt);
}

/* Runs body(tid, n0, n1, ctx) over sample ranges on `nt` threads with BLAS
 * single-threaded meanwhile (restored after). */
typedef void (*range_body)(int tid, int64_t n0, int64_t n1, void *ctx);
static void run_batches(int nt, int64_t N, range_body body, void *ctx) {
  if (nt <= 1) {
    body(0, 0, N, ctx);
    return;
  }
#ifdef _OPENMP
  ct__blas_set_num_threads(1);
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    body(t, N * t / n, N * (t + 1) / n, ctx);
  }
  ct__blas_set_num_threads(ct__num_threads());
#else
  body(0, 0, N, ctx);
#endif
}

/* ---- Forward ---------------------------------------------------------------- */

typedef struct fwd_ctx {
  conv_geom g;
  ct_dtype dt;
  size_t es;
  const char *x, *w, *b;
  char *out;
  char *scratch; /* nt column buffers of K*P elements */
} fwd_ctx;

static void fwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  fwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  size_t es = c->es;
  char *col = c->scratch ? c->scratch + (size_t)tid * (size_t)(g->K * g->P) * es : NULL;
  for (int64_t n = n0; n < n1; n++)
    for (int64_t gr = 0; gr < g->G; gr++) {
      const char *xg = c->x + (size_t)((n * g->C + gr * g->Cg) * g->H * g->W) * es;
      char *og = c->out + (size_t)((n * g->Co + gr * g->Cog) * g->P) * es;
      if (c->b)
        for (int64_t o = 0; o < g->Cog; o++) {
          if (c->dt == CT_F32) {
            float v = ((const float *)c->b)[gr * g->Cog + o], *r = (float *)og + o * g->P;
            for (int64_t q = 0; q < g->P; q++) r[q] = v;
          } else {
            double v = ((const double *)c->b)[gr * g->Cog + o], *r = (double *)og + o * g->P;
            for (int64_t q = 0; q < g->P; q++) r[q] = v;
          }
        }
      const void *src = xg;
      if (!g->direct) {
        im2col(c->dt, g, xg, col);
        src = col;
      }
      gemm(c->dt, false, false, g->Cog, g->P, g->K, c->w + (size_t)(gr * g->Cog * g->K) * es, g->K,
           src, g->P, c->b ? 1.0 : 0.0, og, g->P);
    }
}

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
  size_t sbytes = c.g.direct ? 0 : (size_t)nt * (size_t)(c.g.K * c.g.P) * c.es;
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
  const char *x, *w, *gout;
  char *gx, *gw;      /* gw: nt accumulators of Co*K elements (thread 0: grad_w itself) */
  char *scratch;      /* nt column buffers of K*P elements */
  char *gw_final;
} bwd_ctx;

static void bwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  bwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  size_t es = c->es;
  char *col = c->scratch ? c->scratch + (size_t)tid * (size_t)(g->K * g->P) * es : NULL;
  char *gw = NULL;
  if (c->gw_final) /* zeroed by the caller */
    gw = tid == 0 ? c->gw_final : c->gw + (size_t)(tid - 1) * (size_t)(g->Co * g->K) * es;
  for (int64_t n = n0; n < n1; n++)
    for (int64_t gr = 0; gr < g->G; gr++) {
      size_t xoff = (size_t)((n * g->C + gr * g->Cg) * g->H * g->W) * es;
      const char *go = c->gout + (size_t)((n * g->Co + gr * g->Cog) * g->P) * es;
      const char *wg = c->w + (size_t)(gr * g->Cog * g->K) * es;
      if (gw) {
        const void *src = c->x + xoff;
        if (!g->direct) {
          im2col(c->dt, g, c->x + xoff, col);
          src = col;
        }
        gemm(c->dt, false, true, g->Cog, g->K, g->P, go, g->P, src, g->P, 1.0,
             gw + (size_t)(gr * g->Cog * g->K) * es, g->K);
      }
      if (c->gx) {
        if (g->direct) {
          gemm(c->dt, true, false, g->K, g->P, g->Cog, wg, g->K, go, g->P, 0.0, c->gx + xoff, g->P);
        } else {
          gemm(c->dt, true, false, g->K, g->P, g->Cog, wg, g->K, go, g->P, 0.0, col, g->P);
          memset(c->gx + xoff, 0, (size_t)(g->Cg * g->H * g->W) * es);
          col2im(c->dt, g, col, c->gx + xoff);
        }
      }
    }
}

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
          float fs = 0;
          for (int64_t q = 0; q < g->P; q++) fs += r[q];
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
  size_t colbytes = g->direct ? 0 : (size_t)nt * (size_t)(g->K * g->P) * c.es;
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
  run_batches(nt, g->N, bwd_body, &c);
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
