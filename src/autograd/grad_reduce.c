/* Backward formulas of reductions, max/min along a dim, and softmax. The
 * output gradient is first given back the reduced dims (size 1), then
 * broadcast over them:
 *   sum: g        mean: g / N      prod: g * y / x
 *   max/min: g split evenly among the elements equal to the extreme
 *   logsumexp: g * exp(x - y)      var: g * 2 (x - mean) / (N - c)
 *   std: g * (x - mean) / ((N - c) y)
 *   norm: g * sign(x) |x|^(p-1) / y^(p-1)   (p = 2: g x / y, 0 where y == 0) */
#include <math.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/reduce.h"

/* t (same numel) as a contiguous tensor of `shape`: a view when t is
 * contiguous, else a copy viewed. */
static ct_tensor *contiguous_as(const ct_tensor *t, const int64_t *shape, int ndim) {
  ct_tensor *c = ct__contiguous(t);
  if (!c) return NULL;
  int64_t st[CT_MAX_DIMS];
  ct__contiguous_strides(shape, ndim, st);
  ct_tensor *r = ct__view_of(c, c->dtype, shape, st, ndim, c->offset);
  ct__release(c);
  return r;
}

ct_tensor *ct__sum_to_shape(const ct_tensor *g, const int64_t *shape, int ndim) {
  int lead = g->ndim - ndim;
  if (lead < 0) return contiguous_as(g, shape, ndim); /* same numel, fewer dims */
  ct_reduce_opts r = {.keepdim = true};
  for (int d = 0; d < g->ndim; d++)
    if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) r.dims[r.ndims++] = d;
  ct_tensor *s;
  if (r.ndims == 0) s = ct__retain(g);
  else s = ct__reduce(CT_ROP_SUM, NULL, g, &r, 0);
  if (!s) return NULL;
  ct_tensor *out = contiguous_as(s, shape, ndim); /* drops the size-1 leading dims */
  ct__release(s);
  return out;
}

/* g with size-1 dims put back where mask[d] (a view), for keepdim == false. */
static ct_tensor *unsqueeze_reduced(const ct_tensor *g, const ct_node *n) {
  const ct_input_meta *in = &n->in[0];
  bool keepdim = n->ip[CT_MAX_DIMS] != 0;
  if (keepdim || g->ndim == in->ndim) return ct__retain(g);
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int d = 0, k = 0; d < in->ndim; d++) {
    if (n->ip[d]) {
      shape[d] = 1, strides[d] = 0;
    } else {
      shape[d] = g->shape[k], strides[d] = g->strides[k];
      k++;
    }
  }
  return ct__view_of(g, g->dtype, shape, strides, in->ndim, g->offset);
}

static ct_tensor *expand_to_input(const ct_tensor *t, const ct_node *n) {
  return ct__broadcast_to(t, n->in[0].shape, n->in[0].ndim);
}

static ct_tensor *mul(const ct_tensor *a, const ct_tensor *b) { return ct__binary(CT_BOP_MUL, NULL, a, b); }
static ct_tensor *sub(const ct_tensor *a, const ct_tensor *b) { return ct__binary(CT_BOP_SUB, NULL, a, b); }
static ct_tensor *divide(const ct_tensor *a, const ct_tensor *b) { return ct__binary(CT_BOP_DIV, NULL, a, b); }
static ct_tensor *scal(const ct_tensor *a, double s) { return ct__binary_scalar(CT_BOP_MUL, NULL, a, s, false); }

/* The reduce opts the node was recorded with (keepdim forced on). */
static ct_reduce_opts node_opts(const ct_node *n) {
  ct_reduce_opts r = {.keepdim = true};
  for (int d = 0; d < n->in[0].ndim; d++)
    if (n->ip[d]) r.dims[r.ndims++] = d;
  return r;
}

