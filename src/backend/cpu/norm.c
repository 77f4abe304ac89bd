/* CPU batch and layer normalization, forward and backward.
 *
 * Batch norm: x (N, C, S) contiguous; channels are independent and split
 * across threads; statistics accumulate in double (two passes: mean, then
 * the biased variance). save_mean / save_invstd (C) get the statistics used
 * (the batch's in training, the running ones in evaluation), so backward
 * needs no other state.
 * Layer norm: x (rows, cols) contiguous; rows split across threads for the
 * statistics and grad_x; grad_w / grad_b (cols) split by column blocks.
 * Row norms (group, instance, RMS norm): as layer norm, with one affine
 * parameter per channel of a row's group (ct_row_norm_params); grad_w /
 * grad_b split by parameter.
 * f32 and f64 natively (statistics and parameters of x's dtype); f16/bf16
 * computed in f32 (statistics f32; parameters f32 or half). */
#include <math.h>

#include "backend/cpu/nn_util.h"

/* A half tensor's f32 copy (a new reference), else t retained (NULL passes). */
static ct_tensor *as_f32(const ct_tensor *t, bool *fail) {
  if (!t) return NULL;
  if (ct__is_half(t->dtype)) return ct__nn_f32(t, true, fail);
  return ct__retain(t);
}
/* Writes back tmp into dst if dst is half; releases tmp. */
static ct_status back(ct_tensor *dst, ct_tensor *tmp, ct_status st) {
  if (st == CT_OK && dst && tmp && tmp != dst && ct__is_half(dst->dtype)) st = ct__cpu_copy(dst, tmp);
  ct__release(tmp);
  return st;
}

/* An output's f32 stand-in when it is half (filled by the call), else itself. */
static ct_tensor *out_f32(ct_tensor *t, bool *fail) {
  return t && ct__is_half(t->dtype) ? ct__nn_f32(t, false, fail) : ct__retain(t);
}

/* The f32 stand-ins of a layer or row norm's tensors when x is half: out and
 * the statistics s1, s2 (mean, rstd) written back by half_fwd_end. */
typedef struct half_fwd {
  ct_tensor *x, *w, *b, *out, *s1, *s2;
  bool fail;
} half_fwd;

static void half_fwd_begin(half_fwd *h, ct_tensor *out, ct_tensor *s1, ct_tensor *s2,
                           const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias) {
  h->fail = false;
  h->x = ct__nn_f32(x, true, &h->fail), h->out = ct__nn_f32(out, false, &h->fail);
  h->w = as_f32(weight, &h->fail), h->b = as_f32(bias, &h->fail);
  h->s1 = as_f32(s1, &h->fail), h->s2 = as_f32(s2, &h->fail);
}

static ct_status half_fwd_end(half_fwd *h, ct_status st, ct_tensor *out, ct_tensor *s1,
                              ct_tensor *s2) {
  ct__release(h->x), ct__release(h->w), ct__release(h->b);
  st = ct__nn_back(out, h->out, st);
  st = back(s1, h->s1, st);
  return back(s2, h->s2, st);
}

/* The same for a norm's backward: the saved statistics s1, s2 are inputs, the
 * gradients are written back by half_bwd_end. */
typedef struct half_bwd {
  ct_tensor *x, *go, *w, *s1, *s2, *gx, *gw, *gb;
  bool fail;
} half_bwd;

static void half_bwd_begin(half_bwd *h, ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                           const ct_tensor *grad_out, const ct_tensor *x, const ct_tensor *weight,
                           const ct_tensor *s1, const ct_tensor *s2) {
  h->fail = false;
  h->x = ct__nn_f32(x, true, &h->fail), h->go = ct__nn_f32(grad_out, true, &h->fail);
  h->w = as_f32(weight, &h->fail), h->s1 = as_f32(s1, &h->fail), h->s2 = as_f32(s2, &h->fail);
  h->gx = ct__nn_f32(grad_x, false, &h->fail);
  h->gw = out_f32(grad_w, &h->fail), h->gb = out_f32(grad_b, &h->fail);
}

static ct_status half_bwd_end(half_bwd *h, ct_status st, ct_tensor *grad_x, ct_tensor *grad_w,
                              ct_tensor *grad_b) {
  ct__release(h->x), ct__release(h->go), ct__release(h->w), ct__release(h->s1), ct__release(h->s2);
  st = ct__nn_back(grad_x, h->gx, st);
  st = back(grad_w, h->gw, st);
  return back(grad_b, h->gb, st);
}

