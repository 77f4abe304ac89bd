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
 * f64 natively; f16/bf16 computed on f32 copies, bf16's GEMMs on the
 * AVX512-BF16 kernel where the CPU has it (gemm_bf16.h: it rounds the f32
 * copies back to bf16 as it packs them, exactly, at twice sgemm's speed). */
#include <stdlib.h>
#include "backend/cpu/conv.h"
#include "backend/cpu/conv_onednn.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_bf16.h"
#include "core/parallel.h"

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

#define CT_TEMPLATE "backend/cpu/conv_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

/* Whether im2col/col2im take the AVX-512 kernels (f32, stride and dilation
 * 1 along W), whose col2im overwrites x rather than adding into it. */
static inline bool w1_path(ct_dtype dt, const conv_geom *g) {
  return CT_CPU_AVX512 && dt == CT_F32 && g->sw == 1 && g->dw == 1;
}

/* col: rows of `ld` elements (ld = P for one sample; nb*P when the columns
 * of nb samples sit side by side, sample s at column s*P). */
static void im2col(ct_dtype dt, const conv_geom *g, const void *x, void *col, int64_t ld) {
#if CT_CPU_AVX512
  if (w1_path(dt, g)) {
    ct__conv_im2col_f32_w1(g, x, col, ld);
    return;
  }
#endif
  if (dt == CT_F32)
    im2col_f32(g, x, col, ld);
  else im2col_f64(g, x, col, ld);
}
/* x += col2im(col) (x zeroed beforehand), except on the W1 path, which
 * overwrites x. */
static void col2im(ct_dtype dt, const conv_geom *g, const void *col, void *x, int64_t ld) {
#if CT_CPU_AVX512
  if (w1_path(dt, g)) {
    ct__conv_col2im_f32_w1(g, col, x, ld);
    return;
  }
#endif
  if (dt == CT_F32)
    col2im_f32(g, col, x, ld);
  else col2im_f64(g, col, x, ld);
}

/* Row-major C (M, N) = op(A) @ op(B) + beta * C (beta 0 or 1); bf16: f32
 * operands multiplied as bf16. */
static void gemm(ct_dtype dt, bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
                 int64_t ldc) {
  if (bf16)
    ct__gemm_bf16_f32(ta, tb, M, N, K, A, lda, B, ldb, beta != 0, C, ldc);
  else
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
size_t ct__conv_scratch_elems(const conv_geom *g, int64_t nb) {
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

static void fwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  fwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  size_t es = c->es;
  char *col = c->scratch ? c->scratch + (size_t)tid * ct__conv_scratch_elems(g, c->nb) * es : NULL;
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
        gemm(c->dt, c->bf16, false, false, g->Cog, ld, g->K, wg, g->K, col, ld, 0.0, res, ld);
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
      gemm(c->dt, c->bf16, false, false, g->Cog, g->P, g->K, wg, g->K, src, g->P, bg ? 1.0 : 0.0, og, g->P);
    }
  }
}

static ct_status conv2d_run(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                            const ct_tensor *bias, const ct_conv2d_params *p, bool bf16);

/* Whether a half convolution's products run on the bf16 kernel. */
static bool bf16_products(const ct_tensor *x) {
  return x->dtype == CT_BF16 && ct__gemm_bf16_available();
}

static ct_status conv2d_half(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *bias, const ct_conv2d_params *p) {
  bool fail = false;
  ct_tensor *xf = ct__nn_f32(x, true, &fail), *wf = ct__nn_f32(w, true, &fail);
  ct_tensor *bf = ct__nn_f32(bias, true, &fail), *of = ct__nn_f32(out, false, &fail);
  ct_status st = fail ? ct_last_error() : conv2d_run(of, xf, wf, bf, p, bf16_products(x));
  ct__release(xf), ct__release(wf), ct__release(bf);
  return ct__nn_back(out, of, st);
}

ct_status ct__cpu_conv2d(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias, const ct_conv2d_params *p) {
  conv_geom g = geom_of(x, w, out->shape, p);
  if (ct__conv_onednn_forward(&g, out, x, w, bias)) return CT_OK; /* where it is faster */
  if (ct__is_half(x->dtype)) return conv2d_half(out, x, w, bias, p);
  return conv2d_run(out, x, w, bias, p, false);
}

