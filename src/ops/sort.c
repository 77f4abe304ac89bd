/* Sorting (ctensor/sort_scan.h): sort, argsort, topk, kthvalue. The backends'
 * `argsort` slot orders the rows of a contiguous copy with dim moved last;
 * the values are a gather of x at those indices, recorded as a gather, so
 * the gradient is the scatter of g back to the positions (as torch's). A
 * top-k uses the backend's selection (`topk`) where it has one and it beats
 * the sort (`topk_wanted`; by default a few elements of long rows). */
#include "autograd/autograd_internal.h"
#include "ctensor/sort_scan.h"
#include "ops/index.h"
#include "ops/ops_internal.h"

#define NULL_IN(t)         \
  do {                     \
    if (!(t)) return NULL; \
  } while (0)

/* Checks and wraps dim (a 0-d x takes 0 and -1). */
static bool sort_dim(const char *op, const ct_tensor *x, int dim, int *d) {
  *d = dim;
  if (ct__wrap_dim(d, x->ndim ? x->ndim : 1)) return true;
  ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, dim, x->ndim);
  return false;
}

/* The sort keys' dtype: the halves as f32, integers and bool as i64. */
static ct_dtype key_dtype(ct_dtype d) {
  if (d == CT_F64) return CT_F64;
  return ct_dtype_is_floating(d) ? CT_F32 : CT_I64;
}

/* The sort keys of x with dims d and last swapped, contiguous (a new
 * reference); *sh receives their shape. */
static ct_tensor *keys_last(const ct_tensor *x, int d, int64_t *sh) {
  int last = x->ndim - 1;
  int64_t st[CT_MAX_DIMS];
  memcpy(sh, x->shape, sizeof(int64_t) * CT_MAX_DIMS);
  memcpy(st, x->strides, sizeof st);
  sh[d] = x->shape[last], sh[last] = x->shape[d];
  st[d] = x->strides[last], st[last] = x->strides[d];
  ct_tensor *xt = ct__view_of(x, x->dtype, sh, st, x->ndim, x->offset);
  ct_tensor *kc = xt ? ct__cast(xt, key_dtype(x->dtype)) : NULL;
  ct_tensor *keys = kc ? ct__contiguous(kc) : NULL;
  ct__release(xt);
  ct__release(kc);
  return keys;
}

/* idx (dims d and last swapped) back in x's dim order, contiguous; idx
 * released. */
static ct_tensor *dims_back(ct_tensor *idx, int d) {
  int last = idx->ndim - 1;
  if (d == last) return idx;
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(sh, idx->shape, sizeof sh);
  memcpy(st, idx->strides, sizeof st);
  int64_t t = st[d];
  st[d] = st[last], st[last] = t;
  t = sh[d];
  sh[d] = sh[last], sh[last] = t;
  ct_tensor *back = ct__view_of(idx, CT_I64, sh, st, idx->ndim, idx->offset);
  ct__release(idx);
  ct_tensor *r = back ? ct__contiguous(back) : NULL;
  ct__release(back);
  return r;
}

/* The i64 indices sorting x along d (wrapped), contiguous, x's shape. */
static ct_tensor *argsort_idx(const char *op, const ct_tensor *x, int d, bool descending) {
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, argsort, op, x);
  if (x->ndim == 0) return ct__zeros(NULL, 0, CT_I64, ct__device(x));
  int64_t sh[CT_MAX_DIMS];
  ct_tensor *keys = keys_last(x, d, sh);
  ct_tensor *idx = keys ? ct__empty(sh, x->ndim, CT_I64, ct__device(x)) : NULL;
  ct_status s = idx ? be->argsort(idx, keys, descending) : CT_ERR_OOM;
  ct__release(keys);
  if (s != CT_OK) {
    ct__release(idx);
    return NULL;
  }
  return dims_back(idx, d);
}

/* The indices of the k smallest keys along d in order, by the backend's
 * selection (`topk` slot); NULL with no error when there is none or the
 * sort is as fast (k a large share of the row). */