static inline double ld(const void *p, bool f32, int64_t i) {
  return f32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void st_(void *p, bool f32, int64_t i, double v) {
  if (f32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

/* ---- Batch norm ------------------------------------------------------------- */

typedef struct bn_ctx {
  int64_t N, C, S;
  bool f32, training;
  double momentum, eps;
  const char *x, *w, *b, *g;
  char *out, *mean, *invstd, *rm, *rv, *gx, *gw, *gb;
  const char *cmean, *cinvstd;
} bn_ctx;

typedef struct ln_ctx {
  int64_t rows, cols;
  bool f32;
  double eps;
  const char *x, *w, *b, *g;
  char *out, *mean, *rstd, *gx, *gw, *gb;
  const char *cmean, *crstd;
} ln_ctx;

typedef struct rn_ctx {
  ct_row_norm_params p;
  bool f32;
  const char *x, *w, *b, *g;
  char *out, *mean, *rstd, *gx, *gw, *gb;
  const char *cmean, *crstd;
} rn_ctx;

/* The kernels, per type: norm_t.h, norm_rows_t.h */
#define CT_TEMPLATE "backend/cpu/norm_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE
#define CT_TEMPLATE "backend/cpu/norm_rows_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

static void *dp(const ct_tensor *t) { return t ? ct__data(t) : NULL; }

static int64_t grain_per(int64_t per_item) {
  int64_t g = CT_PARALLEL_GRAIN / (per_item > 0 ? per_item : 1);
  return g > 0 ? g : 1;
}

ct_status ct__cpu_batch_norm(ct_tensor *out, ct_tensor *save_mean, ct_tensor *save_invstd,
                             const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                             ct_tensor *running_mean, ct_tensor *running_var, bool training,
                             double momentum, double eps) {
  if (ct__is_half(x->dtype)) {
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *of = ct__nn_f32(out, false, &fail);
    ct_tensor *wf = as_f32(weight, &fail), *bf = as_f32(bias, &fail);
    ct_tensor *rmf = as_f32(running_mean, &fail), *rvf = as_f32(running_var, &fail);
    ct_tensor *smf = as_f32(save_mean, &fail), *sif = as_f32(save_invstd, &fail);
    ct_status st = fail ? ct_last_error()
                        : ct__cpu_batch_norm(of, smf, sif, xf, wf, bf, rmf, rvf, training, momentum, eps);
    ct__release(xf), ct__release(wf), ct__release(bf);
    st = ct__nn_back(out, of, st);
    st = back(running_mean, rmf, st);
    st = back(running_var, rvf, st);
    st = back(save_mean, smf, st);
    return back(save_invstd, sif, st);
  }
  bn_ctx c = {.N = x->shape[0], .C = x->shape[1], .S = x->ndim > 2 ? x->shape[2] : 1,
              .f32 = x->dtype == CT_F32, .training = training, .momentum = momentum, .eps = eps,
              .x = dp(x), .w = dp(weight), .b = dp(bias), .out = dp(out), .mean = dp(save_mean),
              .invstd = dp(save_invstd), .rm = dp(running_mean), .rv = dp(running_var)};
  ct__parallel_for(c.C, grain_per(3 * c.N * c.S), x->dtype == CT_F32 ? bn_fwd_f32 : bn_fwd_f64, &c);
  return CT_OK;
}

ct_status ct__cpu_batch_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x,
                                      const ct_tensor *weight, const ct_tensor *save_mean,
                                      const ct_tensor *save_invstd, bool training) {
  if (ct__is_half(x->dtype)) {
    half_bwd h;
    half_bwd_begin(&h, grad_x, grad_w, grad_b, grad_out, x, weight, save_mean, save_invstd);
    ct_status st = h.fail ? ct_last_error()
                          : ct__cpu_batch_norm_backward(h.gx, h.gw, h.gb, h.go, h.x, h.w, h.s1, h.s2,
                                                        training);
    return half_bwd_end(&h, st, grad_x, grad_w, grad_b);
  }
  bn_ctx c = {.N = x->shape[0], .C = x->shape[1], .S = x->ndim > 2 ? x->shape[2] : 1,
              .f32 = x->dtype == CT_F32, .training = training, .x = dp(x), .w = dp(weight),
              .g = dp(grad_out), .gx = dp(grad_x), .gw = dp(grad_w), .gb = dp(grad_b),
              .cmean = dp(save_mean), .cinvstd = dp(save_invstd)};
  ct__parallel_for(c.C, grain_per(3 * c.N * c.S), x->dtype == CT_F32 ? bn_bwd_f32 : bn_bwd_f64, &c);
  return CT_OK;
}

/* ---- Layer norm ------------------------------------------------------------- */

ct_status ct__cpu_layer_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                             const ct_tensor *weight, const ct_tensor *bias, int64_t cols, double eps) {
  if (ct__is_half(x->dtype)) {
    half_fwd h;
    half_fwd_begin(&h, out, mean, rstd, x, weight, bias);
    ct_status st =
        h.fail ? ct_last_error() : ct__cpu_layer_norm(h.out, h.s1, h.s2, h.x, h.w, h.b, cols, eps);
    return half_fwd_end(&h, st, out, mean, rstd);
  }
  ln_ctx c = {.rows = cols > 0 ? x->numel / cols : 0, .cols = cols, .f32 = x->dtype == CT_F32,
              .eps = eps, .x = dp(x), .w = dp(weight), .b = dp(bias), .out = dp(out),
              .mean = dp(mean), .rstd = dp(rstd)};
  ct__parallel_for(c.rows, grain_per(3 * cols), x->dtype == CT_F32 ? ln_fwd_f32 : ln_fwd_f64, &c);
  return CT_OK;
}

ct_status ct__cpu_layer_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x,
                                      const ct_tensor *weight, const ct_tensor *mean,
                                      const ct_tensor *rstd, int64_t cols) {
  if (ct__is_half(x->dtype)) {
    half_bwd h;
    half_bwd_begin(&h, grad_x, grad_w, grad_b, grad_out, x, weight, mean, rstd);
    ct_status st = h.fail ? ct_last_error()
                          : ct__cpu_layer_norm_backward(h.gx, h.gw, h.gb, h.go, h.x, h.w, h.s1, h.s2, cols);
    return half_bwd_end(&h, st, grad_x, grad_w, grad_b);
  }
  ln_ctx c = {.rows = cols > 0 ? x->numel / cols : 0, .cols = cols, .f32 = x->dtype == CT_F32,
              .x = dp(x), .w = dp(weight), .g = dp(grad_out), .gx = dp(grad_x), .gw = dp(grad_w),
              .gb = dp(grad_b), .cmean = dp(mean), .crstd = dp(rstd)};
  bool f32 = x->dtype == CT_F32;
  if (grad_x) ct__parallel_for(c.rows, grain_per(4 * cols), f32 ? ln_bwd_x_f32 : ln_bwd_x_f64, &c);
  if (grad_w || grad_b) {
    int64_t g = CT_PARALLEL_GRAIN / (c.rows > 0 ? c.rows : 1);
    ct__parallel_for(cols, g > 16 ? g : 16, f32 ? ln_bwd_w_f32 : ln_bwd_w_f64, &c);
  }
  return CT_OK;
}

