/* Backward nodes and the tools formulas are written with. Private to
 * src/autograd: the op layer records through autograd_internal.h.
 *
 * A node is one allocation: the common header (struct ct_node), the op's own
 * state struct (named fields: what the formula reads, e.g.
 * `struct conv2d_node { ct_saved x, w; ct_conv2d_params p; bool unbatched; }`),
 * then one edge and one input description per input.
 *
 * Adding a differentiable op to a family file (grad_<family>.c):
 *
 *   typedef struct cube_node { ct_saved x; } cube_node;          // what backward reads
 *   static void cube_backward(ct_bw *b, const ct_tensor *g) {    // g: d loss / d output
 *     const cube_node *s = CT_BW_STATE(b, cube_node);
 *     const ct_tensor *x = bw_saved(b, &s->x);
 *     BW_GRAD(b, 0, bw_mul(b, g, bw_scale(b, bw_mul(b, x, x), 3.0)));  // 3 x^2 g
 *   }
 *   ct_tensor *ct__ag_cube(ct_tensor *r, const ct_tensor *x) {  // called by the op
 *     if (!r || !ct__ag_needed(&x, 1)) return r;
 *     ct_node *n = CT_NODE_NEW(cube_node, "CubeBackward", cube_backward, 1, &x);
 *     if (n) ct__save(n, &CT_NODE_STATE(n, cube_node)->x, x);
 *     return ct__ag_record(r, n);
 *   }
 *
 * Formulas read like the math: every bw_* result belongs to the node's
 * backward scope (ct_bw) and is released when the node's backward returns;
 * bw_* functions pass NULL through, and the first failure is kept in b->st, so
 * a formula is straight-line code with no release calls and no error checks.
 * The same recording function serves the in-place form of an op (see
 * autograd_internal.h). */
#ifndef CT_AUTOGRAD_NODE_H
#define CT_AUTOGRAD_NODE_H

#include <stdalign.h>
#include <stddef.h>

#include "autograd/autograd_internal.h"

/* Host allocations of the autograd layer (the failure hook of
 * ct__ag_fail_alloc_after applies to them). */
void *ct__ag_malloc(size_t size);
void *ct__ag_calloc(size_t size);
void *ct__ag_realloc(void *p, size_t size);

/* The lock of a tensor's .grad (meta.c): held while the pointer is read or
 * replaced and while a gradient is added into it. */
void ct__grad_lock(const struct ct_autograd_meta *m);
void ct__grad_unlock(const struct ct_autograd_meta *m);

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

/* A tensor a formula reads in backward, with the version it had when saved:
 * a detached alias (a handle without autograd state, so that no saved
 * tensor can lead back to the node: neither a node's own output, which owns
 * the node, nor an input whose history an in-place write later rewrites to
 * pass through the node), or a copy of the old value of a tensor written in
 * place. t == NULL: not saved. */
typedef struct ct_saved {
  ct_tensor *t;
  uint32_t version;
  bool is_output;
  const char *made_by; /* the grad_fn that made it when saved, for messages */
} ct_saved;

typedef struct ct_bw ct_bw;
/* Computes the gradients of the node's inputs from g, the gradient of its
 * output, through bw_set / BW_GRAD; failures go to b->st. A gradient may have
 * a broadcast shape or another floating dtype: the engine sums it to the
 * input's shape and casts it to the input's dtype. */
typedef void (*ct_backward_fn)(ct_bw *b, const ct_tensor *g);

#define CT_NODE_MAX_SAVED 8

struct ct_node {
  atomic_int refcount;
  const char *name; /* "MulBackward" */
  ct_backward_fn backward;
  int n_inputs;
  ct_edge *next;                      /* n_inputs edges */
  ct_input_meta *in;                  /* n_inputs input descriptions */
  ct_saved *saved[CT_NODE_MAX_SAVED]; /* the state's saved slots in use */
  int n_saved;
  bool saved_freed; /* backward ran without retain_graph */
  bool broken;      /* a save failed: ct__ag_record refuses the node */
  ct_node *inner;   /* CopySlices: the in-place op's node, owned */
  /* engine state during one backward */
  ct_tensor *pending;                         /* sum of the gradients received so far */
  int deps;                                   /* incoming edges not yet delivered */
  struct ct_autograd_meta *retain_meta;       /* the output asked for retain_grad */
  ct_node *free_next;                         /* worklist link while the graph is freed */
  alignas(max_align_t) unsigned char state[]; /* the op's node struct */
};

#define CT_NODE_STATE(n, T) ((T *)(void *)(n)->state)

/* ---- Recording (op side) ------------------------------------------------ */

