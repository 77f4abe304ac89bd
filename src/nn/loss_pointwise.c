/* Pointwise losses (l1, smooth_l1, huber, kl_div, binary_cross_entropy) and
 * cross entropy with class-probability targets, composed of recorded public
 * ops inside a scope, as PyTorch composes most of them: the CPU and CUDA
 * backends run the same kernels and autograd comes from the ops. Each is a
 * few elementwise passes over tensors the size of the input; a fused kernel
 * would save memory traffic, not arithmetic, and a loss is a small part of a
 * training step. */
#include <math.h>

#include "amp/amp_internal.h"
#include "nn/functional_internal.h"

ct_tensor *ct__nn_reduce_loss(ct_tensor *l, ct_reduction red, const ct_tensor *input) {
  if (red == CT_REDUCTION_SUM) return ct_sum(l, NULL);
  if (red == CT_REDUCTION_MEAN) return ct_mean(l, NULL);
  if (red == CT_REDUCTION_BATCHMEAN) {
    ct_tensor *s = ct_sum(l, NULL);
    return input->ndim ? ct_div_scalar(s, (double)input->shape[0]) : s;
  }
  return l;
}

bool ct__nn_check_reduction(const char *op, ct_reduction red, bool batchmean_ok) {
  if (red == CT_REDUCTION_BATCHMEAN && !batchmean_ok) {
    ct__fail(CT_ERR_ARG, "%s: reduction batchmean is only valid for kl_div", op);
    return false;
  }
  if ((unsigned)red > CT_REDUCTION_BATCHMEAN) {
    ct__fail(CT_ERR_ARG, "%s: unknown reduction %d", op, (int)red);
    return false;
  }
  return true;
}

/* One pointwise loss: its name, a scalar hyper-parameter and a flag. */
typedef struct pointwise {
  const char *op;
  double k;       /* smooth_l1: beta; huber: delta */
  bool flag;      /* kl_div: log_target */
  bool same_size; /* target must have the input's shape (bce) */
  bool batchmean; /* CT_REDUCTION_BATCHMEAN accepted (kl_div) */
  ct_tensor *(*elementwise)(const struct pointwise *p, const ct_tensor *x, const ct_tensor *y,
                            const ct_loss_opts *o);
} pointwise;

static const ct_loss_opts DEFAULT_OPTS = {0};

/* Checks, autocast (losses run in f32), the elementwise loss and its
 * reduction, with temporaries freed in a scope. */
static ct_tensor *run_pointwise(const pointwise *p, const ct_tensor *input, const ct_tensor *target,
                                const ct_loss_opts *opts) {
  if (!input || !target) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, input, target, NULL)) {
    ct_tensor *r = run_pointwise(p, ac.t[0], ac.t[1], opts);
    ct__autocast_done(&ac);
    return r;
  }
  const ct_loss_opts *o = opts ? opts : &DEFAULT_OPTS;
  if (!ct__nn_check_reduction(p->op, o->reduction, p->batchmean)) return NULL;
  if (!ct__nn_need_float(p->op, "input", input) || !ct__nn_need_float(p->op, "target", target))
    return NULL;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  if (p->same_size && !ct__nn_shape_is(target, input->shape, input->ndim))
    return ct__fail(CT_ERR_SHAPE, "%s: target size %s must be the same as input size %s", p->op,
                    ct__shape_str(target, s1, sizeof s1), ct__shape_str(input, s2, sizeof s2));
  ct_scope_begin();
  ct_tensor *r = ct__nn_reduce_loss(p->elementwise(p, input, target, o), o->reduction, input);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}

static ct_tensor *l1(const pointwise *p, const ct_tensor *x, const ct_tensor *y,
                     const ct_loss_opts *o) {
  (void)p, (void)o;
  return ct_abs(ct_sub(x, y));
}

/* 0.5 z^2 / beta below beta, z - 0.5 beta above: both branches are computed
 * and where() routes the gradient, which is finite in both. */
static ct_tensor *smooth_l1(const pointwise *p, const ct_tensor *x, const ct_tensor *y,
                            const ct_loss_opts *o) {
  (void)o;
  ct_tensor *z = ct_abs(ct_sub(x, y));
  if (p->k == 0) return z;
  ct_tensor *quad = ct_mul_scalar(ct_square(z), 0.5 / p->k);
  return ct_where(ct_lt_scalar(z, p->k), quad, ct_sub_scalar(z, 0.5 * p->k));
}

static ct_tensor *huber(const pointwise *p, const ct_tensor *x, const ct_tensor *y,
                        const ct_loss_opts *o) {
  (void)o;
  ct_tensor *z = ct_abs(ct_sub(x, y));
  ct_tensor *quad = ct_mul_scalar(ct_square(z), 0.5);
  ct_tensor *lin = ct_mul_scalar(ct_sub_scalar(z, 0.5 * p->k), p->k);
  return ct_where(ct_lt_scalar(z, p->k), quad, lin);
}

/* xlogy(t, t) - t x. xlogy(t, t) is t log(t') with t' = 1 where t = 0, so
 * both its value and its gradient are 0 there (no 0 * -inf). */
static ct_tensor *kl(const pointwise *p, const ct_tensor *x, const ct_tensor *t,
                     const ct_loss_opts *o) {
  (void)o;
  if (p->flag) return ct_mul(ct_exp(t), ct_sub(t, x));
  ct_tensor *safe = ct_where_scalar(ct_ne_scalar(t, 0.0), t, 1.0);
  return ct_sub(ct_mul(t, ct_log(safe)), ct_mul(t, x));
}

