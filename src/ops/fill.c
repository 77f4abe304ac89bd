/* In-place fills. */
#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

/* Filling is idempotent, so PyTorch lets fill_ write a tensor whose elements
 * share memory (an expanded view); the kernel then writes each location once,
 * through the view with every broadcast (stride 0) dim cut to size 1. */
static ct_tensor *fill(ct_tensor *t, double value) {
  const ct_backend *be = ct__backend_for("fill_", t);
  if (!be) return NULL;
  ct_status st;
  if (ct__has_internal_overlap(t)) {
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) shape[d] = t->strides[d] == 0 ? 1 : t->shape[d];
    ct_tensor *distinct = ct__view_of(t, t->dtype, shape, t->strides, t->ndim, t->offset);
    st = distinct ? be->fill(distinct, value) : ct_last_error();
    ct__release(distinct);
  } else {
    st = be->fill(t, value);
  }
  if (st != CT_OK) return NULL;
  ct__bump_version(t);
  return t;
}

/* Under autograd the old values get a zero gradient (FillBackward). A value
 * the dtype cannot hold is refused before anything is recorded. */
ct_tensor *ct_fill_(ct_tensor *t, double value) {
  ct_inplace ip;
  if (!t || !ct__check_scalar_fits("fill_", value, t->dtype)) return NULL;
  if (!ct__ag_inplace_begin(&ip, "fill_", t, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_overwrite(t, t, "FillBackward")) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, fill(t, value));
}

ct_tensor *ct_zero_(ct_tensor *t) { return ct_fill_(t, 0.0); }
