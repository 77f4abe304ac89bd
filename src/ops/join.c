/* Joining and splitting: cat, stack (copies into views of one result through
 * the backend's copy, which also converts dtypes) and split, chunk (views,
 * no copy). torch semantics: cat/stack promote dtypes across inputs; cat
 * skips 1-d empty tensors (torch's legacy rule) when checking shapes. */
#include "autograd/autograd_internal.h"
#include "ops/index.h"

#include "ops/ops_internal.h"

/* Common checks of a tensor list: non-empty, no NULL entry, one device.
 * Returns the promoted dtype in *dtype. */
static bool check_list(const char *op, ct_tensor *const *ts, int n, ct_dtype *dtype) {
  if (!ts || n <= 0) {
    ct__fail(CT_ERR_ARG, "%s: expected a non-empty list of tensors", op);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (!ts[i]) {
      if (ct_last_error() == CT_OK) ct__fail(CT_ERR_ARG, "%s: tensor %d is NULL", op, i);
      return false;
    }
  *dtype = ts[0]->dtype;
  for (int i = 1; i < n; i++) {
    if (!ct__check_same_device(op, ts[0], ts[i])) return false;
    *dtype = ct_promote_types(*dtype, ts[i]->dtype);
  }
  return true;
}

/* Copies src into the view of dst with src's shape, dst's strides, at offset. */
static ct_status copy_to_view(const ct_backend *be, ct_tensor *dst, const int64_t *strides,
                              int64_t offset, const ct_tensor *src) {
  if (src->numel == 0) return CT_OK;
  ct_tensor *v = ct__view_of(dst, dst->dtype, src->shape, strides, src->ndim, offset);
  if (!v) return CT_ERR_OOM;
  ct_status st = be->copy(v, src);
  ct__release(v);
  return st;
}

static bool cat_skipped(const ct_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

ct_tensor *ct__cat(ct_tensor *const *ts, int n, int dim) {
  static const char op[] = "cat";
  ct_dtype dtype;
  if (!check_list(op, ts, n, &dtype)) return NULL;
  int ref = 0;
  while (ref < n && cat_skipped(ts[ref])) ref++;
  if (ref == n) ref = 0; /* only empty 1-d tensors */
  const ct_tensor *r = ts[ref];
  for (int i = 0; i < n; i++)
    if (ts[i]->ndim == 0)
      return ct__fail(CT_ERR_SHAPE, "cat: a 0-d tensor (at position %d) can't be concatenated", i);
  int d = dim;
  if (!ct__wrap_dim(&d, r->ndim))
    return ct__fail(CT_ERR_ARG, "cat: dim %d out of range for %d-d tensors", dim, r->ndim);
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, r->shape, sizeof shape);
  shape[d] = 0;
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = ts[i];
    if (cat_skipped(t) && i != ref) continue;
    if (t->ndim != r->ndim)
      return ct__fail(CT_ERR_SHAPE,
                      "cat: tensors must have the same number of dims; got %d and %d (tensor %d)",
                      r->ndim, t->ndim, i);
    for (int k = 0; k < r->ndim; k++)
      if (k != d && t->shape[k] != r->shape[k])
        return ct__fail(CT_ERR_SHAPE,
                        "cat: sizes of tensors must match except in dim %d; got %lld and %lld in "
                        "dim %d (tensor %d)",
                        d, (long long)r->shape[k], (long long)t->shape[k], k, i);
    shape[d] += t->shape[d];
  }
  if (!ct__check_shape(op, shape, r->ndim)) return NULL;
  const ct_backend *be = ct__backend_for(op, r);
  if (!be) return NULL;
  ct_tensor *res = ct__empty(shape, r->ndim, dtype, ct__device(r));
  if (!res) return NULL;
  ct_status st = CT_OK;
  int64_t off = 0;
  for (int i = 0; i < n && st == CT_OK; i++) {
    if (cat_skipped(ts[i]) && i != ref) continue;
    st = copy_to_view(be, res, res->strides, res->offset + off * res->strides[d], ts[i]);
    off += ts[i]->shape[d];
  }
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct_cat(ct_tensor *const *tensors, int n, int dim) {
  return ct__track(ct__ag_cat(ct__cat(tensors, n, dim), tensors, n, dim, false));
}

ct_tensor *ct__stack(ct_tensor *const *ts, int n, int dim) {
  static const char op[] = "stack";
  ct_dtype dtype;
  if (!check_list(op, ts, n, &dtype)) return NULL;
  const ct_tensor *r = ts[0];
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  for (int i = 1; i < n; i++) {
    bool same = ts[i]->ndim == r->ndim;
    for (int k = 0; k < r->ndim && same; k++) same = ts[i]->shape[k] == r->shape[k];
    if (!same)
      return ct__fail(CT_ERR_SHAPE,
                      "stack: expected each tensor to be equal size, but got %s at entry 0 and %s "
                      "at entry %d",
                      ct__shape_str(r, a, sizeof a), ct__shape_str(ts[i], b, sizeof b), i);
  }
  int nd = r->ndim + 1;
  int d = dim < 0 ? dim + nd : dim;
  if (d < 0 || d >= nd)
    return ct__fail(CT_ERR_ARG, "stack: dim %d out of range for %d-d tensors (result %d-d)", dim,
                    r->ndim, nd);
  if (nd > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "stack: the result would have %d dims (max %d)", nd, CT_MAX_DIMS);
  int64_t shape[CT_MAX_DIMS];
  for (int k = 0, j = 0; k < nd; k++) shape[k] = k == d ? n : r->shape[j++];
  if (!ct__check_shape(op, shape, nd)) return NULL;
  const ct_backend *be = ct__backend_for(op, r);
  if (!be) return NULL;
  ct_tensor *res = ct__empty(shape, nd, dtype, ct__device(r));
  if (!res) return NULL;
  /* entry i is res.select(d, i): res's strides without dim d */
  int64_t st_sel[CT_MAX_DIMS];
  for (int k = 0, j = 0; k < nd; k++)
    if (k != d) st_sel[j++] = res->strides[k];
  ct_status st = CT_OK;
  for (int i = 0; i < n && st == CT_OK; i++)
    st = copy_to_view(be, res, st_sel, res->offset + i * res->strides[d], ts[i]);
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct_stack(ct_tensor *const *tensors, int n, int dim) {
  return ct__track(ct__ag_cat(ct__stack(tensors, n, dim), tensors, n, dim, true));
}

/* ---- split / chunk ---------------------------------------------------------------- */

/* count views of x along d: piece i starts at i * size and is at most size
 * long. Writes min(count, max_out) tracked views to out; returns count. */
static int pieces(const char *op, const ct_tensor *x, int d, int64_t size, int64_t count,
                  ct_tensor **out, int max_out) {
  if (count > INT32_MAX)
    return ct__fail(CT_ERR_ARG, "%s: %lld pieces are too many", op, (long long)count), -1;
  int want = count < max_out ? (int)count : max_out;
  int64_t len = x->shape[d];
  for (int i = 0; i < want; i++) {
    int64_t start = (int64_t)i * size;
    if (start > len) start = len;
    int64_t sz = len - start < size ? len - start : size;
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = sz;
    out[i] =
        ct__view_of(x, x->dtype, shape, x->strides, x->ndim, x->offset + start * x->strides[d]);
    if (!out[i]) {
      for (int j = 0; j < i; j++) ct__release(out[j]), out[j] = NULL;
      return -1;
    }
  }
  /* over an expanded x, autograd takes the pieces' logical geometry */
  bool logical = ct__has_internal_overlap(x);
  int64_t cst[CT_MAX_DIMS];
  ct__contiguous_strides(x->shape, x->ndim, cst);
  for (int i = 0; i < want; i++) {
    int64_t start = (int64_t)i * size < len ? (int64_t)i * size : len;
    out[i] = ct__track(logical ? ct__ag_view_logical(out[i], x, cst, start * cst[d])
                               : ct__ag_view(out[i], x, CT_VIEW_STRIDED, NULL));
    if (!out[i]) return -1;
  }
  return (int)count;
}

static bool check_split_args(const char *op, const ct_tensor *x, int *dim, ct_tensor **out,
                             int max_out) {
  if (!x) return false;
  if (x->ndim == 0) return ct__fail(CT_ERR_ARG, "%s: can't split a 0-d tensor", op), false;
  int d = *dim;
  if (!ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, *dim, x->ndim),
           false;
  if (max_out < 0 || (max_out > 0 && !out))
    return ct__fail(CT_ERR_ARG, "%s: out must hold max_out (%d) tensors", op, max_out), false;
  *dim = d;
  return true;
}

int ct_split(const ct_tensor *x, int64_t split_size, int dim, ct_tensor **out, int max_out) {
  if (!check_split_args("split", x, &dim, out, max_out)) return -1;
  int64_t len = x->shape[dim];
  if (split_size < 0 || (split_size == 0 && len > 0))
    return ct__fail(CT_ERR_ARG,
                    "split: split_size must be positive, got %lld (dim %d has size %lld)",
                    (long long)split_size, dim, (long long)len),
           -1;
  int64_t count = len == 0 ? 1 : (len + split_size - 1) / split_size;
  return pieces("split", x, dim, split_size, count, out, max_out);
}

int ct_chunk(const ct_tensor *x, int chunks, int dim, ct_tensor **out, int max_out) {
  if (!check_split_args("chunk", x, &dim, out, max_out)) return -1;
  if (chunks <= 0)
    return ct__fail(CT_ERR_ARG, "chunk: the number of chunks must be positive, got %d", chunks), -1;
  int64_t len = x->shape[dim];
  if (len == 0) return pieces("chunk", x, dim, 0, chunks, out, max_out); /* chunks empty views */
  int64_t size = (len + chunks - 1) / chunks;
  return pieces("chunk", x, dim, size, (len + size - 1) / size, out, max_out);
}
