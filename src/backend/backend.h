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

#include "core/internal.h"
#include "ops/op_table.h"

/* Parameters of the random fills; see core/philox.h for the stream layout. */
typedef enum {
  CT_RANDOM_UNIFORM,   /* a + (b - a) * U[0,1) */
  CT_RANDOM_NORMAL,    /* a + b * N(0,1) */
  CT_RANDOM_INT,       /* integers in [a, b) */
  CT_RANDOM_BERNOULLI, /* 1 if U < a, else 0 (a = probability) */
  CT_RANDOM_BERNOULLI_TENSOR, /* 1 if U < p[i] (p given as `probs`) */
} ct_random_kind;

typedef struct ct_random_params {
  ct_random_kind kind;
  double a, b;
  uint64_t seed;
  uint64_t offset;         /* Philox counter of element 0 (in 4-word blocks) */
  const ct_tensor *probs;  /* CT_RANDOM_BERNOULLI_TENSOR: same shape as out, f32/f64 */
} ct_random_params;

typedef struct ct_backend {
  const char *name;

  /* ---- Memory ---- */
  /* Device memory of nbytes. With `pinned` (CUDA backend only; device_index
   * -1): page-locked host memory. NULL with CT_ERR_OOM recorded on failure. */
  void *(*alloc)(int device_index, size_t nbytes, bool pinned);
  void (*free)(int device_index, void *ptr, size_t nbytes, bool pinned);
  ct_status (*memory_stats)(int device_index, ct_memory_stats *out);
  ct_status (*empty_cache)(int device_index);

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

  /* ---- Elementwise ---- */
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
  ct_status (*where)(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                     const ct_tensor *b);

  /* ---- Reductions ---- */
  /* out[j] = reduce over the dims with reduce_mask[d] of x. out has x's ndim
   * (keepdim shape: size 1 on reduced dims). x has the compute dtype chosen by
   * the op layer (floating for mean/var/std/norm/logsumexp); out's dtype is
   * the result dtype. p: correction for VAR/STD, the order for NORM. An empty
   * reduction gives the identity (0, 1, -inf/+inf is an error raised by the op
   * layer for max/min, nan for mean). */
  ct_status (*reduce)(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                      const bool *reduce_mask, double p);
  /* Along one dim: values (may be NULL) and i64 indices (may be NULL) of the
   * first max (is_max) or min; nan counts as the extreme. values/indices have
   * x's ndim with size 1 at dim. */
  ct_status (*arg_reduce)(bool is_max, ct_tensor *values, ct_tensor *indices, const ct_tensor *x,
                          int dim);
  /* Softmax or log-softmax of x along dim into out (same shape, floating). */
  ct_status (*softmax)(ct_tensor *out, const ct_tensor *x, int dim, bool log);

  /* ---- Linear algebra ---- */
  /* out[b] = a[b] @ b[b] for 3-d tensors (B, n, k) x (B, k, m) -> (B, n, m).
   * Any strides (batch stride 0 for broadcast batches); one dtype. out is
   * contiguous. beta_one: accumulate into out instead of overwriting. */
  ct_status (*matmul)(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one);

  /* ---- Indexing ---- */
  /* out = x.index_select(dim, index); index 1-d i64, values checked in range by
   * the kernel (an out-of-range index gives CT_ERR_ARG naming it). */
  ct_status (*index_select)(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index);
  /* out = x.gather(dim, index); index i64 of out's shape; range checked. */
  ct_status (*gather)(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index);
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

  /* ---- Random ---- */
  /* Fills out (any dtype as documented by the kind) from Philox. */
  ct_status (*random)(ct_tensor *out, const ct_random_params *p);

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
} ct_backend;

/* The backend of a device type; NULL if not compiled in. */
const ct_backend *ct__backend(ct_device_type type);
static inline const ct_backend *ct__backend_of(const ct_tensor *t) {
  return ct__backend((ct_device_type)t->storage->device.type);
}

extern const ct_backend ct__cpu_backend;

#endif /* CT_BACKEND_BACKEND_H */
