/* The recording interface between the op layer and autograd: grad mode, the
 * ct__ag_* calls an op makes after computing its result, and the in-place
 * protocol. Nodes and formulas are private to src/autograd (node.h).
 *
 * Ownership: a tensor's autograd meta holds a reference to the node that made
 * it (grad_fn); a node holds references to the nodes (or leaf tensors) of its
 * inputs and to the tensors it saved, as detached aliases (no autograd meta),
 * so no tensor owns a path back to itself. A view made
 * by a recorded op holds a reference to its base (the tensor that owns the
 * memory), so an in-place write through the view can rewrite the base's
 * history (CopySlices). */
#ifndef CT_AUTOGRAD_INTERNAL_H
#define CT_AUTOGRAD_INTERNAL_H

#include "backend/backend.h"

typedef struct ct_node ct_node;
typedef struct ct_inplace ct_inplace;

struct ct_autograd_meta {
  bool requires_grad;
  bool retains_grad;
  ct_tensor *grad;  /* accumulated gradient (leaves; non-leaves with retain_grad) */
  ct_node *grad_fn; /* NULL for leaves */
  /* A view made by a recorded op: its base (the root tensor owning the
   * memory, a reference) and the base's grad_fn when this view's grad_fn was
   * made; when the base's grad_fn has changed since (an in-place write to the
   * base or to another view of it), the view's history is regenerated from
   * the base's (ct__grad_fn_of). */
  ct_tensor *view_base;
  ct_node *view_base_fn;
  ct_inplace *inplace;    /* the in-place write in progress on this tensor */
  ct_tensor *saved_alias; /* a detached alias shared by the nodes that save this tensor */
};

/* ---- Grad mode ---- */
bool ct__grad_enabled(void);
bool ct__requires_grad(const ct_tensor *t);
/* Grad mode on and any non-NULL input requiring grad. */
bool ct__ag_needed(const ct_tensor *const *inputs, int n);

/* ---- Recording, called by the public op functions ----
 * Each takes the op's untracked result `r` (NULL passes through), records a
 * node when grad mode is on and an input requires grad, and returns r (NULL
 * with an error, r released, if recording failed). */
