/* Losses: cross_entropy and nll_loss (one fused node each: log_softmax +
 * pick at the target in forward, `softmax - onehot` scaled in backward),
 * mse_loss and binary_cross_entropy_with_logits (composed of recorded public
 * ops inside a scope). Probability targets and the pointwise losses are in
 * loss_pointwise.c.
 *
 * Class-index losses flatten the input to rows (M, C): (N, C) as is, (C) as
 * one row, (N, C, d...) permuted to (N, d..., C). Per row i with target t_i:
 *   a_i    = (1 - eps) * w[t_i] * valid_i        (w = 1 without weights)
 *   loss_i = -a_i logp[i, t_i] - (eps / C) sum_c w_c logp[i, c]  (eps: logits only)
 * mean divides the sum by sum_i w[t_i] valid_i. The gradient w.r.t. the logits
 * of row i is s_i (b_i softmax_i - a_i onehot(t_i) - (eps / C) w), with s_i the
 * upstream factor and b_i = a_i + eps * sum(w) / C * valid_i. The fused node
 * (autograd/grad_loss.c) covers eps = 0, and eps > 0 without weights or
 * ignore_index (b_i = 1); smoothing with weights or ignore_index is composed
 * of recorded ops. */
#include <math.h>
#include <stdio.h>

#include "amp/amp_internal.h"
#include "nn/functional_internal.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/reduce.h"

/* Temporaries released together. */
typedef struct tmps {
  ct_tensor *t[32];
  int n;
} tmps;
static ct_tensor *tmp(tmps *L, ct_tensor *t) {
  if (t) {
    CT_ASSERT(L->n < 32);
    L->t[L->n++] = t;
  }
  return t;
}
static void tmps_free(tmps *L) {
  for (int i = 0; i < L->n; i++) ct__release(L->t[i]);
  L->n = 0;
}

static const ct_reduce_opts DIM1_KEEP = {.dims = {1}, .ndims = 1, .keepdim = true};

static ct_tensor *mul(const ct_tensor *a, const ct_tensor *b) { return ct__binary(CT_BOP_MUL, NULL, a, b); }
static ct_tensor *scal(const ct_tensor *a, double s) {
  return a ? ct__binary_scalar(CT_BOP_MUL, NULL, a, s, false) : NULL;
}

/* ---- Geometry shared by forward and backward ---------------------------------- */

/* The input (ndim 1, 2 or more, class dim 1) as contiguous rows (M, C). */
static ct_tensor *as_rows(const ct_tensor *x, int64_t M, int64_t C) {
  if (x->ndim <= 2) {
    ct_tensor *c = ct__contiguous(x);
    ct_tensor *r = c ? ct__nn_reshape(c, (int64_t[]){M, C}, 2) : NULL;
    ct__release(c);
    return r;
  }
  /* (N, C, d...) -> (N, d..., C) view, then contiguous */
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int nd = x->ndim;
  sh[0] = x->shape[0], st[0] = x->strides[0];
  for (int d = 2; d < nd; d++) sh[d - 1] = x->shape[d], st[d - 1] = x->strides[d];
  sh[nd - 1] = x->shape[1], st[nd - 1] = x->strides[1];
  ct_tensor *v = ct__view_of(x, x->dtype, sh, st, nd, x->offset);
  ct_tensor *c = v ? ct__clone(v) : NULL;
  ct__release(v);
  ct_tensor *r = c ? ct__nn_reshape(c, (int64_t[]){M, C}, 2) : NULL;
  ct__release(c);
  return r;
}

