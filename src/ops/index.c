/* Indexing ops with torch semantics: index_select, gather, scatter(_add),
 * masked_select, masked_fill, one_hot, tril/triu. Shape and dtype checks and
 * result allocation live here; index values are range-checked by the
 * backend kernels (negative indices are errors, as in torch). Index tensors
 * may be i64 or i32 (cast to i64). 0-d operands are handled as 1-element 1-d
 * views, so kernels always see ndim >= 1. */
#include "ops/index.h"

#include <stdlib.h>

#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

#define NULL_IN(t) \
  do { if (!(t)) return NULL; } while (0)

/* index as i64 (a new reference), or NULL with CT_ERR_DTYPE. */
static ct_tensor *index_i64(const char *op, const ct_tensor *index) {
  if (index->dtype != CT_I64 && index->dtype != CT_I32)
    return ct__fail(CT_ERR_DTYPE, "%s: index must be an i64 or i32 tensor, got %s", op,
                    ct_dtype_name(index->dtype));
  return ct__cast(index, CT_I64);
}

/* t itself (new reference), or a (1,) view of a 0-d t. */
static ct_tensor *at_least_1d(const ct_tensor *t) {
  if (t->ndim > 0) return ct__retain(t);
  return ct__view_of(t, t->dtype, (int64_t[]){1}, (int64_t[]){1}, 1, t->offset);
}

/* dim wrapped against ndim (a 0-d tensor takes dims 0 and -1). */
static bool wrap_dim(const char *op, int *dim, int ndim) {
  int d = *dim;
  if (!ct__wrap_dim(&d, ndim > 0 ? ndim : 1)) {
    ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, *dim, ndim);
    return false;
  }
  *dim = d;
  return true;
}

static const ct_backend *backend_checked(const char *op, const ct_tensor *a, const ct_tensor *b) {
  if (!ct__check_same_device(op, a, b)) return NULL;
  return ct__backend_for(op, a);
}

/* ---- index_select ------------------------------------------------------------ */

ct_tensor *ct__index_select(const ct_tensor *x, int dim, const ct_tensor *index) {
  static const char op[] = "index_select";
  NULL_IN(x);
  NULL_IN(index);
  const ct_backend *be = backend_checked(op, x, index);
  if (!be) return NULL;
  CT_NEED_SLOT(be, index_select, op, x);
  char s[CT_SHAPE_STR_MAX];
  if (index->ndim > 1)
    return ct__fail(CT_ERR_SHAPE, "%s: index must be 0-d or 1-d, got shape %s", op,
                    ct__shape_str(index, s, sizeof s));
  if (!wrap_dim(op, &dim, x->ndim)) return NULL;
  if (x->ndim == 0 && index->numel != 1)
    return ct__fail(CT_ERR_ARG, "%s: index into a 0-d tensor must have 1 value, got %lld", op,
                    (long long)index->numel);
  ct_tensor *idx = index_i64(op, index);
  if (!idx) return NULL;
  ct_tensor *idx1 = ct__view_of(idx, CT_I64, (int64_t[]){idx->numel},
                                (int64_t[]){idx->ndim ? idx->strides[0] : 1}, 1, idx->offset);
  ct_tensor *xv = at_least_1d(x);
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, xv->shape, sizeof shape);
  shape[dim] = idx->numel;
  ct_tensor *res = ct__empty(shape, xv->ndim, x->dtype, ct__device(x));
  ct_status st = CT_ERR_OOM;
  if (res && idx1 && xv) st = be->index_select(res, xv, dim, idx1);
  if (st == CT_OK && x->ndim == 0) { /* back to 0-d */
    ct_tensor *r0 = ct__view_of(res, res->dtype, NULL, NULL, 0, res->offset);
    ct__release(res);
    res = r0;
    if (!res) st = CT_ERR_OOM;
  }
  ct__release(xv);
  ct__release(idx1);
  ct__release(idx);
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct_index_select(const ct_tensor *x, int dim, const ct_tensor *index) {
  return ct__track(ct__ag_index_select(ct__index_select(x, dim, index), x, dim, index));
}

/* ---- gather ------------------------------------------------------------------ */

/* Shape checks of gather/scatter: index has x's ndim and fits in x off dim
 * (and in src everywhere, when given). */
