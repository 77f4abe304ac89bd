/* ctensor/optim.h: optimizers and learning-rate schedules.
 *
 *   int n = ct_module_parameters(net, NULL, NULL, 0);  // the count first
 *   ct_tensor **params = malloc(n * sizeof *params);
 *   ct_module_parameters(net, params, NULL, n);
 *   ct_optimizer *opt = ct_sgd_new(params, n, &(ct_sgd_opts){.lr = 0.01, .momentum = 0.9});
 *   free(params);  // the optimizer holds its own references
 *   for (...) {
 *     ct_optimizer_zero_grad(opt);
 *     ct_backward(loss, NULL, NULL);
 *     ct_optimizer_step(opt);
 *   }
 *   ct_optimizer_free(opt);
 *
 * SGD, Adam, AdamW, RMSprop and Adagrad. Updates follow torch.optim exactly (same formulas, same
 * order of operations). State (momentum buffers, Adam moments) lives on each parameter's device.
 * Steps run without recording gradients. */
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
  bool as_given; /* true: no field is replaced by a default */
} ct_adam_opts;

/* torch's defaults with as_given set: Adam (weight_decay 0) and AdamW (0.01). */
CT_API ct_adam_opts ct_adam_defaults(void);
CT_API ct_adam_opts ct_adamw_defaults(void);

/* RMSprop (torch.optim.RMSprop). Zeroed fields mean torch's defaults as in
 * ct_adam_opts; as_given (set by ct_rmsprop_defaults()) takes every field as
 * it is. */
typedef struct ct_rmsprop_opts {
  double lr;           /* 0 means 1e-2 */
  double alpha;        /* smoothing constant of the squared average; 0 means 0.99 */
  double eps;          /* added to the root; 0 means 1e-8 */
  double weight_decay; /* L2 added to the gradient (default 0) */
  double momentum;     /* default 0 (no momentum buffer) */
  bool centered;       /* divide by the estimated variance (square_avg - grad_avg^2) */
  bool as_given;
} ct_rmsprop_opts;
CT_API ct_rmsprop_opts ct_rmsprop_defaults(void);

/* Adagrad (torch.optim.Adagrad): the step size at step t is
 * lr / (1 + (t - 1) * lr_decay); each parameter's sum of squared gradients
 * starts at initial_accumulator_value. Zeroed fields mean torch's defaults
 * unless as_given (set by ct_adagrad_defaults()). */
typedef struct ct_adagrad_opts {
  double lr;                        /* 0 means 1e-2 */
  double lr_decay;                  /* default 0 */
  double weight_decay;              /* L2 added to the gradient (default 0) */
  double initial_accumulator_value; /* default 0 */
  double eps;                       /* 0 means 1e-10 */
  bool as_given;
} ct_adagrad_opts;
CT_API ct_adagrad_opts ct_adagrad_defaults(void);

/* The optimizer keeps a reference to each parameter: contiguous f32/f64 leaf
 * tensors, each listed once. SGD needs opts (the learning rate); Adam's opts
 * may be NULL (defaults). Invalid hyper-parameters fail with CT_ERR_ARG as in
 * torch (negative lr, beta outside [0, 1), nesterov without momentum or with
 * dampening, ...). */
CT_API ct_optimizer *ct_sgd_new(ct_tensor *const *params, int n, const ct_sgd_opts *opts);
CT_API ct_optimizer *ct_adam_new(ct_tensor *const *params, int n, const ct_adam_opts *opts);
CT_API ct_optimizer *ct_adamw_new(ct_tensor *const *params, int n, const ct_adam_opts *opts);
/* RMSprop and Adagrad; opts may be NULL (torch's defaults). Negative lr,
 * alpha, eps, momentum, weight_decay, lr_decay or initial_accumulator_value
 * fail with CT_ERR_ARG, as in torch. */
CT_API ct_optimizer *ct_rmsprop_new(ct_tensor *const *params, int n, const ct_rmsprop_opts *opts);
CT_API ct_optimizer *ct_adagrad_new(ct_tensor *const *params, int n, const ct_adagrad_opts *opts);
CT_API void ct_optimizer_free(ct_optimizer *opt); /* NULL is a no-op */