ct_tensor *ct__ag_unary(ct_tensor *r, int op, const ct_tensor *x, double p0, double p1);
ct_tensor *ct__ag_binary(ct_tensor *r, int op, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct__ag_binary_scalar(ct_tensor *r, int op, const ct_tensor *a, double s, bool reversed);
ct_tensor *ct__ag_add_scaled(ct_tensor *r, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_tensor *ct__ag_where(ct_tensor *r, const ct_tensor *cond, const ct_tensor *a,
                        const ct_tensor *b);
/* r overwritten with values that do not depend on x (fill_, zero_, random
 * fills): x gets a zero gradient. name: "FillBackward", ... */
ct_tensor *ct__ag_overwrite(ct_tensor *r, const ct_tensor *x, const char *name);
/* dst (its old value) and src of copy_: dst's old value gets zero, src the
 * gradient moved back to its device. */
ct_tensor *ct__ag_copy(ct_tensor *r, const ct_tensor *dst, const ct_tensor *src);

/* Views: records that v (untracked) is a view of t. kind: CT_VIEW_RESHAPE
 * (any same-numel reinterpretation: view, reshape, flatten, squeeze,
 * unsqueeze, alias), CT_VIEW_PERMUTE (perm[] given), CT_VIEW_EXPAND, or
 * CT_VIEW_STRIDED (slice, select, narrow, diagonal: the gradient is scattered
 * back through the same geometry). Returns v, or NULL (v released). */
enum { CT_VIEW_RESHAPE, CT_VIEW_PERMUTE, CT_VIEW_EXPAND, CT_VIEW_STRIDED };
ct_tensor *ct__ag_view(ct_tensor *v, const ct_tensor *t, int kind, const int *perm);
/* A strided view v of a t with internal overlap (expanded): its memory
 * geometry cannot say which of t's elements it took, so the gradient is
 * scattered by view_strides and view_offset, those of the same view of a
 * contiguous t (offset 0). */
ct_tensor *ct__ag_view_logical(ct_tensor *v, const ct_tensor *t, const int64_t *view_strides,
                               int64_t view_offset);
/* Identity-gradient ops that make a new tensor from t: contiguous, clone,
 * cast (the engine casts the gradient back). */
ct_tensor *ct__ag_identity(ct_tensor *r, const ct_tensor *t, const char *name);
/* ct_to across devices: the gradient goes back to t's device. */
ct_tensor *ct__autograd_record_to(ct_tensor *r, const ct_tensor *t);

/* Reductions (opts as given to the op), values of max/min along a dim, softmax. */
ct_tensor *ct__ag_reduce(ct_tensor *r, int op, const ct_tensor *x, const ct_reduce_opts *opts,
                         double p);
ct_tensor *ct__ag_max_dim(ct_tensor *values, const ct_tensor *indices, const ct_tensor *x, int dim,
                          bool keepdim);
ct_tensor *ct__ag_softmax(ct_tensor *r, const ct_tensor *x, int dim, bool log);

/* matmul (torch.matmul semantics) and linear. */
ct_tensor *ct__ag_matmul(ct_tensor *r, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct__ag_linear(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias);

/* Indexing, masking, joining. */
ct_tensor *ct__ag_index_select(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index);
ct_tensor *ct__ag_gather(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index);
ct_tensor *ct__ag_scatter(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index,
                          const ct_tensor *src, bool add);
ct_tensor *ct__ag_masked_select(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask);
ct_tensor *ct__ag_masked_fill(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask);
ct_tensor *ct__ag_cat(ct_tensor *r, ct_tensor *const *tensors, int count, int dim, bool stack);
ct_tensor *ct__ag_triangle(ct_tensor *r, const ct_tensor *x, int64_t k, bool upper);

/* Layers (src/nn). The inputs give the edges; the prepared tensors the
 * forward computed with (contiguous, 4-d / 3-d) are what backward reads. */
ct_tensor *ct__ag_conv2d(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias, const ct_tensor *x4, const ct_tensor *w_c,
                         const ct_conv2d_params *p, bool unbatched);
/* indices: the argmax of max pooling (NULL for average pooling). */
ct_tensor *ct__ag_pool2d(ct_tensor *r, const ct_tensor *x, bool is_max, const ct_tensor *indices,
                         const ct_pool2d_params *p);
/* x3: x as (N, C, S); mean and invstd of the batch (training) or the
 * running statistics (evaluation). */
ct_tensor *ct__ag_batch_norm(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *bias, const ct_tensor *x3, const ct_tensor *w_c,
                             const ct_tensor *mean, const ct_tensor *invstd, bool training);
/* x_c: x contiguous; rows of `cols` elements normalized (the last nd dims). */
ct_tensor *ct__ag_layer_norm(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *bias, const ct_tensor *x_c, const ct_tensor *w_c,
                             const ct_tensor *mean, const ct_tensor *rstd, int64_t cols, int nd);
/* flat: the indices as a 1-d i64 tensor. */
ct_tensor *ct__ag_embedding(ct_tensor *r, const ct_tensor *indices, const ct_tensor *weight,
                            const ct_tensor *flat);
/* The fused cross_entropy (logits) / nll_loss of src/nn/loss.c over rows
 * (M, C): logp the log-probabilities (M, C) (logits only), target (M, 1) i64,
 * a the per-row factor (M, 1) or NULL (then 1 - eps), denom the mean's
 * divisor (0-d) or NULL (then M). */
typedef struct ct_class_loss_args {
  const ct_tensor *logp, *target, *a, *denom;
  ct_reduction reduction;
  double eps;
  int64_t M, C;
  bool logits;
} ct_class_loss_args;
ct_tensor *ct__ag_class_loss(ct_tensor *r, const ct_tensor *x, const ct_class_loss_args *s);

/* ---- In-place writes ----
 * An in-place op records the same node as its out-of-place form, with the
 * written tensor (self) as both an input (its history before the write) and
 * the output (its history after), as PyTorch rewrites history:
 *
 *   ct_inplace ip;
 *   if (!ct__ag_inplace_begin(&ip, "mul_", a, &b, 1)) return NULL;
 *   if (ip.record && !ct__ag_binary(a, CT_BOP_MUL, a, b)) return ct__ag_inplace_end(&ip, NULL);
 *   return ct__ag_inplace_end(&ip, ct__binary(CT_BOP_MUL, a, a, b));
 *
 * The recording runs before the write: a formula that saves self gets a copy
 * of its old value (torch's original_self), one that saves the output gets
 * self after the write. A write through a view of a tensor that requires
 * grad rewrites the base's history (CopySlices) and the view's. Refused
 * (with the op's name): a leaf that requires grad, or a view of one (torch's
 * rule); a target that doesn't require grad but shares its memory with other
 * tensors while an operand requires grad (the history of those tensors
 * can't be rewritten: autograd only tracks views of tensors that require
 * grad). */
struct ct_inplace {
  const char *op;
  ct_tensor *self;
  bool record;         /* the write is recorded: call the op's ct__ag_* with r = self */
  bool failed;         /* recording failed (error recorded) */
  ct_node *node;       /* the recorded node, attached by ct__ag_inplace_end */
  ct_node *base_node;  /* self is a view: the base's CopySlices node */
  ct_tensor *original; /* self's value before the write, if a formula saved it */
};
bool ct__ag_inplace_begin(ct_inplace *ip, const char *op, ct_tensor *self,
                          const ct_tensor *const *others, int n_others);
/* After the write: `written` is self, or NULL if the write (or the
 * recording) failed. Attaches the recorded history, or drops it on failure;
 * returns written. Never fails after a successful write. */
ct_tensor *ct__ag_inplace_end(ct_inplace *ip, ct_tensor *written);

/* `_out` forms don't record (as torch's out=): false with CT_ERR_STATE when
 * grad mode is on and out or an input requires grad. */
bool ct__ag_out_allowed(const char *op, const ct_tensor *out, const ct_tensor *const *inputs,
                        int n);

/* ---- Helpers for the op layer ---- */
/* A zero-filled contiguous tensor. */
ct_tensor *ct__zeros(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
/* Sums g over broadcast dims so it has `shape` (g's shape broadcasts to it). */
ct_tensor *ct__sum_to_shape(const ct_tensor *g, const int64_t *shape, int ndim);

/* Test hook: the next n autograd host allocations succeed, the one after
 * fails (as out of memory) and turns the hook off; n < 0 turns it off.
 * Returns the previous countdown (-1: off, or it fired). Per thread. */
int ct__ag_fail_alloc_after(int n);

/* Row norms (group, instance, RMS norm; grad_norm_rows.c): x_c is x
 * contiguous, w_c the weight cast and contiguous (or NULL), mean (NULL for
 * rms) and rstd the per-row statistics; name the node's (torch's) name. */
ct_tensor *ct__ag_row_norm(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                           const ct_tensor *bias, const ct_tensor *x_c, const ct_tensor *w_c,
                           const ct_tensor *mean, const ct_tensor *rstd,
                           const ct_row_norm_params *p, const char *name);
/* conv_transpose2d (grad_conv_transpose.c): x4 the input as (N, C_in, H, W)
 * contiguous, w_c the weight contiguous, p conv2d's parameters of the
 * convolution it transposes. */
ct_tensor *ct__ag_conv_transpose2d(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                                   const ct_tensor *bias, const ct_tensor *x4, const ct_tensor *w_c,
                                   const ct_conv2d_params *p, bool unbatched);
/* adaptive pooling (grad_pool_adaptive.c): indices the argmax (max; the
 * output's shape), NULL for the average. */
ct_tensor *ct__ag_adaptive_pool2d(ct_tensor *r, const ct_tensor *x, bool is_max,
                                  const ct_tensor *indices);
/* interpolate (grad_upsample.c): p the geometry of the forward. */
ct_tensor *ct__ag_upsample(ct_tensor *r, const ct_tensor *x, const ct_interp_params *p);
/* ---- Sort-scan family (grad_sort_scan.c) ---- */
/* cumsum / cumprod of x along dim (wrapped). */
ct_tensor *ct__ag_cumulative(ct_tensor *r, const ct_tensor *x, int dim, bool prod);
/* r = remap of x by p (flip, roll; flat: a roll of the flattened x, p's
 * dim 0); the gradient is the inverse remap. name: "FlipBackward". */
ct_tensor *ct__ag_remap(ct_tensor *r, const ct_tensor *x, const ct_remap_params *p, bool flat,
                        const char *name);
/* r = remap of xv (x, or a view of x with size-1 dims in front: repeat) by p
 * (tile, interleave, reflect/replicate padding): the gradient scatter-adds
 * g back along each remapped dim. */
ct_tensor *ct__ag_gather_remap(ct_tensor *r, const ct_tensor *x, const ct_tensor *xv,
                               const ct_remap_params *p, const char *name);
/* r = x padded with a constant, pads[2 d] elements before x along dim d:
 * the gradient is g's window over x. */
ct_tensor *ct__ag_pad_constant(ct_tensor *r, const ct_tensor *x, const int64_t *before);
/* ---- Products and advanced indexing (grad_products.c, grad_advindex.c) ---- */
/* r = beta * input + alpha * (m1 @ m2): addmm (2-d) and baddbmm (3-d). */
ct_tensor *ct__ag_addmm(ct_tensor *r, const ct_tensor *input, const ct_tensor *m1,
                        const ct_tensor *m2, double beta, double alpha);
/* r = x[indices] and r = x.index_put(indices, values, accumulate), planned as
 * g with the index points lin (ops/adv_index.h). */
struct ct_adv_geom;
ct_tensor *ct__ag_index(ct_tensor *r, const ct_tensor *x, const struct ct_adv_geom *g,
                        const ct_tensor *lin);
ct_tensor *ct__ag_index_put(ct_tensor *r, const ct_tensor *x, const ct_tensor *values,
                            const struct ct_adv_geom *g, const ct_tensor *lin, bool accumulate);
/* ---- attention (grad_attention.c) ---- */
/* r (bshape..., L, Ev): the attention of inputs {q, k, v}; saved: the
 * kernel's operands {q (BH, L, E), k, v, out (BH, L, Ev), lse (BH, L),
 * mask or NULL}; p: the forward's parameters (the dropout key included). */
ct_tensor *ct__ag_sdpa(ct_tensor *r, const ct_tensor *const inputs[3],
                       const ct_tensor *const saved[6], const ct_sdpa_params *p);
/* ---- recurrent cells (grad_rnn.c) ---- */
/* r: the fused cell's output (LSTM (2, N, H), GRU (N, H)) of inputs {gi, gh,
 * state}; saved: state and ws, the kernel's contiguous operand and the
 * forward's workspace. */
ct_tensor *ct__ag_rnn_cell(ct_tensor *r, const ct_tensor *const inputs[3], const ct_tensor *state,
                           const ct_tensor *ws, const ct_rnn_cell_params *p);
/* ---- recurrent layers (grad_rnn_layer.c) ---- */
/* One direction of one layer (nn/rnn_layer.h), p's kind, steps L, rows N,
 * units H, input features I. */
typedef struct ct_rnn_layer_params {
  ct_rnn_cell_params cell;
  bool reverse;
  int64_t L, I;
} ct_rnn_layer_params;
/* Views the layer's loops are written with (not registered; NULL with
 * CT_ERR_OOM): a contiguous (rows, cols) window at element `at` of t
 * (t's offset + at), 3-d (1, rows, cols) for the matmul slot when mm; and
 * the matrix m (r, c) as the slot's (1, r, c) operand, or (1, c, r) = m^T. */
static inline ct_tensor *ct__rnn_window(const ct_tensor *t, int64_t rows, int64_t cols, int64_t at,
                                        bool mm) {
  return mm ? ct__view_of(t, t->dtype, (int64_t[]){1, rows, cols},
                          (int64_t[]){rows * cols, cols, 1}, 3, t->offset + at)
            : ct__view_of(t, t->dtype, (int64_t[]){rows, cols}, (int64_t[]){cols, 1}, 2,
                          t->offset + at);
}
static inline ct_tensor *ct__rnn_mat(const ct_tensor *m, bool transposed) {
  int k = transposed ? 1 : 0;
  return ct__view_of(m, m->dtype, (int64_t[]){1, m->shape[k], m->shape[1 - k]},
                     (int64_t[]){0, m->strides[k], m->strides[1 - k]}, 3, m->offset);
}
/* W_hh packed for the backend's recurrent GEMM (backend.h's rnn_pack) as
 * B = W_hh^T (forward) or W_hh (backward, transposed false), when the backend
 * has the slots and w_hh is f32: *packed a new tensor, else NULL (the layer
 * uses matmul). CT_OK or the failure. */
static inline ct_status ct__rnn_pack_w_hh(const ct_backend *be, const ct_tensor *w_hh,
                                          bool transposed, ct_tensor **packed) {
  *packed = NULL;
  if (!be->rnn_pack || !be->rnn_matmul_packed || w_hh->dtype != CT_F32) return CT_OK;
  int64_t G = w_hh->shape[0], H = w_hh->shape[1];
  int64_t n = transposed ? ct_rnn_packed_numel(H, G) : ct_rnn_packed_numel(G, H);
  *packed = ct__empty(&n, 1, w_hh->dtype, ct__device(w_hh));
  if (!*packed) return CT_ERR_OOM;
  return be->rnn_pack(*packed, w_hh, transposed);
}
/* Moves a window made by ct__rnn_window over t to element `at`: one view per
 * buffer serves every step. */
static inline void ct__rnn_seek(ct_tensor *v, const ct_tensor *t, int64_t at) {
  v->offset = t->offset + at;
}
/* r: the layer's output (LSTM (2, L, N, H), GRU (L, N, H)) of inputs {in,
 * h0, c0, w_ih, w_hh, b_ih, b_hh} (NULL where absent); saved: in, h0, c0
 * (LSTM) as the forward's contiguous operands, and ws (L, N, 5H | 4H), every
 * step's cell workspace. */
ct_tensor *ct__ag_rnn_layer(ct_tensor *r, const ct_tensor *const inputs[7], const ct_tensor *in,
                            const ct_tensor *h0, const ct_tensor *c0, const ct_tensor *ws,
                            const ct_rnn_layer_params *p);
/* ---- linalg family: factorizations (grad_linalg_factor.c) ---- */
/* x = solve(a, b) (vec: b and x are vectors); lu, piv: the LU of a the
 * forward computed (ops/linalg_factor.h), saved for the gradient. */
ct_tensor *ct__ag_linalg_solve(ct_tensor *x, const ct_tensor *a, const ct_tensor *b,
                               const ct_tensor *lu, const ct_tensor *piv, bool vec);
ct_tensor *ct__ag_linalg_inv(ct_tensor *y, const ct_tensor *a);
/* r = det(a), or (log) r = log|det(a)| */
ct_tensor *ct__ag_linalg_det(ct_tensor *r, const ct_tensor *a, const ct_tensor *lu,
                             const ct_tensor *piv, bool log);
/* l = cholesky(a), lower */
ct_tensor *ct__ag_linalg_cholesky(ct_tensor *l, const ct_tensor *a);
/* p = eigh(a) packed (..., n + 1, n): eigenvalues in row 0, eigenvectors
 * below (ops/linalg_eigh.c) */
ct_tensor *ct__ag_linalg_eigh(ct_tensor *p, const ct_tensor *a);
/* p = svd(a) packed (..., m + 1 + n, k): U (m rows), S (1 row), V (n rows)
 * (ops/linalg_svd.c) */
ct_tensor *ct__ag_linalg_svd(ct_tensor *p, const ct_tensor *a, int64_t m, int64_t n);
/* p = qr(a) packed (..., m + n, k): Q (m rows), then R^T (n rows)
 * (ops/linalg_qr.c) */
ct_tensor *ct__ag_linalg_qr(ct_tensor *p, const ct_tensor *a, int64_t m, int64_t n);
/* t = an output of qr(a, complete) with more rows than columns: a node
 * whose backward fails (not differentiable, as in torch) */
ct_tensor *ct__ag_linalg_qr_undefined(ct_tensor *t, const ct_tensor *a);

#endif /* CT_AUTOGRAD_INTERNAL_H */
