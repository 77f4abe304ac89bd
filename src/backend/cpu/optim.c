/* CPU optimizer updates: SGD (momentum, dampening, nesterov, weight decay),
 * Adam and AdamW (amsgrad), one fused pass per parameter with the formulas
 * of core/optim_math.h (torch.optim's single-tensor implementations op by op,
 * in the parameter's dtype). Parameters, gradients and state buffers are
 * contiguous, of one dtype (f32 or f64), of the same numel (the op layer
 * guarantees it). Elements are split over OpenMP threads for large tensors. */
#include "backend/cpu/cpu_kernels.h"
#include "core/optim_math.h"

#define CT_TEMPLATE "backend/cpu/optim_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

/* Data pointer of an optional state tensor. */
#define CT__PTR(T, t) ((t) ? (T *)ct__data(t) : NULL)

ct_status ct__cpu_optimizer_step(const ct_optim_params *p, ct_tensor *const *params,
                                 ct_tensor *const *grads, ct_tensor *const *state0,
                                 ct_tensor *const *state1, ct_tensor *const *state2, int n) {
  for (int i = 0; i < n; i++) {
    ct_tensor *w = params[i];
    const ct_tensor *g = grads[i];
    int64_t numel = w->numel;
    ct_tensor *s0 = state0 ? state0[i] : NULL;
    ct_tensor *s1 = state1 ? state1[i] : NULL;
    ct_tensor *s2 = state2 ? state2[i] : NULL;
    bool f32 = w->dtype == CT_F32;
    CT_ASSERT(f32 || w->dtype == CT_F64);
    if (p->kind == CT_OPTIM_SGD) {
      if (f32)
        sgd_f32(p, ct__data(w), ct__data(g), CT__PTR(float, s0), numel);
      else
        sgd_f64(p, ct__data(w), ct__data(g), CT__PTR(double, s0), numel);
    } else {
      CT_ASSERT(s0 && s1);
      if (f32)
        adam_f32(p, ct__data(w), ct__data(g), ct__data(s0), ct__data(s1), CT__PTR(float, s2),
                 numel);
      else
        adam_f64(p, ct__data(w), ct__data(g), ct__data(s0), ct__data(s1), CT__PTR(double, s2),
                 numel);
    }
  }
  return CT_OK;
}