/* Checks shared by cross_entropy and nll_loss; fills M, C. */
static bool check_class_loss(const char *op, const ct_tensor *x, const ct_tensor *target,
                             const ct_loss_opts *o, int64_t *M, int64_t *C) {
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX], s3[CT_SHAPE_STR_MAX];
  if (!ct__check_same_device(op, x, target) || !ct__check_same_device(op, x, o->weight)) return false;
  if (!ct__nn_need_float(op, "input", x)) return false;
  if (x->ndim < 1) {
    ct__fail(CT_ERR_SHAPE, "%s: expected an input (N, C), (C) or (N, C, d...), got a 0-d tensor", op);
    return false;
  }
  if (ct_dtype_is_floating(target->dtype) || target->dtype == CT_BOOL) {
    ct__fail(
        CT_ERR_DTYPE, "%s: expected integer class-index targets (i64 or i32), got %s%s", op,
        ct_dtype_name(target->dtype),
        ct_dtype_is_floating(target->dtype) ? " (class probabilities need the input's shape)" : "");
    return false;
  }
  *C = x->ndim == 1 ? x->shape[0] : x->shape[1];
  int64_t ts[CT_MAX_DIMS];
  int tn = 0;
  for (int d = 0; d < x->ndim; d++)
    if (d != (x->ndim == 1 ? 0 : 1)) ts[tn++] = x->shape[d];
  if (!ct__nn_shape_is(target, ts, tn)) {
    ct__fail(CT_ERR_SHAPE, "%s: expected a target of shape %s for an input of shape %s, got %s", op,
             ct_shape_format(ts, tn, s1, sizeof s1), ct__shape_str(x, s2, sizeof s2),
             ct__shape_str(target, s3, sizeof s3));
    return false;
  }
  *M = target->numel;
  if (o->weight) {
    if (!ct__nn_need_float(op, "weight", o->weight)) return false;
    if (o->weight->ndim != 1 || o->weight->shape[0] != *C) {
      ct__fail(CT_ERR_SHAPE, "%s: expected a class weight of shape (%lld,), got %s", op, (long long)*C,
               ct__shape_str(o->weight, s1, sizeof s1));
      return false;
    }
  }
  if (!ct__nn_check_reduction(op, o->reduction, false)) return false;
  return true;
}

/* The fused forward (see the file comment); eps > 0 only without weight and
 * ignore_index. */
static ct_tensor *class_loss(const char *op, const ct_tensor *x, const ct_tensor *target,
                             const ct_loss_opts *o, int64_t M, int64_t C, double eps, bool logits) {
  tmps L = {0};
  ct_dtype dt = x->dtype;
  bool ok = true, ignore = o->has_ignore_index;
  ct_tensor *x2 = tmp(&L, as_rows(x, M, C));
  ct_tensor *ti = tmp(&L, ct__nn_prep(target, CT_I64, &ok));
  ct_tensor *t = ti ? tmp(&L, ct__nn_reshape(ti, (int64_t[]){M, 1}, 2)) : NULL;
  ct_tensor *w = tmp(&L, ct__nn_prep(o->weight, dt, &ok));
  if (!x2 || !t || !ok) goto fail;
  ct_tensor *logp = logits ? tmp(&L, ct__softmax(NULL, x2, 1, true)) : x2;
  ct_tensor *valid = NULL, *ts = t;
  if (ignore) {
    valid = tmp(&L, ct__binary_scalar(CT_BOP_NE, NULL, t, (double)o->ignore_index, false));
    ts = tmp(&L, ct__binary(CT_BOP_MUL, NULL, t, valid)); /* ignored rows pick class 0 */
  }
  if (!logp || !ts) goto fail;
  /* A target out of range: "<op>: index t is out of bounds for dim 1 with size C",
   * on CUDA at the next synchronization (the kernel records it under op). */
  ct_tensor *picked = tmp(&L, ct__gather_as(op, logp, 1, ts)); /* (M, 1) */
  if (!picked) goto fail;
  ct_tensor *weff = NULL; /* w[t_i] * valid_i, (M, 1) */
  if (w) {
    ct_tensor *tflat = tmp(&L, ct__nn_reshape(ts, &M, 1));
    ct_tensor *wt = tflat ? tmp(&L, ct__index_select(w, 0, tflat)) : NULL;
    weff = wt ? tmp(&L, ct__nn_reshape(wt, (int64_t[]){M, 1}, 2)) : NULL;
    if (weff && valid) weff = tmp(&L, mul(weff, valid));
    if (!weff) goto fail;
  } else if (valid) {
    if (!(weff = tmp(&L, ct__cast(valid, dt)))) goto fail;
  }
  ct_tensor *a = weff && eps > 0 ? tmp(&L, scal(weff, 1 - eps)) : weff;
  ct_tensor *nl = tmp(&L, a ? scal(tmp(&L, mul(picked, a)), -1.0) : scal(picked, -(1 - eps)));
  if (nl && eps > 0) {
    ct_tensor *sm = tmp(&L, ct__reduce(CT_ROP_SUM, NULL, logp, &DIM1_KEEP, 0));
    nl = sm ? tmp(&L, ct__add_scaled(NULL, nl, sm, -eps / (double)C)) : NULL;
  }
  if (!nl) goto fail;
  ct_tensor *r = NULL, *denom = NULL;
  if (o->reduction == CT_REDUCTION_NONE) {
    r = ct__nn_reshape(nl, target->shape, target->ndim);
  } else {
    ct_tensor *s = tmp(&L, ct__reduce(CT_ROP_SUM, NULL, nl, NULL, 0));
    if (o->reduction == CT_REDUCTION_SUM) {
      r = s ? ct__retain(s) : NULL;
    } else if (weff) {
      denom = tmp(&L, ct__reduce(CT_ROP_SUM, NULL, weff, NULL, 0));
      r = denom ? ct__binary(CT_BOP_DIV, NULL, s, denom) : NULL;
    } else {
      r = scal(s, M ? 1.0 / (double)M : NAN);
    }
  }
  if (!r) goto fail;
  ct_class_loss_args args = {.logp = logp, .target = ts, .a = a, .denom = denom};
  args.reduction = o->reduction, args.eps = eps, args.M = M, args.C = C, args.logits = logits;
  r = ct__ag_class_loss(r, x, &args);
  tmps_free(&L);
  return ct__track(r);
fail:
  tmps_free(&L);
  return NULL;
}