static ct_status conv2d_run(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                            const ct_tensor *bias, const ct_conv2d_params *p, bool bf16) {
  ct_status loaded = ct__blas_load("conv2d");
  if (loaded != CT_OK) return loaded;
  fwd_ctx c = {.g = geom_of(x, w, out->shape, p),
               .dt = x->dtype,
               .bf16 = bf16,
               .es = ct__elsize(x->dtype)};
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
#if CT_CPU_AVX512
  if (ct__conv_direct_fwd_ok(c.dt, &c.g)) {
    size_t wbytes = (size_t)((c.g.Co + 7) / 8 * 8 * c.g.K) * sizeof(float);
    c.scratch = ct__host_alloc(wbytes);
    if (!c.scratch)
      return ct__fail_status(CT_ERR_OOM, "conv2d: out of memory for %zu bytes of packed weights",
                             wbytes);
    ct__conv_direct_pack_w(&c.g, (const float *)c.w, (float *)c.scratch);
    run_batches(nt, c.g.N, ct__conv_direct_fwd_body, &c);
    ct__host_free(c.scratch, wbytes);
    return CT_OK;
  }
#endif
  c.nb = chunk_of(&c.g, nt);
  size_t sbytes = c.g.direct ? 0 : (size_t)nt * ct__conv_scratch_elems(&c.g, c.nb) * c.es;
  if (sbytes) {
    c.scratch = ct__host_alloc(sbytes);
    if (!c.scratch) return ct__fail_status(CT_ERR_OOM, "conv2d: out of memory for %zu bytes of im2col buffers", sbytes);
  }
  run_batches(nt, c.g.N, fwd_body, &c);
  if (sbytes) ct__host_free(c.scratch, sbytes);
  return CT_OK;
}

/* ---- Backward --------------------------------------------------------------- */

static void bwd_body(int tid, int64_t n0, int64_t n1, void *vctx) {
  bwd_ctx *c = vctx;
  const conv_geom *g = &c->g;
  size_t es = c->es;
  char *col = c->scratch ? c->scratch + (size_t)tid * ct__conv_scratch_elems(g, c->nb) * es : NULL;
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
          gemm(c->dt, c->bf16, false, true, g->Cog, g->K, ld, gbuf, ld, col, ld, 1.0, gwg, g->K);
        }
        if (c->gx) {
          gemm(c->dt, c->bf16, true, false, g->K, ld, g->Cog, wg, g->K, gbuf, ld, 0.0, col, ld);
          for (int64_t s = 0; s < m; s++) {
            char *gxs = c->gx + xoff + (size_t)s * xstride;
            if (!w1_path(c->dt, g)) memset(gxs, 0, (size_t)(g->Cg * g->H * g->W) * es);
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
        gemm(c->dt, c->bf16, false, true, g->Cog, g->K, g->P, go, g->P, src, g->P, 1.0, gwg, g->K);
      }
      if (c->gx) {
        if (g->direct) {
          gemm(c->dt, c->bf16, true, false, g->K, g->P, g->Cog, wg, g->K, go, g->P, 0.0, c->gx + xoff, g->P);
        } else {
          gemm(c->dt, c->bf16, true, false, g->K, g->P, g->Cog, wg, g->K, go, g->P, 0.0, col, g->P);
          if (!w1_path(c->dt, g)) memset(c->gx + xoff, 0, (size_t)(g->Cg * g->H * g->W) * es);
          col2im(c->dt, g, col, c->gx + xoff, g->P);
        }
      }
    }
  }
}

/* grad_b (Co) = sum of grad_out over n and P (f32: 8 partial sums per row,
 * vectorized, then double). */
static void grad_bias(const bwd_ctx *c, char *gb) {
  const conv_geom *g = &c->g;
  for (int64_t o = 0; o < g->Co; o++) {
    double s = 0;
    for (int64_t n = 0; n < g->N; n++) {
      size_t base = (size_t)((n * g->Co + o) * g->P);
      if (c->dt == CT_F32) {
        const float *r = (const float *)c->gout + base;
        float acc[8] = {0}, fs = 0;
        int64_t q = 0;
        for (; q + 8 <= g->P; q += 8)
          for (int k = 0; k < 8; k++) acc[k] += r[q + k];
        for (; q < g->P; q++) fs += r[q];
        for (int k = 0; k < 8; k++) fs += acc[k];
        s += fs;
      } else {
        const double *r = (const double *)c->gout + base;
        for (int64_t q = 0; q < g->P; q++) s += r[q];
      }
    }
    if (c->dt == CT_F32)
      ((float *)gb)[o] = (float)s;
    else
      ((double *)gb)[o] = s;
  }
}

/* grad_w += the accumulators of threads 1 .. nt-1 (thread 0's is grad_w). */
static void sum_thread_gw(const bwd_ctx *c, int nt) {
  int64_t m = c->g.Co * c->g.K;
  for (int t = 1; t < nt; t++) {
    if (c->dt == CT_F32) {
      float *d = (float *)c->gw_final;
      const float *s = (const float *)c->gw + (size_t)(t - 1) * (size_t)m;
      for (int64_t i = 0; i < m; i++) d[i] += s[i];
    } else {
      double *d = (double *)c->gw_final;
      const double *s = (const double *)c->gw + (size_t)(t - 1) * (size_t)m;
      for (int64_t i = 0; i < m; i++) d[i] += s[i];
    }
  }
}

