/* The backend interface: what a device (CPU, CUDA) implements.
 *
 * The op layer checks user input, computes result shapes and dtypes,
 * allocates outputs and then calls one of these slots; a kernel never checks
 * user input. Contracts common to all kernel slots:
 *  - every tensor argument is on this backend's device;
 *  - `out` is allocated with the result shape and dtype, and does not partially
 *    overlap an input (it may be exactly an input, for in-place ops);
 *  - inputs have been broadcast (expanded, stride 0) to the shape the slot
 *    documents, and cast to the dtype it documents;
 *  - a slot returns CT_OK, or records an error (CT_ERR_CUDA, CT_ERR_OOM) and
 *    returns its code.
 * Slots marked optional may be NULL; the op layer then reports
 * CT_ERR_UNAVAILABLE naming the op and the device.
 */
#ifndef CT_BACKEND_BACKEND_H
#define CT_BACKEND_BACKEND_H

#include "backend/params.h"
#include "core/internal.h"
#include "ops/op_table.h"

typedef struct ct_backend {
  const char *name;

  /* ---- Memory ---- */
  /* Device memory of nbytes. With `pinned` (CUDA backend only; device_index
   * -1): page-locked host memory. NULL with CT_ERR_OOM recorded on failure. */
  void *(*alloc)(int device_index, size_t nbytes, bool pinned);
  void (*free)(int device_index, void *ptr, size_t nbytes, bool pinned);
  ct_status (*memory_stats)(int device_index, ct_memory_stats *out);
  ct_status (*empty_cache)(int device_index);
  /* Marks the allocator block at `data` (a storage's data pointer; pinned:
   * pinned host memory) as in use on native `stream` (NULL: the legacy default
   * stream) of device_index, until the block is freed (ct_record_stream). */
  ct_status (*record_stream)(int device_index, void *data, bool pinned, void *stream);

  /* ---- Transfers and fills ---- */
  /* dst = src elementwise (same shape, any strides, dtype converted). */
  ct_status (*copy)(ct_tensor *dst, const ct_tensor *src);
  /* Contiguous bytes between host memory and a contiguous device tensor. On
   * the CPU these are memcpy. non_blocking: may return before the copy ends
   * (only when the host memory is pinned). */
  ct_status (*copy_from_host)(ct_tensor *dst, const void *src, size_t nbytes, bool non_blocking);
  ct_status (*copy_to_host)(void *dst, const ct_tensor *src, size_t nbytes, bool non_blocking);
  /* Every element of dst (any strides) = value converted to dst's dtype. */
  ct_status (*fill)(ct_tensor *dst, double value);

  /* ---- Elementwise, with their gradients ---- */
  /* out = op(x); x and out have out's shape. x's dtype is out's dtype, except
   * for BOOL-rule ops (out is bool; x any dtype) and LEAKY_RELU on integers
   * (x cast to out's floating dtype by the op layer). p0, p1: op parameters. */
  ct_status (*unary)(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1);
  /* out = a op b; a and b have out's shape and one dtype (the compute dtype),
   * which is out's dtype except for COMPARE ops (out bool). */
  ct_status (*binary)(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
  /* out = a op s (reversed: s op a); a has out's shape and compute dtype. */
  ct_status (*binary_scalar)(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                             bool reversed);
  /* out = a + alpha * b (same shape and dtype). */
  ct_status (*axpy)(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha);
  /* out = cond ? a : b; cond bool; a, b of out's dtype; all of out's shape. */
  ct_status (*where)(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
  /* grad_x = grad_out * d op(x)/dx, fused; x is the op's input, y its output
   * (either may be what the formula needs; both given, of grad_x's shape and
   * dtype). p0, p1 as in `unary`. */
  ct_status (*unary_backward)(ct_unary_op op, ct_tensor *grad_x, const ct_tensor *grad_out,
                              const ct_tensor *x, const ct_tensor *y, double p0, double p1);

  /* ---- Reductions, softmax ---- */
  /* out[j] = reduce over the dims with reduce_mask[d] of x. out has x's ndim
   * (keepdim shape: size 1 on reduced dims); x and out have any strides. x
   * keeps its own dtype (the op layer doesn't cast it): any dtype for
   * SUM/PROD/MAX/MIN/ALL/ANY, floating for the others; the kernel accumulates
   * wide (integers in i64, floats in at least f32, f32 sums blocked pairwise).
   * out's dtype is the result dtype: i64 for SUM/PROD of integers/bool, bool
   * for ALL/ANY, else x's. p: correction for VAR/STD (divisor max(0, N - p)),
   * the order for NORM. An empty reduction gives the identity (sum 0, prod 1,
   * all true, any false, logsumexp -inf; mean/var nan); max/min and norm
   * +-inf have none, and the op layer rejects those before the call. */
  ct_status (*reduce)(ct_reduce_op op, ct_tensor *out, const ct_tensor *x, const bool *reduce_mask,
                      double p);
  /* Along one dim: values (may be NULL; x's dtype) and i64 indices (may be
   * NULL) of the first max (is_max) or min; nan counts as the extreme. x has
   * any dtype, ndim >= 1 and size >= 1 at dim; values/indices have x's ndim
   * with size 1 at dim. */
  ct_status (*arg_reduce)(bool is_max, ct_tensor *values, ct_tensor *indices, const ct_tensor *x,
                          int dim);
  /* Softmax or log-softmax of x along dim into out (same shape and floating
   * dtype, any strides; out may be x). A row holding +inf or only -inf gives
   * nan, as torch. */
  ct_status (*softmax)(ct_tensor *out, const ct_tensor *x, int dim, bool log);
  /* Gradient of softmax (log: log_softmax) along dim from its output y. */
  ct_status (*softmax_backward)(ct_tensor *grad_x, const ct_tensor *grad_out, const ct_tensor *y,
                                int dim, bool log);

  /* ---- Scans, sorting, searching (sort-scan family) ---- */
  /* out = running sum (prod: product) of x along dim, from the start, or
   * from the end with `reverse` (out[k] = sum over j >= k of x[j]). x and out
   * are contiguous, of one dtype: f32, f64 or i64 (the op layer casts);
   * floats accumulate in f64. */
  ct_status (*cumulative)(bool prod, bool reverse, ct_tensor *out, const ct_tensor *x, int dim);
  /* out[c] = x[src(c)], src per dim from p (ct_remap_source, params.h):
   * flip, roll, tile, interleave, reflect and replicate padding. out and x
   * have one dtype and ndim >= 1, sizes as the kinds make them, any strides;
   * out does not overlap x. */
  ct_status (*remap)(ct_tensor *out, const ct_tensor *x, const ct_remap_params *p);
  /* Stable argsort of each row (the last dim) of x, contiguous, f32, f64 or
   * i64 (the op layer casts): indices (i64, contiguous, x's shape) of the
   * elements in ascending (descending) order, nan above every number and -0
   * equal to +0 (core/sort_math.h's keys). */
  ct_status (*argsort)(ct_tensor *indices, const ct_tensor *x, bool descending);
  /* Optional (the op layer sorts without it): the first k indices of the
   * argsort above (largest: descending), without sorting whole rows. x as
   * for argsort; indices (rows..., k) contiguous i64; 1 <= k. */
  ct_status (*topk)(ct_tensor *indices, const ct_tensor *x, int64_t k, bool largest);
  /* Optional: whether `topk` beats the sort for the first k of rows of n
   * (NULL: for rows of 4096 or more and k at most n / 16). */
  bool (*topk_wanted)(int64_t n, int64_t k);
  /* out (R, M) i64 = the position of values[r][m] in the sorted row
   * sorted[r] (R, L) (left: before equal elements, right: after them; nan
   * sorts last). sorted and values share one dtype, f64 or i64; any strides
   * (stride 0 along R for one shared row). */
  ct_status (*searchsorted)(ct_tensor *out, const ct_tensor *sorted, const ct_tensor *values,
                            bool right);
  /* out = x sorted ascending, nan after every number (for ct_unique). x and
   * out 1-d, contiguous, one dtype, f64 or i64. */
  ct_status (*sort_flat)(ct_tensor *out, const ct_tensor *x);

  /* ---- Indexing ---- */
  /* out = x.index_select(dim, index); index 1-d i64, values checked in range by
   * the kernel (an out-of-range index gives CT_ERR_ARG naming it). */
  ct_status (*index_select)(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index);
  /* out = x.gather(dim, index); index i64 of out's shape; range checked, an index
   * out of range reported under `op` (a static string: the caller's op, e.g.
   * cross_entropy, not only "gather"; on CUDA at the next synchronization). */
  ct_status (*gather)(const char *op, ct_tensor *out, const ct_tensor *x, int dim,
                      const ct_tensor *index);
  /* self.scatter_(dim, index, src) (add: scatter_add_); index i64, src of
   * self's dtype, both of index's shape; range checked. */
  ct_status (*scatter)(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src,
                       bool add);
  /* out (1-d, length = number of true in mask) = x[mask]; mask bool of x's shape. */
  ct_status (*masked_select)(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask);
  /* Number of true elements of a bool tensor. */
  ct_status (*count_nonzero)(const ct_tensor *mask, int64_t *count);
  /* Zeroes the elements of the last two dims outside the triangle: keep
   * j - i <= k (lower) or j - i >= k (upper). out may be x. */
  ct_status (*triangle)(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper);
  /* advanced indexing (ct_index, ct_index_put_; params.h) */
  /* lin (contiguous i64, the broadcast shape of the indices) = the mixed-radix
   * index point of idx[0..p->n) (i64, expanded to lin's shape): each value
   * wrapped from [-size, size), else CT_ERR_ARG naming it, its dim and size
   * (on CUDA at the next synchronization, nothing written for that point). */
  ct_status (*index_linearize)(ct_tensor *lin, const ct_tensor *const *idx,
                               const ct_adv_index_params *p);
  /* out[e] = src[e + offset(lin[e])]: src is the indexed tensor seen with
   * out's shape (stride 0 along the index dims), lin expanded to out's shape,
   * p->strides src's strides along p->dims. Same dtype. */
  ct_status (*index_gather)(ct_tensor *out, const ct_tensor *src, const ct_tensor *lin,
                            const ct_adv_index_params *p);
  /* dst[e + offset(lin[e])] = values[e] (accumulate: +=), dst, values and lin
   * seen with one shape as index_gather's. Accumulate adds every duplicate (in
   * row-major order on the CPU; atomics on CUDA); without it, one of the
   * duplicates' values is left (the last on the CPU, unspecified on CUDA). */
  ct_status (*index_put)(ct_tensor *dst, const ct_tensor *values, const ct_tensor *lin,
                         const ct_adv_index_params *p, bool accumulate);

  /* ---- Linear algebra: products and factorizations ---- */
  /* out[b] = a[b] @ b[b] for 3-d tensors (B, n, k) x (B, k, m) -> (B, n, m).
   * Any strides (batch stride 0 for broadcast batches); one dtype. out is
   * contiguous. beta_one: accumulate into out instead of overwriting. */
  ct_status (*matmul)(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one);
  /* Matrices here are LAPACK's: each (n, n) or (k, n) slice of a contiguous
   * tensor is read column-major, so a row-major matrix A is seen as A^T.
   * f32/f64. Failures of the math (a zero pivot, a minor that is not
   * positive-definite) are not errors here: they land in `info`. */
  /* LU with partial pivoting in place (getrf): a (B, n, n); piv (B, n) i32
   * receives the 1-based row exchanges, info (B) i32 LAPACK's info. */
  ct_status (*lu_factor)(ct_tensor *a, ct_tensor *piv, ct_tensor *info);
  /* Solves op(M) X = R with lu_factor's output (getrs) in place: lu (L, n, n),
   * piv (L, n); rhs (B, k, n) holds k column-major right-hand sides per matrix
   * (L == B, or L == 1 and rhs is one system of B * k columns).
   * op(M) = M^T when trans. */
  ct_status (*lu_solve)(const ct_tensor *lu, const ct_tensor *piv, ct_tensor *rhs, bool trans);
  /* Cholesky in place (potrf, uplo 'U'): a (B, n, n), info (B) i32. Only the
   * upper triangle (column-major) is read and written. */
  ct_status (*cholesky)(ct_tensor *a, ct_tensor *info);
  /* Symmetric eigendecomposition in place (syevd, jobz 'V'): a (B, n, n),
   * only its `upper` (column-major; else lower) triangle read; on return a's
   * columns are the orthonormal eigenvectors, w (B, n) the eigenvalues in
   * ascending order; info (B) i32 (> 0: no convergence). */
  ct_status (*eigh)(ct_tensor *a, ct_tensor *w, ct_tensor *info, bool upper);
  /* Singular value decomposition (gesdd / gesvd): a (B, c, r) holds B
   * column-major r x c matrices with r >= c (overwritten); s (B, c) the
   * singular values, descending; u (B, uc, r) the left singular vectors,
   * column-major r x uc (uc = r when full, else c); vt (B, c, c) V^T
   * column-major; info (B) i32 (> 0: no convergence). */
  ct_status (*svd)(ct_tensor *a, ct_tensor *s, ct_tensor *u, ct_tensor *vt, ct_tensor *info,
                   bool full);
  /* QR (geqrf) in place: a (B, c, r) holds column-major r x c matrices: R in
   * its upper triangle, the Householder reflectors below; tau (B, k),
   * k = min(r, c). */
  ct_status (*geqrf)(ct_tensor *a, ct_tensor *tau);
  /* Q from geqrf's reflectors (orgqr) in place: q (B, qc, r) column-major
   * r x qc (k <= qc <= r), the reflectors in its first k columns; tau (B, k). */
  ct_status (*orgqr)(ct_tensor *q, const ct_tensor *tau);
  /* Optional (CPU only, as torch's drivers): least squares through a LAPACK
   * driver, in place. a (B, n, m) holds column-major m x n matrices
   * (overwritten); b (B, k, ldb) k column-major right-hand sides of
   * ldb = max(m, n) rows, the first m read, the first n the solution on
   * return; rank (B) i64; s (B, min(m, n)) the singular values (gelsd,
   * gelss; NULL for gelsy); info (B) i32 (> 0: the SVD did not converge).
   * rcond: singular values (gelsy: the condition estimate) below rcond times
   * the largest count as zero. */
  ct_status (*lstsq)(ct_tensor *a, ct_tensor *b, ct_tensor *rank, ct_tensor *s, ct_tensor *info,
                     ct_lstsq_driver driver, double rcond);

  /* ---- Neural-network layers ---- */
  /* convolution */
  /* out (N, C_out, H_out, W_out) = conv2d(x (N, C_in, H, W), w (C_out, C_in/g, kH, kW)) + bias
   * (C_out, or NULL). All contiguous, one floating dtype. */
  ct_status (*conv2d)(ct_tensor *out, const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                      const ct_conv2d_params *p);
  /* Gradients of conv2d; each of grad_x, grad_w, grad_b may be NULL (not wanted). */
  ct_status (*conv2d_backward)(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                               const ct_tensor *grad_out, const ct_tensor *x, const ct_tensor *w,
                               const ct_conv2d_params *p);
  /* pooling */
  /* Max (is_max, indices i64 of out's shape: flat h*W+w index of the max in its
   * plane; NULL when no gradient is needed) or average pooling of x (N, C, H, W)
   * into out. Contiguous. f16/bf16 allowed (the CPU computes them in f32). */
  ct_status (*pool2d)(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x,
                      const ct_pool2d_params *p);
  ct_status (*pool2d_backward)(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                               const ct_tensor *indices, const ct_pool2d_params *p);
  /* out (N, C, OH, OW) = the average or maximum of x (N, C, H, W) (both
   * contiguous, H, W > 0) over the windows of ct_adaptive_start/end; max:
   * indices (out's shape, i64, h * W + w in the plane; NULL when not wanted),
   * nan propagates. Backward: grad_x (x's shape, written whole) from grad_out
   * (out's shape); max needs the indices. Optional. */
  ct_status (*adaptive_pool2d)(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x);
  ct_status (*adaptive_pool2d_backward)(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                        const ct_tensor *indices);
  /* upsampling (interpolate) */
  /* out (N, C, OH, OW) from x (N, C, H, W) (both contiguous, H, W > 0) with
   * the positions and weights of p (core/interp_math.h). Backward: grad_x
   * (x's shape, written whole) from grad_out (out's shape). Optional. */
  ct_status (*upsample2d)(ct_tensor *out, const ct_tensor *x, const ct_interp_params *p);
  ct_status (*upsample2d_backward)(ct_tensor *grad_x, const ct_tensor *grad_out,
                                   const ct_interp_params *p);
  /* normalization */
  /* Batch norm over x (N, C, S) (S = spatial size, contiguous). training: uses
   * batch statistics (biased variance), updates running stats (may be NULL;
   * running_var with the unbiased variance) with momentum; else uses the
   * running stats (required). Either way writes the statistics used to
   * save_mean/save_invstd (C). weight/bias (may be NULL) have x's dtype;
   * statistics and running stats have x's dtype, or f32 for f16/bf16 x. */
  ct_status (*batch_norm)(ct_tensor *out, ct_tensor *save_mean, ct_tensor *save_invstd,
                          const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                          ct_tensor *running_mean, ct_tensor *running_var, bool training,
                          double momentum, double eps);
  ct_status (*batch_norm_backward)(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                   const ct_tensor *grad_out, const ct_tensor *x,
                                   const ct_tensor *weight, const ct_tensor *save_mean,
                                   const ct_tensor *save_invstd, bool training);
  /* Layer norm of x viewed as (rows, cols) contiguous: mean/rstd (rows; x's
   * dtype, f32 for f16/bf16 x); weight/bias (cols, x's dtype) may be NULL.
   * Backward: each of grad_x, grad_w, grad_b may be NULL. */
  ct_status (*layer_norm)(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                          const ct_tensor *weight, const ct_tensor *bias, int64_t cols, double eps);
  ct_status (*layer_norm_backward)(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                   const ct_tensor *grad_out, const ct_tensor *x,
                                   const ct_tensor *weight, const ct_tensor *mean,
                                   const ct_tensor *rstd, int64_t cols);
  /* out = normalized x (ct_row_norm_params); mean and rstd (rows; x's dtype,
   * f32 for f16/bf16 x) receive the statistics (mean may be NULL, and is
   * not written, for rms); weight/bias (groups * channels, x's dtype) may be
   * NULL. Backward: each of grad_x, grad_w, grad_b may be NULL. Optional. */
  ct_status (*row_norm)(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                        const ct_tensor *weight, const ct_tensor *bias,
                        const ct_row_norm_params *p);
  ct_status (*row_norm_backward)(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                 const ct_tensor *grad_out, const ct_tensor *x,
                                 const ct_tensor *weight, const ct_tensor *mean,
                                 const ct_tensor *rstd, const ct_row_norm_params *p);
  /* attention (optional) */
  /* Fused scaled dot-product attention (params.h, core/sdpa_math.h):
   * q (BH, L, E), k (BH, S, E), v (BH, S, Ev), out (BH, L, Ev) contiguous, one
   * floating dtype; mask (may be NULL) contiguous of that dtype, addressed by
   * the params; lse (BH, L) gets each row's logsumexp of the (masked) scaled
   * scores, f64 for f64 q, else f32 (-inf for a row with every key masked,
   * whose output is nan). S >= 1. */
  ct_status (*sdpa)(ct_tensor *out, ct_tensor *lse, const ct_tensor *q, const ct_tensor *k,
                    const ct_tensor *v, const ct_tensor *mask, const ct_sdpa_params *p);
  /* Its gradients from grad_out (BH, L, Ev) contiguous and the forward's out
   * and lse; grad_q, grad_k, grad_v (contiguous, q's dtype) all written. */
  ct_status (*sdpa_backward)(ct_tensor *grad_q, ct_tensor *grad_k, ct_tensor *grad_v,
                             const ct_tensor *grad_out, const ct_tensor *q, const ct_tensor *k,
                             const ct_tensor *v, const ct_tensor *out, const ct_tensor *lse,
                             const ct_tensor *mask, const ct_sdpa_params *p);
  /* recurrent cells (optional) */
  /* The pointwise part of one LSTM or GRU step (params.h's
   * ct_rnn_cell_params, core/rnn_math.h): from the gate pre-activations gi,
   * gh and the state, h_new (N, H), c_new (N, H) (LSTM only, else NULL) and
   * the workspace ws the backward pass reads. Separate h and c outputs let a
   * whole-layer op write them straight into its h and c sequences.
   * Contiguous, f32 or f64. */
  ct_status (*rnn_cell)(const ct_rnn_cell_params *p, ct_tensor *h_new, ct_tensor *c_new,
                        ct_tensor *ws, const ct_tensor *gi, const ct_tensor *gh,
                        const ct_tensor *state);
  /* Its gradients from grad_h (N, H), grad_c (N, H) (LSTM only, else NULL)
   * and the forward's state and ws: grad_gi (N, G*H) (LSTM: the gradient of
   * both gi and gh), grad_gh (GRU only, else NULL) and grad_state (N, H),
   * all written. */
  ct_status (*rnn_cell_backward)(const ct_rnn_cell_params *p, ct_tensor *grad_gi,
                                 ct_tensor *grad_gh, ct_tensor *grad_state, const ct_tensor *grad_h,
                                 const ct_tensor *grad_c, const ct_tensor *state,
                                 const ct_tensor *ws);
  /* The recurrent GEMM on a weight packed once per layer (optional, f32;
   * NULL: the layers use matmul, which packs the weight again at every
   * step). rnn_pack: packed (params.h's layout, ct_rnn_packed_numel
   * elements) = B (K, Nc), which is w^T when transposed (w (Nc, K)), else w
   * (w (K, Nc)); w any strides. rnn_matmul_packed: out (M, Nc) = a (M, K) @
   * B (+ out when beta_one); out and a contiguous. */
  ct_status (*rnn_pack)(ct_tensor *packed, const ct_tensor *w, bool transposed);
  ct_status (*rnn_matmul_packed)(ct_tensor *out, const ct_tensor *a, const ct_tensor *packed,
                                 bool beta_one);

  /* ---- Optimizers and mixed precision ---- */
  /* Updates n parameters in place from their gradients; state[k][i] are the
   * per-parameter buffers the kind needs (SGD: momentum buffer or NULL; Adam:
   * exp_avg, exp_avg_sq, max_exp_avg_sq or NULL; RMSprop: square_avg,
   * momentum_buffer or NULL, grad_avg or NULL; Adagrad: sum). All of one
   * device. */
  ct_status (*optimizer_step)(const ct_optim_params *p, ct_tensor *const *params,
                              ct_tensor *const *grads, ct_tensor *const *state0,
                              ct_tensor *const *state1, ct_tensor *const *state2, int n);
  /* The gradient scaler's unscale (torch's
   * _amp_foreach_non_finite_check_and_unscale_): each of the n gradients
   * (contiguous, f32/f64/f16/bf16, on found_inf's device) is multiplied in
   * place by inv_scale exactly as mul_scalar_ would (the compute type of its
   * dtype), and found_inf (one f32 element) is set to 1 if an element was inf
   * or NaN before the product, else left as it was. Optional: without it the
   * scaler runs isfinite, all and mul_scalar_ per gradient. */
  ct_status (*amp_unscale)(ct_tensor *const *grads, int n, double inv_scale, ct_tensor *found_inf);

  /* ---- Random ---- */
  /* Fills out (contiguous; dtype as documented by the kind) from Philox:
   * element i (row-major) depends only on (seed, offset, i). probs: the
   * probabilities of CT_RANDOM_BERNOULLI_TENSOR (out's shape, contiguous,
   * f32/f64), else NULL. */
  ct_status (*random)(ct_tensor *out, const ct_random_params *p, const ct_tensor *probs);

  /* ---- Execution (optional: NULL on the CPU, where work is synchronous) ---- */
  ct_status (*synchronize)(int device_index);
  /* Native stream/event handles; the core wraps them in ct_stream/ct_event. */
  void *(*stream_new)(int device_index);
  void (*stream_free)(int device_index, void *stream);
  ct_status (*stream_set_current)(int device_index, void *stream); /* NULL: default */
  ct_status (*stream_synchronize)(int device_index, void *stream);
  void *(*event_new)(int device_index, bool timing);
  void (*event_free)(int device_index, void *event);
  ct_status (*event_record)(int device_index, void *event, void *stream);
  ct_status (*event_synchronize)(int device_index, void *event);
  ct_status (*stream_wait_event)(int device_index, void *stream, void *event);
  ct_status (*event_elapsed_ms)(int device_index, void *start, void *end, float *ms);

  /* ---- Devices (optional; NULL on the CPU, which is one device) ---- */
  /* Visible devices, usable or not; 0 without a driver or device. */
  int (*device_count)(void);
  /* dev is visible and this build has code for it. */
  bool (*device_usable)(int dev);
  /* The calling thread's current device: set_device checks the index
   * (CT_ERR_UNAVAILABLE saying why not). */
  ct_status (*set_device)(int index);
  int (*current_device)(void);
  /* Whether products and convolutions may use TF32 (ct_cuda_set_allow_tf32). */
  void (*set_allow_tf32)(bool allow);

  /* ---- Device information (optional; CUDA only) ---- */
  /* Properties of a visible device; CT_ERR_UNAVAILABLE with the reason when
   * there is no such device. */
  ct_status (*device_properties)(int device_index, ct_cuda_device_properties *out);
  /* Driver and runtime versions (1000 * major + 10 * minor); CT_ERR_UNAVAILABLE
   * when absent. */
  ct_status (*driver_version)(int *version);
  ct_status (*runtime_version)(int *version);
} ct_backend;

/* The backend of a device type, loaded on first use (backend/plugin.h); NULL
 * when this machine or build has none (ct__backend_error says why). Records
 * no error. */
const ct_backend *ct__backend(ct_device_type type);
/* Why ct__backend(type) is NULL, for a person ("" when it is not). */
const char *ct__backend_error(ct_device_type type);
static inline const ct_backend *ct__backend_of(const ct_tensor *t) {
  return ct__backend((ct_device_type)t->storage->device.type);
}

extern const ct_backend ct__cpu_backend;
/* The CPU backend's libraries, for ct_backend_get_info: "OpenBLAS 0.3.21 ...". */
const char *ct__cpu_library_versions(void);

#endif /* CT_BACKEND_BACKEND_H */
