/* Scans, flips and rolls (ctensor/sort_scan.h): argument checks, dtypes and
 * result allocation; the kernels are the backends' `cumulative` and `remap`
 * slots, the gradients src/autograd/grad_sort_scan.c's. */
#include "ops/sort_scan.h"

#include <string.h>

#include "autograd/autograd_internal.h"
#include "ctensor/sort_scan.h"
#include "ops/ops_internal.h"

#define NULL_IN(t)         \
  do {                     \
    if (!(t)) return NULL; \
  } while (0)

_Static_assert(CT_REMAP_MAX_DIMS == CT_MAX_DIMS, "remap parameters cover every dim");

/* ---- cumsum / cumprod -------------------------------------------------------------- */

/* The dtype the kernel computes in (f32 accumulating in f64 for the halves)
 * and the result's (integers and bool give i64, as torch). */
static ct_dtype scan_compute_dtype(ct_dtype d) {
  if (d == CT_F64) return CT_F64;
  return ct_dtype_is_floating(d) ? CT_F32 : CT_I64;
}
static ct_dtype scan_result_dtype(ct_dtype d) { return ct_dtype_is_floating(d) ? d : CT_I64; }

ct_tensor *ct__cumulative(const ct_tensor *x, int dim, bool prod, bool reverse) {
  const char *op = prod ? "cumprod" : "cumsum";
  NULL_IN(x);
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, cumulative, op, x);
  ct_dtype cd = scan_compute_dtype(x->dtype), rd = scan_result_dtype(x->dtype);
  ct_tensor *xc = ct__cast(x, cd), *xk = xc ? ct__contiguous(xc) : NULL;
  ct__release(xc);
  ct_tensor *res = xk ? ct__empty(x->shape, x->ndim, cd, ct__device(x)) : NULL;
  ct_status st = res ? be->cumulative(prod, reverse, res, xk, dim) : CT_ERR_OOM;
  ct__release(xk);
  if (st != CT_OK) {
    ct__release(res);
    return NULL;
  }
  if (rd == cd) return res;
  ct_tensor *r = ct__cast(res, rd); /* f16/bf16: each output rounded once */
  ct__release(res);
  return r;
}

static ct_tensor *cumulative_op(const ct_tensor *x, int dim, bool prod) {
  const char *op = prod ? "cumprod" : "cumsum";
  NULL_IN(x);
  int d = dim, nd = x->ndim ? x->ndim : 1;
  if (!ct__wrap_dim(&d, nd))
    return ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, dim, x->ndim);
  return ct__track(ct__ag_cumulative(ct__cumulative(x, d, prod, false), x, d, prod));
}
ct_tensor *ct_cumsum(const ct_tensor *x, int dim) { return cumulative_op(x, dim, false); }
ct_tensor *ct_cumprod(const ct_tensor *x, int dim) { return cumulative_op(x, dim, true); }

/* ---- remaps: flip, roll ------------------------------------------------------------- */

ct_tensor *ct__remap(const char *op, const ct_tensor *x, const ct_remap_params *p) {
  return x ? ct__remap_to(op, x, p, x->shape) : NULL;
}

ct_tensor *ct__remap_to(const char *op, const ct_tensor *x, const ct_remap_params *p,
                        const int64_t *shape) {
  NULL_IN(x);
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  if (x->ndim == 0) return ct__clone(x);
  CT_NEED_SLOT(be, remap, op, x);
  ct_tensor *res = ct__empty(shape, x->ndim, x->dtype, ct__device(x));
  ct_status st = res ? be->remap(res, x, p) : CT_ERR_OOM;
  if (st != CT_OK) {
    ct__release(res);
    return NULL;
  }
  return res;
}

ct_tensor *ct__roll_flat(const ct_tensor *x, int64_t shift) {
  NULL_IN(x);
  ct_tensor *xc = ct__contiguous(x);
  if (!xc) return NULL;
  int64_t n = x->numel;
  ct_tensor *flat = ct__view_of(xc, xc->dtype, &n, (int64_t[]){1}, 1, xc->offset);
  ct__release(xc);
  ct_remap_params p = {.kind = {CT_REMAP_ROLL}, .shift = {shift}};
  ct_tensor *r = ct__remap("roll", flat, &p);
  ct__release(flat);
  if (!r) return NULL;
  int64_t st[CT_MAX_DIMS];
  ct__contiguous_strides(x->shape, x->ndim, st);
  ct_tensor *v = ct__view_of(r, r->dtype, x->shape, st, x->ndim, r->offset);
  ct__release(r);
  return v;
}

