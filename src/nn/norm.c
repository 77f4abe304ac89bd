/* ct_batch_norm and ct_layer_norm: checks, the backend's normalization
 * slots and their autograd nodes. Statistics (saved for backward) are of x's
 * dtype, f32 for f16/bf16 input. Batch norm's backward in training flows
 * through the batch statistics; in evaluation the running statistics are
 * constants. */
#include "amp/amp_internal.h"
#include "nn/functional_internal.h"

static ct_dtype stats_dtype(ct_dtype d) { return d == CT_F16 || d == CT_BF16 ? CT_F32 : d; }

/* ---- Batch norm --------------------------------------------------------------- */

static ct_status batch_norm_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
  const ct_tensor *x = ct__node_saved(n, 0), *mean = ct__node_saved(n, 1);
  const ct_tensor *invstd = ct__node_saved(n, 2), *w = NULL;
  if (!x || !mean || !invstd) return ct_last_error();
  if (n->ip[1] && !(w = ct__node_saved(n, 3))) return ct_last_error();
  bool training = n->ip[0] != 0, ok = true;
  ct_tensor *gc = ct__nn_prep(g, x->dtype, &ok), *g3 = NULL, *gx = NULL, *gw = NULL, *gb = NULL;
  if (ok) g3 = ct__nn_reshape(gc, x->shape, 3), ok = g3 != NULL;
  ct_device dev = ct__device(x);
  int64_t C = x->shape[1];
  if (ok && ct__node_needs(n, 0)) gx = ct__empty(x->shape, 3, x->dtype, dev), ok = gx != NULL;
  if (ok && ct__node_needs(n, 1)) gw = ct__empty(&C, 1, x->dtype, dev), ok = gw != NULL;
  if (ok && ct__node_needs(n, 2)) gb = ct__empty(&C, 1, x->dtype, dev), ok = gb != NULL;
  ct_status st = ok ? ct__backend_of(x)->batch_norm_backward(gx, gw, gb, g3, x, w, mean, invstd, training)
                    : ct_last_error();
  ct__release(gc), ct__release(g3);
  if (st == CT_OK && gx) {
    ct_tensor *v = ct__nn_reshape(gx, n->in[0].shape, n->in[0].ndim);
    ct__release(gx);
    gx = v;
    if (!gx) st = ct_last_error();
  }
  if (st != CT_OK) {
    ct__release(gx), ct__release(gw), ct__release(gb);
    return st;
  }
  grad_in[0] = gx, grad_in[1] = gw, grad_in[2] = gb;
  return CT_OK;
}

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
    ct_tensor *r = ct_batch_norm(ac.t[0], running_mean, running_var, ac.t[1], ac.t[2], training, momentum, eps);
    ct__autocast_done(&ac);
    return r;
  }
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim < 2)
    return ct__fail(CT_ERR_SHAPE, "batch_norm: expected an input (N, C, ...) of at least 2 dims, got shape %s",
                    ct__shape_str(x, s, sizeof s));
  if (!ct__nn_need_float(op, "input", x)) return NULL;
  int64_t N = x->shape[0], C = x->shape[1], S = C > 0 && N > 0 ? x->numel / (N * C) : 0;
  if (!check_vec(op, "weight", weight, x, C) || !check_vec(op, "bias", bias, x, C) ||
      !check_vec(op, "running_mean", running_mean, x, C) ||
      !check_vec(op, "running_var", running_var, x, C))
    return NULL;
  if (!training && (!running_mean || !running_var))
    return ct__fail(CT_ERR_ARG, "batch_norm: running_mean and running_var are required in evaluation mode");
  if (training && N * S <= 1)
    return ct__fail(CT_ERR_ARG, "batch_norm: expected more than 1 value per channel when training, got input of shape %s",
                    ct__shape_str(x, s, sizeof s));
  if (!(eps >= 0)) return ct__fail(CT_ERR_ARG, "batch_norm: eps must be >= 0, got %g", eps);
  ct_dtype sd = stats_dtype(x->dtype);
  ct_tensor *rs[2] = {running_mean, running_var};
  for (int i = 0; i < 2; i++)
    if (rs[i] && ((rs[i]->dtype != sd && rs[i]->dtype != x->dtype) || !ct__is_contiguous(rs[i])))
      return ct__fail(CT_ERR_DTYPE, "batch_norm: expected a contiguous %s of dtype %s, got %s%s",
                      i ? "running_var" : "running_mean", ct_dtype_name(sd), ct_dtype_name(rs[i]->dtype),
                      ct__is_contiguous(rs[i]) ? "" : " (not contiguous)");
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
  ct_status st = invstd ? be->batch_norm(r3, mean, invstd, x3, wc, bc, running_mean, running_var,
                                         training, momentum, eps)
                        : ct_last_error();
  if (st == CT_OK && training) {
    if (running_mean) ct__bump_version(running_mean);
    if (running_var) ct__bump_version(running_var);
  }
  ct__release(xc), ct__release(bc), ct__release(r3);
  const ct_tensor *ins[3] = {x, weight, bias};
  if (st == CT_OK && ct__ag_needed(ins, 3)) {
    ct_node *n = ct__node_new("NativeBatchNormBackward", batch_norm_backward, 3, ins);
    if (!n || !ct__node_save(n, 0, x3) || !ct__node_save(n, 1, mean) ||
        !ct__node_save(n, 2, invstd) || (wc && !ct__node_save(n, 3, wc))) {
      ct__node_release(n);
      st = ct_last_error();
      if (st == CT_OK) st = CT_ERR_OOM;
    } else {
      n->ip[0] = training, n->ip[1] = wc != NULL, n->n_ip = 2;
      r = ct__ag_attach(r, n);
      if (!r) st = ct_last_error();
    }
  }
  ct__release(wc), ct__release(x3), ct__release(mean), ct__release(invstd);
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return ct__track(r);
}

