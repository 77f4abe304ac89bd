/* Backward of matmul and linear.
 *   matmul  y = a @ b:      ga = g @ b^T,  gb = a^T @ g   (1-d operands get a
 *                           size-1 dim for the product and lose it after;
 *                           broadcast batch dims are summed by the engine)
 *   linear  y = x @ w^T + b: gx = g @ w,   gw = g^T @ x (over all rows),
 *                           gb = sum of g over all rows */
#include "autograd/autograd_internal.h"
#include "ops/linalg.h"
#include "ops/reduce.h"

/* A view of t with its last two dims swapped (ndim >= 2). */
static ct_tensor *mT(const ct_tensor *t) {
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  int nd = t->ndim;
  memcpy(shape, t->shape, sizeof shape);
  memcpy(strides, t->strides, sizeof strides);
  shape[nd - 2] = t->shape[nd - 1], shape[nd - 1] = t->shape[nd - 2];
  strides[nd - 2] = t->strides[nd - 1], strides[nd - 1] = t->strides[nd - 2];
  return ct__view_of(t, t->dtype, shape, strides, nd, t->offset);
}

/* A view of t with a size-1 dim inserted at position d (0..ndim). */
static ct_tensor *unsqueeze(const ct_tensor *t, int d) {
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int i = 0, k = 0; i <= t->ndim; i++) {
    if (i == d) shape[i] = 1, strides[i] = 0;
    else shape[i] = t->shape[k], strides[i] = t->strides[k], k++;
  }
  return ct__view_of(t, t->dtype, shape, strides, t->ndim + 1, t->offset);
}

/* A view of t without its size-1 dim d. */
static ct_tensor *squeeze(const ct_tensor *t, int d) {
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int i = 0, k = 0; i < t->ndim; i++)
    if (i != d) shape[k] = t->shape[i], strides[k++] = t->strides[i];
  return ct__view_of(t, t->dtype, shape, strides, t->ndim - 1, t->offset);
}

static ct_status matmul_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *a0 = ct__node_saved(n, 0), *b0 = ct__node_saved(n, 1);
  if (!a0 || !b0) return ct_last_error();
  /* Work with >= 2-d operands: a (k) -> (1, k); b (k) -> (k, 1); g likewise. */
  ct_tensor *a = a0->ndim == 1 ? unsqueeze(a0, 0) : ct__retain(a0);
  ct_tensor *b = b0->ndim == 1 ? unsqueeze(b0, 1) : ct__retain(b0);
  ct_tensor *gg = ct__retain(g);
  if (a0->ndim == 1 && b0->ndim == 1) { /* g is a scalar */
    ct_tensor *t = unsqueeze(gg, 0), *u = t ? unsqueeze(t, 1) : NULL;
    ct__release(t), ct__release(gg);
    gg = u;
  } else if (a0->ndim == 1) {
    ct_tensor *t = unsqueeze(gg, gg->ndim - 1);
    ct__release(gg);
    gg = t;
  } else if (b0->ndim == 1) {
    ct_tensor *t = unsqueeze(gg, gg->ndim);
    ct__release(gg);
    gg = t;
  }
  ct_status st = a && b && gg ? CT_OK : ct_last_error();
  if (st == CT_OK && ct__node_needs(n, 0)) {
    ct_tensor *bt = mT(b);
    ct_tensor *ga = bt ? ct__matmul(NULL, gg, bt) : NULL;
    ct__release(bt);
    if (ga && a0->ndim == 1) { /* (..., 1, k) -> (..., k) */
      ct_tensor *s = squeeze(ga, ga->ndim - 2);
      ct__release(ga);
      ga = s;
    }
    if (!(gi[0] = ga)) st = ct_last_error();
  }
  if (st == CT_OK && ct__node_needs(n, 1)) {
    ct_tensor *at = mT(a);
    ct_tensor *gb = at ? ct__matmul(NULL, at, gg) : NULL;
    ct__release(at);
    if (gb && b0->ndim == 1) { /* (..., k, 1) -> (..., k) */
      ct_tensor *s = squeeze(gb, gb->ndim - 1);
      ct__release(gb);
      gb = s;
    }
    if (!(gi[1] = gb)) st = ct_last_error();
  }
  ct__release(a), ct__release(b), ct__release(gg);
  return st;
}

ct_tensor *ct__ag_matmul(ct_tensor *r, const ct_tensor *a, const ct_tensor *b) {
  const ct_tensor *ins[2] = {a, b};
  if (!r || !ct__ag_needed(ins, 2)) return r;
  ct_node *n = ct__node_new("MmBackward", matmul_backward, 2, ins);
  if (!n || !ct__node_save(n, 0, a) || !ct__node_save(n, 1, b)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

/* t (..., c) as a contiguous (rows, c) matrix. */
static ct_tensor *as_rows(const ct_tensor *t) {
  ct_tensor *c = ct__contiguous(t);
  if (!c) return NULL;
  int64_t cols = t->ndim ? t->shape[t->ndim - 1] : 1;
  int64_t shape[2] = {cols ? t->numel / cols : 0, cols}, strides[2] = {cols, 1};
  ct_tensor *v = ct__view_of(c, c->dtype, shape, strides, 2, c->offset);
  ct__release(c);
  return v;
}

static ct_status linear_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *x = ct__node_saved(n, 0), *w = ct__node_saved(n, 1);
  if (!x || !w) return ct_last_error();
  ct_status st = CT_OK;
  if (ct__node_needs(n, 0) && !(gi[0] = ct__matmul(NULL, g, w))) return ct_last_error();
  if (ct__node_needs(n, 1) || ct__node_needs(n, 2)) {
    ct_tensor *g2 = as_rows(g);
    if (!g2) return ct_last_error();
    if (ct__node_needs(n, 1)) {
      ct_tensor *x2 = as_rows(x), *g2t = mT(g2);
      gi[1] = x2 && g2t ? ct__matmul(NULL, g2t, x2) : NULL;
      ct__release(x2), ct__release(g2t);
      if (!gi[1]) st = ct_last_error();
    }
    if (st == CT_OK && ct__node_needs(n, 2)) {
      gi[2] = ct__reduce(CT_ROP_SUM, NULL, g2, &(ct_reduce_opts){.dims = {0}, .ndims = 1}, 0);
      if (!gi[2]) st = ct_last_error();
    }
    ct__release(g2);
  }
  return st;
}

ct_tensor *ct__ag_linear(ct_tensor *r, const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = ct__node_new("AddmmBackward", linear_backward, 3, ins);
  if (!n || !ct__node_save(n, 0, x) || !ct__node_save(n, 1, w)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}
