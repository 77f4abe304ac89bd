/* ctensor/optim.h: optimizers and learning-rate schedules.
 *
 *   ct_tensor *params[64];
 *   int n = ct_module_parameters(net, params, NULL, 64);
 *   ct_optimizer *opt = ct_sgd_new(params, n, &(ct_sgd_opts){.lr = 0.01, .momentum = 0.9});
 *   for (...) {
 *     ct_optimizer_zero_grad(opt);
 *     ct_backward(loss, NULL, NULL);
 *     ct_optimizer_step(opt);
 *   }
 *   ct_optimizer_free(opt);
 *
 * Updates follow torch.optim exactly (same formulas, same order of
 * operations). State (momentum buffers, Adam moments) lives on each
 * parameter's device. Steps run without recording gradients. */
#ifndef CTENSOR_OPTIM_H
#define CTENSOR_OPTIM_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_optimizer ct_optimizer;

typedef struct ct_sgd_opts {
  double lr;
  double momentum;
  double dampening;
  double weight_decay;
  bool nesterov;
} ct_sgd_opts;

/* Adam and AdamW. A zeroed field means torch's default, so designated
 * initializers name only what differs: &(ct_adam_opts){.lr = 3e-4}. Values
 * that are themselves 0 (beta1 = 0, AdamW without decay, lr or eps 0) need
 * as_given: start from ct_adam_defaults() / ct_adamw_defaults() (which set
 * it) and change fields; every field is then taken as it is. */
typedef struct ct_adam_opts {
  double lr;           /* 0 means 1e-3 */
  double beta1, beta2; /* 0 means 0.9, 0.999 */
  double eps;          /* 0 means 1e-8 */
  double weight_decay; /* Adam: L2 added to the gradient (default 0);
                          AdamW: decoupled (0 means 0.01) */
  bool amsgrad;
  bool as_given;       /* true: no field is replaced by a default */
} ct_adam_opts;

/* torch's defaults with as_given set: Adam (weight_decay 0) and AdamW (0.01). */
CT_API ct_adam_opts ct_adam_defaults(void);
CT_API ct_adam_opts ct_adamw_defaults(void);

/* The optimizer keeps a reference to each parameter: contiguous f32/f64 leaf
 * tensors, each listed once. SGD needs opts (the learning rate); Adam's opts
 * may be NULL (defaults). Invalid hyper-parameters fail with CT_ERR_ARG as in
 * torch (negative lr, beta outside [0, 1), nesterov without momentum or with
 * dampening, ...). */
CT_API ct_optimizer *ct_sgd_new(ct_tensor *const *params, int n, const ct_sgd_opts *opts);
CT_API ct_optimizer *ct_adam_new(ct_tensor *const *params, int n, const ct_adam_opts *opts);
CT_API ct_optimizer *ct_adamw_new(ct_tensor *const *params, int n, const ct_adam_opts *opts);
CT_API void ct_optimizer_free(ct_optimizer *opt); /* NULL is a no-op */

/* One update of every parameter that has a gradient. */
CT_API ct_status ct_optimizer_step(ct_optimizer *opt);
/* Clears the gradients (set to none, as torch's default). */
CT_API void ct_optimizer_zero_grad(ct_optimizer *opt);
CT_API double ct_optimizer_get_lr(const ct_optimizer *opt);
CT_API void ct_optimizer_set_lr(ct_optimizer *opt, double lr);
/* Number of steps taken. */
CT_API int64_t ct_optimizer_step_count(const ct_optimizer *opt);
/* The parameters opt updates, in the order they were given: fills at most max
 * (borrowed references) and returns the total count. */
CT_API int ct_optimizer_parameters(const ct_optimizer *opt, ct_tensor **params, int max);
/* State tensors for checkpoints, named "<param index>.<kind>" (e.g.
 * "3.momentum_buffer", "0.exp_avg", "0.exp_avg_sq", "0.max_exp_avg_sq");
 * borrowed (names valid until the state changes or the optimizer is freed).
 * Returns the total count. */
CT_API int ct_optimizer_state(const ct_optimizer *opt, ct_tensor **tensors, const char **names,
                              int max);
/* Restores state saved by ct_optimizer_state (copies values in, across
 * devices and dtypes; creates the buffers if needed). Everything is checked
 * before anything changes: unknown names fail with CT_ERR_ARG, wrong shapes
 * with CT_ERR_SHAPE; an Adam parameter needs all its moments or none. Sets the
 * step count, which is also each restored parameter's Adam step. */
CT_API ct_status ct_optimizer_load_state(ct_optimizer *opt, ct_tensor *const *tensors,
                                         const char *const *names, int n, int64_t step_count);

/* Learning-rate schedules: call ct_lr_scheduler_step once per epoch. The
 * base lr is the optimizer's lr when the schedule is made; the schedule
 * borrows the optimizer (free the schedule first). step uses torch's
 * recursive form, set_epoch its closed form. */
typedef struct ct_lr_scheduler ct_lr_scheduler;
/* lr = base_lr * gamma^(epoch / step_size) (torch.optim.lr_scheduler.StepLR). */
CT_API ct_lr_scheduler *ct_step_lr_new(ct_optimizer *opt, int64_t step_size, double gamma);
/* Cosine annealing from base_lr to eta_min over t_max epochs (CosineAnnealingLR). */
CT_API ct_lr_scheduler *ct_cosine_lr_new(ct_optimizer *opt, int64_t t_max, double eta_min);
CT_API void ct_lr_scheduler_step(ct_lr_scheduler *s);
CT_API int64_t ct_lr_scheduler_epoch(const ct_lr_scheduler *s);
CT_API void ct_lr_scheduler_set_epoch(ct_lr_scheduler *s, int64_t epoch);
CT_API void ct_lr_scheduler_free(ct_lr_scheduler *s); /* NULL is a no-op */

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_OPTIM_H */
