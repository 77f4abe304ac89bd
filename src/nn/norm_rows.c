/* ct_group_norm, ct_instance_norm and ct_rms_norm: checks, the backend's
 * row_norm slot (backend/params.h, ct_row_norm_params) and the recording of
 * its node (autograd/grad_norm_rows.c). Each normalizes rows of a contiguous
 * x by their own statistics; they differ in what a row is and which affine
 * parameter scales an element:
 *   group norm     rows (n, group),   parameters per channel;
 *   instance norm  rows (n, channel), parameters per channel (group norm
 *                  with one channel per group);
 *   RMS norm       rows of the last dims, parameters per element, no centering.
 * Statistics are of x's dtype, f32 for f16/bf16 input, as batch/layer norm. */
#include <float.h>

#include "amp/amp_internal.h"
#include "nn/functional_internal.h"

static ct_dtype stats_dtype(ct_dtype d) { return d == CT_F16 || d == CT_BF16 ? CT_F32 : d; }

/* Runs the row norm p on x (checked) and records its node. */
static ct_tensor *row_norm(const char *op, const char *node, const ct_tensor *x,
                           const ct_tensor *weight, const ct_tensor *bias,
                           const ct_row_norm_params *p) {
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, row_norm, op, x);
  ct_dtype sd = stats_dtype(x->dtype);
  bool ok = true;
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok), *wc = ct__nn_prep(weight, x->dtype, &ok);
  ct_tensor *bc = ct__nn_prep(bias, x->dtype, &ok);
  ct_tensor *r = ok ? ct__empty(x->shape, x->ndim, x->dtype, ct__device(x)) : NULL;
  ct_tensor *mean = r && !p->rms ? ct__empty(&p->rows, 1, sd, ct__device(x)) : NULL;
  ct_tensor *rstd = r && (p->rms || mean) ? ct__empty(&p->rows, 1, sd, ct__device(x)) : NULL;
  ct_status st = rstd ? be->row_norm(r, mean, rstd, xc, wc, bc, p) : ct_last_error();
  ct__release(bc);
  if (st == CT_OK && !(r = ct__ag_row_norm(r, x, weight, bias, xc, wc, mean, rstd, p, node)))
    st = ct_last_error();
  ct__release(xc), ct__release(wc), ct__release(mean), ct__release(rstd);
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return ct__track(r);
}

/* A (C,) parameter or statistic: floating, on x's device, of shape (C). */
static bool check_channels(const char *op, const char *what, const ct_tensor *t, const ct_tensor *x,
                           int64_t C) {
  if (!t) return true;
  if (!ct__check_same_device(op, x, t) || !ct__nn_need_float(op, what, t)) return false;
  char s[CT_SHAPE_STR_MAX];
  if (t->ndim != 1 || t->shape[0] != C) {
    ct__fail(CT_ERR_SHAPE, "%s: expected %s of shape (%lld,), got %s", op, what, (long long)C,
             ct__shape_str(t, s, sizeof s));
    return false;
  }
  return true;
}

static bool check_eps(const char *op, double eps) {
  if (eps >= 0 && isfinite(eps)) return true;
  ct__fail(CT_ERR_ARG, "%s: eps must be finite and >= 0, got %g", op, eps);
  return false;
}

/* Elements per (sample, channel) of x (N, C, ...): 0 when N or C is 0. */
static int64_t inner_size(const ct_tensor *x) {
  int64_t NC = x->shape[0] * x->shape[1];
  return NC > 0 ? x->numel / NC : 0;
}

/* ---- Group norm ------------------------------------------------------------------ */

ct_tensor *ct_group_norm(const ct_tensor *x, int64_t num_groups, const ct_tensor *weight,
                         const ct_tensor *bias, double eps) {
  static const char op[] = "group_norm";
  if (!x) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, weight, bias)) {
    ct_tensor *r = ct_group_norm(ac.t[0], num_groups, ac.t[1], ac.t[2], eps);
    ct__autocast_done(&ac);
    return r;
  }
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim < 2)
    return ct__fail(CT_ERR_SHAPE,
                    "group_norm: expected an input (N, C, ...) of at least 2 dims, got shape %s",
                    ct__shape_str(x, s, sizeof s));
  if (!ct__nn_need_float(op, "input", x)) return NULL;
  int64_t C = x->shape[1];
  if (num_groups <= 0 || C % num_groups != 0)
    return ct__fail(CT_ERR_ARG,
                    "group_norm: expected the number of channels (%lld) of the input of shape %s "
                    "to be divisible by num_groups = %lld (> 0)",
                    (long long)C, ct__shape_str(x, s, sizeof s), (long long)num_groups);
  if (!check_channels(op, "weight", weight, x, C) || !check_channels(op, "bias", bias, x, C) ||
      !check_eps(op, eps))
    return NULL;
  ct_row_norm_params p = {.rows = x->shape[0] * num_groups,
                          .groups = num_groups,
                          .channels = C / num_groups,
                          .inner = inner_size(x),
                          .eps = eps};
  return row_norm(op, "NativeGroupNormBackward", x, weight, bias, &p);
}

/* ---- Instance norm --------------------------------------------------------------- */

/* running = (1 - momentum) running + momentum * (the batch's per-channel mean
 * of the planes' means, or of their unbiased variances), without recording. */
