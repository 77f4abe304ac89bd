/* ct_batch_norm and ct_layer_norm: checks, the backend's normalization
 * slots and the recording of their nodes (autograd/grad_nn.c). Statistics
 * (saved for backward) are of x's dtype, f32 for f16/bf16 input. Batch
 * norm's backward in training flows through the batch statistics; in
 * evaluation the running statistics are constants. */
#include "amp/amp_internal.h"
#include "nn/functional_internal.h"

static ct_dtype stats_dtype(ct_dtype d) { return d == CT_F16 || d == CT_BF16 ? CT_F32 : d; }

/* ---- Batch norm --------------------------------------------------------------- */

/* A (C,) parameter or statistic: shape and device checked. */
static bool check_vec(const char *op, const char *what, const ct_tensor *t, const ct_tensor *x,
                      int64_t C) {
  if (!t) return true;
  if (!ct__check_same_device(op, x, t)) return false;
  char s[CT_SHAPE_STR_MAX];
  if (t->ndim != 1 || t->shape[0] != C) {
    ct__fail(CT_ERR_SHAPE, "%s: expected %s of shape (%lld,), got %s", op, what, (long long)C,
             ct__shape_str(t, s, sizeof s));
    return false;
  }
  return ct__nn_need_float(op, what, t);
}

ct_tensor *ct_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                         const ct_tensor *weight, const ct_tensor *bias, bool training,
                         double momentum, double eps) {
  static const char op[] = "batch_norm";
  if (!x) return NULL;
  /* the running statistics are updated in place: they keep their dtype */
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, weight, bias)) {
    ct_tensor *r = ct_batch_norm(ac.t[0], running_mean, running_var, ac.t[1], ac.t[2], training,
                                 momentum, eps);
    ct__autocast_done(&ac);
    return r;
  }
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim < 2)
    return ct__fail(CT_ERR_SHAPE,
                    "batch_norm: expected an input (N, C, ...) of at least 2 dims, got shape %s",
                    ct__shape_str(x, s, sizeof s));
  if (!ct__nn_need_float(op, "input", x)) return NULL;
  int64_t N = x->shape[0], C = x->shape[1], S = C > 0 && N > 0 ? x->numel / (N * C) : 0;
  if (!check_vec(op, "weight", weight, x, C) || !check_vec(op, "bias", bias, x, C) ||
      !check_vec(op, "running_mean", running_mean, x, C) ||
      !check_vec(op, "running_var", running_var, x, C))
    return NULL;
  if (!training && (!running_mean || !running_var))
    return ct__fail(CT_ERR_ARG,
                    "batch_norm: running_mean and running_var are required in evaluation mode");
  if (training && x->numel > 0 && N * S <= 1)
    return ct__fail(
        CT_ERR_ARG,
        "batch_norm: expected more than 1 value per channel when training, got input of shape %s",
        ct__shape_str(x, s, sizeof s));
  if (!(eps >= 0)) return ct__fail(CT_ERR_ARG, "batch_norm: eps must be >= 0, got %g", eps);
  ct_dtype sd = stats_dtype(x->dtype);
  ct_tensor *rs[2] = {running_mean, running_var};
  for (int i = 0; i < 2; i++)
    if (rs[i] && rs[i]->dtype != sd && rs[i]->dtype != x->dtype)
      return ct__fail(CT_ERR_DTYPE, "batch_norm: expected a %s of dtype %s, got %s",
                      i ? "running_var" : "running_mean", ct_dtype_name(sd),
                      ct_dtype_name(rs[i]->dtype));
  /* the kernels take contiguous statistics; strided ones (torch takes any
   * layout) go through contiguous copies, written back after a training step */
  ct_tensor *rc[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    if (!rs[i] || ct__is_contiguous(rs[i])) continue;
    if (!(rc[i] = ct__clone(rs[i]))) {
      ct__release(rc[0]);
      return NULL;
    }
  }
  ct_tensor *run_mean = rc[0] ? rc[0] : running_mean, *run_var = rc[1] ? rc[1] : running_var;
  /* an empty batch has no statistics: the running ones stay (as torch) */
  bool update = training && x->numel > 0;
  if (training && !update) run_mean = run_var = NULL;
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, batch_norm, op, x);
  bool ok = true;
  int64_t s3[3] = {N, C, S};
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok), *wc = ct__nn_prep(weight, x->dtype, &ok);
  ct_tensor *bc = ct__nn_prep(bias, x->dtype, &ok);
  ct_tensor *x3 = ok ? ct__nn_reshape(xc, s3, 3) : NULL;
  ct_tensor *r = x3 ? ct__empty(x->shape, x->ndim, x->dtype, ct__device(x)) : NULL;
  ct_tensor *r3 = r ? ct__nn_reshape(r, s3, 3) : NULL;
  ct_tensor *mean = r3 ? ct__empty(&C, 1, sd, ct__device(x)) : NULL;
  ct_tensor *invstd = mean ? ct__empty(&C, 1, sd, ct__device(x)) : NULL;
  ct_status st = invstd ? be->batch_norm(r3, mean, invstd, x3, wc, bc, run_mean, run_var, training,
                                         momentum, eps)
                        : ct_last_error();
  /* an empty batch: statistics 0 and 1 (not 0 / 0), so the gradients of the
   * affine parameters are the zeros of an empty sum */
  if (st == CT_OK && training && !update) st = be->fill(mean, 0.0);
  if (st == CT_OK && training && !update) st = be->fill(invstd, 1.0);
  for (int i = 0; i < 2; i++) {
    if (st == CT_OK && update && rc[i]) st = ct__copy_into(rs[i], rc[i]);
    ct__release(rc[i]);
  }
  if (st == CT_OK && update) {
    if (running_mean) ct__bump_version(running_mean);
    if (running_var) ct__bump_version(running_var);
  }
  ct__release(xc), ct__release(bc), ct__release(r3);
  if (st == CT_OK && !(r = ct__ag_batch_norm(r, x, weight, bias, x3, wc, mean, invstd, training)))
    st = ct_last_error();
  ct__release(wc), ct__release(x3), ct__release(mean), ct__release(invstd);
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return ct__track(r);
}

