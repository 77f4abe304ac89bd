/* The CUDA backend's entry points: ct__cuda_<slot> has exactly the
 * signature of its slot of ct_backend (backend/backend.h, which documents the
 * contracts), so the plugin's descriptor (backend.c) assigns them directly,
 * in the slots' order. Each entry point runs on its tensors' device and the
 * calling thread's current stream there. The kernels see a tensor as a plain
 * descriptor (ctc_t, passed to them by value); the entry points make it with
 * ctc_desc / ctc_view. This header compiles as C (backend.c) and as C++ (the
 * .cu files) and includes no CUDA header. */
#ifndef CT_CUDA_KERNELS_H
#define CT_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTC_MAX_DIMS 8
#if CTC_MAX_DIMS != CT_MAX_DIMS
#error "ctc_t holds CT_MAX_DIMS dims"
#endif

/* A tensor as the kernels see it: element (i0..) at
 *   data + sum_k i_k * strides[k] * elsize(dtype)   (data = first element). */
typedef struct ctc_t {
  char *data;
  int dtype; /* ct_dtype */
  int ndim;
  int device; /* CUDA ordinal */
  int64_t numel;
  int64_t shape[CTC_MAX_DIMS];
  int64_t strides[CTC_MAX_DIMS]; /* elements; dims past ndim: size 1, stride 0 */
} ctc_t;

static inline ctc_t ctc_desc(const ct_tensor *t) {
  ctc_t d;
  d.data = (char *)ct__data(t);
  d.dtype = (int)t->dtype;
  d.ndim = t->ndim;
  d.device = t->storage->device.index;
  d.numel = t->numel;
  for (int k = 0; k < CTC_MAX_DIMS; k++) {
    d.shape[k] = k < t->ndim ? t->shape[k] : 1;
    d.strides[k] = k < t->ndim ? t->strides[k] : 0;
  }
  return d;
}

/* memory: allocator.cu: caching allocator per device; pinned host memory for device_index -1 */
void *ct__cuda_alloc(int device_index, size_t nbytes, bool pinned);
void ct__cuda_free(int device_index, void *ptr, size_t nbytes, bool pinned);
ct_status ct__cuda_memory_stats(int device_index, ct_memory_stats *out);
ct_status ct__cuda_empty_cache(int device_index);
ct_status ct__cuda_record_stream(int device_index, void *data, bool pinned, void *stream);
/* Device memory for a workspace the caller can do without (a cuDNN algorithm
 * with alternatives): a cached block or one new segment, else NULL with no
 * error recorded and the cache kept (ct__cuda_alloc would empty it and retry).
 * Freed with ct__cuda_free. */
void *ct__cuda_alloc_workspace(int dev, size_t nbytes);
/* Every invariant of a pool (blocks tile their segments, free neighbours are
 * merged, each free block sits in its bin, the statistics add up): false with
 * a message in msg if one is broken. For tests. */
bool ct__cuda_allocator_check(int dev, bool pinned, char *msg, size_t n);
/* After a non-blocking transfer between pinned host memory at `host` and dev:
 * the pinned block is in use on dev's current stream until its free. */
void ct__cuda_pinned_in_use(int dev, const void *host);
/* ct_stream_free, after synchronizing `stream`: the allocator forgets it. */
void ct__cuda_forget_stream(int dev, void *stream);

/* transfers and fills: copy.cu */
ct_status ct__cuda_copy(ct_tensor *dst, const ct_tensor *src);
ct_status ct__cuda_copy_from_host(ct_tensor *dst, const void *src, size_t nbytes,
                                  bool non_blocking);
ct_status ct__cuda_copy_to_host(void *dst, const ct_tensor *src, size_t nbytes, bool non_blocking);
ct_status ct__cuda_fill(ct_tensor *dst, double value);

/* elementwise: unary.cu, binary.cu, unary_backward.cu */
ct_status ct__cuda_unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1);
ct_status ct__cuda_binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct__cuda_binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                                 bool reversed);
ct_status ct__cuda_axpy(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_status ct__cuda_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                         const ct_tensor *b);
ct_status ct__cuda_unary_backward(ct_unary_op op, ct_tensor *grad_x, const ct_tensor *grad_out,
                                  const ct_tensor *x, const ct_tensor *y, double p0, double p1);