/* ---- Layer norm --------------------------------------------------------------- */

static ct_status layer_norm_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
  const ct_tensor *x = ct__node_saved(n, 0), *mean = ct__node_saved(n, 1);
  const ct_tensor *rstd = ct__node_saved(n, 2), *w = NULL;
  if (!x || !mean || !rstd) return ct_last_error();
  if (n->ip[1] && !(w = ct__node_saved(n, 3))) return ct_last_error();
  int64_t cols = n->ip[0];
  int nd = (int)n->ip[2];
  bool ok = true;
  ct_tensor *gc = ct__nn_prep(g, x->dtype, &ok), *gx = NULL, *gw = NULL, *gb = NULL;
  ct_device dev = ct__device(x);
  const int64_t *wshape = x->shape + x->ndim - nd;
  if (ok && ct__node_needs(n, 0)) gx = ct__empty(x->shape, x->ndim, x->dtype, dev), ok = gx != NULL;
  if (ok && ct__node_needs(n, 1)) gw = ct__empty(wshape, nd, x->dtype, dev), ok = gw != NULL;
  if (ok && ct__node_needs(n, 2)) gb = ct__empty(wshape, nd, x->dtype, dev), ok = gb != NULL;
  ct_status st = ok ? ct__backend_of(x)->layer_norm_backward(gx, gw, gb, gc, x, w, mean, rstd, cols)
                    : ct_last_error();
  ct__release(gc);
  if (st != CT_OK) {
    ct__release(gx), ct__release(gw), ct__release(gb);
    return st;
  }
  grad_in[0] = gx, grad_in[1] = gw, grad_in[2] = gb;
  return CT_OK;
}

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
    return ct__fail(CT_ERR_ARG, "layer_norm: normalized_ndim must be in [1, %d] for an input of shape %s, got %d",
                    x->ndim, ct__shape_str(x, s1, sizeof s1), normalized_ndim);
  if (!ct__nn_need_float(op, "input", x) || !ct__nn_need_float(op, "weight", weight) ||
      !ct__nn_need_float(op, "bias", bias))
    return NULL;
  if (!ct__check_same_device(op, x, weight) || !ct__check_same_device(op, x, bias)) return NULL;
  int nd = normalized_ndim;
  const int64_t *ns = x->shape + x->ndim - nd;
  const ct_tensor *ps[2] = {weight, bias};
  for (int i = 0; i < 2; i++)
    if (ps[i] && !ct__nn_shape_is(ps[i], ns, nd))
      return ct__fail(CT_ERR_SHAPE, "layer_norm: expected %s of shape %s (the last %d dims of the input), got %s",
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
  const ct_tensor *ins[3] = {x, weight, bias};
  if (st == CT_OK && ct__ag_needed(ins, 3)) {
    ct_node *n = ct__node_new("NativeLayerNormBackward", layer_norm_backward, 3, ins);
    if (!n || !ct__node_save(n, 0, xc) || !ct__node_save(n, 1, mean) ||
        !ct__node_save(n, 2, rstd) || (wc && !ct__node_save(n, 3, wc))) {
      ct__node_release(n);
      st = ct_last_error();
      if (st == CT_OK) st = CT_ERR_OOM;
    } else {
      n->ip[0] = cols, n->ip[1] = wc != NULL, n->ip[2] = nd, n->n_ip = 3;
      r = ct__ag_attach(r, n);
      if (!r) st = ct_last_error();
    }
  }
  ct__release(xc), ct__release(wc), ct__release(mean), ct__release(rstd);
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return ct__track(r);
}