static ct_status reduce_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  ct_reduce_op op = (ct_reduce_op)n->op;
  const ct_tensor *x = NULL, *y = NULL;
  if (n->saved[0] && !(x = ct__node_saved(n, 0))) return ct_last_error();
  if (n->saved[1] && !(y = ct__node_saved(n, 1))) return ct_last_error();
  double N = n->p[1], p = n->p[0];
  ct_tensor *gk = unsqueeze_reduced(g, n);
  ct_tensor *yk = y ? unsqueeze_reduced(y, n) : NULL;
  ct_tensor *local = NULL; /* d out / d x, of x's shape (or broadcastable) */
  ct_reduce_opts r = node_opts(n);
  switch (op) {
  case CT_ROP_SUM: local = NULL; break;
  case CT_ROP_MEAN: local = NULL; break;
  case CT_ROP_PROD: local = divide(yk, x); break;
  case CT_ROP_MAX:
  case CT_ROP_MIN: {
    ct_tensor *mask = ct__binary(CT_BOP_EQ, NULL, x, yk);
    ct_tensor *mf = mask ? ct__cast(mask, g->dtype) : NULL;
    ct_tensor *cnt = mf ? ct__reduce(CT_ROP_SUM, NULL, mf, &r, 0) : NULL;
    local = cnt ? divide(mf, cnt) : NULL;
    ct__release(mask), ct__release(mf), ct__release(cnt);
    break;
  }
  case CT_ROP_LOGSUMEXP: {
    ct_tensor *d = sub(x, yk);
    local = d ? ct__unary(CT_UOP_EXP, NULL, d, 0, 0) : NULL;
    ct__release(d);
    break;
  }
  case CT_ROP_VAR:
  case CT_ROP_STD: {
    ct_tensor *mean = ct__reduce(CT_ROP_MEAN, NULL, x, &r, 0);
    ct_tensor *d = mean ? sub(x, mean) : NULL;
    if (op == CT_ROP_VAR) {
      local = d ? scal(d, 2.0 / (N - p)) : NULL;
    } else {
      ct_tensor *t = d ? scal(d, 1.0 / (N - p)) : NULL;
      local = t ? divide(t, yk) : NULL;
      ct__release(t);
    }
    ct__release(mean), ct__release(d);
    break;
  }
  case CT_ROP_NORM: {
    ct_tensor *sg = ct__unary(CT_UOP_SIGN, NULL, x, 0, 0);
    if (p == 2) {
      ct_tensor *t = divide(x, yk);
      ct_tensor *z = ct__binary_scalar(CT_BOP_EQ, NULL, yk, 0, false);
      ct_tensor *zero = ct__zeros(NULL, 0, g->dtype, ct__device(g));
      local = t && z && zero ? ct__where(NULL, z, zero, t) : NULL;
      ct__release(t), ct__release(z), ct__release(zero);
    } else if (p == 1) {
      local = ct__retain(sg);
    } else if (isinf(p)) {
      ct_tensor *ax = ct__unary(CT_UOP_ABS, NULL, x, 0, 0);
      ct_tensor *mask = ax ? ct__binary(CT_BOP_EQ, NULL, ax, yk) : NULL;
      ct_tensor *mf = mask ? ct__cast(mask, g->dtype) : NULL;
      ct_tensor *cnt = mf ? ct__reduce(CT_ROP_SUM, NULL, mf, &r, 0) : NULL;
      ct_tensor *t = cnt ? divide(mf, cnt) : NULL;
      local = t && sg ? mul(t, sg) : NULL;
      ct__release(ax), ct__release(mask), ct__release(mf), ct__release(cnt), ct__release(t);
    } else if (p == 0) {
      local = ct__zeros(NULL, 0, g->dtype, ct__device(g));
    } else { /* sign(x) |x|^(p-1) / y^(p-1) */
      ct_tensor *ax = ct__unary(CT_UOP_ABS, NULL, x, 0, 0);
      ct_tensor *num = ax ? ct__binary_scalar(CT_BOP_POW, NULL, ax, p - 1, false) : NULL;
      ct_tensor *den = ct__binary_scalar(CT_BOP_POW, NULL, yk, p - 1, false);
      ct_tensor *t = num && den ? divide(num, den) : NULL;
      local = t && sg ? mul(t, sg) : NULL;
      ct__release(ax), ct__release(num), ct__release(den), ct__release(t);
    }
    ct__release(sg);
    break;
  }
  default:
    ct__release(gk), ct__release(yk);
    return ct__fail_status(CT_ERR_STATE, "backward: %s is not differentiable", ct__reduce_names[op]);
  }
  ct_status st = CT_OK;
  ct_tensor *res = NULL;
  if (op == CT_ROP_SUM) {
    res = expand_to_input(gk, n);
  } else if (op == CT_ROP_MEAN) {
    ct_tensor *t = scal(gk, 1.0 / N);
    res = t ? expand_to_input(t, n) : NULL;
    ct__release(t);
  } else {
    res = local ? mul(gk, local) : NULL;
  }
  if (!res) st = ct_last_error();
  gi[0] = res;
  ct__release(gk), ct__release(yk), ct__release(local);
  return st;
}

