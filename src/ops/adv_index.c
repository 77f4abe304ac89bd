/* Advanced indexing with integer tensors, as torch's x[i0, i1, ...]:
 * ct_index, ct_index_put(_) (bool masks: adv_index_mask.c turns them into
 * integer tensors first).
 *
 * The index tensors broadcast together to one shape B. The result is x's
 * dims with the indexed ones replaced by B: in place of the first indexed dim
 * when the indexed dims are adjacent (x[:, i, j] is (d0, *B, ...)), else in
 * front (x[i, :, j] is (*B, d1, ...)), as NumPy and torch place them.
 *
 * Each index point becomes one i64 (backend/params.h) in one pass that also
 * checks the indices; the gather or put then runs over the result's shape
 * with x seen with stride 0 along B. */
#include "ops/adv_index.h"

#include "autograd/autograd_internal.h"
#include "ctensor/indexing.h"

static bool check_indices(const char *op, const ct_tensor *x, ct_tensor *const *indices, int n,
                          int64_t *bshape, int *bnd) {
  if (n < 1 || n > x->ndim) {
    ct__fail(CT_ERR_ARG, "%s: %d indices for a tensor of %d dims (1 to %d allowed)", op, n, x->ndim,
             x->ndim);
    return false;
  }
  *bnd = 0;
  int first = -1;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  for (int k = 0; k < n; k++) {
    const ct_tensor *t = indices[k];
    if (!t) continue;
    if (!ct__check_same_device(op, x, t)) return false;
    if (!ct_dtype_is_integral(t->dtype) || t->dtype == CT_BOOL) {
      ct__fail(CT_ERR_DTYPE, "%s: the index at position %d must be an integer tensor, got %s", op,
               k, ct_dtype_name(t->dtype));
      return false;
    }
    int64_t out[CT_MAX_DIMS];
    int nd = 0;
    if (!ct__broadcast_shapes(bshape, *bnd, t->shape, t->ndim, out, &nd)) {
      ct__fail(CT_ERR_SHAPE,
               "%s: the indices at positions %d and %d (shapes %s and %s) don't broadcast", op,
               first, k, ct__shape_str(indices[first], s1, sizeof s1),
               ct__shape_str(t, s2, sizeof s2));
      return false;
    }
    memcpy(bshape, out, sizeof(int64_t) * (size_t)nd);
    *bnd = nd;
    if (first < 0) first = k;
  }
  if (first < 0) {
    ct__fail(CT_ERR_ARG, "%s: every index is NULL (a whole dim); give at least one tensor", op);
    return false;
  }
  return true;
}