static bool check_index_shape(const char *op, const ct_tensor *x, int dim, const ct_tensor *index,
                              const ct_tensor *src) {
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  if (index->ndim != x->ndim || (src && src->ndim != x->ndim)) {
    const ct_tensor *o = index->ndim != x->ndim ? index : src;
    return ct__fail(CT_ERR_SHAPE, "%s: %s of shape %s must have as many dims as the input %s", op,
                    o == index ? "index" : "src", ct__shape_str(o, a, sizeof a),
                    ct__shape_str(x, b, sizeof b)),
           false;
  }
  for (int d = 0; d < x->ndim; d++) {
    if (d != dim && index->shape[d] > x->shape[d])
      return ct__fail(CT_ERR_SHAPE, "%s: index of shape %s is larger than the input %s in dim %d",
                      op, ct__shape_str(index, a, sizeof a), ct__shape_str(x, b, sizeof b), d),
             false;
    if (src && index->shape[d] > src->shape[d])
      return ct__fail(CT_ERR_SHAPE, "%s: index of shape %s is larger than src %s in dim %d", op,
                      ct__shape_str(index, a, sizeof a), ct__shape_str(src, b, sizeof b), d),
             false;
  }
  return true;
}

ct_tensor *ct__gather_as(const char *op, const ct_tensor *x, int dim, const ct_tensor *index) {
  NULL_IN(x);
  NULL_IN(index);
  const ct_backend *be = backend_checked(op, x, index);
  if (!be) return NULL;
  CT_NEED_SLOT(be, gather, op, x);
  if (!wrap_dim(op, &dim, x->ndim) || !check_index_shape(op, x, dim, index, NULL)) return NULL;
  ct_tensor *idx = index_i64(op, index);
  if (!idx) return NULL;
  ct_tensor *res = ct__empty(index->shape, index->ndim, x->dtype, ct__device(x));
  ct_tensor *xv = at_least_1d(x), *iv = at_least_1d(idx), *rv = res ? at_least_1d(res) : NULL;
  ct_status st = CT_ERR_OOM;
  if (xv && iv && rv) st = be->gather(op, rv, xv, dim, iv);
  ct__release(xv);
  ct__release(iv);
  ct__release(rv);
  ct__release(idx);
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct__gather(const ct_tensor *x, int dim, const ct_tensor *index) {
  return ct__gather_as("gather", x, dim, index);
}

ct_tensor *ct_gather(const ct_tensor *x, int dim, const ct_tensor *index) {
  return ct__track(ct__ag_gather(ct__gather(x, dim, index), x, dim, index));
}

/* ---- scatter / scatter_add ------------------------------------------------------ */

ct_tensor *ct__scatter(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src,
                       bool add, bool in_place) {
  const char *op = add ? (in_place ? "scatter_add_" : "scatter_add")
                       : (in_place ? "scatter_" : "scatter");
  NULL_IN(x);
  NULL_IN(index);
  NULL_IN(src);
  if (!ct__check_same_device(op, x, src)) return NULL;
  const ct_backend *be = backend_checked(op, x, index);
  if (!be) return NULL;
  CT_NEED_SLOT(be, scatter, op, x);
  if (!wrap_dim(op, &dim, x->ndim) || !check_index_shape(op, x, dim, index, src)) return NULL;
  if (src->dtype != x->dtype && !ct_can_cast(src->dtype, x->dtype))
    return ct__fail(CT_ERR_DTYPE, "%s: src of dtype %s can't be written into a %s tensor", op,
                    ct_dtype_name(src->dtype), ct_dtype_name(x->dtype));
  if (in_place && ct__has_internal_overlap(x))
    return ct__fail(CT_ERR_ARG, "%s: the tensor has elements that share memory (an expanded "
                                "view); make it contiguous first", op);
  ct_tensor *idx = index_i64(op, index);
  if (!idx) return NULL;
  /* src restricted to index's shape, of x's dtype, not aliasing the target */
  ct_tensor *sv = ct__view_of(src, src->dtype, index->shape, src->strides, index->ndim,
                              src->offset);
  ct_tensor *sc = NULL;
  if (sv && (sv->dtype != x->dtype || (in_place && ct_same_storage(x, src)))) {
    sc = ct__empty(sv->shape, sv->ndim, x->dtype, ct__device(x));
    if (sc && be->copy(sc, sv) != CT_OK) {
      ct__release(sc);
      sc = NULL;
    }
  } else if (sv) {
    sc = ct__retain(sv);
  }
  ct_tensor *target = in_place ? ct__retain(x) : ct__clone(x);
  ct_tensor *tv = target ? at_least_1d(target) : NULL;
  ct_tensor *iv = at_least_1d(idx), *scv = sc ? at_least_1d(sc) : NULL;
  ct_status st = CT_ERR_OOM;
  if (tv && iv && scv) st = be->scatter(tv, dim, iv, scv, add);
  ct__release(tv);
  ct__release(iv);
  ct__release(scv);
  ct__release(sc);
  ct__release(sv);
  ct__release(idx);
  if (!in_place) return ct__finish_out(NULL, target, st);
  ct__release(target);
  if (st != CT_OK) return NULL;
  ct__bump_version(x);
  return x;
}

ct_tensor *ct_scatter(const ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src) {
  return ct__track(ct__ag_scatter(ct__scatter((ct_tensor *)x, dim, index, src, false, false), x, dim,
                                  index, src, false));
}
/* In place: the out-of-place node, recorded on x (its history rewritten). */
static ct_tensor *scatter_inplace(const char *name, ct_tensor *x, int dim, const ct_tensor *index,
                                  const ct_tensor *src, bool add) {
  ct_inplace ip;
  if (!index || !src || !ct__ag_inplace_begin(&ip, name, x, &src, 1)) return NULL;
  if (ip.record && !ct__ag_scatter(x, x, dim, index, src, add))
    return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__scatter(x, dim, index, src, add, true));
}
ct_tensor *ct_scatter_(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src) {
  return scatter_inplace("scatter_", x, dim, index, src, false);
}
ct_tensor *ct_scatter_add(const ct_tensor *x, int dim, const ct_tensor *index,
                          const ct_tensor *src) {
  return ct__track(ct__ag_scatter(ct__scatter((ct_tensor *)x, dim, index, src, true, false), x, dim,
                                  index, src, true));
}
ct_tensor *ct_scatter_add_(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src) {
  return scatter_inplace("scatter_add_", x, dim, index, src, true);
}

