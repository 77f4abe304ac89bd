/* PyTorch's default parameter initializations (torch.nn.init), drawn from the
 * Philox generator: kaiming_uniform_(a=sqrt(5)) for Linear/Conv weights, the
 * matching bias bound, normal for Embedding, constants for norms. */
#include <math.h>

#include "nn/module_internal.h"

double ct__kaiming_uniform_bound(int64_t fan_in) {
  if (fan_in <= 0) return 0.0;
  /* As torch: gain = calculate_gain('leaky_relu', a) = sqrt(2 / (1 + a^2));
   * std = gain / sqrt(fan_in); bound = sqrt(3) * std. */
  double a = sqrt(5.0);
  double gain = sqrt(2.0 / (1.0 + a * a));
  double std = gain / sqrt((double)fan_in);
  return sqrt(3.0) * std;
}

double ct__bias_bound(int64_t fan_in) { return fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0; }

static ct_tensor *new_param(const int64_t *shape, int ndim, ct_dtype dtype, const ct_module_opts *o) {
  ct_tensor_opts to = {.dtype = dtype, .device = o->device};
  return ct_empty(shape, ndim, &to);
}

/* Runs fill on t outside autograd; returns t or NULL (t freed). */
static ct_tensor *filled(ct_tensor *t, ct_tensor *result) {
  if (!result) {
    ct_free(t);
    return NULL;
  }
  return t;
}

ct_tensor *ct__init_uniform(const int64_t *shape, int ndim, double bound, const ct_module_opts *o) {
  ct_tensor *t = new_param(shape, ndim, o->dtype, o);
  if (!t) return NULL;
  if (bound == 0.0) return filled(t, ct_zero_(t));
  return filled(t, ct_uniform_(t, -bound, bound, o->generator));
}

ct_tensor *ct__init_normal(const int64_t *shape, int ndim, double mean, double std,
                           const ct_module_opts *o) {
  ct_tensor *t = new_param(shape, ndim, o->dtype, o);
  if (!t) return NULL;
  return filled(t, ct_normal_(t, mean, std, o->generator));
}

ct_tensor *ct__init_full(const int64_t *shape, int ndim, double value, ct_dtype dtype,
                         const ct_module_opts *o) {
  ct_tensor *t = new_param(shape, ndim, dtype, o);
  if (!t) return NULL;
  return filled(t, ct_fill_(t, value));
}
