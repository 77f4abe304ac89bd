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
 * gets its gradient on the CPU. Integer tensors never require grad.
 *
 * In-place ops (ct_add_, ct_exp_, ct_copy_, ct_fill_, ...) follow PyTorch:
 *  - on a tensor made by recorded ops they rewrite its history: after
 *    y = x * 2; ct_add_scalar_(y, 1); ct_exp_(y), y's grad_fn is ExpBackward,
 *    whose input is the AddBackward of the add_, whose input is the
 *    MulBackward. A formula that needs the old value of y gets a copy taken
 *    before the write (sin_, mul_ by a tensor that requires grad).
 *  - on a tensor that doesn't require grad, with an operand that does, the
 *    tensor becomes a non-leaf that requires grad (an accumulator).
 *  - through a view of a tensor that requires grad, they rewrite the history
 *    of the view's base (CopySlices: the base's gradient gets the view's
 *    elements' gradient from the op) and of the view; other views of the
 *    base read the base's new history from then on.
 *  - a leaf that requires grad, or a view of one, can't be written while grad
 *    mode is on (CT_ERR_STATE naming the op: "a leaf tensor that requires
 *    grad is being used in an in-place operation"); write inside
 *    ct_no_grad_begin/ct_no_grad_end, as optimizers do.
 *  - Unlike PyTorch, autograd tracks only views of tensors that require grad:
 *    a tensor that doesn't require grad and shares its memory with other
 *    tensors (a view of a plain buffer, or the base of one) can't be written
 *    with an operand that requires grad (CT_ERR_STATE): the other tensors'
 *    history could not follow. Write into a tensor of its own or use the
 *    out-of-place form (ct_cat, ct_where...).
 * Version counters: each op saves what its gradient reads (exp, tanh,
 * sigmoid, sqrt, rsqrt, relu, reciprocal, tan, expm1 only their output, so
 * their input may change afterwards). A saved tensor modified in place
 * before backward makes backward fail with CT_ERR_STATE and PyTorch's
 * message: "one of the variables needed for gradient computation has been
 * modified by an inplace operation: [f32 (3,)], which is output 0 of
 * SigmoidBackward, is at version 2; expected version 1 instead".
 */
#ifndef CTENSOR_AUTOGRAD_H
#define CTENSOR_AUTOGRAD_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks t as a leaf that records gradients (floating dtypes only). A tensor
 * produced by a recorded op already requires grad; calling this on it with
 * false fails (use ct_detach). Returns t, or NULL on error. */
CT_API ct_tensor *ct_requires_grad_(ct_tensor *t, bool requires_grad);
CT_API bool ct_requires_grad(const ct_tensor *t);
/* Whether t is a leaf (not produced by a recorded op). */
CT_API bool ct_is_leaf(const ct_tensor *t);
/* The accumulated gradient of a leaf, or NULL (no error) if none yet.
 * Borrowed: owned by t, valid until the gradient is replaced or t is freed;
 * ct_retain it to keep it. */
CT_API ct_tensor *ct_grad(const ct_tensor *t);
/* Replaces t's gradient (NULL clears it, as optimizer.zero_grad(set_to_none)).
 * Takes t's grad lock, as backward's accumulation does: it may run while
 * other threads back-propagate into t (ctensor.h, "Threads"). */
CT_API ct_status ct_set_grad(ct_tensor *t, ct_tensor *grad);
/* Keep the gradient of a non-leaf too (as tensor.retain_grad()). */
CT_API ct_status ct_retain_grad(ct_tensor *t);

typedef struct ct_backward_opts {
  bool retain_graph; /* keep the graph so backward can run through it again */
} ct_backward_opts;
/* Computes gradients of `root` with respect to every leaf it depends on and
 * accumulates them into the leaves' .grad. `grad` is d(something)/d(root): it
 * may be NULL only for a one-element root (then 1). Without retain_graph the
 * graph's saved tensors are freed and a second backward fails. Several
 * threads may run backward at once over graphs that share only leaves: each
 * leaf's accumulation is locked (ctensor.h, "Threads"). */
CT_API ct_status ct_backward(ct_tensor *root, const ct_tensor *grad, const ct_backward_opts *opts);

/* No-grad regions nest (per thread): nothing is recorded inside. */
CT_API void ct_no_grad_begin(void);
CT_API void ct_no_grad_end(void);
CT_API bool ct_is_grad_enabled(void);
/* A view of t's data that does not require grad and records nothing. */
CT_API ct_tensor *ct_detach(const ct_tensor *t);
/* The name of the node that produced t ("MulBackward", "CopySlices", ...;
 * PyTorch's names without the trailing digit), or NULL for a leaf or a
 * tensor that does not require grad. */
CT_API const char *ct_grad_fn_name(const ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_AUTOGRAD_H */
