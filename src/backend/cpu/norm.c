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
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *gof = ct__nn_f32(grad_out, true, &fail);
    ct_tensor *wf = as_f32(weight, &fail), *smf = as_f32(save_mean, &fail);
    ct_tensor *sif = as_f32(save_invstd, &fail), *gxf = ct__nn_f32(grad_x, false, &fail);
    ct_tensor *gwf = grad_w && ct__is_half(grad_w->dtype) ? ct__nn_f32(grad_w, false, &fail) : ct__retain(grad_w);
    ct_tensor *gbf = grad_b && ct__is_half(grad_b->dtype) ? ct__nn_f32(grad_b, false, &fail) : ct__retain(grad_b);
    ct_status st = fail ? ct_last_error()
                        : ct__cpu_batch_norm_backward(gxf, gwf, gbf, gof, xf, wf, smf, sif, training);
    ct__release(xf), ct__release(gof), ct__release(wf), ct__release(smf), ct__release(sif);
    st = ct__nn_back(grad_x, gxf, st);
    st = back(grad_w, gwf, st);
    return back(grad_b, gbf, st);
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
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *of = ct__nn_f32(out, false, &fail);
    ct_tensor *wf = as_f32(weight, &fail), *bf = as_f32(bias, &fail);
    ct_tensor *mf = as_f32(mean, &fail), *rf = as_f32(rstd, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_layer_norm(of, mf, rf, xf, wf, bf, cols, eps);
    ct__release(xf), ct__release(wf), ct__release(bf);
    st = ct__nn_back(out, of, st);
    st = back(mean, mf, st);
    return back(rstd, rf, st);
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
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *gof = ct__nn_f32(grad_out, true, &fail);
    ct_tensor *wf = as_f32(weight, &fail), *mf = as_f32(mean, &fail), *rf = as_f32(rstd, &fail);
    ct_tensor *gxf = ct__nn_f32(grad_x, false, &fail);
    ct_tensor *gwf = grad_w && ct__is_half(grad_w->dtype) ? ct__nn_f32(grad_w, false, &fail) : ct__retain(grad_w);
    ct_tensor *gbf = grad_b && ct__is_half(grad_b->dtype) ? ct__nn_f32(grad_b, false, &fail) : ct__retain(grad_b);
    ct_status st = fail ? ct_last_error()
                        : ct__cpu_layer_norm_backward(gxf, gwf, gbf, gof, xf, wf, mf, rf, cols);
    ct__release(xf), ct__release(gof), ct__release(wf), ct__release(mf), ct__release(rf);
    st = ct__nn_back(grad_x, gxf, st);
    st = back(grad_w, gwf, st);
    return back(grad_b, gbf, st);
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
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *of = ct__nn_f32(out, false, &fail);
    ct_tensor *wf = as_f32(weight, &fail), *bf = as_f32(bias, &fail);
    ct_tensor *mf = as_f32(mean, &fail), *rf = as_f32(rstd, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_row_norm(of, mf, rf, xf, wf, bf, p);
    ct__release(xf), ct__release(wf), ct__release(bf);
    st = ct__nn_back(out, of, st);
    st = back(mean, mf, st);
    return back(rstd, rf, st);
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
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *gof = ct__nn_f32(grad_out, true, &fail);
    ct_tensor *wf = as_f32(weight, &fail), *mf = as_f32(mean, &fail), *rf = as_f32(rstd, &fail);
    ct_tensor *gxf = ct__nn_f32(grad_x, false, &fail);
    ct_tensor *gwf = grad_w && ct__is_half(grad_w->dtype) ? ct__nn_f32(grad_w, false, &fail) : ct__retain(grad_w);
    ct_tensor *gbf = grad_b && ct__is_half(grad_b->dtype) ? ct__nn_f32(grad_b, false, &fail) : ct__retain(grad_b);
    ct_status st = fail ? ct_last_error()
                        : ct__cpu_row_norm_backward(gxf, gwf, gbf, gof, xf, wf, mf, rf, p);
    ct__release(xf), ct__release(gof), ct__release(wf), ct__release(mf), ct__release(rf);
    st = ct__nn_back(grad_x, gxf, st);
    st = back(grad_w, gwf, st);
    return back(grad_b, gbf, st);
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