/* reductions: reduce.cu, arg_reduce.cu, softmax.cu, softmax_backward.cu */
ct_status ct__cuda_reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                          const bool *reduce_mask, double p);
ct_status ct__cuda_arg_reduce(bool is_max, ct_tensor *values, ct_tensor *indices,
                              const ct_tensor *x, int dim);
ct_status ct__cuda_softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log);
ct_status ct__cuda_softmax_backward(ct_tensor *grad_x, const ct_tensor *grad_out,
                                    const ct_tensor *y, int dim, bool log);

/* scans, sorting, searching: scan.cu, remap.cu, sort.cu, search.cu */
ct_status ct__cuda_cumulative(bool prod, bool reverse, ct_tensor *out, const ct_tensor *x, int dim);
ct_status ct__cuda_remap(ct_tensor *out, const ct_tensor *x, const ct_remap_params *p);
ct_status ct__cuda_argsort(ct_tensor *indices, const ct_tensor *x, bool descending);
ct_status ct__cuda_topk(ct_tensor *indices, const ct_tensor *x, int64_t k, bool largest);
bool ct__cuda_topk_wanted(int64_t n, int64_t k);
/* The stable sort of n (key, id) pairs ascending in arrays of P >= n
 * elements (a power of two; the rest is padding it writes), for the
 * sort-based paths below (sort.cu). */
ct_status ct__cuda_sort_pairs(const char *op, int dev, uint64_t *keys, int64_t *ids, int64_t n,
                              int64_t P);
ct_status ct__cuda_searchsorted(ct_tensor *out, const ct_tensor *sorted, const ct_tensor *values,
                                bool right);
ct_status ct__cuda_sort_flat(ct_tensor *out, const ct_tensor *x);

/* indexing: index.cu, adv_index.cu (deterministic.cu) */
ct_status ct__cuda_index_select(ct_tensor *out, const ct_tensor *x, int dim,
                                const ct_tensor *index);
ct_status ct__cuda_gather(const char *op, ct_tensor *out, const ct_tensor *x, int dim,
                          const ct_tensor *index);
ct_status ct__cuda_scatter(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src,
                           bool add);
ct_status ct__cuda_masked_select(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask);
ct_status ct__cuda_count_nonzero(const ct_tensor *mask, int64_t *count);
ct_status ct__cuda_triangle(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper);
ct_status ct__cuda_index_linearize(ct_tensor *lin, const ct_tensor *const *idx,
                                   const ct_adv_index_params *p);
ct_status ct__cuda_index_gather(ct_tensor *out, const ct_tensor *src, const ct_tensor *lin,
                                const ct_adv_index_params *p);
ct_status ct__cuda_index_put(ct_tensor *dst, const ct_tensor *values, const ct_tensor *lin,
                             const ct_adv_index_params *p, bool accumulate);
/* deterministic.cu: scatter(_add) and index_put without atomics, sorted,
 * which ct__cuda_scatter and ct__cuda_index_put take under
 * ct_use_deterministic_algorithms (same contracts). */
ct_status ct__cuda_scatter_sorted(const ctc_t *self, int dim, const ctc_t *index, const ctc_t *src,
                                  bool add);
ct_status ct__cuda_index_put_sorted(const ctc_t *dst, const ctc_t *values, const ctc_t *lin,
                                    const ct_adv_index_params *p, bool accumulate);

/* linear algebra: matmul.cu (cuBLAS), solver.cu (cuSOLVER) */
ct_status ct__cuda_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one);
ct_status ct__cuda_lu_factor(ct_tensor *a, ct_tensor *piv, ct_tensor *info);
ct_status ct__cuda_lu_solve(const ct_tensor *lu, const ct_tensor *piv, ct_tensor *rhs, bool trans);
ct_status ct__cuda_cholesky(ct_tensor *a, ct_tensor *info);
ct_status ct__cuda_eigh(ct_tensor *a, ct_tensor *w, ct_tensor *info, bool upper);
ct_status ct__cuda_svd(ct_tensor *a, ct_tensor *s, ct_tensor *u, ct_tensor *vt, ct_tensor *info,
                       bool full);