static ct_tensor *select_idx(const ct_tensor *x, int d, int64_t k, bool largest, bool *failed) {
  *failed = false;
  const ct_backend *be = ct__backend_for("topk", x);
  if (!be || !be->topk || k < 1 || x->ndim == 0) return NULL;
  int64_t n = x->shape[d];
  if (be->topk_wanted ? !be->topk_wanted(n, k) : n < 4096 || k * 16 > n) return NULL;
  int64_t sh[CT_MAX_DIMS];
  ct_tensor *keys = keys_last(x, d, sh);
  sh[x->ndim - 1] = k;
  ct_tensor *idx = keys ? ct__empty(sh, x->ndim, CT_I64, ct__device(x)) : NULL;
  ct_status s = idx ? be->topk(idx, keys, k, largest) : CT_ERR_OOM;
  ct__release(keys);
  if (s != CT_OK) {
    ct__release(idx);
    *failed = true;
    return NULL;
  }
  return dims_back(idx, d);
}

/* values = x.gather(d, idx), recorded; *indices takes idx (tracked) or it is
 * released. */
static ct_tensor *values_at(const ct_tensor *x, int d, ct_tensor *idx, ct_tensor **indices) {
  ct_tensor *v = idx ? ct__ag_gather(ct__gather(x, d, idx), x, d, idx) : NULL;
  if (v && indices) {
    *indices = ct__track(idx);
    if (!*indices) {
      ct__release(v);
      return NULL;
    }
  } else {
    ct__release(idx);
  }
  return ct__track(v);
}

ct_tensor *ct_sort(const ct_tensor *x, int dim, bool descending, ct_tensor **indices) {
  if (indices) *indices = NULL;
  NULL_IN(x);
  int d;
  if (!sort_dim("sort", x, dim, &d)) return NULL;
  return values_at(x, d, argsort_idx("sort", x, d, descending), indices);
}

ct_tensor *ct_argsort(const ct_tensor *x, int dim, bool descending) {
  NULL_IN(x);
  int d;
  if (!sort_dim("argsort", x, dim, &d)) return NULL;
  return ct__track(argsort_idx("argsort", x, d, descending));
}

/* Entries [start, start + len) along d of idx, contiguous; idx released. */
static ct_tensor *narrow_idx(ct_tensor *idx, int d, int64_t start, int64_t len) {
  if (!idx) return NULL;
  if (idx->ndim == 0) return idx;
  int64_t sh[CT_MAX_DIMS];
  memcpy(sh, idx->shape, sizeof sh);
  sh[d] = len;
  ct_tensor *v =
      ct__view_of(idx, CT_I64, sh, idx->strides, idx->ndim, idx->offset + start * idx->strides[d]);
  ct__release(idx);
  ct_tensor *r = v ? ct__contiguous(v) : NULL;
  ct__release(v);
  return r;
}

ct_tensor *ct_topk(const ct_tensor *x, int64_t k, int dim, bool largest, bool sorted,
                   ct_tensor **indices) {
  (void)sorted; /* always sorted: the order comes with the sort */
  if (indices) *indices = NULL;
  NULL_IN(x);
  int d;
  if (!sort_dim("topk", x, dim, &d)) return NULL;
  int64_t size = x->ndim ? x->shape[d] : 1;
  if (k < 0 || k > size)
    return ct__fail(CT_ERR_ARG, "topk: k %lld out of range for dim %d of size %lld", (long long)k,
                    d, (long long)size);
  bool failed;
  ct_tensor *idx = select_idx(x, d, k, largest, &failed);
  if (failed) return NULL;
  if (!idx) idx = narrow_idx(argsort_idx("topk", x, d, largest), d, 0, k);
  return values_at(x, d, idx, indices);
}

ct_tensor *ct_kthvalue(const ct_tensor *x, int64_t k, int dim, bool keepdim, ct_tensor **indices) {
  if (indices) *indices = NULL;
  NULL_IN(x);
  int d;
  if (!sort_dim("kthvalue", x, dim, &d)) return NULL;
  int64_t size = x->ndim ? x->shape[d] : 1;
  if (k < 1 || k > size)
    return ct__fail(CT_ERR_ARG, "kthvalue: k %lld out of range for dim %d of size %lld",
                    (long long)k, d, (long long)size);
  ct_tensor *idx = narrow_idx(argsort_idx("kthvalue", x, d, false), d, k - 1, 1);
  if (keepdim || x->ndim == 0) return values_at(x, d, idx, indices);
  ct_tensor *ik = NULL;
  ct_tensor *vk = values_at(x, d, idx, &ik); /* tracked: freed below */
  ct_tensor *v = vk ? ct_squeeze_dim(vk, d) : NULL;
  ct_tensor *i = v && indices ? ct_squeeze_dim(ik, d) : NULL;
  ct_free(vk);
  ct_free(ik);
  if (v && indices && !i) {
    ct_free(v);
    return NULL;
  }
  if (indices) *indices = i;
  return v;
}