ct_tensor *ct__ag_reduce(ct_tensor *r, int op, const ct_tensor *x, const ct_reduce_opts *opts, double p) {
  if (!r || !ct__ag_needed(&x, 1) || op == CT_ROP_ALL || op == CT_ROP_ANY) return r;
  bool mask[CT_MAX_DIMS];
  int64_t shape[CT_MAX_DIMS];
  int nd;
  if (!ct__reduce_dims(ct__reduce_names[op], x, opts, mask, shape, &nd)) return ct__ag_attach(r, NULL);
  ct_node *n = ct__node_new(ct__reduce_names[op], reduce_backward, 1, &x);
  if (!n) return ct__ag_attach(r, NULL);
  n->op = op;
  n->p[0] = p;
  double count = 1;
  for (int d = 0; d < x->ndim; d++) {
    n->ip[d] = mask[d];
    if (mask[d]) count *= (double)x->shape[d];
  }
  n->ip[CT_MAX_DIMS] = opts && opts->keepdim;
  n->p[1] = count;
  bool ok = true;
  if (op != CT_ROP_SUM && op != CT_ROP_MEAN) ok = ct__node_save(n, 0, x);
  if (ok && op != CT_ROP_SUM && op != CT_ROP_MEAN && op != CT_ROP_VAR) ok = ct__node_save(n, 1, r);
  if (!ok) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

/* ---- max/min along a dim (values) ------------------------------------------- */

static ct_status max_dim_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *idx = ct__node_saved(n, 0);
  if (!idx) return ct_last_error();
  int dim = (int)n->ip[CT_MAX_DIMS + 1];
  ct_tensor *gk = unsqueeze_reduced(g, n);
  ct_tensor *ik = unsqueeze_reduced(idx, n);
  ct_tensor *z = ct__zeros(n->in[0].shape, n->in[0].ndim, g->dtype, ct__device(g));
  ct_tensor *gc = gk ? ct__contiguous(gk) : NULL;
  ct_tensor *ic = ik ? ct__contiguous(ik) : NULL;
  ct_tensor *r = z && gc && ic ? ct__scatter(z, dim, ic, gc, false, true) : NULL;
  ct_status st = r ? CT_OK : ct_last_error();
  if (r) gi[0] = ct__retain(z);
  ct__release(gk), ct__release(ik), ct__release(z), ct__release(gc), ct__release(ic);
  return st;
}

ct_tensor *ct__ag_max_dim(ct_tensor *values, const ct_tensor *indices, const ct_tensor *x, int dim,
                          bool keepdim) {
  if (!values || !ct__ag_needed(&x, 1)) return values;
  ct_node *n = ct__node_new("MaxBackward", max_dim_backward, 1, &x);
  if (!n || !ct__node_save(n, 0, indices)) {
    ct__node_release(n);
    return ct__ag_attach(values, NULL);
  }
  for (int d = 0; d < x->ndim; d++) n->ip[d] = d == dim;
  n->ip[CT_MAX_DIMS] = keepdim;
  n->ip[CT_MAX_DIMS + 1] = dim;
  return ct__ag_attach(values, n);
}

/* ---- softmax ------------------------------------------------------------------- */

static ct_status softmax_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *y = ct__node_saved(n, 0);
  if (!y) return ct_last_error();
  ct_tensor *gc = ct__cast(g, y->dtype);
  ct_tensor *gcc = gc ? ct__contiguous(gc) : NULL;
  ct_tensor *yc = ct__contiguous(y);
  ct_tensor *gx = gcc && yc ? ct__empty(y->shape, y->ndim, y->dtype, ct__device(y)) : NULL;
  ct_status st = gx ? ct__backend_of(gx)->softmax_backward(gx, gcc, yc, (int)n->ip[0], n->ip[1] != 0)
                    : ct_last_error();
  ct__release(gc), ct__release(gcc), ct__release(yc);
  if (st != CT_OK) {
    ct__release(gx);
    return st;
  }
  gi[0] = gx;
  return CT_OK;
}

ct_tensor *ct__ag_softmax(ct_tensor *r, const ct_tensor *x, int dim, bool log) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = ct__node_new(log ? "LogSoftmaxBackward" : "SoftmaxBackward", softmax_backward, 1, &x);
  if (!n || !ct__node_save(n, 0, r)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  if (dim < 0) dim += x->ndim > 0 ? x->ndim : 1;
  n->ip[0] = dim;
  n->ip[1] = log;
  return ct__ag_attach(r, n);
}