/* ---- masked_select / masked_fill ------------------------------------------------ */

static bool check_mask(const char *op, const ct_tensor *mask) {
  if (mask->dtype == CT_BOOL) return true;
  ct__fail(CT_ERR_DTYPE, "%s: mask must be a bool tensor, got %s", op, ct_dtype_name(mask->dtype));
  return false;
}

ct_tensor *ct__masked_select(const ct_tensor *x, const ct_tensor *mask) {
  static const char op[] = "masked_select";
  NULL_IN(x);
  NULL_IN(mask);
  const ct_backend *be = backend_checked(op, x, mask);
  if (!be) return NULL;
  CT_NEED_SLOT(be, masked_select, op, x);
  CT_NEED_SLOT(be, count_nonzero, op, x);
  if (!check_mask(op, mask)) return NULL;
  int64_t shape[CT_MAX_DIMS];
  int nd;
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  if (!ct__broadcast_shapes(x->shape, x->ndim, mask->shape, mask->ndim, shape, &nd))
    return ct__fail(CT_ERR_SHAPE, "%s: mask of shape %s doesn't broadcast with the input %s", op,
                    ct__shape_str(mask, a, sizeof a), ct__shape_str(x, b, sizeof b));
  ct_tensor *xb = ct__broadcast_to(x, shape, nd), *mb = ct__broadcast_to(mask, shape, nd);
  ct_tensor *res = NULL;
  ct_status st = CT_ERR_OOM;
  int64_t count = 0;
  if (xb && mb) st = be->count_nonzero(mb, &count);
  if (st == CT_OK) {
    res = ct__empty((int64_t[]){count}, 1, x->dtype, ct__device(x));
    st = res ? be->masked_select(res, xb, mb) : CT_ERR_OOM;
  }
  ct__release(xb);
  ct__release(mb);
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct_masked_select(const ct_tensor *x, const ct_tensor *mask) {
  return ct__track(ct__ag_masked_select(ct__masked_select(x, mask), x, mask));
}

/* out = where(mask, value, x), the elementwise `where` kernel with a 0-d value
 * broadcast; in place out is x itself. */
ct_tensor *ct__masked_fill(ct_tensor *x, const ct_tensor *mask, double value, bool in_place) {
  const char *op = in_place ? "masked_fill_" : "masked_fill";
  NULL_IN(x);
  NULL_IN(mask);
  const ct_backend *be = backend_checked(op, x, mask);
  if (!be) return NULL;
  CT_NEED_SLOT(be, where, op, x);
  if (!check_mask(op, mask) || !ct__check_scalar_fits(op, value, x->dtype)) return NULL;
  int64_t shape[CT_MAX_DIMS];
  int nd;
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  bool ok = ct__broadcast_shapes(x->shape, x->ndim, mask->shape, mask->ndim, shape, &nd);
  if (ok && in_place) {
    ok = nd == x->ndim;
    for (int d = 0; d < nd && ok; d++) ok = shape[d] == x->shape[d];
  }
  if (!ok)
    return ct__fail(CT_ERR_SHAPE, "%s: mask of shape %s doesn't broadcast to the input %s", op,
                    ct__shape_str(mask, a, sizeof a), ct__shape_str(x, b, sizeof b));
  if (in_place && ct__has_internal_overlap(x))
    return ct__fail(CT_ERR_ARG, "%s: the tensor has elements that share memory (an expanded "
                                "view); make it contiguous first", op);
  ct_tensor *res = in_place ? ct__retain(x) : ct__empty(shape, nd, x->dtype, ct__device(x));
  ct_tensor *v = ct__empty(NULL, 0, x->dtype, ct__device(x));
  ct_tensor *vb = v ? ct__broadcast_to(v, shape, nd) : NULL;
  ct_tensor *xb = ct__broadcast_to(x, shape, nd), *mb = ct__broadcast_to(mask, shape, nd);
  ct_status st = CT_ERR_OOM;
  if (res && vb && xb && mb) {
    st = be->fill(v, value);
    if (st == CT_OK) st = be->where(res, mb, vb, xb);
  }
  ct__release(v);
  ct__release(vb);
  ct__release(xb);
  ct__release(mb);
  if (!in_place) return ct__finish_out(NULL, res, st);
  ct__release(res);
  if (st != CT_OK) return NULL;
  ct__bump_version(x);
  return x;
}

ct_tensor *ct_masked_fill(const ct_tensor *x, const ct_tensor *mask, double value) {
  return ct__track(ct__ag_masked_fill(ct__masked_fill((ct_tensor *)x, mask, value, false), x, mask));
}
ct_tensor *ct_masked_fill_(ct_tensor *x, const ct_tensor *mask, double value) {
  ct_inplace ip;
  if (!mask || !ct__ag_inplace_begin(&ip, "masked_fill_", x, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_masked_fill(x, x, mask)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__masked_fill(x, mask, value, true));
}

/* ---- one_hot --------------------------------------------------------------------- */

/* Class values are read on the host (min/max decide errors and the class
 * count, as torch does), then ones are scattered into zeros on the device. */
ct_tensor *ct__one_hot(const ct_tensor *index, int64_t num_classes) {
  static const char op[] = "one_hot";
  NULL_IN(index);
  const ct_backend *be = ct__backend_for(op, index);
  if (!be) return NULL;
  CT_NEED_SLOT(be, scatter, op, index);
  if (index->ndim >= CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "%s: the result would have %d dims (max %d)", op,
                    index->ndim + 1, CT_MAX_DIMS);
  ct_tensor *idx = index_i64(op, index);
  if (!idx) return NULL;
  ct_tensor *ic = ct__contiguous(idx);
  ct__release(idx);
  if (!ic) return NULL;
  int64_t n = ic->numel, lo = 0, hi = -1;
  if (n > 0) {
    int64_t *host = ct__malloc(sizeof(int64_t) * (size_t)n);
    if (!host) {
      ct__release(ic);
      return ct__fail(CT_ERR_OOM, "%s: out of host memory reading %lld indices", op, (long long)n);
    }
    ct_status st = be->copy_to_host(host, ic, sizeof(int64_t) * (size_t)n, false);
    lo = hi = host[0];
    for (int64_t i = 1; i < n; i++) {
      lo = host[i] < lo ? host[i] : lo;
      hi = host[i] > hi ? host[i] : hi;
    }
    free(host);
    if (st != CT_OK) {
      ct__release(ic);
      return NULL;
    }
  }
  if (n == 0 && num_classes < 0) {
    ct__release(ic);
    return ct__fail(CT_ERR_ARG, "%s: can't infer the number of classes from an empty tensor", op);
  }
  if (lo < 0) {
    ct__release(ic);
    return ct__fail(CT_ERR_ARG, "%s: class values must be non-negative, got %lld", op,
                    (long long)lo);
  }
  if (num_classes < 0) num_classes = hi + 1;
  if (hi >= num_classes) {
    ct__release(ic);
    return ct__fail(CT_ERR_ARG, "%s: class value %lld is out of range for %lld classes", op,
                    (long long)hi, (long long)num_classes);
  }
  int nd = index->ndim;
  int64_t shape[CT_MAX_DIMS], ishape[CT_MAX_DIMS], istr[CT_MAX_DIMS];
  memcpy(shape, index->shape, sizeof(int64_t) * (size_t)nd);
  shape[nd] = num_classes;
  if (!ct__check_shape(op, shape, nd + 1)) {
    ct__release(ic);
    return NULL;
  }
  memcpy(ishape, index->shape, sizeof(int64_t) * (size_t)nd);
  ishape[nd] = 1;
  ct__contiguous_strides(ishape, nd + 1, istr);
  ct_tensor *res = ct__empty(shape, nd + 1, CT_I64, ct__device(index));
  ct_tensor *iv = ct__view_of(ic, CT_I64, ishape, istr, nd + 1, ic->offset);
  ct_tensor *one = ct__empty(NULL, 0, CT_I64, ct__device(index));
  ct_tensor *ones = one ? ct__broadcast_to(one, ishape, nd + 1) : NULL;
  ct_status st = CT_ERR_OOM;
  if (res && iv && ones) {
    st = be->fill(res, 0);
    if (st == CT_OK) st = be->fill(one, 1);
    if (st == CT_OK) st = be->scatter(res, nd, iv, ones, false);
  }
  ct__release(iv);
  ct__release(one);
  ct__release(ones);
  ct__release(ic);
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct_one_hot(const ct_tensor *index, int64_t num_classes) {
  return ct__track(ct__one_hot(index, num_classes));
}

/* ---- tril / triu ------------------------------------------------------------------ */

ct_tensor *ct__triangle(ct_tensor *x, int64_t k, bool upper, bool in_place) {
  const char *op = upper ? (in_place ? "triu_" : "triu") : (in_place ? "tril_" : "tril");
  NULL_IN(x);
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, triangle, op, x);
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim < 2)
    return ct__fail(CT_ERR_SHAPE, "%s: expected a tensor with at least 2 dims, got shape %s", op,
                    ct__shape_str(x, s, sizeof s));
  if (in_place && ct__has_internal_overlap(x))
    return ct__fail(CT_ERR_ARG, "%s: the tensor has elements that share memory (an expanded "
                                "view); make it contiguous first", op);
  /* Offsets beyond the matrix select all or nothing; clamping keeps the
   * kernel's i + k arithmetic far from overflow. */
  int64_t n = x->shape[x->ndim - 2], m = x->shape[x->ndim - 1];
  if (k > m + 1) k = m + 1;
  if (k < -n - 1) k = -n - 1;
  if (in_place) {
    if (be->triangle(x, x, k, upper) != CT_OK) return NULL;
    ct__bump_version(x);
    return x;
  }
  ct_tensor *res = ct__empty(x->shape, x->ndim, x->dtype, ct__device(x));
  return ct__finish_out(NULL, res, res ? be->triangle(res, x, k, upper) : CT_ERR_OOM);
}

ct_tensor *ct_tril(const ct_tensor *x, int64_t k) {
  return ct__track(ct__ag_triangle(ct__triangle((ct_tensor *)x, k, false, false), x, k, false));
}
ct_tensor *ct_triu(const ct_tensor *x, int64_t k) {
  return ct__track(ct__ag_triangle(ct__triangle((ct_tensor *)x, k, true, false), x, k, true));
}
static ct_tensor *triangle_inplace(const char *name, ct_tensor *x, int64_t k, bool upper) {
  ct_inplace ip;
  if (!ct__ag_inplace_begin(&ip, name, x, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_triangle(x, x, k, upper)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__triangle(x, k, upper, true));
}
ct_tensor *ct_tril_(ct_tensor *x, int64_t k) { return triangle_inplace("tril_", x, k, false); }
ct_tensor *ct_triu_(ct_tensor *x, int64_t k) { return triangle_inplace("triu_", x, k, true); }
