/* Op-layer helpers: see ops_internal.h. */
#include "ops/ops_internal.h"

const ct_backend *ct__backend_for(const char *op, const ct_tensor *t) {
  const ct_backend *be = ct__backend_of(t);
  if (!be)
    ct__fail(CT_ERR_UNAVAILABLE, "%s: no backend for %s: %s", op, ct_device_name(ct__device(t)),
             ct__backend_error((ct_device_type)ct__device(t).type));
  return be;
}

ct_tensor *ct__broadcast_to(const ct_tensor *t, const int64_t *shape, int ndim) {
  if (t->ndim == ndim) {
    bool same = true;
    for (int d = 0; d < ndim && same; d++) same = t->shape[d] == shape[d];
    if (same) return ct__retain(t);
  }
  int64_t strides[CT_MAX_DIMS];
  for (int d = 0; d < ndim; d++) {
    int td = t->ndim - ndim + d;
    strides[d] = (td >= 0 && t->shape[td] == shape[d]) ? t->strides[td] : 0;
  }
  return ct__view_of(t, t->dtype, shape, strides, ndim, t->offset);
}

ct_status ct__copy_into(ct_tensor *dst, const ct_tensor *src) {
  const ct_backend *be = ct__backend_of(dst);
  ct_tensor *b = ct__broadcast_to(src, dst->shape, dst->ndim);
  if (!b) return ct_last_error();
  ct_status st = be->copy(dst, b);
  ct__release(b);
  return st;
}

ct_tensor *ct__cast(const ct_tensor *t, ct_dtype dtype) {
  if (t->dtype == dtype) return ct__retain(t);
  ct_tensor *r = ct__empty(t->shape, t->ndim, dtype, ct__device(t));
  if (!r) return NULL;
  if (ct__backend_of(t)->copy(r, t) != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return r;
}

ct_tensor *ct__clone(const ct_tensor *t) {
  ct_tensor *r = ct__empty(t->shape, t->ndim, t->dtype, ct__device(t));
  if (!r) return NULL;
  if (ct__backend_of(t)->copy(r, t) != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return r;
}

ct_tensor *ct__contiguous(const ct_tensor *t) {
  return ct__is_contiguous(t) ? ct__retain(t) : ct__clone(t);
}

bool ct__check_out(const char *op, const ct_tensor *out, const int64_t *shape, int ndim,
                   ct_dtype result_dtype, ct_device device) {
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  if (!ct_device_equal(ct__device(out), device))
    return ct__fail(CT_ERR_DEVICE, "%s: out is on %s but the inputs are on %s", op,
                    ct_device_name(ct__device(out)), ct_device_name(device)),
           false;
  bool same = out->ndim == ndim;
  for (int d = 0; d < ndim && same; d++) same = out->shape[d] == shape[d];
  if (!same)
    return ct__fail(CT_ERR_SHAPE, "%s: out has shape %s but the result has shape %s", op,
                    ct__shape_str(out, a, sizeof a), ct_shape_format(shape, ndim, b, sizeof b)),
           false;
  if (!ct_can_cast(result_dtype, out->dtype))
    return ct__fail(CT_ERR_DTYPE, "%s: result type %s can't be cast to the output type %s", op,
                    ct_dtype_name(result_dtype), ct_dtype_name(out->dtype)),
           false;
  if (ct__has_internal_overlap(out))
    return ct__fail(CT_ERR_ARG,
                    "%s: the output has elements that share memory (a broadcast/expanded view); "
                    "make it contiguous first",
                    op),
           false;
  return true;
}

ct_tensor *ct__result_for(const char *op, ct_tensor *out, const int64_t *shape, int ndim,
                          ct_dtype dtype, ct_device device) {
  if (!out) return ct__empty(shape, ndim, dtype, device);
  if (!ct__check_out(op, out, shape, ndim, dtype, device)) return NULL;
  if (out->dtype == dtype) return ct__retain(out);
  return ct__empty(shape, ndim, dtype, device);
}

ct_tensor *ct__finish_out(ct_tensor *out, ct_tensor *res, ct_status status) {
  if (status != CT_OK) {
    ct__release(res);
    return NULL;
  }
  if (!out) return res;
  if (res != out) {
    status = ct__backend_of(out)->copy(out, res);
    ct__release(res);
    if (status != CT_OK) return NULL;
  } else {
    ct__release(res);
  }
  ct__bump_version(out);
  return out;
}
