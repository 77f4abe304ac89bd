/* CPU optimizer updates: SGD (momentum, dampening, nesterov, weight decay),
 * Adam and AdamW (amsgrad), one fused pass per parameter.
 *
 * Each update follows torch.optim's single-tensor implementation op by op, in
 * the parameter's dtype (scalars rounded to it as ATen does), so results match
 * PyTorch to the last bit or so. Parameters, gradients and state buffers are
 * contiguous, of one dtype (f32 or f64), of the same numel (the op layer
 * guarantees it). Elements are split across ctensor's thread pool for large
 * tensors (the kernels run on a range; ct__cpu_optimizer_step splits). */
#include <math.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"

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

/* One parameter's update, over elements [b, e) (a chunk of ct__parallel_for). */
typedef struct optim_task {
  const ct_optim_params *p;
  bool f32;
  char *w, *s0, *s1, *s2; /* s*: NULL when absent */
  const char *g;
} optim_task;

static void optim_range(int64_t b, int64_t e, void *vt) {
  const optim_task *t = vt;
  size_t off = (size_t)b * (t->f32 ? sizeof(float) : sizeof(double));
#define CT__AT(T, q) ((q) ? (T *)((q) + off) : NULL)
  int64_t n = e - b;
  if (t->p->kind == CT_OPTIM_SGD) {
    if (t->f32) sgd_float(t->p, CT__AT(float, t->w), CT__AT(const float, t->g), CT__AT(float, t->s0), n);
    else sgd_double(t->p, CT__AT(double, t->w), CT__AT(const double, t->g), CT__AT(double, t->s0), n);
  } else if (t->f32) {
    adam_float(t->p, CT__AT(float, t->w), CT__AT(const float, t->g), CT__AT(float, t->s0),
               CT__AT(float, t->s1), CT__AT(float, t->s2), n);
  } else {
    adam_double(t->p, CT__AT(double, t->w), CT__AT(const double, t->g), CT__AT(double, t->s0),
                CT__AT(double, t->s1), CT__AT(double, t->s2), n);
  }
#undef CT__AT
}

/* Data pointer of an optional state tensor. */
#define CT__PTR(t) ((t) ? (char *)ct__data(t) : NULL)

ct_status ct__cpu_optimizer_step(const ct_optim_params *p, ct_tensor *const *params,
                                 ct_tensor *const *grads, ct_tensor *const *state0,
                                 ct_tensor *const *state1, ct_tensor *const *state2, int n) {
  for (int i = 0; i < n; i++) {
    ct_tensor *w = params[i];
    ct_tensor *s0 = state0 ? state0[i] : NULL;
    ct_tensor *s1 = state1 ? state1[i] : NULL;
    ct_tensor *s2 = state2 ? state2[i] : NULL;
    optim_task t = {.p = p, .f32 = w->dtype == CT_F32, .w = ct__data(w), .g = ct__data(grads[i]),
                    .s0 = CT__PTR(s0), .s1 = CT__PTR(s1), .s2 = CT__PTR(s2)};
    CT_ASSERT(t.f32 || w->dtype == CT_F64);
    CT_ASSERT(p->kind == CT_OPTIM_SGD || (s0 && s1));
    ct__parallel_for(w->numel, CT_PARALLEL_GRAIN, optim_range, &t);
  }
  return CT_OK;
}
