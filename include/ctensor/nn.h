/* ctensor/nn.h: neural-network layers, as functions and as modules.
 *
 * Functional layers (ct_conv2d, ct_cross_entropy, ...) are differentiable ops
 * like those of ops.h. Modules hold parameters (leaf tensors requiring grad)
 * with PyTorch's default initializations and PyTorch's state_dict names, so
 * checkpoints interoperate:
 *
 *   ct_module *net = ct_sequential_new();
 *   ct_sequential_add(net, ct_linear_new(784, 128, true, NULL));   // "0.weight", "0.bias"
 *   ct_sequential_add(net, ct_relu_new());
 *   ct_sequential_add(net, ct_linear_new(128, 10, true, NULL));    // "2.weight", "2.bias"
 *   ct_module_to(net, ct_default_device());
 *   ct_tensor *logits = ct_module_forward(net, x);
 *   ct_tensor *loss = ct_cross_entropy(logits, labels, NULL);
 *
 * A module owns its parameters and children; ct_module_free releases all.
 */
#ifndef CTENSOR_NN_H
#define CTENSOR_NN_H

#include "ctensor/api.h"
#include <stdio.h>

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Functional layers ---------------------------------------------------- */

typedef struct ct_conv2d_opts {
  int64_t stride[2];   /* {0, 0} means {1, 1} */
  int64_t padding[2];  /* zero padding on each side */
  int64_t dilation[2]; /* {0, 0} means {1, 1} */
  int64_t groups;      /* 0 means 1 */
} ct_conv2d_opts;
/* x (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW), bias (C_out) or NULL
 * -> (N, C_out, H_out, W_out). im2col + GEMM on the CPU, cuDNN on CUDA. */
CT_API ct_tensor *ct_conv2d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                            const ct_conv2d_opts *opts);

typedef struct ct_pool2d_opts {
  int64_t kernel[2]; /* required */
  int64_t stride[2]; /* {0, 0} means = kernel */
  int64_t padding[2];
  bool ceil_mode;
  bool count_include_pad_false; /* avg_pool2d: exclude padding from the divisor */
} ct_pool2d_opts;
/* Max pooling over (N, C, H, W) or (C, H, W); padding counts as -inf. */
CT_API ct_tensor *ct_max_pool2d(const ct_tensor *x, const ct_pool2d_opts *opts);
/* Average pooling; padding counts as zeros in the divisor unless
 * count_include_pad_false. */
CT_API ct_tensor *ct_avg_pool2d(const ct_tensor *x, const ct_pool2d_opts *opts);

/* Batch normalization over (N, C, ...): in training, normalizes with the batch
 * statistics and updates running_mean / running_var (unbiased) in place with
 * momentum; in evaluation uses them. weight/bias/running_* may be NULL.
 * Training needs more than 1 value per channel unless x is empty: an empty
 * batch gives an empty result and leaves the running statistics (as torch). */
CT_API ct_tensor *ct_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                                const ct_tensor *weight, const ct_tensor *bias, bool training,
                                double momentum, double eps);
/* Layer normalization over the last `normalized_ndim` dims; weight and bias
 * (of that shape) may be NULL. */
CT_API ct_tensor *ct_layer_norm(const ct_tensor *x, int normalized_ndim, const ct_tensor *weight,
                                const ct_tensor *bias, double eps);
/* Rows of weight (num, dim) at integer indices: (..., dim). */
CT_API ct_tensor *ct_embedding(const ct_tensor *indices, const ct_tensor *weight);
/* Zeroes elements with probability p and scales the rest by 1/(1-p) when
 * training; the identity otherwise. g: NULL = default generator. */
CT_API ct_tensor *ct_dropout(const ct_tensor *x, double p, bool training, ct_generator *g);

/* ---- Losses --------------------------------------------------------------- */

/* BATCHMEAN (kl_div only, as torch's 'batchmean'): the sum divided by the
 * input's first dim (the sum for a 0-d input). */
typedef enum ct_reduction {
  CT_REDUCTION_MEAN = 0,
  CT_REDUCTION_SUM,
  CT_REDUCTION_NONE,
  CT_REDUCTION_BATCHMEAN
} ct_reduction;

typedef struct ct_loss_opts {
  ct_reduction reduction;      /* default mean */
  const ct_tensor *weight;     /* cross_entropy / nll: per-class weights (C), or NULL */
  int64_t ignore_index;        /* cross_entropy / nll: targets equal to it are skipped */
  bool has_ignore_index;       /* torch's default ignore_index is -100: set this to use it */
  double label_smoothing;      /* cross_entropy: in [0, 1] */
  const ct_tensor *pos_weight; /* bce_with_logits: weight of positive examples, or NULL */
} ct_loss_opts;

