/* Reductions (sum, mean, prod, max, min, logsumexp, all, any, var, std,
 * norm; argmax/argmin; max/min along a dim): dim handling, dtype rules,
 * empty-input rules and errors, then the backend's reduce/arg_reduce slots.
 * Semantics follow PyTorch (sum of integers is i64, nan propagates through
 * max/min, an empty max is an error, var divides by max(0, N - correction)). */
#include <math.h>

#include "ops/reduce.h"

#include "autograd/autograd_internal.h"

/* ---- Dims and dtypes ------------------------------------------------------ */

bool ct__reduce_dims(const char *op, const ct_tensor *x, const ct_reduce_opts *r,
                     bool mask[CT_MAX_DIMS], int64_t *shape, int *ndim) {
  int nd = x->ndim;
  bool all = !r || r->ndims == 0;
  bool seen[CT_MAX_DIMS] = {false};
  for (int d = 0; d < CT_MAX_DIMS; d++) mask[d] = all && d < nd;
  if (!all) {
    if (r->ndims < 0 || r->ndims > CT_MAX_DIMS)
      return ct__fail(CT_ERR_ARG, "%s: %d reduction dims given (at most %d)", op, r->ndims,
                      CT_MAX_DIMS),
             false;
    for (int i = 0; i < r->ndims; i++) {
      int d = r->dims[i];
      if (!ct__wrap_dim(&d, nd))
        return ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, r->dims[i], nd),
               false;
      if (seen[d])
        return ct__fail(CT_ERR_ARG, "%s: dim %d appears more than once in the reduction dims", op,
                        r->dims[i]),
               false;
      seen[d] = true;
      if (nd > 0) mask[d] = true;
    }
  }
  bool keep = r && r->keepdim;
  int n = 0;
  for (int d = 0; d < nd; d++) {
    if (!mask[d]) shape[n++] = x->shape[d];
    else if (keep) shape[n++] = 1;
  }
  *ndim = n;
  return true;
}

bool ct__reduce_result_dtype(ct_reduce_op op, ct_dtype in, ct_dtype *result) {
  bool fl = ct_dtype_is_floating(in);
  switch (op) {
  case CT_ROP_SUM:
  case CT_ROP_PROD: *result = fl ? in : CT_I64; return true;
  case CT_ROP_MAX:
  case CT_ROP_MIN: *result = in; return true;
  case CT_ROP_ALL:
  case CT_ROP_ANY: *result = CT_BOOL; return true;
  default:
    if (!fl)
      return ct__fail(CT_ERR_DTYPE,
                      "%s: expected a floating-point input, got %s (cast it first, e.g. "
                      "ct_cast(x, CT_F32))",
                      ct__reduce_names[op], ct_dtype_name(in)),
             false;
    *result = in;
    return true;
  }
}

/* A view of res with x's ndim: size 1 (stride 0) at the reduced dims. */
static ct_tensor *keepdim_view(ct_tensor *res, const ct_tensor *x, const bool *mask) {
  if (res->ndim == x->ndim) return ct__retain(res);
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int d = 0, j = 0; d < x->ndim; d++) {
    shape[d] = mask[d] ? 1 : x->shape[d];
    strides[d] = mask[d] ? 0 : res->strides[j++];
  }
  return ct__view_of(res, res->dtype, shape, strides, x->ndim, res->offset);
}

/* ---- Reductions over dims --------------------------------------------------- */

ct_tensor *ct__reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                      const ct_reduce_opts *r, double p) {
  if (!x) return NULL;
  if (op == CT_ROP_LOGSUMEXP && !ct_dtype_is_floating(x->dtype)) {
    /* torch.logsumexp of integers and bool computes in the default float type */
    ct_tensor *xf = ct__cast(x, CT_F32);
    ct_tensor *r32 = xf ? ct__reduce(op, out, xf, r, p) : NULL;
    ct__release(xf);
    return r32;
  }
  const char *name = ct__reduce_names[op];
  ct_dtype rdt;
  bool mask[CT_MAX_DIMS];
  int64_t shape[CT_MAX_DIMS];
  int nd;
  if (!ct__reduce_result_dtype(op, x->dtype, &rdt)) return NULL;
  if (!ct__reduce_dims(name, x, r, mask, shape, &nd)) return NULL;
  if (op == CT_ROP_NORM && isnan(p)) return ct__fail(CT_ERR_ARG, "norm: the order p is nan");
  if (op == CT_ROP_MAX || op == CT_ROP_MIN || (op == CT_ROP_NORM && isinf(p))) {
    /* No identity: every reduced dim must have elements. */
    char buf[CT_SHAPE_STR_MAX];
    bool all = !r || r->ndims == 0;
    for (int d = 0; d < x->ndim; d++) {
      if (!mask[d] || x->shape[d] != 0) continue;
      if (all)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: cannot reduce a tensor with no elements (shape %s): the operation "
                        "has no identity; name the dims to reduce",
                        name, ct__shape_str(x, buf, sizeof buf));
      return ct__fail(CT_ERR_SHAPE,
                      "%s: cannot reduce over dim %d of size 0: the operation has no identity",
                      name, d);
    }
  }
  const ct_backend *be = ct__backend_for(name, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, reduce, name, x);
  ct_tensor *res = ct__result_for(name, out, shape, nd, rdt, ct__device(x));
  if (!res) return NULL;
  ct_tensor *kv = keepdim_view(res, x, mask);
  ct_status st = kv ? be->reduce(op, kv, x, mask, p) : ct_last_error();
  ct__release(kv);
  return ct__finish_out(out, res, st);
}