ct_status ct__cuda_geqrf(ct_tensor *a, ct_tensor *tau);
ct_status ct__cuda_orgqr(ct_tensor *q, const ct_tensor *tau);

/* neural-network layers: conv.cu (cuDNN), pool.cu, upsample.cu, norm.cu, attention.cu, rnn.cu */
ct_status ct__cuda_conv2d(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                          const ct_tensor *bias, const ct_conv2d_params *p);
ct_status ct__cuda_conv2d_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                   const ct_tensor *grad_out, const ct_tensor *x,
                                   const ct_tensor *w, const ct_conv2d_params *p);
/* The cuDNN plan cache (conv.cu): calls that found their plan, calls that
 * made one, plans kept. */
void ct__cuda_conv_plan_stats(uint64_t *hits, uint64_t *misses, int *entries);
ct_status ct__cuda_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x,
                          const ct_pool2d_params *p);
ct_status ct__cuda_pool2d_backward(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                   const ct_tensor *indices, const ct_pool2d_params *p);
ct_status ct__cuda_adaptive_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices,
                                   const ct_tensor *x);
ct_status ct__cuda_adaptive_pool2d_backward(bool is_max, ct_tensor *grad_x,
                                            const ct_tensor *grad_out, const ct_tensor *indices);
ct_status ct__cuda_upsample2d(ct_tensor *out, const ct_tensor *x, const ct_interp_params *p);
ct_status ct__cuda_upsample2d_backward(ct_tensor *grad_x, const ct_tensor *grad_out,
                                       const ct_interp_params *p);
ct_status ct__cuda_batch_norm(ct_tensor *out, ct_tensor *save_mean, ct_tensor *save_invstd,
                              const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                              ct_tensor *running_mean, ct_tensor *running_var, bool training,
                              double momentum, double eps);
ct_status ct__cuda_batch_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                       const ct_tensor *grad_out, const ct_tensor *x,
                                       const ct_tensor *weight, const ct_tensor *save_mean,
                                       const ct_tensor *save_invstd, bool training);
ct_status ct__cuda_layer_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                              const ct_tensor *weight, const ct_tensor *bias, int64_t cols,
                              double eps);
ct_status ct__cuda_layer_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                       const ct_tensor *grad_out, const ct_tensor *x,
                                       const ct_tensor *weight, const ct_tensor *mean,
                                       const ct_tensor *rstd, int64_t cols);
ct_status ct__cuda_row_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                            const ct_tensor *weight, const ct_tensor *bias,
                            const ct_row_norm_params *p);
ct_status ct__cuda_row_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                     const ct_tensor *grad_out, const ct_tensor *x,
                                     const ct_tensor *weight, const ct_tensor *mean,
                                     const ct_tensor *rstd, const ct_row_norm_params *p);
ct_status ct__cuda_sdpa(ct_tensor *out, ct_tensor *lse, const ct_tensor *q, const ct_tensor *k,
                        const ct_tensor *v, const ct_tensor *mask, const ct_sdpa_params *p);
ct_status ct__cuda_sdpa_backward(ct_tensor *grad_q, ct_tensor *grad_k, ct_tensor *grad_v,
                                 const ct_tensor *grad_out, const ct_tensor *q, const ct_tensor *k,
                                 const ct_tensor *v, const ct_tensor *out, const ct_tensor *lse,
                                 const ct_tensor *mask, const ct_sdpa_params *p);
ct_status ct__cuda_rnn_cell(const ct_rnn_cell_params *p, ct_tensor *h_new, ct_tensor *c_new,
                            ct_tensor *ws, const ct_tensor *gi, const ct_tensor *gh,
                            const ct_tensor *state);
ct_status ct__cuda_rnn_cell_backward(const ct_rnn_cell_params *p, ct_tensor *grad_gi,
                                     ct_tensor *grad_gh, ct_tensor *grad_state,
                                     const ct_tensor *grad_h, const ct_tensor *grad_c,
                                     const ct_tensor *state, const ct_tensor *ws);