static ct_status conv2d_backward_run(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                     const ct_tensor *grad_out, const ct_tensor *x,
                                     const ct_tensor *w, const ct_conv2d_params *p, bool bf16);

static ct_status conv2d_backward_half(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x,
                                      const ct_tensor *w, const ct_conv2d_params *p) {
  bool fail = false;
  ct_tensor *xf = ct__nn_f32(x, true, &fail), *wf = ct__nn_f32(w, true, &fail);
  ct_tensor *gof = ct__nn_f32(grad_out, true, &fail);
  ct_tensor *gxf = ct__nn_f32(grad_x, false, &fail), *gwf = ct__nn_f32(grad_w, false, &fail);
  ct_tensor *gbf = ct__nn_f32(grad_b, false, &fail);
  ct_status st =
      fail ? ct_last_error() : conv2d_backward_run(gxf, gwf, gbf, gof, xf, wf, p, bf16_products(x));
  ct__release(xf), ct__release(wf), ct__release(gof);
  st = ct__nn_back(grad_x, gxf, st);
  st = ct__nn_back(grad_w, gwf, st);
  return ct__nn_back(grad_b, gbf, st);
}

ct_status ct__cpu_conv2d_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                  const ct_tensor *grad_out, const ct_tensor *x, const ct_tensor *w,
                                  const ct_conv2d_params *p) {
  /* oneDNN where it is faster: grad_x, and grad_w with grad_b; the rest here. */
  conv_geom g = geom_of(x, w, grad_out->shape, p);
  bool did_x, did_w;
  ct__conv_onednn_backward(&g, grad_x, grad_w, grad_b, grad_out, x, w, &did_x, &did_w);
  if (did_x) grad_x = NULL;
  if (did_w) grad_w = NULL, grad_b = NULL;
  if (!grad_x && !grad_w && !grad_b) return CT_OK;
  if (ct__is_half(x->dtype))
    return conv2d_backward_half(grad_x, grad_w, grad_b, grad_out, x, w, p);
  return conv2d_backward_run(grad_x, grad_w, grad_b, grad_out, x, w, p, false);
}

static ct_status conv2d_backward_run(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                     const ct_tensor *grad_out, const ct_tensor *x,
                                     const ct_tensor *w, const ct_conv2d_params *p, bool bf16) {
  ct_status loaded = ct__blas_load("conv2d_backward");
  if (loaded != CT_OK) return loaded;
  bwd_ctx c = {.g = geom_of(x, w, grad_out->shape, p),
               .dt = x->dtype,
               .bf16 = bf16,
               .es = ct__elsize(x->dtype)};
  const conv_geom *g = &c.g;
  c.x = ct__data(x), c.w = ct__data(w), c.gout = ct__data(grad_out);
  c.gx = grad_x ? ct__data(grad_x) : NULL;
  c.gw_final = grad_w ? ct__data(grad_w) : NULL;
  if (grad_b) grad_bias(&c, ct__data(grad_b));
  if (!grad_x && !grad_w) return CT_OK;
  if (g->N == 0 || g->K == 0 || g->P == 0 || g->Co == 0) {
    if (grad_x) memset(c.gx, 0, (size_t)grad_x->numel * c.es);
    if (grad_w) memset(c.gw_final, 0, (size_t)grad_w->numel * c.es);
    return CT_OK;
  }
  int nt = batch_threads(g);
  c.nb = chunk_of(g, nt);
  size_t colbytes = g->direct ? 0 : (size_t)nt * ct__conv_scratch_elems(g, c.nb) * c.es;
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
#if CT_CPU_AVX512
  if (grad_w && ct__conv_direct_gw_ok(c.dt, g)) { /* grad_w directly; then grad_x (if any) below */
    run_batches(nt, g->N, ct__conv_direct_gw_body, &c);
    char *gw_final = c.gw_final;
    c.gw_final = NULL;
    if (c.gx) run_batches(nt, g->N, bwd_body, &c);
    c.gw_final = gw_final;
  } else {
    run_batches(nt, g->N, bwd_body, &c);
  }
#else
  run_batches(nt, g->N, bwd_body, &c);
#endif
  if (gwbytes) {
    sum_thread_gw(&c, nt);
    ct__host_free(c.gw, gwbytes);
  }
  if (colbytes) ct__host_free(c.scratch, colbytes);
  return CT_OK;
}
