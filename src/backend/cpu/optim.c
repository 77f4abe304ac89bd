/* CPU optimizer updates: SGD (momentum, dampening, nesterov, weight decay),
 * Adam and AdamW (amsgrad), RMSprop and Adagrad, one fused pass per parameter with the formulas
 * of core/optim_math.h (torch.optim's single-tensor implementations op by op,
 * in the parameter's dtype). Parameters, gradients and state buffers are
 * contiguous, of one dtype (f32 or f64), of the same numel (the op layer
 * guarantees it). Elements are split across ctensor's thread pool for large
 * tensors (the kernels run on a range; ct__cpu_optimizer_step splits). */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/optim_math.h"
#include "core/parallel.h"

#define CT_TEMPLATE "backend/cpu/optim_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

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
  if (t->p->kind == CT_OPTIM_RMSPROP) {
    if (t->f32)
      rmsprop_f32(t->p, CT__AT(float, t->w), CT__AT(const float, t->g), CT__AT(float, t->s0),
                  CT__AT(float, t->s1), CT__AT(float, t->s2), n);
    else
      rmsprop_f64(t->p, CT__AT(double, t->w), CT__AT(const double, t->g), CT__AT(double, t->s0),
                  CT__AT(double, t->s1), CT__AT(double, t->s2), n);
  } else if (t->p->kind == CT_OPTIM_ADAGRAD) {
    if (t->f32)
      adagrad_f32(t->p, CT__AT(float, t->w), CT__AT(const float, t->g), CT__AT(float, t->s0), n);
    else
      adagrad_f64(t->p, CT__AT(double, t->w), CT__AT(const double, t->g), CT__AT(double, t->s0), n);
  } else if (t->p->kind == CT_OPTIM_SGD) {
    if (t->f32)
      sgd_f32(t->p, CT__AT(float, t->w), CT__AT(const float, t->g), CT__AT(float, t->s0), n);
    else
      sgd_f64(t->p, CT__AT(double, t->w), CT__AT(const double, t->g), CT__AT(double, t->s0), n);
  } else if (t->f32) {
    adam_f32(t->p, CT__AT(float, t->w), CT__AT(const float, t->g), CT__AT(float, t->s0),
             CT__AT(float, t->s1), CT__AT(float, t->s2), n);
  } else {
    adam_f64(t->p, CT__AT(double, t->w), CT__AT(const double, t->g), CT__AT(double, t->s0),
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
    optim_task t = {.p = p,
                    .f32 = w->dtype == CT_F32,
                    .w = ct__data(w),
                    .g = ct__data(grads[i]),
                    .s0 = CT__PTR(s0),
                    .s1 = CT__PTR(s1),
                    .s2 = CT__PTR(s2)};
    CT_ASSERT(t.f32 || w->dtype == CT_F64);
    CT_ASSERT(p->kind == CT_OPTIM_SGD || p->kind == CT_OPTIM_RMSPROP ||
              p->kind == CT_OPTIM_ADAGRAD || (s0 && s1));
    CT_ASSERT((p->kind != CT_OPTIM_RMSPROP && p->kind != CT_OPTIM_ADAGRAD) || s0);
    ct__parallel_for(w->numel, CT_PARALLEL_GRAIN, optim_range, &t);
  }
  return CT_OK;
}