ct_tensor *ct_flip(const ct_tensor *x, const int *dims, int ndims) {
  NULL_IN(x);
  if (ndims < 0 || (ndims > 0 && !dims))
    return ct__fail(CT_ERR_ARG, "flip: expected ndims >= 0 with a dims array, got %d", ndims);
  ct_remap_params p = {.kind = {0}};
  int nd = x->ndim ? x->ndim : 1;
  for (int i = 0; i < ndims; i++) {
    int d = dims[i];
    if (!ct__wrap_dim(&d, nd))
      return ct__fail(CT_ERR_ARG, "flip: dim %d out of range for a %d-d tensor", dims[i], x->ndim);
    if (p.kind[d] == CT_REMAP_FLIP)
      return ct__fail(CT_ERR_ARG, "flip: dim %d appears more than once in dims", d);
    p.kind[d] = CT_REMAP_FLIP;
  }
  return ct__track(ct__ag_remap(ct__remap("flip", x, &p), x, &p, false, "FlipBackward"));
}

/* shift mod n in [0, n) (0 for an empty dim). */
static int64_t wrap_shift(int64_t s, int64_t n) {
  if (n <= 0) return 0;
  int64_t r = s % n;
  return r < 0 ? r + n : r;
}

ct_tensor *ct_roll(const ct_tensor *x, const int64_t *shifts, const int *dims, int n) {
  NULL_IN(x);
  if (n < 1 || !shifts) return ct__fail(CT_ERR_ARG, "roll: expected at least one shift, got %d", n);
  if (!dims) {
    if (n != 1)
      return ct__fail(CT_ERR_ARG,
                      "roll: without dims, expected one shift (the flattened "
                      "tensor's), got %d",
                      n);
    ct_remap_params p = {.kind = {CT_REMAP_ROLL}, .shift = {wrap_shift(shifts[0], x->numel)}};
    return ct__track(ct__ag_remap(ct__roll_flat(x, p.shift[0]), x, &p, true, "RollBackward"));
  }
  ct_remap_params p = {.kind = {0}};
  int nd = x->ndim ? x->ndim : 1;
  for (int i = 0; i < n; i++) {
    int d = dims[i];
    if (!ct__wrap_dim(&d, nd))
      return ct__fail(CT_ERR_ARG, "roll: dim %d out of range for a %d-d tensor", dims[i], x->ndim);
    int64_t size = x->ndim ? x->shape[d] : 1;
    /* a dim given twice is rolled twice, as torch's sequential rolls */
    p.shift[d] = wrap_shift(wrap_shift(shifts[i], size) + p.shift[d], size);
    p.kind[d] = CT_REMAP_ROLL;
  }
  return ct__track(ct__ag_remap(ct__remap("roll", x, &p), x, &p, false, "RollBackward"));
}

/* ---- slicing with any step ------------------------------------------------------------ */

ct_tensor *ct_slice_stepped(const ct_tensor *x, int dim, int64_t start, int64_t end, int64_t step) {
  NULL_IN(x);
  if (step == 0) return ct__fail(CT_ERR_ARG, "slice_stepped: step must not be 0");
  if (step > 0) return ct_slice(x, dim, start == CT_END ? 0 : start, end, step);
  int d = dim;
  if (x->ndim == 0) return ct__fail(CT_ERR_ARG, "slice_stepped: can't slice a 0-d tensor");
  if (!ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "slice_stepped: dim %d out of range for a %d-d tensor", dim,
                    x->ndim);
  if (step == INT64_MIN) step = -INT64_MAX; /* -step must exist; one element either way */
  /* Python's slice.indices for a negative step: start in [-1, n-1], end in [-1, n-1] */
  int64_t n = x->shape[d];
  if (start == CT_END)
    start = n - 1;
  else if (start < 0)
    start = start + n < -1 ? -1 : start + n;
  else if (start > n - 1)
    start = n - 1;
  if (end == CT_END)
    end = -1;
  else if (end < 0)
    end = end + n < -1 ? -1 : end + n;
  else if (end > n - 1)
    end = n - 1;
  int64_t count = start > end ? (start - end - 1) / -step + 1 : 0;
  /* the same elements in increasing order: from `first` by -step, then flipped */
  int64_t first = count ? start + (count - 1) * step : 0;
  ct_tensor *v = ct_slice(x, d, first, count ? start + 1 : 0, -step);
  ct_tensor *r = v ? ct_flip(v, &d, 1) : NULL;
  ct_free(v);
  return r;
}