/* optimizers: optim.cu, amp.cu */
ct_status ct__cuda_optimizer_step(const ct_optim_params *p, ct_tensor *const *params,
                                  ct_tensor *const *grads, ct_tensor *const *state0,
                                  ct_tensor *const *state1, ct_tensor *const *state2, int n);
ct_status ct__cuda_amp_unscale(ct_tensor *const *grads, int n, double inv_scale,
                               ct_tensor *found_inf);

/* random: random.cu */
ct_status ct__cuda_random(ct_tensor *out, const ct_random_params *p, const ct_tensor *probs);

/* execution: device.cu */
ct_status ct__cuda_synchronize(int device_index);
void *ct__cuda_stream_new(int device_index);
void ct__cuda_stream_free(int device_index, void *stream);
ct_status ct__cuda_stream_set_current(int device_index, void *stream);
ct_status ct__cuda_stream_synchronize(int device_index, void *stream);
void *ct__cuda_event_new(int device_index, bool timing);
void ct__cuda_event_free(int device_index, void *event);
ct_status ct__cuda_event_record(int device_index, void *event, void *stream);
ct_status ct__cuda_event_synchronize(int device_index, void *event);
ct_status ct__cuda_stream_wait_event(int device_index, void *stream, void *event);
ct_status ct__cuda_event_elapsed_ms(int device_index, void *start, void *end, float *ms);

/* devices: device.cu; TF32: matmul.cu and conv.cu */
int ct__cuda_device_count(void);
bool ct__cuda_device_usable(int dev);
ct_status ct__cuda_set_device(int index);
int ct__cuda_current_device(void);
void ct__cuda_set_allow_tf32(bool allow);
/* conv.cu's part of ct__cuda_set_allow_tf32 (matmul.cu). */
void ct__cuda_conv_set_allow_tf32(bool allow);

/* device information: device.cu; library versions: version.cu */
ct_status ct__cuda_device_properties(int device_index, ct_cuda_device_properties *out);
ct_status ct__cuda_driver_version(int *version);
ct_status ct__cuda_runtime_version(int *version);
/* "CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.13.0" (the plugin's library_versions) */
void ct__cuda_library_versions(char *buf, size_t size);
#ifdef __cplusplus
}

/* A slot's tensor argument as a descriptor, used where the kernels' code
 * takes `const ctc_t *`: `const ctc_view x(x_t);` then x->numel, f(x),
 * kernel<<<...>>>(*x). A NULL tensor (an optional argument) gives a NULL
 * pointer. */
class ctc_view {
  ctc_t d_;
  bool null_;

 public:
  explicit ctc_view(const ct_tensor *t) : d_(), null_(t == nullptr) {
    if (t) d_ = ctc_desc(t);
  }
  operator const ctc_t *() const { return null_ ? nullptr : &d_; }
  const ctc_t *operator->() const { return &d_; }
};

/* The other way, for an entry point that calls another one on a descriptor
 * it made (a broadcast view, scratch memory): a tensor over d's memory, with
 * its storage, held by the caller. */
class ctc_tensor {
  ct_storage s_;
  ct_tensor t_;

 public:
  explicit ctc_tensor(const ctc_t &d) : s_(), t_() {
    s_.refcount = 1;
    s_.device.type = CT_DEVICE_CUDA;
    s_.device.index = (int8_t)d.device;
    s_.data = d.data;
    t_.refcount = 1;
    t_.dtype = (ct_dtype)d.dtype;
    t_.ndim = d.ndim;
    for (int k = 0; k < d.ndim; k++) t_.shape[k] = d.shape[k], t_.strides[k] = d.strides[k];
    t_.numel = d.numel;
    t_.storage = &s_;
  }
  ctc_tensor(const ctc_tensor &) = delete;
  ctc_tensor &operator=(const ctc_tensor &) = delete;
  operator ct_tensor *() { return &t_; }
};
#endif
#endif /* CT_CUDA_KERNELS_H */