/* One update of every parameter that has a gradient. */
CT_API ct_status ct_optimizer_step(ct_optimizer *opt);
/* Clears the gradients (set to none, as torch's default). */
CT_API void ct_optimizer_zero_grad(ct_optimizer *opt);
CT_API double ct_optimizer_get_lr(const ct_optimizer *opt);
CT_API void ct_optimizer_set_lr(ct_optimizer *opt, double lr);
/* The momentum term: SGD's and RMSprop's momentum, Adam's and AdamW's beta1
 * (what torch's OneCycleLR cycles). set checks it as the constructors do
 * (SGD: >= 0, > 0 with nesterov; RMSprop: >= 0; beta1 in [0, 1)), else
 * CT_ERR_ARG and no change; Adagrad has none (get: 0, set: CT_ERR_ARG, as
 * torch's OneCycleLR refuses it). An SGD optimizer made without momentum
 * starts its momentum buffers at the next step, from the gradient, as torch
 * does; an RMSprop one starts them at zero. */
CT_API double ct_optimizer_get_momentum(const ct_optimizer *o);
CT_API ct_status ct_optimizer_set_momentum(ct_optimizer *o, double momentum);
/* ---- Parameter groups (torch's param_groups) ----------------------------------
 *
 * The parameters given to a constructor are group 0, with the constructor's
 * options; ct_optimizer_add_param_group adds more, each with its own lr,
 * weight decay and momentum term (and Adam's beta2); the other options
 * (nesterov, dampening, eps, amsgrad, alpha, centered, lr_decay, ...) are
 * the constructor's. Parameter indices (ct_optimizer_parameters, the state's
 * names) run over the groups in order. set_lr and set_momentum above change
 * every group, get_lr and get_momentum read group 0's; the schedules change
 * each group's lr from its own base lr, as torch's.
 *
 *   ct_optimizer *opt = ct_sgd_new(weights, nw, &(ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
 *   ct_param_group_opts g = ct_optimizer_group_defaults(opt);
 *   g.lr = 0.01, g.weight_decay = 0;  // biases: smaller lr, no decay
 *   ct_optimizer_add_param_group(opt, biases, nb, &g);
 */
typedef struct ct_param_group_opts {
  double lr;
  double weight_decay;
  double momentum; /* SGD's and RMSprop's momentum, Adam's and AdamW's beta1; Adagrad: unused */
  double beta2;    /* Adam and AdamW */
} ct_param_group_opts;
/* The constructor's options (what torch's add_param_group fills in): start
 * from these and change what differs; every field is taken as it is. */
CT_API ct_param_group_opts ct_optimizer_group_defaults(const ct_optimizer *opt);
/* Adds a group of n parameters (none already in the optimizer, checked as
 * the constructors check theirs) with opts (NULL: the defaults), checked as
 * the constructors do (CT_ERR_ARG). Returns the group's index, or -1. */
CT_API int ct_optimizer_add_param_group(ct_optimizer *opt, ct_tensor *const *params, int n,
                                        const ct_param_group_opts *opts);
CT_API int ct_optimizer_num_groups(const ct_optimizer *opt);
/* Group `group`'s current options; CT_ERR_ARG for a group that is not there. */
CT_API ct_status ct_optimizer_get_group(const ct_optimizer *opt, int group,
                                        ct_param_group_opts *out);
CT_API double ct_optimizer_get_group_lr(const ct_optimizer *opt, int group); /* 0 if none */
CT_API ct_status ct_optimizer_set_group_lr(ct_optimizer *opt, int group, double lr);

/* Number of steps taken. */
CT_API int64_t ct_optimizer_step_count(const ct_optimizer *opt);
/* The parameters opt updates, in the order they were given: fills at most max
 * (borrowed references) and returns the total count. */
CT_API int ct_optimizer_parameters(const ct_optimizer *opt, ct_tensor **params, int max);
/* State tensors for checkpoints, named "<param index>.<kind>" (e.g.
 * "3.momentum_buffer", "0.exp_avg", "0.exp_avg_sq", "0.max_exp_avg_sq";
 * RMSprop: "square_avg", "momentum_buffer", "grad_avg"; Adagrad: "sum");
 * borrowed (names valid until the state changes or the optimizer is freed).
 * Returns the total count. */
CT_API int ct_optimizer_state(const ct_optimizer *opt, ct_tensor **tensors, const char **names,
                              int max);
/* Restores state saved by ct_optimizer_state (copies values in, across
 * devices and dtypes; creates the buffers if needed). Everything is checked
 * before anything changes: unknown names fail with CT_ERR_ARG, wrong shapes
 * with CT_ERR_SHAPE; an Adam, RMSprop or Adagrad parameter needs all its
 * state tensors or none. Sets the step count, which is also each restored
 * parameter's step (Adam's bias correction, Adagrad's lr decay). */
