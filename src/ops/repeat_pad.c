/* Repeating and padding (ctensor/sort_scan.h): repeat, repeat_interleave,
 * pad. Tiling, interleaving and reflect/replicate padding are remaps (the
 * backends' `remap` slot, a source coordinate per dim); constant padding is
 * a fill and a copy into the window; repeat_interleave with a tensor of
 * repeats is an index_select. */
#include <string.h>

#include "autograd/autograd_internal.h"
#include "ctensor/sort_scan.h"
#include "ops/ops_internal.h"
#include "ops/sort_scan.h"

#define NULL_IN(t)         \
  do {                     \
    if (!(t)) return NULL; \
  } while (0)

/* shape[d] * r, or false (error recorded) past INT64_MAX. */
static bool grown(const char *op, int64_t size, int64_t r, int64_t *out) {
  if (r != 0 && size > INT64_MAX / r)
    return ct__fail(CT_ERR_ARG, "%s: size %lld times %lld overflows", op, (long long)size,
                    (long long)r) != NULL;
  *out = size * r;
  return true;
}

ct_tensor *ct_repeat(const ct_tensor *x, const int64_t *repeats, int n) {
  NULL_IN(x);
  if (n < x->ndim || n > CT_MAX_DIMS || (n > 0 && !repeats))
    return ct__fail(CT_ERR_ARG, "repeat: expected between %d and %d repeats (x's dims), got %d",
                    x->ndim, CT_MAX_DIMS, n);
  /* x with n - ndim leading size-1 dims */
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS], out[CT_MAX_DIMS];
  int lead = n - x->ndim;
  for (int d = 0; d < n; d++) {
    sh[d] = d < lead ? 1 : x->shape[d - lead];
    st[d] = d < lead ? 0 : x->strides[d - lead];
  }
  ct_remap_params p = {.kind = {0}};
  for (int d = 0; d < n; d++) {
    if (repeats[d] < 0)
      return ct__fail(CT_ERR_ARG, "repeat: repeats must be >= 0, got %lld for dim %d",
                      (long long)repeats[d], d);
    if (!grown("repeat", sh[d], repeats[d], &out[d])) return NULL;
    if (repeats[d] != 1) p.kind[d] = CT_REMAP_TILE;
  }
  if (n == 0) return ct__track(ct__ag_identity(ct__clone(x), x, "RepeatBackward"));
  ct_tensor *xv = ct__view_of(x, x->dtype, sh, st, n, x->offset);
  ct_tensor *r = xv ? ct__remap_to("repeat", xv, &p, out) : NULL;
  r = ct__ag_gather_remap(r, x, xv, &p, "RepeatBackward");
  ct__release(xv);
  return ct__track(r);
}

/* x flattened to 1-d (a view or a contiguous copy), or x itself (a new reference). */
static ct_tensor *flat_or_self(const ct_tensor *x, int *dim) {
  if (*dim != CT_DIM_ALL) return ct__retain(x);
  *dim = 0;
  return ct_reshape(x, (int64_t[]){x->numel}, 1); /* tracked: recorded as a view */
}

ct_tensor *ct_repeat_interleave(const ct_tensor *x, int64_t repeats, int dim) {
  NULL_IN(x);
  if (repeats < 0)
    return ct__fail(CT_ERR_ARG, "repeat_interleave: repeats must be >= 0, got %lld",
                    (long long)repeats);
  int d = dim;
  /* a 0-d x takes dim -1 or 0 (ct__wrap_dim), then repeats as a 1-d one */
  bool flat = dim == CT_DIM_ALL || x->ndim == 0;
  if (dim != CT_DIM_ALL && !ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "repeat_interleave: dim %d out of range for a %d-d tensor", dim,
                    x->ndim);
  if (flat) d = CT_DIM_ALL;
  ct_tensor *xf = flat_or_self(x, &d);
  if (!xf) return NULL;
  int64_t out[CT_MAX_DIMS];
  memcpy(out, xf->shape, sizeof(int64_t) * (size_t)xf->ndim);
  ct_tensor *r = NULL;
  if (grown("repeat_interleave", xf->shape[d], repeats, &out[d])) {
    ct_remap_params p = {.kind = {0}};
    p.kind[d] = CT_REMAP_INTERLEAVE;
    p.shift[d] = repeats ? repeats : 1;
    r = ct__ag_gather_remap(ct__remap_to("repeat_interleave", xf, &p, out), xf, xf, &p,
                            "RepeatInterleaveBackward");
  }
  if (flat)
    ct_free(xf);
  else
    ct__release(xf);
  return ct__track(r);
}