/* ---- Layer norm --------------------------------------------------------------- */

ct_tensor *ct_layer_norm(const ct_tensor *x, int normalized_ndim, const ct_tensor *weight,
                         const ct_tensor *bias, double eps) {
  static const char op[] = "layer_norm";
  if (!x) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, weight, bias)) {
    ct_tensor *r = ct_layer_norm(ac.t[0], normalized_ndim, ac.t[1], ac.t[2], eps);
    ct__autocast_done(&ac);
    return r;
  }
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  if (normalized_ndim < 1 || normalized_ndim > x->ndim)
    return ct__fail(
        CT_ERR_ARG,
        "layer_norm: normalized_ndim must be in [1, %d] for an input of shape %s, got %d", x->ndim,
        ct__shape_str(x, s1, sizeof s1), normalized_ndim);
  if (!ct__nn_need_float(op, "input", x) || !ct__nn_need_float(op, "weight", weight) ||
      !ct__nn_need_float(op, "bias", bias))
    return NULL;
  if (!ct__check_same_device(op, x, weight) || !ct__check_same_device(op, x, bias)) return NULL;
  int nd = normalized_ndim;
  const int64_t *ns = x->shape + x->ndim - nd;
  const ct_tensor *ps[2] = {weight, bias};
  for (int i = 0; i < 2; i++)
    if (ps[i] && !ct__nn_shape_is(ps[i], ns, nd))
      return ct__fail(CT_ERR_SHAPE,
                      "layer_norm: expected %s of shape %s (the last %d dims of the input), got %s",
                      i ? "bias" : "weight", ct_shape_format(ns, nd, s1, sizeof s1), nd,
                      ct__shape_str(ps[i], s2, sizeof s2));
  if (!(eps >= 0)) return ct__fail(CT_ERR_ARG, "layer_norm: eps must be >= 0, got %g", eps);
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, layer_norm, op, x);
  int64_t cols = 1;
  for (int d = 0; d < nd; d++) cols *= ns[d];
  int64_t rows = cols > 0 ? x->numel / cols : 0;
  ct_dtype sd = stats_dtype(x->dtype);
  bool ok = true;
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok), *wc = ct__nn_prep(weight, x->dtype, &ok);
  ct_tensor *bc = ct__nn_prep(bias, x->dtype, &ok);
  ct_tensor *r = ok ? ct__empty(x->shape, x->ndim, x->dtype, ct__device(x)) : NULL;
  ct_tensor *mean = r ? ct__empty(&rows, 1, sd, ct__device(x)) : NULL;
  ct_tensor *rstd = mean ? ct__empty(&rows, 1, sd, ct__device(x)) : NULL;
  ct_status st = rstd ? be->layer_norm(r, mean, rstd, xc, wc, bc, cols, eps) : ct_last_error();
  ct__release(bc);
  if (st == CT_OK && !(r = ct__ag_layer_norm(r, x, weight, bias, xc, wc, mean, rstd, cols, nd)))
    st = ct_last_error();
  ct__release(xc), ct__release(wc), ct__release(mean), ct__release(rstd);
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return ct__track(r);
}