/* mean((input - target)^2) (or sum/none). */
CT_API ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target,
                              const ct_loss_opts *opts);
/* logits (N, C) or (N, C, d...) and integer class targets (N) / (N, d...).
 * When every target is ignored, the mean is nan (0 / 0) and the gradient 0,
 * as PyTorch's (sum: 0; none: zeros); so for nll_loss.
 * A floating target of the logits' shape holds class probabilities (torch's
 * probability targets): loss = -sum_c w_c t_c log_softmax(x)_c per sample,
 * with t smoothed to (1 - eps) t + eps / C; mean divides by the number of
 * samples (not by the weights), and ignore_index is an error, as in torch. */
CT_API ct_tensor *ct_cross_entropy(const ct_tensor *logits, const ct_tensor *target,
                                   const ct_loss_opts *opts);
/* Negative log-likelihood of log-probabilities (N, C) at integer targets (N). */
CT_API ct_tensor *ct_nll_loss(const ct_tensor *log_probs, const ct_tensor *target,
                              const ct_loss_opts *opts);
/* Binary cross-entropy on logits, numerically stable; target in [0, 1]. */
CT_API ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *logits,
                                                      const ct_tensor *target,
                                                      const ct_loss_opts *opts);
/* Binary cross-entropy on probabilities p in [0, 1] (target of p's shape):
 * -w (y log p + (1 - y) log(1 - p)), each log clamped at -100 as torch does,
 * so p = 0 or 1 gives a finite loss. opts->weight (broadcast to p) or NULL.
 * Differences from torch, to keep the GPU free of host synchronizations: p
 * outside [0, 1] gives nan instead of an error; at p exactly 0 or 1 the
 * gradient is that of the clamped log (0 from the clamped term) where torch
 * divides by max(p (1 - p), 1e-12). Prefer the _with_logits form when the
 * probabilities come from a sigmoid. */
CT_API ct_tensor *ct_binary_cross_entropy(const ct_tensor *input, const ct_tensor *target,
                                          const ct_loss_opts *opts);
/* mean(|input - target|) (or sum/none); broadcasts as ct_mse_loss. */
CT_API ct_tensor *ct_l1_loss(const ct_tensor *input, const ct_tensor *target,
                             const ct_loss_opts *opts);
/* With z = |input - target|: 0.5 z^2 / beta where z < beta, else
 * z - 0.5 beta (torch's default beta is 1.0; beta = 0 is the L1 loss).
 * beta < 0 fails with CT_ERR_ARG. */
CT_API ct_tensor *ct_smooth_l1_loss(const ct_tensor *input, const ct_tensor *target, double beta,
                                    const ct_loss_opts *opts);
/* With z = |input - target|: 0.5 z^2 where z < delta, else
 * delta (z - 0.5 delta); torch's default delta is 1.0, delta <= 0 fails with
 * CT_ERR_ARG. Equals delta * smooth_l1_loss(beta = delta). */
CT_API ct_tensor *ct_huber_loss(const ct_tensor *input, const ct_tensor *target, double delta,
                                const ct_loss_opts *opts);
/* Kullback-Leibler divergence of log-probabilities `input` from `target`
 * (probabilities, or log-probabilities when log_target), pointwise
 * target (log target - input), 0 where target is 0 (torch's xlogy), or
 * exp(target) (target - input) with log_target. Reductions: mean over all
 * elements (torch's default, not the mathematical KL), sum, none, or
 * CT_REDUCTION_BATCHMEAN (sum / batch size, the KL divergence per sample).
 * Where target is 0 (without log_target) the target's gradient is -input,
 * the limit of d/dt t (log t - input), where torch's is nan. */
CT_API ct_tensor *ct_kl_div(const ct_tensor *input, const ct_tensor *target, bool log_target,
                            const ct_loss_opts *opts);

/* ---- Modules -------------------------------------------------------------- */

typedef struct ct_module ct_module;

/* How a user-defined module behaves. forward receives the module's `self`
 * pointer (given to ct_module_new) and returns a new tensor. destroy frees
 * self (may be NULL).
 *
 * Scopes: ct_module_forward runs forward in a scope of its own and hands
 * back only its output. Every tensor the forward creates and does not
 * return is released when it returns (autograd keeps what backward needs),
 * so forward need not free its intermediates. The output goes to the
 * caller's scope, or, called outside any scope, to the caller, who frees it:
 * 1,000 calls outside a scope leave only the outputs not yet freed. A tensor
 * that must outlive the call other than as the output (a cache in `self`)
 * needs a reference of its own (ct_retain; destroy frees it). */