/* NULL `out` in an _out form: keep an earlier error, else report this one. */
static ct_tensor *null_out(const char *op) {
  if (ct_last_error() != CT_OK) return NULL;
  return ct__fail(CT_ERR_ARG, "%s_out: out is NULL", op);
}

/* Out-of-place forms record autograd; _out forms refuse inputs needing grad. */
static ct_tensor *reduce_new(ct_reduce_op op, const ct_tensor *x, const ct_reduce_opts *r, double p) {
  return ct__track(ct__ag_reduce(ct__reduce(op, NULL, x, r, p), op, x, r, p));
}

#define DEFINE_REDUCE(E, n)                                                              \
  ct_tensor *ct_##n(const ct_tensor *x, const ct_reduce_opts *r) {                       \
    return reduce_new(CT_ROP_##E, x, r, 0.0);                                            \
  }                                                                                      \
  ct_tensor *ct_##n##_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r) { \
    if (!out) return null_out(#n);                                                       \
    if (x && !ct__ag_out_allowed(#n "_out", out, &x, 1)) return NULL;                    \
    return ct__reduce(CT_ROP_##E, out, x, r, 0.0);                                       \
  }
DEFINE_REDUCE(SUM, sum)
DEFINE_REDUCE(MEAN, mean)
DEFINE_REDUCE(PROD, prod)
DEFINE_REDUCE(MAX, max)
DEFINE_REDUCE(MIN, min)
DEFINE_REDUCE(LOGSUMEXP, logsumexp)
#undef DEFINE_REDUCE

/* all/any of u8 are u8 in torch (a legacy of masks stored as bytes). */
static ct_tensor *all_any(ct_reduce_op op, const ct_tensor *x, const ct_reduce_opts *r) {
  ct_tensor *b = ct__reduce(op, NULL, x, r, 0.0);
  if (!b || x->dtype != CT_U8) return ct__track(b);
  ct_tensor *u = ct__cast(b, CT_U8);
  ct__release(b);
  return ct__track(u);
}
ct_tensor *ct_all(const ct_tensor *x, const ct_reduce_opts *r) { return all_any(CT_ROP_ALL, x, r); }
ct_tensor *ct_any(const ct_tensor *x, const ct_reduce_opts *r) { return all_any(CT_ROP_ANY, x, r); }
ct_tensor *ct_var(const ct_tensor *x, const ct_reduce_opts *r, double correction) {
  return reduce_new(CT_ROP_VAR, x, r, correction);
}
ct_tensor *ct_std(const ct_tensor *x, const ct_reduce_opts *r, double correction) {
  return reduce_new(CT_ROP_STD, x, r, correction);
}
ct_tensor *ct_norm(const ct_tensor *x, double p, const ct_reduce_opts *r) {
  return reduce_new(CT_ROP_NORM, x, r, p);
}

/* ---- Arg reductions ----------------------------------------------------------- */

/* A view of t with `shape` (all of t's elements, in t's contiguous order). */
static ct_tensor *reshaped(const ct_tensor *t, const int64_t *shape, int ndim) {
  int64_t strides[CT_MAX_DIMS];
  ct__contiguous_strides(shape, ndim, strides);
  return ct__view_of(t, t->dtype, shape, strides, ndim, t->offset);
}

ct_status ct__arg_reduce(bool is_max, const ct_tensor *x, int dim, bool keepdim,
                         ct_tensor **values, ct_tensor **indices) {
  const char *name = values ? (is_max ? "max" : "min") : (is_max ? "argmax" : "argmin");
  if (values) *values = NULL;
  if (indices) *indices = NULL;
  if (!x) return ct_last_error() != CT_OK ? ct_last_error()
                                          : ct__fail_status(CT_ERR_ARG, "%s: x is NULL", name);
  char buf[CT_SHAPE_STR_MAX];
  int64_t rshape[CT_MAX_DIMS], one = 1;
  int rnd = 0, d = dim;
  ct_tensor *src = NULL; /* x as the kernel sees it */
  if (dim == CT_DIM_ALL) {
    if (x->numel == 0)
      return ct__fail_status(CT_ERR_SHAPE,
                             "%s: cannot reduce a tensor with no elements (shape %s): the "
                             "operation has no identity",
                             name, ct__shape_str(x, buf, sizeof buf));
    ct_tensor *c = ct__contiguous(x);
    src = c ? reshaped(c, &x->numel, 1) : NULL;
    ct__release(c);
    if (keepdim)
      for (int i = 0; i < x->ndim; i++) rshape[rnd++] = 1;
    d = 0;
  } else {
    if (!ct__wrap_dim(&d, x->ndim))
      return ct__fail_status(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", name, dim,
                             x->ndim);
    if (x->ndim > 0 && x->shape[d] == 0)
      return ct__fail_status(CT_ERR_SHAPE,
                             "%s: cannot reduce over dim %d of size 0 (shape %s): the operation "
                             "has no identity",
                             name, d, ct__shape_str(x, buf, sizeof buf));
    src = x->ndim == 0 ? reshaped(x, &one, 1) : ct__retain(x);
    for (int i = 0; i < x->ndim; i++)
      if (i != d || keepdim) rshape[rnd++] = i == d ? 1 : x->shape[i];
  }
  if (!src) return ct_last_error();
  const ct_backend *be = ct__backend_for(name, x);
  ct_status st = CT_OK;
  ct_tensor *res[2] = {NULL, NULL}, *kv[2] = {NULL, NULL};
  if (!be) {
    st = ct_last_error();
    goto done;
  }
  if (!be->arg_reduce) {
    st = ct__fail_status(CT_ERR_UNAVAILABLE, "%s: not implemented on %s", name,
                         ct_device_name(ct__device(x)));
    goto done;
  }
  /* Results, and views of them with src's ndim and size 1 at d. */
  int64_t kshape[CT_MAX_DIMS], kstr[CT_MAX_DIMS];
  for (int w = 0; w < 2; w++) {
    if (!(w == 0 ? values : indices)) continue;
    res[w] = ct__empty(rshape, rnd, w == 0 ? x->dtype : CT_I64, ct__device(x));
    if (!res[w]) {
      st = ct_last_error();
      goto done;
    }
    /* (a flattened src is 1-d with d = 0, so only the else branch reads res's strides) */
    for (int i = 0, j = 0; i < src->ndim; i++) {
      kshape[i] = i == d ? 1 : src->shape[i];
      kstr[i] = i == d ? 0 : res[w]->strides[keepdim ? i : j];
      if (i != d) j++;
    }
    kv[w] = ct__view_of(res[w], res[w]->dtype, kshape, kstr, src->ndim, res[w]->offset);
    if (!kv[w]) {
      st = ct_last_error();
      goto done;
    }
  }
  st = be->arg_reduce(is_max, kv[0], kv[1], src, d);
done:
  ct__release(src);
  ct__release(kv[0]);
  ct__release(kv[1]);
  if (st != CT_OK) {
    ct__release(res[0]);
    ct__release(res[1]);
    return st;
  }
  if (values) *values = res[0];
  if (indices) *indices = res[1];
  return CT_OK;
}

ct_tensor *ct_argmax(const ct_tensor *x, int dim, bool keepdim) {
  ct_tensor *idx;
  return ct__arg_reduce(true, x, dim, keepdim, NULL, &idx) == CT_OK ? ct__track(idx) : NULL;
}
ct_tensor *ct_argmin(const ct_tensor *x, int dim, bool keepdim) {
  ct_tensor *idx;
  return ct__arg_reduce(false, x, dim, keepdim, NULL, &idx) == CT_OK ? ct__track(idx) : NULL;
}

static ct_tensor *minmax_dim(bool is_max, const ct_tensor *x, int dim, bool keepdim,
                             ct_tensor **indices) {
  ct_tensor *vals, *idx;
  if (ct__arg_reduce(is_max, x, dim, keepdim, &vals, &idx) != CT_OK) return NULL;
  /* autograd routes the gradient to the chosen element (all dims: evenly to ties) */
  if (dim == CT_DIM_ALL) {
    vals = ct__ag_reduce(vals, is_max ? CT_ROP_MAX : CT_ROP_MIN, x,
                         &(ct_reduce_opts){.keepdim = keepdim}, 0);
  } else {
    int d = dim;
    ct__wrap_dim(&d, x->ndim);
    vals = ct__ag_max_dim(vals, idx, x, d, keepdim);
  }
  if (indices) *indices = ct__track(vals ? idx : NULL);
  if (!indices || !vals) ct__release(idx);
  return ct__track(vals);
}
ct_tensor *ct_max_dim(const ct_tensor *x, int dim, bool keepdim, ct_tensor **indices) {
  return minmax_dim(true, x, dim, keepdim, indices);
}
ct_tensor *ct_min_dim(const ct_tensor *x, int dim, bool keepdim, ct_tensor **indices) {
  return minmax_dim(false, x, dim, keepdim, indices);
}
