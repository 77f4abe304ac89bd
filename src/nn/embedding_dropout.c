/* ct_embedding (rows of a weight matrix at integer indices; its backward,
 * in autograd/grad_nn.c, scatter-adds the gradient rows into a dense zero
 * gradient) and ct_dropout (a Philox Bernoulli mask scaled by 1/(1-p),
 * recorded as a multiplication). */
#include <stdio.h>

#include "nn/functional_internal.h"
#include "ops/index.h"

/* ---- Embedding ------------------------------------------------------------------ */

ct_tensor *ct_embedding(const ct_tensor *indices, const ct_tensor *weight) {
  static const char op[] = "embedding";
  if (!indices || !weight) return NULL;
  if (!ct__check_same_device(op, indices, weight)) return NULL;
  char s[CT_SHAPE_STR_MAX];
  if (weight->ndim != 2)
    return ct__fail(CT_ERR_SHAPE, "embedding: expected a 2-d weight (num_embeddings, embedding_dim), got shape %s",
                    ct__shape_str(weight, s, sizeof s));
  if (ct_dtype_is_floating(indices->dtype) || indices->dtype == CT_BOOL)
    return ct__fail(CT_ERR_DTYPE, "embedding: expected integer indices (i64 or i32), got %s",
                    ct_dtype_name(indices->dtype));
  if (indices->ndim + 1 > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "embedding: indices of %d dims give a result of more than %d dims",
                    indices->ndim, CT_MAX_DIMS);
  bool ok = true;
  ct_tensor *ic = ct__nn_prep(indices, CT_I64, &ok);
  if (!ok) return NULL;
  int64_t M = ic->numel, D = weight->shape[1];
  ct_tensor *flat = ct__nn_reshape(ic, &M, 1);
  ct_tensor *rows = flat ? ct__index_select(weight, 0, flat) : NULL; /* (M, D) */
  ct__release(ic);
  if (!rows) {
    ct__release(flat);
    if (ct_last_error() == CT_ERR_ARG) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", ct_last_error_message());
      ct__fail(CT_ERR_ARG, "embedding: index out of range for %lld embeddings (%s)",
               (long long)weight->shape[0], msg);
    }
    return NULL;
  }
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
  shape[indices->ndim] = D;
  ct_tensor *r = ct__nn_reshape(rows, shape, indices->ndim + 1);
  ct__release(rows);
  r = ct__ag_embedding(r, indices, weight, flat);
  ct__release(flat);
  return ct__track(r);
}

/* ---- Dropout -------------------------------------------------------------------- */

ct_tensor *ct_dropout(const ct_tensor *x, double p, bool training, ct_generator *g) {
  if (!x) return NULL;
  if (!(p >= 0 && p <= 1)) return ct__fail(CT_ERR_ARG, "dropout: p must be in [0, 1], got %g", p);
  if (!ct__nn_need_float("dropout", "input", x)) return NULL;
  if (!training || p == 0) return ct_alias(x);
  if (p == 1) return ct_mul_scalar(x, 0.0);
  ct_tensor *mask = ct_bernoulli_scalar(x, 1 - p, g);
  if (!mask) return NULL;
  ct_tensor *r = ct_mul_scalar_(mask, 1.0 / (1.0 - p)) ? ct_mul(x, mask) : NULL;
  ct_free(mask);
  return r;
}