CT_API ct_status ct_optimizer_load_state(ct_optimizer *opt, ct_tensor *const *tensors,
                                         const char *const *names, int n, int64_t step_count);

/* ---- Gradient clipping (torch.nn.utils) ---------------------------------- */

/* Scales the gradients of params (those without one are skipped) in place so
 * that their total norm of order norm_type (>= 0; INFINITY: the largest
 * |element|) is at most max_norm: each gradient is multiplied by
 * min(1, max_norm / (total + 1e-6)). The total is the norm of the gradients'
 * norms, computed on the devices that hold them (one reduction per gradient,
 * then one over the norms on the first gradient's device): nothing is read
 * back to the host, so a GPU is not synchronized, unless error_if_nonfinite,
 * which reads the total and fails with CT_ERR_ARG, leaving the gradients as
 * they are, when it is nan or infinite (without it, such a total scales the
 * gradients as torch does). Returns the total norm before clipping, a new 0-d
 * tensor (the promoted dtype of the gradients, on the first gradient's
 * device; a CPU f32 zero when no parameter has a gradient), or NULL. */
CT_API ct_tensor *ct_clip_grad_norm_(ct_tensor *const *params, int n, double max_norm,
                                     double norm_type, bool error_if_nonfinite);
/* Clamps every gradient of params into [-clip_value, clip_value] in place.
 * clip_value < 0 (which torch accepts, setting every element to it) fails
 * with CT_ERR_ARG. */
CT_API ct_status ct_clip_grad_value_(ct_tensor *const *params, int n, double clip_value);

/* ---- Learning-rate schedules ---------------------------------------------- */

/* Learning-rate schedules: call ct_lr_scheduler_step once per epoch (per
 * batch for OneCycle, as in torch). The base lr of each parameter group is
 * its lr when the schedule is made (groups added later are not scheduled);
 * every group follows the schedule from its own base lr, as torch's; the schedule borrows the
 * optimizer (free the schedule first). step uses torch's recursive form, set_epoch its closed form;
 * the sequences match torch.optim.lr_scheduler's.
 *
 *   // linear warmup over 5 epochs, then cosine over the 95 others
 *   ct_lr_scheduler *warm = ct_linear_lr_new(opt, 0.01, 1.0, 5);
 *   ct_lr_scheduler *cos = ct_cosine_lr_new(opt, 95, 0.0);
 *   ct_lr_scheduler *s = ct_sequential_lr_new(opt, (ct_lr_scheduler *[]){warm, cos}, 2,
 *                                             (int64_t[]){5});
 */
typedef struct ct_lr_scheduler ct_lr_scheduler;
/* lr = base_lr * gamma^(epoch / step_size) (torch.optim.lr_scheduler.StepLR). */
CT_API ct_lr_scheduler *ct_step_lr_new(ct_optimizer *opt, int64_t step_size, double gamma);
/* Cosine annealing from base_lr to eta_min over t_max epochs (CosineAnnealingLR). */
CT_API ct_lr_scheduler *ct_cosine_lr_new(ct_optimizer *opt, int64_t t_max, double eta_min);
/* Linear warmup (LinearLR): lr = base_lr * f, f going linearly from
 * start_factor (in (0, 1]) to end_factor (in [0, 1]) over total_iters (> 0)
 * epochs, then staying there; torch's defaults are 1/3, 1.0 and 5. Sets the
 * optimizer's lr to base_lr * start_factor at once, as torch does. */
CT_API ct_lr_scheduler *ct_linear_lr_new(ct_optimizer *opt, double start_factor, double end_factor,
                                         int64_t total_iters);
/* Runs schedulers[0] until epoch milestones[0], then schedulers[1] restarted
 * from its own epoch 0 (its closed form: a cosine starts at base_lr), ...
 * (SequentialLR; n schedulers, n - 1 increasing milestones > 0). All must be
 * made on opt; their base lr becomes the optimizer's lr before the first of
 * them was made (torch's initial_lr), and the optimizer's lr is reset to the
 * first schedule's epoch 0. The sequence takes ownership of the schedulers,
 * also when it fails (they are freed then), and frees them with itself.
 * set_epoch(e) sets the child running at e to e minus its milestone. */
CT_API ct_lr_scheduler *ct_sequential_lr_new(ct_optimizer *opt, ct_lr_scheduler *const *schedulers,
                                             int n, const int64_t *milestones);

/* OneCycleLR. Zeroed fields take torch's defaults, cycling the momentum
 * (ct_optimizer_set_momentum: SGD's momentum, Adam's beta1) inversely to the
 * lr between max_momentum and base_momentum, as torch's cycle_momentum. */
