/* The autograd tape: nodes, edges, saved tensors, and the recording helpers
 * the op layer calls after computing a result.
 *
 * Ownership: a tensor's autograd meta holds a reference to the node that made
 * it (grad_fn); a node holds references to the nodes (or leaf tensors) of its
 * inputs and to the tensors it saved. Saved outputs are stored as detached
 * aliases (no autograd meta), so a result never owns a path back to itself. */
#ifndef CT_AUTOGRAD_INTERNAL_H
#define CT_AUTOGRAD_INTERNAL_H

#include "core/internal.h"

typedef struct ct_node ct_node;

/* Where the gradient of one input goes: the node that produced it, or the
 * leaf to accumulate into, or nowhere (both NULL: no grad needed). */
typedef struct ct_edge {
  ct_node *fn;
  ct_tensor *leaf;
} ct_edge;

/* What backward needs to know of an input to shape its gradient. */
typedef struct ct_input_meta {
  int64_t shape[CT_MAX_DIMS];
  int ndim;
  ct_dtype dtype;
  ct_device device;
} ct_input_meta;

/* Computes the gradient of each input from the gradient of the output.
 * grad_in[k] is set to a new (untracked) reference, or left NULL when input k
 * needs no gradient (ct__node_needs(n, k) is false) or gets none. Shapes may
 * be broadcast shapes: the engine reduces them to the input's shape and casts
 * to its dtype. Records an error and returns its code on failure. */
typedef ct_status (*ct_backward_fn)(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in);

#define CT_NODE_MAX_SAVED 4

struct ct_node {
  atomic_int refcount;
  const char *name;          /* "MulBackward" */
  ct_backward_fn backward;
  int n_inputs;
  ct_edge *next;             /* n_inputs edges */
  ct_input_meta *in;         /* n_inputs metas */
  ct_tensor *saved[CT_NODE_MAX_SAVED];
  uint32_t saved_version[CT_NODE_MAX_SAVED];
  bool saved_freed;          /* backward ran without retain_graph */
  bool has_saved;            /* ct__node_save was called */
  /* op parameters */
  int op;                    /* the op's enum value, for table-driven formulas */
  double p[4];
  int64_t ip[4 * CT_MAX_DIMS + 4]; /* integer parameters (view geometry, dims) */
  int n_ip;
  /* engine state during one backward */
  ct_tensor *pending;        /* sum of gradients received so far */
  int deps;                  /* incoming edges not yet delivered */
  struct ct_autograd_meta *retain_meta; /* output asked for retain_grad */
};

struct ct_autograd_meta {
  bool requires_grad;
  bool retains_grad;
  ct_tensor *grad;  /* accumulated gradient (leaves; non-leaves with retain_grad) */
  ct_node *grad_fn; /* NULL for leaves */
};

/* ---- Grad mode ---- */
bool ct__grad_enabled(void);
bool ct__requires_grad(const ct_tensor *t);
/* Grad mode on and any non-NULL input requiring grad. */
bool ct__ag_needed(const ct_tensor *const *inputs, int n);

/* ---- Building nodes ---- */
/* A node for `inputs` (edges from their grad_fn or leaf; NULL inputs or inputs
 * that don't require grad get empty edges). NULL on out of memory. */
ct_node *ct__node_new(const char *name, ct_backward_fn backward, int n_inputs,
                      const ct_tensor *const *inputs);
void ct__node_release(ct_node *n);
/* Saves t (a detached alias, with t's current version) in slot i. */
bool ct__node_save(ct_node *n, int i, const ct_tensor *t);
/* The saved tensor of slot i (borrowed), or NULL with CT_ERR_STATE if it was
 * modified in place since it was saved or the graph was already freed. */
const ct_tensor *ct__node_saved(ct_node *n, int i);
/* Whether input k needs a gradient. */
static inline bool ct__node_needs(const ct_node *n, int k) {
  return n->next[k].fn || n->next[k].leaf;
}
/* Makes `result` the output of node n: it now requires grad and owns n.
 * Returns result; on failure releases both and returns NULL. */
ct_tensor *ct__ag_attach(ct_tensor *result, ct_node *n);

/* ---- Recording, called by the public op functions ----
 * Each takes the op's untracked result `r` (NULL passes through), records a
 * node when grad mode is on and an input requires grad, and returns r (NULL
 * with an error, r released, if recording failed). */