/* ---- Row norms: group norm, instance norm, RMS norm ------------------------- */

ct_status ct__cpu_row_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                           const ct_tensor *weight, const ct_tensor *bias,
                           const ct_row_norm_params *p) {
  if (ct__is_half(x->dtype)) {
    half_fwd h;
    half_fwd_begin(&h, out, mean, rstd, x, weight, bias);
    ct_status st = h.fail ? ct_last_error() : ct__cpu_row_norm(h.out, h.s1, h.s2, h.x, h.w, h.b, p);
    return half_fwd_end(&h, st, out, mean, rstd);
  }
  rn_ctx c = {.p = *p, .f32 = x->dtype == CT_F32, .x = dp(x), .w = dp(weight), .b = dp(bias),
              .out = dp(out), .mean = dp(mean), .rstd = dp(rstd)};
  int64_t cols = p->channels * p->inner;
  ct__parallel_for(p->rows, grain_per(3 * cols), c.f32 ? rn_fwd_f32 : rn_fwd_f64, &c);
  return CT_OK;
}

ct_status ct__cpu_row_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                    const ct_tensor *grad_out, const ct_tensor *x,
                                    const ct_tensor *weight, const ct_tensor *mean,
                                    const ct_tensor *rstd, const ct_row_norm_params *p) {
  if (ct__is_half(x->dtype)) {
    half_bwd h;
    half_bwd_begin(&h, grad_x, grad_w, grad_b, grad_out, x, weight, mean, rstd);
    ct_status st = h.fail ? ct_last_error()
                          : ct__cpu_row_norm_backward(h.gx, h.gw, h.gb, h.go, h.x, h.w, h.s1, h.s2, p);
    return half_bwd_end(&h, st, grad_x, grad_w, grad_b);
  }
  rn_ctx c = {.p = *p, .f32 = x->dtype == CT_F32, .x = dp(x), .w = dp(weight),
              .g = dp(grad_out), .gx = dp(grad_x), .gw = dp(grad_w), .gb = dp(grad_b),
              .cmean = dp(mean), .crstd = dp(rstd)};
  int64_t cols = p->channels * p->inner;
  if (grad_x) ct__parallel_for(p->rows, grain_per(4 * cols), c.f32 ? rn_bwd_x_f32 : rn_bwd_x_f64, &c);
  if (grad_w || grad_b) {
    int64_t per = p->groups > 0 ? p->rows / p->groups * p->inner : 0;
    ct__parallel_for(p->groups * p->channels, grain_per(3 * per), c.f32 ? rn_bwd_w_f32 : rn_bwd_w_f64,
                     &c);
  }
  return CT_OK;
}
