/* CPU optimizer updates: SGD (momentum, dampening, nesterov, weight decay),
 * Adam and AdamW (amsgrad), one fused pass per parameter.
 *
 * Each update follows torch.optim's single-tensor implementation op by op, in
 * the parameter's dtype (scalars rounded to it as ATen does), so results match
 * PyTorch to the last bit or so. Parameters, gradients and state buffers are
 * contiguous, of one dtype (f32 or f64), of the same numel (the op layer
 * guarantees it). Elements are split over OpenMP threads for large tensors. */
#include <math.h>

#include "backend/cpu/cpu_kernels.h"

/* SGD on n elements (torch.optim.sgd._single_tensor_sgd):
 *   d = g + wd * p                                  (if wd != 0)
 *   buf = first ? d : buf * mom + (1 - dampening) * d (if mom != 0)
 *   d = nesterov ? d + mom * buf : buf
 *   p = p + (-lr) * d */
#define CT__SGD_KERNEL(T)                                                                   \
  static void sgd_##T(const ct_optim_params *o, T *restrict p, const T *restrict g,       \
                      T *restrict buf, int64_t n) {                                         \
    const T wd = (T)o->weight_decay, mom = (T)o->momentum, damp1 = (T)(1.0 - o->dampening); \
    const T neg_lr = (T)(-o->lr);                                                           \
    const bool use_wd = o->weight_decay != 0, first = o->first_step, nesterov = o->nesterov; \
    _Pragma("omp parallel for schedule(static) if (n > CT_PARALLEL_GRAIN)")               \
    for (int64_t i = 0; i < n; i++) {                                                       \
      T d = g[i];                                                                           \
      if (use_wd) d = d + wd * p[i];                                                        \
      if (buf) {                                                                            \
        T b = first ? d : buf[i] * mom + damp1 * d;                                         \
        buf[i] = b;                                                                         \
        d = nesterov ? d + mom * b : b;                                                     \
      }                                                                                     \
      p[i] = p[i] + neg_lr * d;                                                             \
    }                                                                                       \
  }

/* Adam / AdamW on n elements (torch.optim.adam._single_tensor_adam):
 *   AdamW: p = p * (1 - lr * wd);  Adam: g = g + wd * p (if wd != 0)
 *   m = m * b1 + (1 - b1) * g
 *   v = v * b2 + ((1 - b2) * g) * g
 *   vmax = max(vmax, v)                             (amsgrad)
 *   denom = sqrt(amsgrad ? vmax : v) / sqrt(1 - b2^t) + eps
 *   p = p + ((-lr / (1 - b1^t)) * m) / denom */
#define CT__ADAM_KERNEL(T, SQRT)                                                            \
  static void adam_##T(const ct_optim_params *o, T *restrict p, const T *restrict g,      \
                       T *restrict m, T *restrict v, T *restrict vmax, int64_t n) {        \
    const bool decoupled = o->kind == CT_OPTIM_ADAMW, use_wd = o->weight_decay != 0;       \
    const T decay = (T)(1.0 - o->lr * o->weight_decay), wd = (T)o->weight_decay;           \
    const T b1 = (T)o->beta1, b2 = (T)o->beta2;                                             \
    const T one_b1 = (T)(1.0 - o->beta1), one_b2 = (T)(1.0 - o->beta2);                    \
    const double bc1 = 1.0 - pow(o->beta1, (double)o->step);                                \
    const double bc2 = 1.0 - pow(o->beta2, (double)o->step);                                \
    const T neg_step = (T)(-(o->lr / bc1)), bc2_sqrt = (T)sqrt(bc2), eps = (T)o->eps;       \
    _Pragma("omp parallel for schedule(static) if (n > CT_PARALLEL_GRAIN)")               \
    for (int64_t i = 0; i < n; i++) {                                                       \
      T pi = p[i], gi = g[i];                                                               \
      if (decoupled) pi = pi * decay;                                                       \
      else if (use_wd) gi = gi + wd * pi;                                                   \
      T mi = m[i] * b1 + one_b1 * gi;                                                       \
      T vi = v[i] * b2 + one_b2 * gi * gi;                                                  \
      m[i] = mi;                                                                            \
      v[i] = vi;                                                                            \
      T s = vi;                                                                             \
      if (vmax) {                                                                           \
        T mx = vmax[i];                                                                     \
        s = (mx > vi || isnan(mx)) ? mx : vi;                                               \
        vmax[i] = s;                                                                        \
      }                                                                                     \
      T denom = SQRT(s) / bc2_sqrt + eps;                                                   \
      p[i] = pi + neg_step * mi / denom;                                                    \
    }                                                                                       \
  }

CT__SGD_KERNEL(float)
CT__SGD_KERNEL(double)
CT__ADAM_KERNEL(float, sqrtf)
CT__ADAM_KERNEL(double, sqrt)
#undef CT__SGD_KERNEL
#undef CT__ADAM_KERNEL

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
      if (f32) sgd_float(p, ct__data(w), ct__data(g), CT__PTR(float, s0), numel);
      else sgd_double(p, ct__data(w), ct__data(g), CT__PTR(double, s0), numel);
    } else {
      CT_ASSERT(s0 && s1);
      if (f32)
        adam_float(p, ct__data(w), ct__data(g), ct__data(s0), ct__data(s1), CT__PTR(float, s2), numel);
      else
        adam_double(p, ct__data(w), ct__data(g), ct__data(s0), ct__data(s1), CT__PTR(double, s2),
                    numel);
    }
  }
  return CT_OK;
}