/* A node of `name` whose state is state_size zeroed bytes, with edges from
 * inputs[0..n_inputs) (NULL inputs, and inputs that don't require grad, get
 * empty edges). NULL with CT_ERR_OOM. */
ct_node *ct__node_new(const char *name, ct_backward_fn backward, size_t state_size, int n_inputs,
                      const ct_tensor *const *inputs);
#define CT_NODE_NEW(T, name, backward, n_inputs, inputs) \
  ct__node_new(name, backward, sizeof(T), n_inputs, inputs)
void ct__node_release(ct_node *n);
/* Releases n's saved tensors (and its inner node's): backward without
 * retain_graph is done with them. */
void ct__node_free_saved(ct_node *n);

/* Saves t (an input, or any tensor other than the node's output) into slot,
 * a field of n's state. The target of an in-place write in progress
 * (ct__ag_inplace_begin) is saved, the first time, as its value before the
 * write (torch's original_self: record functions save input 0 first); later
 * saves of it in the same node are the tensor itself (so y.mul_(y) fails at
 * backward, as in torch). On failure marks n broken (ct__ag_record then
 * fails with the error). NULL n or t: no-op. */
void ct__save(ct_node *n, ct_saved *slot, const ct_tensor *t);
/* Saves the node's output r (a detached alias; for an in-place write, its
 * version after the write). */
void ct__save_output(ct_node *n, ct_saved *slot, const ct_tensor *r);

/* Makes n the grad_fn of r, which then requires grad, and returns r. During
 * an in-place write of r, hands n to the write instead (attached by
 * ct__ag_inplace_end). On failure (n NULL or broken: the error is recorded)
 * releases n, releases r (not during an in-place write) and returns NULL. */
ct_tensor *ct__ag_record(ct_tensor *r, ct_node *n);

/* t's autograd meta, allocated on first use; NULL with CT_ERR_OOM. */
struct ct_autograd_meta *ct__meta_of(ct_tensor *t);
/* Makes n (a reference taken over) m's grad_fn, replacing the old one, and
 * moves retain_grad to it. */
void ct__meta_set_grad_fn(struct ct_autograd_meta *m, ct_node *n);

/* ct__ag_record during an in-place write of ip->self: keeps n for
 * ct__ag_inplace_end (building the base's CopySlices node when self is a
 * view). Returns self, or NULL (n released, ip->failed) on failure. */
ct_tensor *ct__inplace_take(ct_inplace *ip, ct_node *n);

/* The node that made t, after bringing a view's history up to date with its
 * base (a view whose base was modified in place reads the base's new
 * history); NULL for leaves. false with CT_ERR_OOM. */
bool ct__grad_fn_of(const ct_tensor *t, ct_node **fn);

/* A view node for v over its base (AsStridedBackward: the gradient of v
 * scattered into zeros of the base's geometry); input 0 takes the edge
 * `base_edge` (retained). NULL with CT_ERR_OOM. */
ct_node *ct__as_strided_node(const ct_tensor *v, const ct_tensor *base, ct_edge base_edge);

/* ---- Backward (engine side) ----------------------------------------------- */

struct ct_bw {
  ct_node *node;
  ct_tensor **grad_in; /* n_inputs results, NULL: no gradient */
  ct_status st;        /* the first failure */
  bool retain;         /* backward(retain_graph): keep saved tensors */
  int n_tmp, cap_tmp;
  ct_tensor **tmp; /* the node-local scope */
  ct_tensor *tmp_small[16];
};

#define CT_BW_STATE(b, T) ((const T *)(const void *)(b)->node->state)

/* Runs n's backward for gradient g: grads[k] receives the gradient of input
 * k (a new reference, already summed to the input's shape and cast to its
 * dtype), NULL when none. Frees n's saved tensors unless retain. */
ct_status ct__node_apply(ct_node *n, const ct_tensor *g, ct_tensor **grads, bool retain);

/* ---- Formula tools ---------------------------------------------------------- */

/* Takes t into the node's scope (released when backward returns) and returns
 * it; NULL records the failure in b->st. */
ct_tensor *bw_keep(ct_bw *b, ct_tensor *t);
/* The tensor saved in slot, or NULL (b->st set) if it was freed by an earlier
 * backward or modified in place since it was saved. */
const ct_tensor *bw_saved(ct_bw *b, const ct_saved *slot);
/* Whether input k needs a gradient. */
static inline bool bw_needs(const ct_bw *b, int k) {
  return b->node->next[k].fn || b->node->next[k].leaf;
}
/* g is the gradient of input k (NULL: a failure already in b->st). */
void bw_set(ct_bw *b, int k, const ct_tensor *g);
/* Sets input k's gradient to expr, evaluated only if the input needs one. */
#define BW_GRAD(b, k, expr)                 \
  do {                                      \
    if (bw_needs(b, k)) bw_set(b, k, expr); \
  } while (0)
