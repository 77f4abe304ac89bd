/* ct_embedding (rows of a weight matrix at integer indices; backward
 * scatter-adds the gradient rows into a dense zero gradient) and ct_dropout
 * (a Philox Bernoulli mask scaled by 1/(1-p), recorded as a multiplication). */
#include <stdio.h>

#include "nn/functional_internal.h"
#include "ops/index.h"

/* ---- Embedding ------------------------------------------------------------------ */

static ct_status embedding_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
  const ct_tensor *idx = ct__node_saved(n, 0); /* (M,) i64 */
  if (!idx) return ct_last_error();
  const ct_input_meta *wm = &n->in[1];
  int64_t M = idx->numel, D = wm->shape[1];
  bool ok = true;
  ct_tensor *gc = ct__nn_prep(g, g->dtype, &ok);
  if (!ok) return ct_last_error();
  ct_tensor *g2 = ct__nn_reshape(gc, (int64_t[]){M, D}, 2);
  /* index (M, D): each row's index repeated along the row (stride 0) */
  ct_tensor *ix = ct__view_of(idx, CT_I64, (int64_t[]){M, D}, (int64_t[]){idx->strides[0], 0}, 2,
                              idx->offset);
  ct_tensor *gw = g2 && ix ? ct__zeros(wm->shape, 2, g->dtype, ct__device(g)) : NULL;
  ct_tensor *r = gw ? ct__scatter(gw, 0, ix, g2, true, true) : NULL;
  ct__release(gc), ct__release(g2), ct__release(ix);
  if (!r) {
    ct__release(gw);
    return ct_last_error();
  }
  grad_in[1] = gw;
  return CT_OK;
}

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
  const ct_tensor *ins[2] = {indices, weight};
  if (r && ct__ag_needed(ins, 2)) {
    ct_node *n = ct__node_new("EmbeddingBackward", embedding_backward, 2, ins);
    if (!n || !ct__node_save(n, 0, flat)) {
      ct__node_release(n);
      ct__release(r);
      r = NULL;
    } else {
      r = ct__ag_attach(r, n);
    }
  }
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
