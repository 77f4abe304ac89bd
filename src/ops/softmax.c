/* softmax / log_softmax along one dim: checks (floating input, dim range),
 * result allocation, then the backend's softmax slot. */
#include "ops/reduce.h"

#include "amp/amp_internal.h"
#include "autograd/autograd_internal.h"

ct_tensor *ct__softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log) {
  if (!x) return NULL;
  const char *name = log ? "log_softmax" : "softmax";
  if (!ct_dtype_is_floating(x->dtype))
    return ct__fail(CT_ERR_DTYPE,
                    "%s: expected a floating-point input, got %s (cast it first, e.g. "
                    "ct_cast(x, CT_F32))",
                    name, ct_dtype_name(x->dtype));
  int d = dim;
  if (!ct__wrap_dim(&d, x->ndim))
    return ct__fail(CT_ERR_ARG, "%s: dim %d out of range for a %d-d tensor", name, dim, x->ndim);
  const ct_backend *be = ct__backend_for(name, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, softmax, name, x);
  ct_tensor *res = ct__result_for(name, out, x->shape, x->ndim, x->dtype, ct__device(x));
  if (!res) return NULL;
  return ct__finish_out(out, res, be->softmax(res, x, d, log));
}

static ct_tensor *softmax_out(ct_tensor *out, const ct_tensor *x, int dim, bool log) {
  if (!out) {
    if (ct_last_error() != CT_OK) return NULL;
    return ct__fail(CT_ERR_ARG, "%s_out: out is NULL", log ? "log_softmax" : "softmax");
  }
  if (x && !ct__ag_out_allowed(log ? "log_softmax_out" : "softmax_out", out, &x, 1)) return NULL;
  return ct__softmax(out, x, dim, log);
}

ct_tensor *ct_softmax(const ct_tensor *x, int dim) {
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, NULL, NULL)) {
    ct_tensor *r = ct_softmax(ac.t[0], dim);
    ct__autocast_done(&ac);
    return r;
  }
  return ct__track(ct__ag_softmax(ct__softmax(NULL, x, dim, false), x, dim, false));
}
ct_tensor *ct_log_softmax(const ct_tensor *x, int dim) {
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_F32, x, NULL, NULL)) {
    ct_tensor *r = ct_log_softmax(ac.t[0], dim);
    ct__autocast_done(&ac);
    return r;
  }
  return ct__track(ct__ag_softmax(ct__softmax(NULL, x, dim, true), x, dim, true));
}
ct_tensor *ct_softmax_out(ct_tensor *out, const ct_tensor *x, int dim) {
  return softmax_out(out, x, dim, false);
}
ct_tensor *ct_log_softmax_out(ct_tensor *out, const ct_tensor *x, int dim) {
  return softmax_out(out, x, dim, true);
}