ct_tensor *ct__ag_unary(ct_tensor *r, int op, const ct_tensor *x, double p0, double p1);
ct_tensor *ct__ag_binary(ct_tensor *r, int op, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct__ag_binary_scalar(ct_tensor *r, int op, const ct_tensor *a, double s, bool reversed);
ct_tensor *ct__ag_add_scaled(ct_tensor *r, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_tensor *ct__ag_where(ct_tensor *r, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);

/* In-place and `_out` writes under autograd. Call BEFORE writing `self`
 * (the tensor written) with the other inputs. Fails with CT_ERR_STATE when
 * grad mode is on and self requires grad (in-place history rewriting is not
 * supported: use the out-of-place form), or when an input requires grad and
 * the op can't be recorded in place (`recordable` false). Otherwise returns
 * true and, if an input requires grad, a prepared node in *node (for add_,
 * sub_, add_scaled_: finish with ct__ag_finish_inplace after the write). */
bool ct__ag_inplace_begin(const char *op, const ct_tensor *self, const ct_tensor *const *inputs,
                          int n, bool recordable);
/* Records the in-place add/sub/axpy `self op= alpha * b` (alpha: 1 for add_,
 * -1 for sub_) after it was written. Returns self or NULL. */
ct_tensor *ct__ag_inplace_axpy(ct_tensor *self, const ct_tensor *b, double alpha);

/* Views: records that v (untracked) is a view of t. kind: CT_VIEW_RESHAPE
 * (any same-numel reinterpretation: view, reshape, flatten, squeeze,
 * unsqueeze, alias), CT_VIEW_PERMUTE (perm[] given), CT_VIEW_EXPAND, or
 * CT_VIEW_STRIDED (slice, select, narrow, diagonal: the gradient is scattered
 * back through the same geometry). Returns v, or NULL (v released). */
enum { CT_VIEW_RESHAPE, CT_VIEW_PERMUTE, CT_VIEW_EXPAND, CT_VIEW_STRIDED };
ct_tensor *ct__ag_view(ct_tensor *v, const ct_tensor *t, int kind, const int *perm);
/* Identity-gradient ops that make a new tensor from t: contiguous, clone,
 * cast (the engine casts the gradient back). */
ct_tensor *ct__ag_identity(ct_tensor *r, const ct_tensor *t, const char *name);

/* Reductions (opts as given to the op), values of max/min along a dim, softmax. */
ct_tensor *ct__ag_reduce(ct_tensor *r, int op, const ct_tensor *x, const ct_reduce_opts *opts, double p);
ct_tensor *ct__ag_max_dim(ct_tensor *values, const ct_tensor *indices, const ct_tensor *x, int dim,
                          bool keepdim);
ct_tensor *ct__ag_softmax(ct_tensor *r, const ct_tensor *x, int dim, bool log);

/* matmul (torch.matmul semantics) and linear. */
ct_tensor *ct__ag_matmul(ct_tensor *r, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct__ag_linear(ct_tensor *r, const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias);

/* Indexing, masking, joining. */
ct_tensor *ct__ag_index_select(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index);
ct_tensor *ct__ag_gather(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index);
ct_tensor *ct__ag_scatter(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index,
                          const ct_tensor *src, bool add);
ct_tensor *ct__ag_masked_select(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask);
ct_tensor *ct__ag_masked_fill(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask);
ct_tensor *ct__ag_cat(ct_tensor *r, ct_tensor *const *tensors, int count, int dim, bool stack);
ct_tensor *ct__ag_triangle(ct_tensor *r, const ct_tensor *x, int64_t k, bool upper);

/* ct_to across devices: the gradient goes back to t's device. */
ct_tensor *ct__autograd_record_to(ct_tensor *r, const ct_tensor *t);

/* ---- Helpers for formulas ---- */
/* A zero-filled contiguous tensor. */
ct_tensor *ct__zeros(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
/* Sums g over broadcast dims so it has `shape` (g's shape broadcasts to it). */
ct_tensor *ct__sum_to_shape(const ct_tensor *g, const int64_t *shape, int ndim);

#endif /* CT_AUTOGRAD_INTERNAL_H */
