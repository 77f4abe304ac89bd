/* Backward of matmul and linear.
 *   matmul  y = a @ b:       ga = g @ b^T,  gb = a^T @ g   (1-d operands get a
 *                            size-1 dim for the product and lose it after;
 *                            broadcast batch dims are summed by the engine)
 *   linear  y = x @ w^T + b: gx = g @ w,    gw = g^T @ x (over all rows),
 *                            gb = sum of g over all rows */
#include "autograd/node.h"

typedef struct matmul_node {
  ct_saved a, b;
} matmul_node;

static void matmul_backward(ct_bw *c, const ct_tensor *g) {
  const matmul_node *s = CT_BW_STATE(c, matmul_node);
  const ct_tensor *a0 = bw_needs(c, 1) ? bw_saved(c, &s->a) : NULL;
  const ct_tensor *b0 = bw_needs(c, 0) ? bw_saved(c, &s->b) : NULL;
  int na = c->node->in[0].ndim, nb = c->node->in[1].ndim;
  /* as >= 2-d operands: a (k) -> (1, k), b (k) -> (k, 1), g likewise */
  const ct_tensor *a = na == 1 ? bw_unsqueeze(c, a0, 0) : a0;
  const ct_tensor *b = nb == 1 ? bw_unsqueeze(c, b0, 1) : b0;
  const ct_tensor *gg = g;
  if (na == 1 && nb == 1)
    gg = bw_unsqueeze(c, bw_unsqueeze(c, g, 0), 1); /* g is a scalar */
  else if (na == 1)
    gg = bw_unsqueeze(c, g, g->ndim - 1);
  else if (nb == 1)
    gg = bw_unsqueeze(c, g, g->ndim);
  if (bw_needs(c, 0)) { /* (..., 1, k) -> (..., k) for a 1-d a */
    ct_tensor *ga = bw_matmul(c, gg, bw_mT(c, b));
    bw_set(c, 0, na == 1 && ga ? bw_squeeze(c, ga, ga->ndim - 2) : ga);
  }
  if (bw_needs(c, 1)) { /* (..., k, 1) -> (..., k) for a 1-d b */
    ct_tensor *gb = bw_matmul(c, bw_mT(c, a), gg);
    bw_set(c, 1, nb == 1 && gb ? bw_squeeze(c, gb, gb->ndim - 1) : gb);
  }
}

ct_tensor *ct__ag_matmul(ct_tensor *r, const ct_tensor *a, const ct_tensor *b) {
  const ct_tensor *ins[2] = {a, b};
  if (!r || !ct__ag_needed(ins, 2)) return r;
  ct_node *n = CT_NODE_NEW(matmul_node, "MmBackward", matmul_backward, 2, ins);
  if (n) {
    matmul_node *s = CT_NODE_STATE(n, matmul_node);
    if (ct__requires_grad(b)) ct__save(n, &s->a, a);
    if (ct__requires_grad(a)) ct__save(n, &s->b, b);
  }
  return ct__ag_record(r, n);
}

typedef struct linear_node {
  ct_saved x, w;
} linear_node;

/* t (..., c) as a (rows, c) matrix (rows: the product of the leading dims,
 * also when c is 0). */
static ct_tensor *as_rows(ct_bw *c, const ct_tensor *t) {
  if (!t) return NULL;
  int64_t cols = t->ndim ? t->shape[t->ndim - 1] : 1, rows = 1;
  for (int d = 0; d + 1 < t->ndim; d++) rows *= t->shape[d];
  return bw_reshape(c, t, (int64_t[]){rows, cols}, 2);
}

static void linear_backward(ct_bw *c, const ct_tensor *g) {
  const linear_node *s = CT_BW_STATE(c, linear_node);
  BW_GRAD(c, 0, bw_matmul(c, g, bw_saved(c, &s->w)));
  if (!bw_needs(c, 1) && !bw_needs(c, 2)) return;
  ct_tensor *g2 = as_rows(c, g);
  BW_GRAD(c, 1, bw_matmul(c, bw_mT(c, g2), as_rows(c, bw_saved(c, &s->x))));
  BW_GRAD(c, 2, bw_reduce(c, CT_ROP_SUM, g2, &(ct_reduce_opts){.dims = {0}, .ndims = 1}));
}

ct_tensor *ct__ag_linear(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(linear_node, "AddmmBackward", linear_backward, 3, ins);
  if (n) {
    linear_node *s = CT_NODE_STATE(n, linear_node);
    if (ct__requires_grad(w)) ct__save(n, &s->x, x);
    if (ct__requires_grad(x)) ct__save(n, &s->w, w);
  }
  return ct__ag_record(r, n);
}