ct_tensor *ct_repeat_interleave_tensor(const ct_tensor *x, const ct_tensor *repeats, int dim) {
  const char *op = "repeat_interleave";
  NULL_IN(x);
  NULL_IN(repeats);
  if (ct_dtype_is_floating(repeats->dtype) || repeats->dtype == CT_BOOL || repeats->ndim > 1)
    return ct__fail(CT_ERR_ARG, "%s: repeats must be a 0-d or 1-d integer tensor, got %d-d %s", op,
                    repeats->ndim, ct_dtype_name(repeats->dtype));
  if (ct__device(repeats).type != ct__device(x).type ||
      ct__device(repeats).index != ct__device(x).index)
    return ct__fail(CT_ERR_DEVICE, "%s: repeats on %s, x on %s", op,
                    ct_device_name(ct__device(repeats)), ct_device_name(ct__device(x)));
  int d = dim;
  bool flat = dim == CT_DIM_ALL || x->ndim == 0;
  if (dim != CT_DIM_ALL && !ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", op, dim, x->ndim);
  if (flat) d = CT_DIM_ALL;
  ct_tensor *xf = flat_or_self(x, &d);
  if (!xf) return NULL;
  int64_t n = xf->shape[d], nr = repeats->numel;
  ct_tensor *r = NULL;
  int64_t *rep = NULL, *idx = NULL;
  if (nr != n && nr != 1) {
    ct__fail(CT_ERR_SHAPE, "%s: expected %lld repeats (the size of dim %d) or 1, got %lld", op,
             (long long)n, d, (long long)nr);
    goto done;
  }
  rep = ct__malloc_array((size_t)(nr ? nr : 1), sizeof *rep);
  ct_tensor *r64 = rep ? ct__cast(repeats, CT_I64) : NULL;
  ct_status st = r64 ? ct_copy_to_host(r64, rep, (size_t)nr * sizeof *rep) : CT_ERR_OOM;
  ct__release(r64);
  if (st != CT_OK) {
    if (!rep) ct__fail(CT_ERR_OOM, "%s: out of memory for %lld repeats", op, (long long)nr);
    goto done;
  }
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = rep[nr == 1 ? 0 : i];
    if (k < 0) {
      ct__fail(CT_ERR_ARG, "%s: repeats must be >= 0, got %lld at %lld", op, (long long)k,
               (long long)i);
      goto done;
    }
    if (total > INT64_MAX - k) {
      ct__fail(CT_ERR_ARG, "%s: the total of the repeats overflows", op);
      goto done;
    }
    total += k;
  }
  idx = ct__malloc_array((size_t)(total ? total : 1), sizeof *idx);
  if (!idx) {
    ct__fail(CT_ERR_OOM, "%s: out of memory for an index of %lld", op, (long long)total);
    goto done;
  }
  for (int64_t i = 0, q = 0; i < n; i++)
    for (int64_t k = 0; k < rep[nr == 1 ? 0 : i]; k++) idx[q++] = i;
  ct_tensor *it = ct__empty(&total, 1, CT_I64, ct__device(x));
  if (it && total &&
      ct__backend_of(it)->copy_from_host(it, idx, (size_t)total * sizeof *idx, false) != CT_OK) {
    ct__release(it);
    it = NULL;
  }
  if (it) {
    r = ct_index_select(xf, d, it); /* tracked, recorded as an index_select */
    ct__release(it);
  }
done:
  ct__free(rep);
  ct__free(idx);
  if (flat)
    ct_free(xf);
  else
    ct__release(xf);
  return r;
}

ct_tensor *ct_pad(const ct_tensor *x, const int64_t *pad, int npad, ct_pad_mode mode,
                  double value) {
  const char *op = "pad";
  NULL_IN(x);
  if (npad < 0 || npad % 2 || npad / 2 > x->ndim || (npad && !pad))
    return ct__fail(CT_ERR_ARG,
                    "%s: expected an even number of pads, at most 2 per dim of a "
                    "%d-d tensor, got %d",
                    op, x->ndim, npad);
  if (mode != CT_PAD_CONSTANT && mode != CT_PAD_REFLECT && mode != CT_PAD_REPLICATE)
    return ct__fail(CT_ERR_ARG, "%s: unknown mode %d", op, (int)mode);
  int64_t before[CT_MAX_DIMS] = {0}, out[CT_MAX_DIMS];
  ct_remap_params p = {.kind = {0}};
  memcpy(out, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  for (int i = 0; i < npad / 2; i++) {
    int d = x->ndim - 1 - i;
    int64_t lo = pad[2 * i], hi = pad[2 * i + 1], n = x->shape[d];
    if (lo < 0 || hi < 0)
      return ct__fail(CT_ERR_ARG,
                      "%s: negative padding (%lld, %lld) for dim %d; use ct_narrow "
                      "to crop",
                      op, (long long)lo, (long long)hi, d);
    if (mode == CT_PAD_REFLECT && (lo >= n || hi >= n))
      return ct__fail(CT_ERR_ARG,
                      "%s: reflect padding (%lld, %lld) must be smaller than the "
                      "size %lld of dim %d",
                      op, (long long)lo, (long long)hi, (long long)n, d);
    if (mode == CT_PAD_REPLICATE && n == 0 && (lo || hi))
      return ct__fail(CT_ERR_ARG, "%s: can't replicate the edge of the empty dim %d", op, d);
    if (lo > INT64_MAX - n || hi > INT64_MAX - n - lo)
      return ct__fail(CT_ERR_ARG, "%s: padding of dim %d overflows", op, d);
    out[d] = n + lo + hi;
    before[d] = lo;
    if (lo || hi) {
      p.kind[d] = mode == CT_PAD_REFLECT ? CT_REMAP_REFLECT : CT_REMAP_REPLICATE;
      p.shift[d] = lo;
    }
  }
  if (mode != CT_PAD_CONSTANT)
    return ct__track(ct__ag_gather_remap(
        ct__remap_to(op, x, &p, out), x, x, &p,
        mode == CT_PAD_REFLECT ? "ReflectionPadBackward" : "ReplicationPadBackward"));
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  ct_tensor *r = ct__empty(out, x->ndim, x->dtype, ct__device(x));
  if (r && be->fill(r, value) != CT_OK) ct__release(r), r = NULL;
  if (r) { /* x into its window */
    int64_t off = 0;
    for (int d = 0; d < x->ndim; d++) off += before[d] * r->strides[d];
    ct_tensor *w = ct__view_of(r, r->dtype, x->shape, r->strides, x->ndim, r->offset + off);
    if (!w || ct__copy_into(w, x) != CT_OK) ct__release(r), r = NULL;
    ct__release(w);
  }
  return ct__track(ct__ag_pad_constant(r, x, before));
}