static const ct_loss_opts DEFAULT_OPTS = {0};

ct_tensor *ct_nll_loss(const ct_tensor *log_probs, const ct_tensor *target, const ct_loss_opts *opts) {
  static const char op[] = "nll_loss";
  if (!log_probs || !target) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, log_probs, NULL, NULL)) {
    ct_tensor *r = ct_nll_loss(ac.t[0], target, opts);
    ct__autocast_done(&ac);
    return r;
  }
  const ct_loss_opts *o = opts ? opts : &DEFAULT_OPTS;
  int64_t M, C;
  if (!check_class_loss(op, log_probs, target, o, &M, &C)) return NULL;
  return class_loss(op, log_probs, target, o, M, C, 0.0, false);
}

/* Label smoothing with class weights or ignore_index, composed of recorded
 * public ops (as torch's cross_entropy_loss_label_smoothing). */
static ct_tensor *smoothed_composite(const char *op, const ct_tensor *x, const ct_tensor *target,
                                     const ct_loss_opts *o, int64_t M, int64_t C, double eps) {
  ct_scope_begin();
  int cdim = x->ndim == 1 ? 0 : 1;
  ct_tensor *logp = ct_log_softmax(x, cdim);
  ct_loss_opts no = *o;
  no.label_smoothing = 0;
  ct_tensor *nll = logp ? class_loss(op, logp, target, &no, M, C, 0.0, false) : NULL; /* nll_loss */
  ct_tensor *lw = logp;
  ct_tensor *wv = NULL;
  if (o->weight) {
    int64_t ws[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) ws[d] = d == cdim ? C : 1;
    wv = ct_reshape(ct_cast(o->weight, x->dtype), ws, x->ndim);
    lw = ct_mul(logp, wv);
  }
  ct_tensor *smooth = ct_neg(ct_sum(lw, &(ct_reduce_opts){.dims = {cdim}, .ndims = 1}));
  ct_tensor *valid = NULL;
  if (o->has_ignore_index) { /* masked, not multiplied: 0, not inf * 0, when all are ignored */
    valid = ct_ne_scalar(target, (double)o->ignore_index);
    smooth = ct_masked_fill(smooth, ct_logical_not(valid), 0.0);
  }
  ct_tensor *ret = NULL;
  if (o->reduction == CT_REDUCTION_NONE) {
    ret = smooth;
  } else if (o->reduction == CT_REDUCTION_SUM) {
    ret = ct_sum(smooth, NULL);
  } else { /* mean over sum_i w[t_i] valid_i (or the valid count) */
    ct_tensor *denom;
    ct_tensor *ts = valid ? ct_mul(ct_cast(target, CT_I64), valid) : ct_cast(target, CT_I64);
    ct_tensor *tflat = ct_reshape(ts, (int64_t[]){-1}, 1);
    ct_tensor *wt = o->weight ? ct_index_select(ct_cast(o->weight, x->dtype), 0, tflat)
                              : ct_ones(ct_shape(tflat), 1, &(ct_tensor_opts){.dtype = x->dtype, .device = ct_device_of(x)});
    if (valid) wt = ct_mul(wt, ct_cast(ct_reshape(valid, (int64_t[]){-1}, 1), x->dtype));
    denom = ct_sum(wt, NULL);
    ret = ct_div(ct_sum(smooth, NULL), denom);
  }
  ct_tensor *r = ct_add(ct_mul_scalar(nll, 1 - eps), ct_mul_scalar(ret, eps / (double)C));
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}