typedef struct ct_module_vtable {
  const char *type_name; /* "SimpleNN" */
  ct_tensor *(*forward)(ct_module *m, void *self, const ct_tensor *x);
  void (*destroy)(void *self);
} ct_module_vtable;

/* A user-defined module; register its parameters and children below. */
CT_API ct_module *ct_module_new(const ct_module_vtable *vtable, void *self);
/* Adds a parameter (a leaf; the module takes the caller's reference, even on
 * failure, and marks it requires_grad) under `name` (non-empty, no '.',
 * unique among the module's parameters, buffers and children). A tensor owned
 * by a scope leaves the scope. Returns the tensor (borrowed) or NULL. */
CT_API ct_tensor *ct_module_register_parameter(ct_module *m, const char *name, ct_tensor *param);
/* Adds a buffer (state that is saved but not trained: running_mean, ...);
 * same rules as parameters, any dtype. */
CT_API ct_tensor *ct_module_register_buffer(ct_module *m, const char *name, ct_tensor *buffer);
/* Adds a child module under `name` (the parent takes ownership, and frees the
 * child on failure). Returns it (borrowed) or NULL. */
CT_API ct_module *ct_module_register_module(ct_module *m, const char *name, ct_module *child);

CT_API void ct_module_free(ct_module *m); /* NULL is a no-op */
/* Runs m's forward on x in a scope of its own (above): a new reference to
 * the output, in the caller's scope if one is open; NULL on error. */
CT_API ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *x);
/* The module's own `self` pointer (user modules) or NULL. */
CT_API void *ct_module_self(ct_module *m);
CT_API const char *ct_module_type_name(const ct_module *m);
/* A child by name ("fc1") or NULL. */
CT_API ct_module *ct_module_child(const ct_module *m, const char *name);
/* A parameter or buffer by its full dotted name ("fc1.weight"), or NULL. */
CT_API ct_tensor *ct_module_get(const ct_module *m, const char *full_name);

/* All parameters (recursively: a module's own in registration order, then
 * each child's) with their dotted names (PyTorch's state_dict keys); a
 * tensor registered more than once (tied weights) is listed once, under its
 * first name, as torch's named_parameters(). Writes at
 * most max entries (params and names may be NULL) and returns the total count.
 * Tensors and names are borrowed: names stay valid while the module's
 * structure is unchanged, until it is freed. Counting (names NULL) never
 * fails; building names can: -1 with CT_ERR_OOM, and nothing is written to
 * names (check the result before reading them). */
CT_API int ct_module_parameters(const ct_module *m, ct_tensor **params, const char **names,
                                int max);
/* Parameters and buffers in PyTorch's state_dict order: for each module,
 * depth first, its parameters, then its buffers, then its children's. */
CT_API int ct_module_state(const ct_module *m, ct_tensor **tensors, const char **names, int max);
/* Moves every parameter and buffer to device (to_dtype: floating tensors to
 * a floating dtype; num_batches_tracked stays i64), keeping the same handles
 * (optimizers built on them stay valid; their state is not moved) and moving
 * gradients along. On failure some tensors may already have moved. */
CT_API ct_status ct_module_to(ct_module *m, ct_device device);
CT_API ct_status ct_module_to_dtype(ct_module *m, ct_dtype dtype);
/* Training or evaluation mode (dropout, batch norm), recursively. */
CT_API void ct_module_train(ct_module *m, bool training);
CT_API bool ct_module_is_training(const ct_module *m);
/* Clears every parameter's gradient (set to none). */
CT_API void ct_module_zero_grad(ct_module *m);

/* ---- Counting, summary, state_dict files ---------------------------------- */

/* The number of parameter elements (torch's sum(p.numel() for p in
 * m.parameters())), each tensor counted once even when registered twice;
 * trainable_only: only parameters that require grad. -1 for NULL. */
CT_API int64_t ct_module_num_parameters(const ct_module *m, bool trainable_only);
/* Prints a table of the module's state to out (stdout when NULL): one line
 * per parameter and buffer with its state_dict name, shape, dtype, device
 * and element count, then the totals (parameters, trainable ones, buffers).
 * CT_ERR_IO if writing fails. */
CT_API ct_status ct_module_print_summary(const ct_module *m, FILE *out);