/* Records a failure (an error already recorded, else CT_ERR_STATE). */
void bw_fail(ct_bw *b);

/* Elementwise and reductions on the node's scope (NULL in, NULL out). */
ct_tensor *bw_unary(ct_bw *b, ct_unary_op op, const ct_tensor *x);
ct_tensor *bw_binary(ct_bw *b, ct_binary_op op, const ct_tensor *x, const ct_tensor *y);
ct_tensor *bw_scalar(ct_bw *b, ct_binary_op op, const ct_tensor *x, double s);
ct_tensor *bw_add(ct_bw *b, const ct_tensor *x, const ct_tensor *y);
ct_tensor *bw_sub(ct_bw *b, const ct_tensor *x, const ct_tensor *y);
ct_tensor *bw_mul(ct_bw *b, const ct_tensor *x, const ct_tensor *y);
ct_tensor *bw_div(ct_bw *b, const ct_tensor *x, const ct_tensor *y);
ct_tensor *bw_neg(ct_bw *b, const ct_tensor *x);
ct_tensor *bw_scale(ct_bw *b, const ct_tensor *x, double s); /* x * s */
ct_tensor *bw_where(ct_bw *b, const ct_tensor *c, const ct_tensor *x, const ct_tensor *y);
/* x == 0 as a bool tensor. */
ct_tensor *bw_is_zero(ct_bw *b, const ct_tensor *x);
/* A 0-d zero (or value v) of like's dtype and device (broadcasts in where). */
ct_tensor *bw_zero(ct_bw *b, const ct_tensor *like);
ct_tensor *bw_const(ct_bw *b, const ct_tensor *like, double v);
ct_tensor *bw_zeros(ct_bw *b, const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
ct_tensor *bw_cast(ct_bw *b, const ct_tensor *x, ct_dtype dtype);
ct_tensor *bw_contiguous(ct_bw *b, const ct_tensor *x);
ct_tensor *bw_clone(ct_bw *b, const ct_tensor *x);
ct_tensor *bw_reduce(ct_bw *b, ct_reduce_op op, const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *bw_matmul(ct_bw *b, const ct_tensor *x, const ct_tensor *y);
/* Views (no copy): geometry given, the last two dims swapped, a size-1 dim
 * inserted at d / removed at d, x broadcast to shape, a contiguous x
 * reshaped. */
ct_tensor *bw_view(ct_bw *b, const ct_tensor *x, const int64_t *shape, const int64_t *strides,
                   int ndim, int64_t offset);
ct_tensor *bw_mT(ct_bw *b, const ct_tensor *x);
ct_tensor *bw_unsqueeze(ct_bw *b, const ct_tensor *x, int d);
ct_tensor *bw_squeeze(ct_bw *b, const ct_tensor *x, int d);
ct_tensor *bw_expand(ct_bw *b, const ct_tensor *x, const int64_t *shape, int ndim);
ct_tensor *bw_reshape(ct_bw *b, const ct_tensor *x, const int64_t *shape, int ndim);
/* An uninitialized tensor (for backend slots that write their result). */
ct_tensor *bw_empty(ct_bw *b, const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
/* A backend call's status: a failure goes to b->st; true when it succeeded. */
bool bw_ok(ct_bw *b, ct_status st);

/* Where a view's elements lie within its base's, both in storage
 * coordinates (views of views record the root base). */
typedef struct ct_view_geometry {
  int64_t view_shape[CT_MAX_DIMS], view_strides[CT_MAX_DIMS], view_offset;
  int view_ndim;
  int64_t base_strides[CT_MAX_DIMS], base_offset; /* the base's shape: its input meta */
} ct_view_geometry;
void ct__view_geometry_of(ct_view_geometry *geo, const ct_tensor *view, const ct_tensor *base);
/* Zeros laid out as the base (a buffer spanning its strides, of like's dtype
 * and device): *whole views them as the base, *part as the view. false (b->st
 * set) on failure. */
bool bw_base_layout(ct_bw *b, const ct_view_geometry *geo, const ct_input_meta *base,
                    const ct_tensor *like, ct_tensor **whole, ct_tensor **part);

/* Zeros of shape, then scatter_add(dim, index, src) into them (index i64). */
ct_tensor *bw_scatter_add_into_zeros(ct_bw *b, const int64_t *shape, int ndim, int dim,
                                     const ct_tensor *index, const ct_tensor *src);

#endif /* CT_AUTOGRAD_NODE_H */
