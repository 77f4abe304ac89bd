/* Helpers shared by the functional layers and losses (conv.c, pool.c,
 * norm.c, embedding_dropout.c, loss.c). */
#ifndef CT_NN_FUNCTIONAL_INTERNAL_H
#define CT_NN_FUNCTIONAL_INTERNAL_H

#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

/* t cast to dtype and made contiguous: a new reference (t itself when it
 * already is); NULL passes through (ok stays true), failure sets *ok false. */
static inline ct_tensor *ct__nn_prep(const ct_tensor *t, ct_dtype dtype, bool *ok) {
  if (!t) return NULL;
  ct_tensor *c = ct__cast(t, dtype);
  ct_tensor *r = c ? ct__contiguous(c) : NULL;
  ct__release(c);
  if (!r) *ok = false;
  return r;
}

/* Whether t has exactly shape (n dims). */
static inline bool ct__nn_shape_is(const ct_tensor *t, const int64_t *shape, int n) {
  if (t->ndim != n) return false;
  for (int d = 0; d < n; d++)
    if (t->shape[d] != shape[d]) return false;
  return true;
}

/* A view of t with another shape of the same numel (t contiguous). */
static inline ct_tensor *ct__nn_reshape(const ct_tensor *t, const int64_t *shape, int n) {
  int64_t st[CT_MAX_DIMS];
  ct__contiguous_strides(shape, n, st);
  return ct__view_of(t, t->dtype, shape, st, n, t->offset);
}

/* A floating dtype is required: else CT_ERR_DTYPE naming op and what. */
static inline bool ct__nn_need_float(const char *op, const char *what, const ct_tensor *t) {
  if (!t || ct_dtype_is_floating(t->dtype)) return true;
  ct__fail(CT_ERR_DTYPE, "%s: expected a floating %s, got %s", op, what, ct_dtype_name(t->dtype));
  return false;
}

/* ---- loss_pointwise.c ---------------------------------------------------- */

/* l reduced as `red` asks (mean, sum, none; batchmean: sum / input's first
 * dim); recorded public ops, so call it inside a scope. */
ct_tensor *ct__nn_reduce_loss(ct_tensor *l, ct_reduction red, const ct_tensor *input);
/* A known reduction (batchmean only where batchmean_ok), else CT_ERR_ARG. */
bool ct__nn_check_reduction(const char *op, ct_reduction red, bool batchmean_ok);
/* cross_entropy with a floating target of class probabilities (opts given,
 * after autocast). */
ct_tensor *ct__cross_entropy_probs(const ct_tensor *x, const ct_tensor *target,
                                   const ct_loss_opts *o);

/* ---- conv.c (also conv_transpose.c) ---------------------------------------- */

/* opts (NULL: the defaults) as kernel parameters: zero stride, dilation and
 * groups mean 1; out of range values fail with CT_ERR_ARG naming op. */
bool ct__conv2d_params(const char *op, const ct_conv2d_opts *opts, ct_conv2d_params *p);
/* The checks conv2d and conv_transpose2d share: one device, a 3-d or 4-d
 * input, a 4-d weight (weight_layout names its dims in the message), float
 * dtypes, one dtype for all. false with the error set, naming op. */
bool ct__conv2d_check_args(const char *op, const ct_tensor *x, const ct_tensor *weight,
                           const ct_tensor *bias, const char *weight_layout);

#endif /* CT_NN_FUNCTIONAL_INTERNAL_H */