/* Saves the module's state_dict (parameters and buffers under their
 * state_dict names, ct_module_state's order) to a safetensors file, as
 * torch's safetensors.torch.save_file(model.state_dict(), path) would; see
 * ct_save_safetensors for the writing (atomic). */
CT_API ct_status ct_module_save(const ct_module *m, const char *path);

/* What ct_module_load found: state_dict keys the file lacks (in the module's
 * order) and file entries the module lacks (in the file's order). Free with
 * ct_load_report_free. */
typedef struct ct_load_report {
  char **missing;
  int n_missing;
  char **unexpected;
  int n_unexpected;
} ct_load_report;
CT_API void ct_load_report_free(ct_load_report *report); /* NULL is a no-op */

/* Loads a safetensors file written by ct_module_save (or by torch from a
 * state_dict) into the module's parameters and buffers, copying values onto
 * each tensor's device and keeping its handle (optimizers built on the
 * module stay valid). Everything is checked before anything is copied:
 *   - strict: a missing or unexpected key fails with CT_ERR_ARG naming them
 *     (torch's load_state_dict(strict=True));
 *   - not strict: matching keys are loaded and the others left as they are;
 *   - in both modes, a matching key whose shape or dtype differs from the
 *     module's fails with CT_ERR_SHAPE / CT_ERR_DTYPE naming the key and
 *     both shapes or dtypes. torch would cast a dtype silently; a checkpoint
 *     of another precision is converted on purpose, with ct_module_to_dtype.
 * report (may be NULL) receives the missing and unexpected keys in both
 * modes, also when strict loading fails for them (free it even then); on
 * other failures it is left empty. A file that cannot be read fails as
 * ct_load_safetensors does. */
CT_API ct_status ct_module_load(ct_module *m, const char *path, bool strict,
                                ct_load_report *report);

/* Options for creating a module's parameters. */
typedef struct ct_module_opts {
  ct_dtype dtype;          /* default f32 */
  ct_device device;        /* default the CPU */
  ct_generator *generator; /* initialization draws; NULL = the default generator */
} ct_module_opts;

/* Built-in modules; parameters are initialized as PyTorch does: Linear and
 * Conv2d weights kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in),
 * 1/sqrt(fan_in)), biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)); Embedding
 * N(0, 1); norms ones and zeros. Draws come from Philox (opts->generator). */
CT_API ct_module *ct_linear_new(int64_t in_features, int64_t out_features, bool bias,
                                const ct_module_opts *opts);
CT_API ct_module *ct_conv2d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                const ct_conv2d_opts *conv, bool bias, const ct_module_opts *opts);
CT_API ct_module *ct_max_pool2d_new(const ct_pool2d_opts *opts);
CT_API ct_module *ct_avg_pool2d_new(const ct_pool2d_opts *opts);
CT_API ct_module *ct_relu_new(void);
CT_API ct_module *ct_gelu_new(void);
CT_API ct_module *ct_sigmoid_new(void);
CT_API ct_module *ct_tanh_new(void);
CT_API ct_module *ct_silu_new(void);
CT_API ct_module *ct_dropout_new(double p);
/* Parameters weight (ones), bias (zeros); buffers running_mean (zeros),
 * running_var (ones), num_batches_tracked (i64 scalar, counts training
 * forwards). eps and momentum are taken as given (torch's defaults are 1e-5
 * and 0.1; momentum 0 keeps the running statistics as they are); eps < 0 or
 * momentum outside [0, 1] fail with CT_ERR_ARG. */
CT_API ct_module *ct_batch_norm2d_new(int64_t num_features, double eps, double momentum,
                                      const ct_module_opts *opts);
/* weight (ones) and bias (zeros) of normalized_shape; eps as given (torch's
 * default is 1e-5), eps < 0 fails with CT_ERR_ARG. */
CT_API ct_module *ct_layer_norm_new(const int64_t *normalized_shape, int ndim, double eps,
                                    const ct_module_opts *opts);
CT_API ct_module *ct_flatten_new(int start_dim, int end_dim);
CT_API ct_module *ct_embedding_new(int64_t num_embeddings, int64_t embedding_dim,
                                   const ct_module_opts *opts);
/* Children named "0", "1", ... in order; forward feeds each child's output to
 * the next (no children: an alias of the input). */
CT_API ct_module *ct_sequential_new(void);
/* Appends child (owned by seq from now on, freed on failure); returns child. */
CT_API ct_module *ct_sequential_add(ct_module *seq, ct_module *child);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_NN_H */
