/* In-place fills. */
#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

static ct_tensor *fill(ct_tensor *t, double value) {
  if (ct__has_internal_overlap(t))
    return ct__fail(CT_ERR_ARG, "fill_: the tensor has elements that share memory (an expanded view)");
  const ct_backend *be = ct__backend_for("fill_", t);
  if (!be || be->fill(t, value) != CT_OK) return NULL;
  ct__bump_version(t);
  return t;
}

/* Under autograd the old values get a zero gradient (FillBackward). */
ct_tensor *ct_fill_(ct_tensor *t, double value) {
  ct_inplace ip;
  if (!t || !ct__ag_inplace_begin(&ip, "fill_", t, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_overwrite(t, t, "FillBackward")) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, fill(t, value));
}

ct_tensor *ct_zero_(ct_tensor *t) { return ct_fill_(t, 0.0); }
