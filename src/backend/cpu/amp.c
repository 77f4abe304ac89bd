/* CPU side of the gradient scaler's unscale (backend.h's amp_unscale): every
 * gradient multiplied in place by 1/scale and found_inf set to 1 if an
 * element was inf or NaN, in one pass per gradient instead of four ops.
 *
 * The product is mul_scalar_'s, bit for bit: f32 in float with the scale
 * rounded to float once, f64 in double, f16/bf16 through f32 and rounded to
 * nearest even on store (core/half_dtype.h, as ct__half_rows). The check
 * reads the value before the product, as torch. Large gradients are split
 * across threads; each range raises a shared flag. */
#include <math.h>
#include <stdatomic.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/half_dtype.h"

typedef struct unscale_ctx {
  char *data;
  ct_dtype dtype;
  double inv;
  atomic_bool bad;
} unscale_ctx;

static void unscale_range(int64_t begin, int64_t end, void *vctx) {
  unscale_ctx *c = vctx;
  bool bad = false;
  switch (c->dtype) {
    case CT_F32: {
      float *g = (float *)c->data, s = (float)c->inv;
      for (int64_t i = begin; i < end; i++) {
        bad |= !isfinite(g[i]);
        g[i] = g[i] * s;
      }
      break;
    }
    case CT_F64: {
      double *g = (double *)c->data, s = c->inv;
      for (int64_t i = begin; i < end; i++) {
        bad |= !isfinite(g[i]);
        g[i] = g[i] * s;
      }
      break;
    }
    default: { /* f16, bf16 */
      char *g = c->data;
      float s = (float)c->inv;
      for (int64_t i = begin; i < end; i++) {
        float v = ct__half_load(g + 2 * i, c->dtype);
        bad |= !isfinite(v);
        ct__half_store(g + 2 * i, c->dtype, v * s);
      }
      break;
    }
  }
  if (bad) atomic_store_explicit(&c->bad, true, memory_order_relaxed);
}

ct_status ct__cpu_amp_unscale(ct_tensor *const *grads, int n, double inv_scale,
                              ct_tensor *found_inf) {
  bool bad = false;
  for (int i = 0; i < n; i++) {
    unscale_ctx c = {.data = ct__data(grads[i]), .dtype = grads[i]->dtype, .inv = inv_scale};
    atomic_init(&c.bad, false);
    ct__parallel_for(grads[i]->numel, 0, unscale_range, &c);
    bad |= atomic_load(&c.bad);
  }
  if (bad) *(float *)ct__data(found_inf) = 1.0f;
  return CT_OK;
}
