/* nonzero, bincount, searchsorted (torch semantics).
 *
 * nonzero and bincount have data-dependent result sizes, so they read a
 * count or a maximum back to the host first: on CUDA that synchronizes with
 * the device, as torch does. They are built on kernels other ops already
 * have (masked_select, reductions, scatter_add), so both backends run them:
 * nonzero selects the flat positions of the nonzero elements in one pass and
 * splits them into coordinates with elementwise ops on the N results;
 * bincount is a scatter_add into zeros. searchsorted has a kernel of its own
 * (core/search_math.h). None of them is differentiable (as in torch). */
#include "autograd/autograd_internal.h"
#include "ctensor/indexing.h"
#include "ops/ops_internal.h"

/* Runs the composition in a scope, without recording: the result is kept. */
#define BEGIN_COMPOSITE() \
  ct_scope_begin();       \
  ct_no_grad_begin()
static ct_tensor *end_composite(ct_tensor *r) {
  ct_no_grad_end();
  r = ct_keep(r);
  ct_scope_end();
  return r;
}

ct_tensor *ct_nonzero(const ct_tensor *x) {
  if (!x) return NULL;
  ct_device dev = ct__device(x);
  ct_tensor_opts o = {.dtype = CT_I64, .device = dev};
  int nd = x->ndim;
  BEGIN_COMPOSITE();
  ct_tensor *flat = ct_reshape(x, (int64_t[]){x->numel}, 1);
  ct_tensor *mask = x->dtype == CT_BOOL ? flat : ct_ne_scalar(flat, 0);
  ct_tensor *pos = ct_masked_select(ct_arange(0, (double)x->numel, 1, &o), mask); /* (N,) */
  ct_tensor *r = NULL;
  if (pos) {
    int64_t n = ct_numel(pos);
    r = ct_empty((int64_t[]){n, nd}, 2, &o);
    /* coordinates from the last dim: c_d = pos % size_d, pos //= size_d */
    for (int d = nd - 1; d >= 0 && r && pos; d--) {
      ct_tensor *col = ct_select(r, 1, d);
      if (!col || !ct_copy_(col, ct_remainder_scalar(pos, (double)x->shape[d])))
        r = NULL;
      else if (d > 0)
        pos = ct_floor_divide_scalar(pos, (double)x->shape[d]);
    }
    if (!pos) r = NULL;
  }
  return end_composite(r);
}

ct_tensor *ct_bincount(const ct_tensor *x, const ct_tensor *weights, int64_t minlength) {
  static const char op[] = "bincount";
  if (!x) return NULL;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  if (x->ndim != 1 || !ct_dtype_is_integral(x->dtype) || x->dtype == CT_BOOL)
    return ct__fail(CT_ERR_ARG, "%s: expected a 1-d tensor of integers, got shape %s and dtype %s",
                    op, ct__shape_str(x, s1, sizeof s1), ct_dtype_name(x->dtype));
  if (minlength < 0)
    return ct__fail(CT_ERR_ARG, "%s: minlength must be non-negative, got %lld", op,
                    (long long)minlength);
  if (weights && (weights->ndim != 1 || weights->shape[0] != x->shape[0]))
    return ct__fail(CT_ERR_SHAPE, "%s: weights of shape %s don't match the input's shape %s", op,
                    ct__shape_str(weights, s2, sizeof s2), ct__shape_str(x, s1, sizeof s1));
  if (weights && !ct__check_same_device(op, x, weights)) return NULL;
  if (weights && weights->dtype == CT_BOOL)
    return ct__fail(CT_ERR_DTYPE, "%s: weights must be numbers, got bool", op);
  /* torch: i64 counts; f32 weights sum in f32, every other dtype in f64 */
  ct_dtype dt = !weights ? CT_I64 : weights->dtype == CT_F32 ? CT_F32 : CT_F64;
  ct_tensor_opts o = {.dtype = dt, .device = ct__device(x)};
  BEGIN_COMPOSITE();
  int64_t size = minlength;
  ct_tensor *r = NULL;
  bool ok = true;
  if (x->numel > 0) {
    double lo = 0, hi = 0;
    ok = ct_item(ct_min(x, NULL), &lo) == CT_OK && ct_item(ct_max(x, NULL), &hi) == CT_OK;
    if (ok && lo < 0) {
      ct__fail(CT_ERR_ARG, "%s: the input holds a negative value (%lld)", op, (long long)lo);
      ok = false;
    }
    if (ok && hi + 1 > (double)size) size = (int64_t)hi + 1;
  }
  if (ok) r = ct_zeros((int64_t[]){size}, 1, &o);
  if (r && x->numel > 0) {
    ct_tensor *src = weights ? ct_cast(weights, dt)
                             : ct_expand(ct_ones((int64_t[]){1}, 1, &o), (int64_t[]){x->numel}, 1);
    if (!ct_scatter_add_(r, 0, ct_cast(x, CT_I64), src)) r = NULL;
  }
  return end_composite(r);
}

