/* Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_.
 *
 * clip_grad_norm_ reduces each gradient to its norm on its own device, gathers
 * the 0-d norms on the first gradient's device, reduces them once more and
 * scales every gradient by min(1, max_norm / (total + 1e-6)) with the
 * coefficient still on the device: the host reads nothing (a GPU keeps
 * running ahead) unless error_if_nonfinite asks it to look at the total. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

/* The gradients of params (NULL entries are an error, missing grads are
 * skipped) into a malloc'd array; -1 on error. */
static int collect_grads(const char *op, ct_tensor *const *params, int n, ct_tensor ***out) {
  *out = NULL;
  if (n < 0 || (n > 0 && !params)) {
    ct__fail(CT_ERR_ARG, "%s: expected n >= 0 parameters, got %d%s", op, n,
             n > 0 ? " and NULL" : "");
    return -1;
  }
  ct_tensor **g = ct__calloc((size_t)n + 1, sizeof *g);
  if (!g) {
    ct__fail(CT_ERR_OOM, "%s: out of host memory", op);
    return -1;
  }
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (!params[i]) {
      free(g);
      ct__fail(CT_ERR_ARG, "%s: parameter %d is NULL", op, i);
      return -1;
    }
    if (ct_grad(params[i])) g[k++] = ct_grad(params[i]);
  }
  *out = g;
  return k;
}

ct_tensor *ct_clip_grad_norm_(ct_tensor *const *params, int n, double max_norm, double norm_type,
                              bool error_if_nonfinite) {
  static const char op[] = "clip_grad_norm_";
  if (!(norm_type >= 0))
    return ct__fail(CT_ERR_ARG, "%s: norm_type must be >= 0 or inf, got %g", op, norm_type);
  if (isnan(max_norm)) return ct__fail(CT_ERR_ARG, "%s: max_norm is nan", op);
  ct_tensor **grads;
  int k = collect_grads(op, params, n, &grads);
  if (k < 0) return NULL;
  if (k == 0) { /* torch.tensor(0.) */
    free(grads);
    return ct_scalar(0.0, NULL);
  }
  ct_tensor **norms = ct__calloc((size_t)k, sizeof *norms);
  if (!norms) {
    free(grads);
    return ct__fail(CT_ERR_OOM, "%s: out of host memory", op);
  }
  ct_dtype dt = ct_dtype_of(grads[0]);
  for (int i = 1; i < k; i++) dt = ct_promote_types(dt, ct_dtype_of(grads[i]));
  ct_device dev = ct_device_of(grads[0]);
  ct_no_grad_begin();
  ct_scope_begin();
  bool ok = true;
  for (int i = 0; i < k && ok; i++) /* one reduction per gradient, on its device */
    ok = (norms[i] = ct_to(ct_cast(ct_norm(grads[i], norm_type, NULL), dt), dev, NULL)) != NULL;
  ct_tensor *total = ok ? ct_norm(ct_stack(norms, k, 0), norm_type, NULL) : NULL;
  if (total && error_if_nonfinite) {
    double v;
    if (ct_item(total, &v) != CT_OK) {
      total = NULL;
    } else if (!isfinite(v)) {
      total = ct__fail(CT_ERR_ARG,
                       "%s: the total norm of order %g of the gradients is %g, so they cannot be "
                       "clipped (set error_if_nonfinite false to scale them by it anyway)",
                       op, norm_type, v);
    }
  }
  ct_tensor *coef =
      total ? ct_clamp(ct_rdiv_scalar(ct_add_scalar(total, 1e-6), max_norm), -INFINITY, 1.0) : NULL;
  for (int i = 0; i < k && coef; i++) {
    ct_tensor *c = ct_to(ct_cast(coef, ct_dtype_of(grads[i])), ct_device_of(grads[i]), NULL);
    if (!c || !ct_mul_(grads[i], c)) coef = NULL;
  }
  if (coef) ct_keep(total);
  ct_scope_end();
  ct_no_grad_end();
  free(norms);
  free(grads);
  return coef ? total : NULL;
}

ct_status ct_clip_grad_value_(ct_tensor *const *params, int n, double clip_value) {
  static const char op[] = "clip_grad_value_";
  if (!(clip_value >= 0)) {
    ct__fail(CT_ERR_ARG, "%s: clip_value must be >= 0, got %g", op, clip_value);
    return CT_ERR_ARG;
  }
  ct_tensor **grads;
  int k = collect_grads(op, params, n, &grads);
  if (k < 0) return ct_last_error();
  ct_status st = CT_OK;
  ct_no_grad_begin();
  for (int i = 0; i < k && st == CT_OK; i++)
    if (!ct_clamp_(grads[i], -clip_value, clip_value)) st = ct_last_error();
  ct_no_grad_end();
  free(grads);
  return st;
}
