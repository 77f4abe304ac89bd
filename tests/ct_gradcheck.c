/* Finite-difference gradient checks: see ct_gradcheck.h. */
#include "ct_gradcheck.h"

ct_tensor *ct_gradcheck_input(const int64_t *shape, int ndim, double lo, double hi, unsigned seed) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  double *v = ct_test_random(n, lo, hi, seed);
  ct_tensor *t = ct_test_make(v, shape, ndim, CT_F64, CT_LAYOUT_CONTIG);
  free(v);
  return ct_requires_grad_(t, true);
}

/* sum(f(inputs) * w) as a double, without recording. */
static bool objective(ct_gradcheck_fn f, void *ctx, ct_tensor *const *inputs, const ct_tensor *w,
                      double *out) {
  ct_scope_begin();
  ct_no_grad_begin();
  ct_tensor *y = f(inputs, ctx);
  ct_tensor *s = ct_sum(ct_mul(ct_cast(y, CT_F64), w), NULL);
  bool ok = s && ct_item(s, out) == CT_OK;
  ct_no_grad_end();
  ct_scope_end();
  return ok;
}

bool ct_gradcheck_at(const char *file, int line, const char *name, ct_gradcheck_fn f, void *ctx,
                     ct_tensor *const *inputs, int n, double eps, double atol, double rtol) {
  bool ok = true;
  ct_scope_begin();
  for (int i = 0; i < n; i++) ct_set_grad(inputs[i], NULL);
  ct_tensor *y = f(inputs, ctx);
  if (!y) {
    ct_test_fail(file, line, "%s: forward failed: %s", name, ct_last_error_message());
    ct_scope_end();
    return false;
  }
  int64_t ny = ct_numel(y);
  double *wv = ct_test_random(ny, -1, 1, 12345);
  ct_tensor *w = ct_test_make(wv, ct_shape(y), ct_ndim(y), CT_F64, CT_LAYOUT_CONTIG);
  free(wv);
  ct_tensor *s = ct_sum(ct_mul(ct_cast(y, CT_F64), w), NULL);
  if (ct_backward(s, NULL, NULL) != CT_OK) {
    ct_test_fail(file, line, "%s: backward failed: %s", name, ct_last_error_message());
    ct_scope_end();
    return false;
  }
  for (int i = 0; i < n && ok; i++) {
    if (!ct_requires_grad(inputs[i])) continue;
    ct_tensor *x = inputs[i];
    int64_t nx = ct_numel(x);
    double *analytic = ct_grad(x) ? ct_test_values(ct_grad(x)) : calloc((size_t)(nx ? nx : 1), sizeof(double));
    /* perturb a CPU copy element by element and write it back */
    double *xv = ct_test_values(x);
    for (int64_t j = 0; j < nx && ok; j++) {
      double orig = xv[j], plus, minus;
      ct_tensor *flat = ct_detach(x); /* same storage, no autograd */
      ct_tensor *fv = ct_reshape(flat, CT_SHAPE(-1));
      ct_tensor *elem = ct_narrow(fv, 0, j, 1);
      ct_fill_(elem, orig + eps);
      bool okp = objective(f, ctx, inputs, w, &plus);
      ct_fill_(elem, orig - eps);
      bool okm = objective(f, ctx, inputs, w, &minus);
      ct_fill_(elem, orig);
      if (!okp || !okm) {
        ct_test_fail(file, line, "%s: forward failed while perturbing: %s", name, ct_last_error_message());
        ok = false;
        break;
      }
      double numeric = (plus - minus) / (2 * eps);
      if (fabs(numeric - analytic[j]) > atol + rtol * fabs(numeric)) {
        ct_test_fail(file, line, "%s: d/d input %d [%lld]: analytic %.10g, numeric %.10g", name, i,
                     (long long)j, analytic[j], numeric);
        ok = false;
      }
    }
    free(xv);
    free(analytic);
  }
  ct_scope_end();
  return ok;
}