ct_tensor *ct_cross_entropy(const ct_tensor *logits, const ct_tensor *target, const ct_loss_opts *opts) {
  static const char op[] = "cross_entropy";
  if (!logits || !target) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, logits, NULL, NULL)) {
    ct_tensor *r = ct_cross_entropy(ac.t[0], target, opts);
    ct__autocast_done(&ac);
    return r;
  }
  const ct_loss_opts *o = opts ? opts : &DEFAULT_OPTS;
  /* as torch: a floating target of the logits' shape holds probabilities */
  if (ct_dtype_is_floating(target->dtype) && ct__nn_shape_is(target, logits->shape, logits->ndim))
    return ct__cross_entropy_probs(logits, target, o);
  int64_t M, C;
  if (!check_class_loss(op, logits, target, o, &M, &C)) return NULL;
  double eps = o->label_smoothing;
  if (!(eps >= 0 && eps <= 1))
    return ct__fail(CT_ERR_ARG, "cross_entropy: label_smoothing must be in [0, 1], got %g", eps);
  if (eps > 0 && (o->weight || o->has_ignore_index))
    return smoothed_composite(op, logits, target, o, M, C, eps);
  return class_loss(op, logits, target, o, M, C, eps, true);
}

/* ---- Composite losses --------------------------------------------------------- */

ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target, const ct_loss_opts *opts) {
  if (!input || !target) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, input, target, NULL)) {
    ct_tensor *r = ct_mse_loss(ac.t[0], ac.t[1], opts);
    ct__autocast_done(&ac);
    return r;
  }
  const ct_loss_opts *o = opts ? opts : &DEFAULT_OPTS;
  if (!ct__nn_check_reduction("mse_loss", o->reduction, false)) return NULL;
  if (!ct__nn_need_float("mse_loss", "input", input)) return NULL;
  ct_scope_begin();
  ct_tensor *r = ct__nn_reduce_loss(ct_square(ct_sub(input, target)), o->reduction, input);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}

ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *logits, const ct_tensor *target,
                                               const ct_loss_opts *opts) {
  static const char op[] = "binary_cross_entropy_with_logits";
  if (!logits || !target) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, logits, target, NULL)) {
    ct_tensor *r = ct_binary_cross_entropy_with_logits(ac.t[0], ac.t[1], opts);
    ct__autocast_done(&ac);
    return r;
  }
  const ct_loss_opts *o = opts ? opts : &DEFAULT_OPTS;
  if (!ct__nn_check_reduction(op, o->reduction, false)) return NULL;
  if (!ct__nn_need_float(op, "input", logits) || !ct__nn_need_float(op, "target", target)) return NULL;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  if (!ct__nn_shape_is(target, logits->shape, logits->ndim))
    return ct__fail(CT_ERR_SHAPE, "%s: target size %s must be the same as input size %s", op,
                    ct__shape_str(target, s1, sizeof s1), ct__shape_str(logits, s2, sizeof s2));
  /* (1 - y) x + (1 + (pw - 1) y) softplus(-x); softplus(-x) = log(1 + e^-x) */
  ct_scope_begin();
  ct_tensor *sp = ct_softplus(ct_neg(logits));
  ct_tensor *l = ct_mul(ct_rsub_scalar(target, 1.0), logits);
  if (o->pos_weight) {
    ct_tensor *coef = ct_add_scalar(ct_mul(ct_sub_scalar(o->pos_weight, 1.0), target), 1.0);
    l = ct_add(l, ct_mul(coef, sp));
  } else {
    l = ct_add(l, sp);
  }
  if (o->weight) l = ct_mul(l, o->weight);
  ct_tensor *r = ct__nn_reduce_loss(l, o->reduction, logits);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}