/* log(q) clamped at -100, with the clamped gradient 0 also at q = 0: the
 * log sees 1 there (its backward g / q would give 0 / 0 = nan). */
static ct_tensor *clamped_log(const ct_tensor *q) {
  ct_tensor *nz = ct_ne_scalar(q, 0.0);
  ct_tensor *l = ct_clamp(ct_log(ct_where_scalar(nz, q, 1.0)), -100.0, INFINITY);
  return ct_where_scalar(nz, l, -100.0);
}

static ct_tensor *bce(const pointwise *p, const ct_tensor *x, const ct_tensor *y,
                      const ct_loss_opts *o) {
  (void)p;
  ct_tensor *logp = clamped_log(x);
  ct_tensor *log1mp = clamped_log(ct_rsub_scalar(x, 1.0));
  /* -(y log p + (1 - y) log(1 - p)) = (y - 1) log(1 - p) - y log p */
  ct_tensor *l = ct_sub(ct_mul(ct_sub_scalar(y, 1.0), log1mp), ct_mul(y, logp));
  return o->weight ? ct_mul(l, o->weight) : l;
}

ct_tensor *ct_l1_loss(const ct_tensor *input, const ct_tensor *target, const ct_loss_opts *opts) {
  static const pointwise p = {.op = "l1_loss", .elementwise = l1};
  return run_pointwise(&p, input, target, opts);
}

ct_tensor *ct_smooth_l1_loss(const ct_tensor *input, const ct_tensor *target, double beta,
                             const ct_loss_opts *opts) {
  if (!(beta >= 0)) return ct__fail(CT_ERR_ARG, "smooth_l1_loss: beta must be >= 0, got %g", beta);
  pointwise p = {.op = "smooth_l1_loss", .k = beta, .elementwise = smooth_l1};
  return run_pointwise(&p, input, target, opts);
}

ct_tensor *ct_huber_loss(const ct_tensor *input, const ct_tensor *target, double delta,
                         const ct_loss_opts *opts) {
  if (!(delta > 0)) return ct__fail(CT_ERR_ARG, "huber_loss: delta must be > 0, got %g", delta);
  pointwise p = {.op = "huber_loss", .k = delta, .elementwise = huber};
  return run_pointwise(&p, input, target, opts);
}

ct_tensor *ct_kl_div(const ct_tensor *input, const ct_tensor *target, bool log_target,
                     const ct_loss_opts *opts) {
  pointwise p = {.op = "kl_div", .flag = log_target, .batchmean = true, .elementwise = kl};
  return run_pointwise(&p, input, target, opts);
}

ct_tensor *ct_binary_cross_entropy(const ct_tensor *input, const ct_tensor *target,
                                   const ct_loss_opts *opts) {
  static const pointwise p = {.op = "binary_cross_entropy", .same_size = true, .elementwise = bce};
  if (opts && opts->weight && !ct__nn_need_float(p.op, "weight", opts->weight)) return NULL;
  return run_pointwise(&p, input, target, opts);
}

/* ---- Cross entropy with class probabilities ------------------------------------ */

/* As torch's cross_entropy with probability targets (target of x's shape):
 * -sum_c w_c t_c logp_c per sample over the class dim (1, or 0 for 1-d). */
ct_tensor *ct__cross_entropy_probs(const ct_tensor *x, const ct_tensor *target,
                                   const ct_loss_opts *o) {
  static const char op[] = "cross_entropy";
  char s1[CT_SHAPE_STR_MAX];
  if (!ct__nn_check_reduction(op, o->reduction, false)) return NULL;
  if (!ct__nn_need_float(op, "input", x) || !ct__check_same_device(op, x, target) ||
      !ct__check_same_device(op, x, o->weight))
    return NULL;
  if (x->ndim < 1)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: expected an input (N, C), (C) or (N, C, d...), got a 0-d tensor", op);
  if (o->has_ignore_index)
    return ct__fail(CT_ERR_ARG, "%s: ignore_index is not supported with probability targets", op);
  double eps = o->label_smoothing;
  if (!(eps >= 0 && eps <= 1))
    return ct__fail(CT_ERR_ARG, "%s: label_smoothing must be in [0, 1], got %g", op, eps);
  int cdim = x->ndim == 1 ? 0 : 1;
  int64_t C = x->shape[cdim];
  if (o->weight && (o->weight->ndim != 1 || o->weight->shape[0] != C))
    return ct__fail(CT_ERR_SHAPE, "%s: expected a class weight of shape (%lld,), got %s", op,
                    (long long)C, ct__shape_str(o->weight, s1, sizeof s1));
  if (!ct__nn_need_float(op, "weight", o->weight)) return NULL;
  ct_scope_begin();
  ct_tensor *t = ct_cast(target, x->dtype);
  if (eps > 0) t = ct_add_scalar(ct_mul_scalar(t, 1 - eps), eps / (double)C);
  ct_tensor *prod = ct_mul(ct_log_softmax(x, cdim), t);
  if (o->weight) {
    int64_t ws[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) ws[d] = d == cdim ? C : 1;
    prod = ct_mul(prod, ct_reshape(ct_cast(o->weight, x->dtype), ws, x->ndim));
  }
  ct_tensor *per = ct_neg(ct_sum(prod, &(ct_reduce_opts){.dims = {cdim}, .ndims = 1}));
  ct_tensor *r = per;
  if (o->reduction == CT_REDUCTION_SUM) {
    r = ct_sum(per, NULL);
  } else if (o->reduction == CT_REDUCTION_MEAN) { /* over the samples: numel / C */
    r = ct_div_scalar(ct_sum(per, NULL), C ? (double)(x->numel / C) : 0.0);
  }
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}