/* Shapes of searchsorted: sorted (..., L) and values (..., M) as (R, L) and
 * (R, M) rows, or one shared row for a 1-d sorted. */
static bool search_shapes(const char *op, const ct_tensor *s, const ct_tensor *v, int64_t *R) {
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  *R = 1;
  if (s->ndim == 0) {
    ct__fail(CT_ERR_SHAPE, "%s: the sorted sequence must have at least 1 dim, got a 0-d tensor",
             op);
    return false;
  }
  if (s->ndim == 1) return true;
  bool ok = v->ndim == s->ndim;
  for (int d = 0; ok && d + 1 < s->ndim; d++) ok = s->shape[d] == v->shape[d], *R *= s->shape[d];
  if (!ok)
    ct__fail(CT_ERR_SHAPE,
             "%s: the sorted sequence must be 1-d or share all but its last dim with the "
             "values, got shapes %s and %s",
             op, ct__shape_str(s, s1, sizeof s1), ct__shape_str(v, s2, sizeof s2));
  return ok;
}

ct_tensor *ct_searchsorted(const ct_tensor *sorted, const ct_tensor *values, bool right) {
  static const char op[] = "searchsorted";
  if (!sorted || !values) return NULL;
  if (!ct__check_same_device(op, sorted, values)) return NULL;
  int64_t R;
  if (!search_shapes(op, sorted, values, &R)) return NULL;
  const ct_backend *be = ct__backend_for(op, sorted);
  if (!be) return NULL;
  CT_NEED_SLOT(be, searchsorted, op, sorted);
  /* searched exactly: floats as f64, integers and bool as i64 */
  ct_dtype dt =
      ct_dtype_is_floating(sorted->dtype) || ct_dtype_is_floating(values->dtype) ? CT_F64 : CT_I64;
  int64_t L = sorted->shape[sorted->ndim - 1], M = R ? values->numel / R : 0;
  ct_tensor *res = ct__empty(values->shape, values->ndim, CT_I64, ct__device(values));
  if (!res || res->numel == 0) return ct__track(res);
  ct_tensor *sc = ct__cast(sorted, dt), *vc = ct__cast(values, dt);
  ct_tensor *sct = sc ? ct__contiguous(sc) : NULL, *vct = vc ? ct__contiguous(vc) : NULL;
  ct_tensor *s2 = NULL, *v2 = NULL, *o2 = NULL;
  ct_status st = CT_ERR_OOM;
  if (sct && vct) {
    s2 = ct__view_of(sct, dt, (int64_t[]){R, L}, (int64_t[]){sorted->ndim == 1 ? 0 : L, 1}, 2,
                     sct->offset);
    v2 = ct__view_of(vct, dt, (int64_t[]){R, M}, (int64_t[]){M, 1}, 2, vct->offset);
    o2 = ct__view_of(res, CT_I64, (int64_t[]){R, M}, (int64_t[]){M, 1}, 2, res->offset);
    if (s2 && v2 && o2) st = be->searchsorted(o2, s2, v2, right);
  }
  ct__release(s2), ct__release(v2), ct__release(o2);
  ct__release(sct), ct__release(vct), ct__release(sc), ct__release(vc);
  return ct__track(ct__finish_out(NULL, res, st));
}