typedef struct ct_one_cycle_opts {
  double max_lr;           /* required, > 0 */
  int64_t total_steps;     /* required, > 0: the number of ct_lr_scheduler_step calls */
  double pct_start;        /* share of the steps spent increasing the lr; 0 means 0.3 */
  double div_factor;       /* initial lr = max_lr / div_factor; 0 means 25 */
  double final_div_factor; /* final lr = initial lr / final_div_factor; 0 means 1e4 */
  bool anneal_linear;      /* linear instead of cosine annealing (anneal_strategy='linear') */
  bool three_phase;        /* warm up, come back to the initial lr, then anneal to the final */
  bool keep_momentum;      /* leave the momentum alone (torch's cycle_momentum=False) */
  double base_momentum;    /* momentum at the lr's peak; 0 means 0.85 */
  double max_momentum;     /* momentum at the ends; 0 means 0.95 */
} ct_one_cycle_opts;
/* Sets the optimizer's lr to the initial lr (and its momentum to
 * max_momentum) at once; stepping past
 * total_steps fails with CT_ERR_ARG (the lr stays), as torch raises. */
CT_API ct_lr_scheduler *ct_one_cycle_lr_new(ct_optimizer *opt, const ct_one_cycle_opts *opts);

/* ReduceLROnPlateau: lr = max(lr * factor, min_lr) when the metric given to
 * ct_lr_scheduler_step_metric has not improved for more than `patience`
 * steps, then waits `cooldown` steps before counting again. Improvement:
 * mode min, rel: metric < best * (1 - threshold); abs: metric < best -
 * threshold (max: > best * (1 + threshold), > best + threshold). A change
 * smaller than eps is not made. Fields are taken as given: start from
 * ct_plateau_defaults() (torch's defaults) and change what differs. */
typedef struct ct_plateau_opts {
  bool mode_max;      /* false: 'min' (a loss), true: 'max' (an accuracy) */
  double factor;      /* in (0, 1); default 0.1 */
  int64_t patience;   /* default 10 */
  double threshold;   /* default 1e-4 */
  bool threshold_abs; /* false: 'rel' (default), true: 'abs' */
  int64_t cooldown;   /* default 0 */
  double min_lr;      /* default 0 */
  double eps;         /* default 1e-8 */
} ct_plateau_opts;
CT_API ct_plateau_opts ct_plateau_defaults(void);
/* opts NULL: the defaults. Invalid values fail with CT_ERR_ARG. */
CT_API ct_lr_scheduler *ct_reduce_lr_on_plateau_new(ct_optimizer *opt, const ct_plateau_opts *opts);

/* One epoch (step) of the schedule. CT_ERR_ARG for ReduceLROnPlateau (it
 * needs the metric) and for OneCycle past its total_steps. NULL: CT_OK. */
CT_API ct_status ct_lr_scheduler_step(ct_lr_scheduler *s);
/* One step of ReduceLROnPlateau with this epoch's metric (nan never
 * improves); CT_ERR_ARG for other schedules. */
CT_API ct_status ct_lr_scheduler_step_metric(ct_lr_scheduler *s, double metric);
CT_API int64_t ct_lr_scheduler_epoch(const ct_lr_scheduler *s);
/* Jumps to `epoch` (< 0 is 0) with the closed form. ReduceLROnPlateau only
 * sets its epoch counter; OneCycle past total_steps fails with CT_ERR_ARG. */
CT_API ct_status ct_lr_scheduler_set_epoch(ct_lr_scheduler *s, int64_t epoch);
CT_API void ct_lr_scheduler_free(ct_lr_scheduler *s); /* NULL is a no-op */

/* A schedule's position for a checkpoint, as doubles: its epoch,
 * ReduceLROnPlateau's best metric and counters, each parameter group's base
 * and current lr, then a sequence's children's in turn. Writes at most max
 * values (values may be NULL to count) and returns the total count. */
CT_API int ct_lr_scheduler_state(const ct_lr_scheduler *s, double *values, int max);
/* Restores a position saved by ct_lr_scheduler_state into a schedule made
 * the same way (same kind, children and number of parameter groups), and
 * sets each group's lr to the saved one, so that a resumed run continues the
 * schedule exactly, the recursive forms and ReduceLROnPlateau included.
 * CT_ERR_ARG, changing nothing, when n is not this schedule's count or an
 * epoch or counter is not a whole number >= 0. */
CT_API ct_status ct_lr_scheduler_load_state(ct_lr_scheduler *s, const double *values, int n);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_OPTIM_H */