/* The result geometry of x[indices] (indices checked). */
static bool make_geom(const char *op, const ct_tensor *x, ct_tensor *const *indices, int n,
                      const int64_t *bshape, int bnd, ct_adv_geom *g) {
  memset(g, 0, sizeof *g);
  int first = -1, last = -1, k = 0;
  for (int d = 0; d < n; d++)
    if (indices[d]) {
      if (first < 0) first = d;
      last = d;
      g->p.dims[k] = d;
      g->p.sizes[k++] = x->shape[d];
    }
  g->p.n = k;
  bool adjacent = true;
  for (int d = first; d <= last; d++) adjacent = adjacent && indices[d];
  int nrest = x->ndim - k;
  if (nrest + bnd > CT_MAX_DIMS) {
    ct__fail(CT_ERR_SHAPE, "%s: the result would have %d dims (max %d)", op, nrest + bnd,
             CT_MAX_DIMS);
    return false;
  }
  g->bpos = adjacent ? first : 0;
  g->nb = bnd;
  g->ndim = nrest + bnd;
  int r = 0;
  bool placed = false;
  for (int d = 0; d <= x->ndim; d++) {
    if (!placed && r == g->bpos) { /* the broadcast block goes here */
      for (int b = 0; b < bnd; b++) g->xdim[r] = -1, g->shape[r++] = bshape[b];
      placed = true;
    }
    if (d == x->ndim) break;
    if (d < n && indices[d]) continue;
    g->xdim[r] = d;
    g->shape[r++] = x->shape[d];
  }
  g->p.radix[k - 1] = 1;
  for (int j = k - 2; j >= 0; j--) g->p.radix[j] = g->p.radix[j + 1] * g->p.sizes[j + 1];
  g->x_ndim = x->ndim;
  memcpy(g->x_shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  return true;
}

bool ct__adv_plan(const char *op, const ct_tensor *x, ct_tensor *const *indices, int n,
                  ct_adv_geom *g, ct_tensor **lin) {
  *lin = NULL;
  if (!x || !indices) {
    if (!indices && ct_last_error() == CT_OK) ct__fail(CT_ERR_ARG, "%s: indices is NULL", op);
    return false;
  }
  int64_t bshape[CT_MAX_DIMS];
  int bnd;
  if (!check_indices(op, x, indices, n, bshape, &bnd) ||
      !make_geom(op, x, indices, n, bshape, bnd, g))
    return false;
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return false;
  if (!be->index_linearize || !be->index_gather || !be->index_put) {
    ct__fail(CT_ERR_UNAVAILABLE, "%s: not implemented on %s", op, ct_device_name(ct__device(x)));
    return false;
  }
  int64_t npoints = 1;
  for (int b = 0; b < bnd; b++) npoints *= bshape[b];
  for (int k = 0; k < g->p.n; k++) /* any index is out of range: and radix would be 0 */
    if (g->p.sizes[k] == 0 && npoints > 0) {
      ct__fail(CT_ERR_ARG, "%s: index is out of bounds for dim %d with size 0", op, g->p.dims[k]);
      return false;
    }
  ct_tensor *l = ct__empty(bshape, bnd, CT_I64, ct__device(x));
  ct_tensor *idx[CT_MAX_DIMS] = {0};
  ct_status st = l ? CT_OK : CT_ERR_OOM;
  for (int k = 0; k < g->p.n && st == CT_OK; k++) {
    ct_tensor *c = ct__cast(indices[g->p.dims[k]], CT_I64);
    idx[k] = c ? ct__broadcast_to(c, bshape, bnd) : NULL;
    ct__release(c);
    if (!idx[k]) st = CT_ERR_OOM;
  }
  if (st == CT_OK && npoints > 0) st = be->index_linearize(l, (const ct_tensor *const *)idx, &g->p);
  for (int k = 0; k < g->p.n; k++) ct__release(idx[k]);
  if (st != CT_OK) {
    ct__release(l);
    return false;
  }
  *lin = l;
  return true;
}

/* t (of x's shape) seen with the result's shape: stride 0 along the block. */
static ct_tensor *target_view(const ct_tensor *t, const ct_adv_geom *g) {
  int64_t st[CT_MAX_DIMS];
  for (int d = 0; d < g->ndim; d++) st[d] = g->xdim[d] < 0 ? 0 : t->strides[g->xdim[d]];
  if (g->ndim == 0) return ct__view_of(t, t->dtype, (int64_t[]){1}, (int64_t[]){0}, 1, t->offset);
  return ct__view_of(t, t->dtype, g->shape, st, g->ndim, t->offset);
}

/* lin seen with the result's shape: stride 0 off the block. */
static ct_tensor *lin_view(const ct_tensor *lin, const ct_adv_geom *g) {
  int64_t st[CT_MAX_DIMS];
  for (int d = 0; d < g->ndim; d++) st[d] = g->xdim[d] < 0 ? lin->strides[d - g->bpos] : 0;
  if (g->ndim == 0) return ct__view_of(lin, CT_I64, (int64_t[]){1}, (int64_t[]){0}, 1, lin->offset);
  return ct__view_of(lin, CT_I64, g->shape, st, g->ndim, lin->offset);
}

/* The plan's parameters with t's strides along the indexed dims. */
static ct_adv_index_params params_for(const ct_adv_geom *g, const ct_tensor *t) {
  ct_adv_index_params p = g->p;
  for (int k = 0; k < p.n; k++) p.strides[k] = t->strides[p.dims[k]];
  return p;
}

ct_tensor *ct__adv_gather(const ct_tensor *x, const ct_adv_geom *g, const ct_tensor *lin) {
  if (!x || !lin) return NULL;
  const ct_backend *be = ct__backend_for("index", x);
  if (!be) return NULL;
  ct_tensor *res = ct__empty(g->shape, g->ndim, x->dtype, ct__device(x));
  if (!res || res->numel == 0) return res;
  ct_tensor *src = target_view(x, g), *lv = lin_view(lin, g);
  ct_tensor *out =
      g->ndim ? ct__retain(res)
              : ct__view_of(res, res->dtype, (int64_t[]){1}, (int64_t[]){1}, 1, res->offset);
  ct_adv_index_params p = params_for(g, x);
  ct_status st = src && lv && out ? be->index_gather(out, src, lv, &p) : CT_ERR_OOM;
  ct__release(src);
  ct__release(lv);
  ct__release(out);
  return ct__finish_out(NULL, res, st);
}

ct_status ct__adv_put(ct_tensor *dst, const ct_adv_geom *g, const ct_tensor *lin,
                      const ct_tensor *values, bool accumulate) {
  const ct_backend *be = ct__backend_for("index_put_", dst);
  if (!be) return ct_last_error();
  int64_t n = 1;
  for (int d = 0; d < g->ndim; d++) n *= g->shape[d];
  if (n == 0) return CT_OK;
  /* values of dst's dtype, broadcast to the result's shape, not aliasing dst */
  ct_tensor *vc = values->dtype == dst->dtype && !ct_same_storage(values, dst)
                      ? ct__retain(values)
                      : ct__empty(values->shape, values->ndim, dst->dtype, ct__device(dst));
  ct_status st = vc ? CT_OK : CT_ERR_OOM;
  if (st == CT_OK && vc != values) st = be->copy(vc, values);
  ct_tensor *vb = NULL;
  if (st == CT_OK) {
    vb = g->ndim ? ct__broadcast_to(vc, g->shape, g->ndim)
                 : ct__view_of(vc, vc->dtype, (int64_t[]){1}, (int64_t[]){0}, 1, vc->offset);
    if (!vb) st = CT_ERR_OOM;
  }
  ct_tensor *dv = target_view(dst, g), *lv = lin_view(lin, g);
  ct_adv_index_params p = params_for(g, dst);
  if (st == CT_OK) st = dv && lv ? be->index_put(dv, vb, lv, &p, accumulate) : CT_ERR_OOM;
  ct__release(dv);
  ct__release(lv);
  ct__release(vb);
  ct__release(vc);
  return st;
}

ct_tensor *ct_index(const ct_tensor *x, ct_tensor *const *indices, int n) {
  bool masked;
  ct_tensor *mr =
      ct__adv_with_masks(CT_ADV_GATHER, (ct_tensor *)x, indices, n, NULL, false, &masked);
  if (masked) return mr;
  ct_adv_geom g;
  ct_tensor *lin;
  if (!ct__adv_plan("index", x, indices, n, &g, &lin)) return NULL;
  ct_tensor *r = ct__adv_gather(x, &g, lin);
  r = ct__ag_index(r, x, &g, lin);
  ct__release(lin);
  return ct__track(r);
}

/* values' checks: device, dtype castable, shape broadcasting to x[indices]'s. */
static bool check_values(const char *op, const ct_tensor *x, const ct_tensor *values,
                         const ct_adv_geom *g) {
  if (!ct__check_same_device(op, x, values)) return false;
  if (values->dtype != x->dtype && !ct_can_cast(values->dtype, x->dtype)) {
    ct__fail(CT_ERR_DTYPE, "%s: values of dtype %s can't be written into a %s tensor", op,
             ct_dtype_name(values->dtype), ct_dtype_name(x->dtype));
    return false;
  }
  int64_t bs[CT_MAX_DIMS];
  int bnd = 0;
  bool ok = ct__broadcast_shapes(values->shape, values->ndim, g->shape, g->ndim, bs, &bnd) &&
            bnd == g->ndim;
  for (int d = 0; d < bnd && ok; d++) ok = bs[d] == g->shape[d];
  if (!ok) {
    char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
    ct__fail(CT_ERR_SHAPE, "%s: values of shape %s don't broadcast to the indexed shape %s", op,
             ct__shape_str(values, s1, sizeof s1),
             ct_shape_format(g->shape, g->ndim, s2, sizeof s2));
  }
  return ok;
}

/* in_place: writes x (checked by the caller); else writes a copy of x. */
static ct_tensor *index_put_impl(const char *op, ct_tensor *x, ct_tensor *const *indices, int n,
                                 const ct_tensor *values, bool accumulate, bool in_place) {
  if (!x || !values) return NULL;
  ct_adv_geom g;
  ct_tensor *lin;
  if (!ct__adv_plan(op, x, indices, n, &g, &lin)) return NULL;
  if (!check_values(op, x, values, &g)) {
    ct__release(lin);
    return NULL;
  }
  if (in_place && ct__has_internal_overlap(x)) {
    ct__release(lin);
    return ct__fail(CT_ERR_ARG,
                    "%s: the tensor has elements that share memory (an expanded view); make it "
                    "contiguous first",
                    op);
  }
  ct_tensor *target = in_place ? x : ct__clone(x);
  ct_status st = target ? ct__adv_put(target, &g, lin, values, accumulate) : CT_ERR_OOM;
  ct_tensor *r = NULL;
  if (in_place && st == CT_OK) {
    ct__bump_version(x);
    r = x;
  } else if (!in_place) {
    r = ct__finish_out(NULL, target, st);
    r = ct__ag_index_put(r, x, values, &g, lin, accumulate);
  }
  ct__release(lin);
  return r;
}

ct_tensor *ct_index_put(const ct_tensor *x, ct_tensor *const *indices, int n,
                        const ct_tensor *values, bool accumulate) {
  bool masked;
  ct_tensor *mr =
      ct__adv_with_masks(CT_ADV_PUT, (ct_tensor *)x, indices, n, values, accumulate, &masked);
  if (masked) return mr;
  return ct__track(
      index_put_impl("index_put", (ct_tensor *)x, indices, n, values, accumulate, false));
}

/* In place: the out-of-place node recorded on x (its history rewritten). The
 * plan is made twice when recorded (once for the node): the indices are
 * small next to x, and the recording must precede the write. */
ct_tensor *ct_index_put_(ct_tensor *x, ct_tensor *const *indices, int n, const ct_tensor *values,
                         bool accumulate) {
  static const char op[] = "index_put_";
  if (!x || !values) return NULL;
  bool masked;
  ct_tensor *mr =
      ct__adv_with_masks(CT_ADV_PUT_INPLACE, x, indices, n, values, accumulate, &masked);
  if (masked) return mr;
  ct_inplace ip;
  if (!ct__ag_inplace_begin(&ip, op, x, &values, 1)) return NULL;
  if (ip.record) {
    ct_adv_geom g;
    ct_tensor *lin;
    bool ok = ct__adv_plan(op, x, indices, n, &g, &lin) && check_values(op, x, values, &g) &&
              ct__ag_index_put(x, x, values, &g, lin, accumulate);
    ct__release(lin);
    if (!ok) return ct__ag_inplace_end(&ip, NULL);
  }
  return ct__ag_inplace_end(&ip, index_put_impl(op, x, indices, n, values, accumulate, true));
}