/* x flattened and sorted (nan last), as f64 (floating) or i64: exact for
 * every dtype. *key gets the unsorted flat key (new references). */
static ct_tensor *sorted_key(const char *op, const ct_tensor *x, ct_tensor **key) {
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, sort_flat, op, x);
  ct_dtype kd = ct_dtype_is_floating(x->dtype) ? CT_F64 : CT_I64;
  *key = ct_contiguous(ct_cast(ct_reshape(x, (int64_t[]){x->numel}, 1), kd));
  ct_tensor *s = *key ? ct_empty((int64_t[]){x->numel}, 1,
                                 &(ct_tensor_opts){.dtype = kd, .device = ct__device(x)})
                      : NULL;
  if (s && be->sort_flat(s, *key) != CT_OK) s = NULL;
  return s;
}

/* sorted s (n >= 1): true where a run of equal values starts (nans equal). */
static ct_tensor *run_starts(const ct_tensor *s) {
  int64_t n = s->numel;
  ct_tensor *a = ct_slice(s, 0, 1, n, 1), *b = ct_slice(s, 0, 0, n - 1, 1);
  ct_tensor *ne = ct_ne(a, b);
  if (s->dtype == CT_F64)
    ne = ct_logical_and(ne, ct_logical_not(ct_logical_and(ct_isnan(a), ct_isnan(b))));
  ct_tensor_opts ob = {.dtype = CT_BOOL, .device = ct__device(s)};
  return ct_cat((ct_tensor *[]){ct_ones((int64_t[]){1}, 1, &ob), ne}, 2, 0);
}

ct_tensor *ct_unique(const ct_tensor *x, bool sorted, ct_tensor **inverse, ct_tensor **counts) {
  static const char op[] = "unique";
  (void)sorted; /* the result is always sorted, which torch allows for sorted = false */
  if (inverse) *inverse = NULL;
  if (counts) *counts = NULL;
  if (!x) return NULL;
  ct_device dev = ct__device(x);
  ct_tensor_opts oi = {.dtype = CT_I64, .device = dev};
  BEGIN_COMPOSITE();
  ct_tensor *key = NULL, *u = NULL, *inv = NULL, *cnt = NULL;
  if (x->numel == 0) {
    u = ct_empty((int64_t[]){0}, 1, &(ct_tensor_opts){.dtype = x->dtype, .device = dev});
    inv = ct_empty(x->shape, x->ndim, &oi);
    cnt = ct_empty((int64_t[]){0}, 1, &oi);
  } else {
    ct_tensor *s = sorted_key(op, x, &key);
    u = s ? ct_masked_select(s, run_starts(s)) : NULL; /* reads the count back */
    if (u && (inverse || counts)) {
      /* each value's position among the uniques; searched among the numbers
       * only (searchsorted's comparisons misplace numbers beside a nan), a
       * nan past their end, which is the place of the nan value */
      double last = 0;
      int64_t nu = u->numel;
      if (u->dtype == CT_F64 && ct_item(ct_select(u, 0, nu - 1), &last) == CT_OK && isnan(last))
        nu--;
      inv = ct_searchsorted(ct_slice(u, 0, 0, nu, 1), key, false);
      if (counts) cnt = ct_bincount(inv, NULL, u->numel);
      inv = ct_reshape(inv, x->shape, x->ndim);
    }
    u = ct_cast(u, x->dtype);
  }
  bool ok = u && (!inverse || inv) && (!counts || cnt);
  if (ok && inverse) *inverse = ct_keep(inv);
  if (ok && counts) *counts = ct_keep(cnt);
  return end_composite(ok ? u : NULL);
}
