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

#define DEFINE_POOL(T, SUF)                                                                    \
  static void fwd_##SUF(int64_t b, int64_t e, void *vctx) {                                    \
    const pool_ctx *c = vctx;                                                                  \
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
