/* diff (torch.diff / numpy.diff) and take_along_axis (the array API 2024.12
 * function, NumPy's take_along_axis). Both are compositions, not kernel
 * families: an n-th difference is n rounds of narrow + sub (ne for bool),
 * whose gradient the views and sub already give; take_along_axis is
 * broadcasting (expand views), negative indices wrapped (where), then the
 * gather slot, whose kernels range-check the indices on both backends and
 * whose backward is the scatter-add path (deterministic on CUDA under
 * ct_use_deterministic_algorithms). A slot of its own would copy gather's. */
#include <stdio.h>

#include "autograd/autograd_internal.h"
#include "ops/index.h"
#include "ops/ops_internal.h"

/* t with dim's size checked against x's other dims (same ndim), for cat. */
static bool check_extra(const char *what, const ct_tensor *x, const ct_tensor *e, int dim) {
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  bool ok = e->ndim == x->ndim;
  for (int d = 0; ok && d < x->ndim; d++) ok = d == dim || e->shape[d] == x->shape[d];
  if (!ok)
    ct__fail(CT_ERR_SHAPE, "diff: %s of shape %s must have the input's shape %s except in dim %d",
             what, ct__shape_str(e, a, sizeof a), ct__shape_str(x, b, sizeof b), dim);
  return ok;
}

static ct_tensor *diff_body(const ct_tensor *x, int64_t n, int dim, const ct_tensor *prepend,
                            const ct_tensor *append) {
  ct_tensor *a = (ct_tensor *)x;
  if (prepend || append) {
    ct_tensor *parts[3];
    int k = 0;
    if (prepend) parts[k++] = (ct_tensor *)prepend;
    parts[k++] = a;
    if (append) parts[k++] = (ct_tensor *)append;
    a = ct_cat(parts, k, dim);
  } else {
    a = ct_narrow(a, dim, 0, a->shape[dim]); /* n = 0 still gives a new tensor */
  }
  for (int64_t i = 0; i < n && a && a->shape[dim] > 0; i++) {
    int64_t len = a->shape[dim] - 1;
    ct_tensor *hi = ct_narrow(a, dim, 1, len), *lo = ct_narrow(a, dim, 0, len);
    a = a->dtype == CT_BOOL ? ct_ne(hi, lo) : ct_sub(hi, lo);
  }
  return a;
}

ct_tensor *ct_diff(const ct_tensor *x, int64_t n, int dim, const ct_tensor *prepend,
                   const ct_tensor *append) {
  if (!x) return NULL;
  if (x->ndim == 0)
    return ct__fail(CT_ERR_SHAPE, "diff: expected a tensor of at least 1 dim, got a 0-d tensor");
  if (n < 0) return ct__fail(CT_ERR_ARG, "diff: n must be >= 0, got %lld", (long long)n);
  int d = dim;
  if (!ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "diff: dim %d out of range for a %d-d tensor", dim, x->ndim);
  if ((prepend && !check_extra("prepend", x, prepend, d)) ||
      (append && !check_extra("append", x, append, d)))
    return NULL;
  ct_scope_begin();
  ct_tensor *r = diff_body(x, n, d, prepend, append);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}

/* ---- take_along_axis ------------------------------------------------------------ */

/* indices as i64 with negatives in [-size, 0) wrapped; values below -size are
 * kept as they are, so the range check names the value the caller gave. */
static ct_tensor *wrapped_indices(const ct_tensor *idx, int64_t size) {
  ct_tensor *i64 = ct_cast(idx, CT_I64);
  ct_tensor *w = ct_where(ct_lt_scalar(i64, 0), ct_add_scalar(i64, (double)size), i64);
  return ct_where(ct_lt_scalar(i64, -(double)size), i64, w);
}

static ct_tensor *take_along_body(const ct_tensor *x, const ct_tensor *indices, int dim) {
  static const char op[] = "take_along_axis";
  int64_t xs[CT_MAX_DIMS], is[CT_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    int64_t a = x->shape[d], b = indices->shape[d];
    if (d != dim && a != b && a != 1 && b != 1) {
      char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
      return ct__fail(CT_ERR_SHAPE,
                      "%s: indices of shape %s do not broadcast with the input %s in dim %d "
                      "(%lld vs %lld)",
                      op, ct__shape_str(indices, s1, sizeof s1), ct__shape_str(x, s2, sizeof s2), d,
                      (long long)b, (long long)a);
    }
    int64_t m = a == 1 ? b : a;
    xs[d] = d == dim ? a : m;
    is[d] = d == dim ? b : m;
  }
  ct_tensor *xe = ct_expand(x, xs, x->ndim);
  ct_tensor *ie = ct_expand(wrapped_indices(indices, x->shape[dim]), is, x->ndim);
  if (!xe || !ie) return NULL;
  return ct__track(ct__ag_gather(ct__gather_as(op, xe, dim, ie), xe, dim, ie));
}

ct_tensor *ct_take_along_axis(const ct_tensor *x, const ct_tensor *indices, int dim) {
  static const char op[] = "take_along_axis";
  if (!x || !indices) return NULL;
  if (!ct_dtype_is_integral(indices->dtype))
    return ct__fail(CT_ERR_DTYPE, "%s: indices must have an integer dtype, got %s", op,
                    ct_dtype_name(indices->dtype));
  if (x->ndim == 0 || indices->ndim != x->ndim)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: indices must have as many dims as the input (at least 1), got %d and %d",
                    op, indices->ndim, x->ndim);
  if (!ct__check_same_device(op, x, indices)) return NULL;
  int d = dim;
  if (!ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, dim, x->ndim);
  ct_scope_begin();
  ct_tensor *r = take_along_body(x, indices, d);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}
