/* ctensor/autograd.h: reverse-mode automatic differentiation.
 *
 * A dynamic tape, as PyTorch: while grad mode is on, every differentiable op
 * whose input requires grad records a node; ct_backward(loss) walks the nodes
 * back and accumulates gradients into the leaves (tensors created with
 * requires_grad, or marked with ct_requires_grad_).
 *
 *   ct_tensor *W = ct_rand(CT_SHAPE(10, 1), &(ct_tensor_opts){.requires_grad = true});
 *   ct_tensor *loss = ct_mean(ct_square(ct_sub(ct_matmul(X, W), y)), NULL);
 *   ct_backward(loss, NULL, NULL);
 *   ct_tensor *g = ct_grad(W);        // borrowed: owned by W
 *
 * Gradients flow back through ct_to across devices: a CPU leaf moved to a GPU
 * gets its gradient on the CPU. A tensor saved for backward and then modified
 * in place makes backward fail with CT_ERR_STATE (version counters), as in
 * PyTorch. Integer tensors never require grad.
 */
#ifndef CTENSOR_AUTOGRAD_H
#define CTENSOR_AUTOGRAD_H

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks t as a leaf that records gradients (floating dtypes only). A tensor
 * produced by a recorded op already requires grad; calling this on it with
 * false fails (use ct_detach). Returns t, or NULL on error. */
ct_tensor *ct_requires_grad_(ct_tensor *t, bool requires_grad);
bool ct_requires_grad(const ct_tensor *t);
/* Whether t is a leaf (not produced by a recorded op). */
bool ct_is_leaf(const ct_tensor *t);
/* The accumulated gradient of a leaf, or NULL (no error) if none yet.
 * Borrowed: owned by t, valid until the gradient is replaced or t is freed;
 * ct_retain it to keep it. */
ct_tensor *ct_grad(const ct_tensor *t);
/* Replaces t's gradient (NULL clears it, as optimizer.zero_grad(set_to_none)). */
ct_status ct_set_grad(ct_tensor *t, ct_tensor *grad);
/* Keep the gradient of a non-leaf too (as tensor.retain_grad()). */
ct_status ct_retain_grad(ct_tensor *t);

typedef struct ct_backward_opts {
  bool retain_graph; /* keep the graph so backward can run through it again */
} ct_backward_opts;
/* Computes gradients of `root` with respect to every leaf it depends on and
 * accumulates them into the leaves' .grad. `grad` is d(something)/d(root): it
 * may be NULL only for a one-element root (then 1). Without retain_graph the
 * graph's saved tensors are freed and a second backward fails. */
ct_status ct_backward(ct_tensor *root, const ct_tensor *grad, const ct_backward_opts *opts);

/* No-grad regions nest (per thread): nothing is recorded inside. */
void ct_no_grad_begin(void);
void ct_no_grad_end(void);
bool ct_is_grad_enabled(void);
/* A view of t's data that does not require grad and records nothing. */
ct_tensor *ct_detach(const ct_tensor *t);
/* The name of the node that produced t ("MulBackward", ...), or NULL for a
 * leaf or a tensor that does not require grad. */
const char *ct_grad_fn_name(const ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_AUTOGRAD_H */