static ct_status update_running(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                                double momentum) {
  int64_t shape[3] = {x->shape[0], x->shape[1], inner_size(x)};
  if (ct_scope_begin() != CT_OK) return ct_last_error();
  ct_no_grad_begin();
  ct_tensor *x3 = ct_reshape(ct_detach(x), shape, 3);
  ct_tensor *stat[2] = {running_mean ? ct_mean(x3, CT_DIMS(0, 2)) : NULL,
                        running_var ? ct_mean(ct_var(x3, CT_DIMS(2), 1), CT_DIMS(0)) : NULL};
  ct_tensor *run[2] = {running_mean, running_var};
  ct_status st = CT_OK;
  for (int i = 0; i < 2 && st == CT_OK; i++) {
    if (!run[i]) continue;
    if (!stat[i] || !ct_mul_scalar_(run[i], 1 - momentum) ||
        !ct_add_scaled_(run[i], stat[i], momentum))
      st = ct_last_error();
  }
  ct_no_grad_end();
  ct_scope_end();
  return st;
}

ct_tensor *ct_instance_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                            const ct_tensor *weight, const ct_tensor *bias, bool use_input_stats,
                            double momentum, double eps) {
  static const char op[] = "instance_norm";
  if (!x) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, weight, bias)) {
    ct_tensor *r = ct_instance_norm(ac.t[0], running_mean, running_var, ac.t[1], ac.t[2],
                                    use_input_stats, momentum, eps);
    ct__autocast_done(&ac);
    return r;
  }
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim < 3)
    return ct__fail(CT_ERR_SHAPE,
                    "instance_norm: expected an input (N, C, ...) of at least 3 dims, got shape %s",
                    ct__shape_str(x, s, sizeof s));
  if (!ct__nn_need_float(op, "input", x)) return NULL;
  int64_t C = x->shape[1];
  if (!check_channels(op, "weight", weight, x, C) || !check_channels(op, "bias", bias, x, C) ||
      !check_channels(op, "running_mean", running_mean, x, C) ||
      !check_channels(op, "running_var", running_var, x, C) || !check_eps(op, eps))
    return NULL;
  if (!(momentum >= 0 && momentum <= 1))
    return ct__fail(CT_ERR_ARG, "instance_norm: momentum must be in [0, 1], got %g", momentum);
  if (!use_input_stats) {
    if (!running_mean || !running_var)
      return ct__fail(
          CT_ERR_ARG,
          "instance_norm: running_mean and running_var are required without use_input_stats");
    return ct_batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
  }
  if (inner_size(x) <= 1 && x->numel > 0)
    return ct__fail(CT_ERR_ARG,
                    "instance_norm: expected more than 1 spatial element when using the input's "
                    "statistics, got input of shape %s",
                    ct__shape_str(x, s, sizeof s));
  ct_row_norm_params p = {
      .rows = x->shape[0] * C, .groups = C, .channels = 1, .inner = inner_size(x), .eps = eps};
  ct_tensor *r = row_norm(op, "NativeGroupNormBackward", x, weight, bias, &p);
  /* an empty input has no statistics: the running ones stay */
  if (r && (running_mean || running_var) && x->numel > 0 &&
      update_running(x, running_mean, running_var, momentum) != CT_OK) {
    ct_free(r);
    return NULL;
  }
  return r;
}

/* ---- RMS norm -------------------------------------------------------------------- */

/* torch.finfo(dtype).eps */
static double machine_eps(ct_dtype d) {
  switch (d) {
    case CT_F64:
      return DBL_EPSILON;
    case CT_F16:
      return 0.0009765625;
    case CT_BF16:
      return 0.0078125;
    default:
      return FLT_EPSILON;
  }
}

ct_tensor *ct_rms_norm(const ct_tensor *x, int normalized_ndim, const ct_tensor *weight,
                       double eps) {
  static const char op[] = "rms_norm";
  if (!x) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, weight, NULL)) {
    ct_tensor *r = ct_rms_norm(ac.t[0], normalized_ndim, ac.t[1], eps);
    ct__autocast_done(&ac);
    return r;
  }
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  if (normalized_ndim < 1 || normalized_ndim > x->ndim)
    return ct__fail(CT_ERR_ARG,
                    "rms_norm: normalized_ndim must be in [1, %d] for an input of shape %s, got %d",
                    x->ndim, ct__shape_str(x, s1, sizeof s1), normalized_ndim);
  if (!ct__nn_need_float(op, "input", x) || !ct__nn_need_float(op, "weight", weight) ||
      !ct__check_same_device(op, x, weight))
    return NULL;
  int nd = normalized_ndim;
  const int64_t *ns = x->shape + x->ndim - nd;
  if (weight && !ct__nn_shape_is(weight, ns, nd))
    return ct__fail(CT_ERR_SHAPE,
                    "rms_norm: expected weight of shape %s (the last %d dims of the input), got %s",
                    ct_shape_format(ns, nd, s1, sizeof s1), nd,
                    ct__shape_str(weight, s2, sizeof s2));
  if (isnan(eps) || isinf(eps))
    return ct__fail(CT_ERR_ARG, "rms_norm: eps must be finite, got %g", eps);
  int64_t cols = 1;
  for (int d = 0; d < nd; d++) cols *= ns[d];
  ct_row_norm_params p = {.rows = cols > 0 ? x->numel / cols : 0,
                          .groups = 1,
                          .channels = cols,
                          .inner = 1,
                          .eps = eps < 0 ? machine_eps(x->dtype) : eps,
                          .rms = true};
  return row_norm(op, "RmsNormBackward", x, weight, NULL, &p);
}
