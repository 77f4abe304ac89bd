/* Bool masks among the indices of ct_index and ct_index_put(_), as torch's
 * x[mask] and x[mask] = v.
 *
 * A mask of j dims stands for the j dims of x it covers (its shape must be
 * theirs) and is replaced by the j columns of its nonzero() coordinates: K
 * points in row-major order, which then broadcast with the other indices as
 * integer tensors do. torch expands masks the same way, so mixing masks with
 * integer tensors places and broadcasts the dims as it does, and autograd
 * comes from the integer path (the gradient scatters back through the
 * points). Reading K synchronizes with the device on CUDA, as torch does. */
#include "ops/adv_index.h"

#include "ctensor/indexing.h"

static bool has_mask(ct_tensor *const *indices, int n) {
  for (int k = 0; k < n; k++)
    if (indices[k] && indices[k]->dtype == CT_BOOL) return true;
  return false;
}

/* indices with each mask replaced by its coordinate columns, into out
 * (CT_MAX_DIMS entries; *nout of them). The columns are tracked in the
 * current scope. */
static bool expand_masks(const char *op, const ct_tensor *x, ct_tensor *const *indices, int n,
                         ct_tensor **out, int *nout) {
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  int d = 0, m = 0; /* dims of x covered; entries written */
  for (int k = 0; k < n; k++) {
    ct_tensor *t = indices[k];
    int cover = t && t->dtype == CT_BOOL ? t->ndim : 1;
    if (t && t->dtype == CT_BOOL && t->ndim == 0) {
      ct__fail(CT_ERR_ARG,
               "%s: the bool index at position %d is 0-d (x[True]); give a mask with the shape "
               "of the dims it selects",
               op, k);
      return false;
    }
    if (d + cover > x->ndim) {
      ct__fail(CT_ERR_ARG, "%s: the indices cover %d dims of a tensor of %d dims", op, d + cover,
               x->ndim);
      return false;
    }
    if (!t || t->dtype != CT_BOOL) {
      out[m++] = t;
      d++;
      continue;
    }
    if (!ct__check_same_device(op, x, t)) return false;
    bool fits = true;
    for (int i = 0; i < cover; i++) fits = fits && t->shape[i] == x->shape[d + i];
    if (!fits) {
      ct__fail(CT_ERR_SHAPE,
               "%s: the mask at position %d has shape %s, but the dims %d to %d of the indexed "
               "tensor it covers are %s",
               op, k, ct__shape_str(t, s1, sizeof s1), d, d + cover - 1,
               ct_shape_format(x->shape + d, cover, s2, sizeof s2));
      return false;
    }
    ct_tensor *nz = ct_nonzero(t); /* (K, cover) */
    for (int i = 0; i < cover; i++)
      if (!(out[m++] = ct_select(nz, 1, i))) return false;
    d += cover;
  }
  *nout = m;
  return true;
}

ct_tensor *ct__adv_with_masks(ct_adv_call call, ct_tensor *x, ct_tensor *const *indices, int n,
                              const ct_tensor *values, bool accumulate, bool *handled) {
  *handled = x && indices && n > 0 && has_mask(indices, n);
  if (!*handled) return NULL;
  static const char *const names[] = {"index", "index_put", "index_put_"};
  ct_tensor *ex[CT_MAX_DIMS], *r = NULL;
  int ne = 0;
  ct_scope_begin();
  if (expand_masks(names[call], x, indices, n, ex, &ne)) {
    if (call == CT_ADV_GATHER)
      r = ct_index(x, ex, ne);
    else if (call == CT_ADV_PUT)
      r = ct_index_put(x, ex, ne, values, accumulate);
    else
      r = ct_index_put_(x, ex, ne, values, accumulate);
  }
  if (r && call != CT_ADV_PUT_INPLACE) ct_keep(r);
  ct_scope_end();
  return r;
}
