/* Finite-difference gradient checks (as torch.autograd.gradcheck).
 *
 * f maps the inputs to an output tensor. The check draws fixed weights w of
 * the output's shape, backpropagates sum(f(x) * w) and compares each input's
 * gradient with central differences (f(x + eps) - f(x - eps)) / (2 eps) of the
 * same scalar, element by element. Inputs should be f64 leaves with
 * requires_grad on the device under test; inputs passed with requires_grad
 * false are held constant (integer indices, masks). */
#ifndef CT_GRADCHECK_H
#define CT_GRADCHECK_H

#include "ct_test.h"

typedef ct_tensor *(*ct_gradcheck_fn)(ct_tensor *const *inputs, void *ctx);

/* Reports failures through the test harness; returns true when all match. */
bool ct_gradcheck_at(const char *file, int line, const char *name, ct_gradcheck_fn f, void *ctx,
                     ct_tensor *const *inputs, int n, double eps, double atol, double rtol);
#define CHECK_GRADIENTS(name, f, ctx, inputs, n) \
  ct_gradcheck_at(__FILE__, __LINE__, name, f, ctx, inputs, n, 1e-6, 1e-5, 1e-4)

/* An f64 leaf requiring grad on the device under test, of shape, with values
 * uniform in [lo, hi) from seed. */
ct_tensor *ct_gradcheck_input(const int64_t *shape, int ndim, double lo, double hi, unsigned seed);

#endif /* CT_GRADCHECK_H */
