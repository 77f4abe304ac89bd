/* The CUDA backend's internal interface between backend.c (C, which knows
 * ct_tensor) and the .cu files (C++, which must not include core/internal.h:
 * its C11 atomics don't compile as C++). backend.c turns every tensor into a
 * plain descriptor (ctc_t) and calls the launchers below with the slots' own
 * parameter structs (backend/params.h); each launcher runs on the tensor's
 * device and the calling thread's current stream there. This header
 * compiles as C and as C++ and includes no CUDA header. */
#ifndef CT_CUDA_KERNELS_H
#define CT_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/params.h"
#include "ctensor/device.h"
#include "ctensor/dtype.h"
#include "ctensor/error.h"
#include "ops/op_table.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTC_MAX_DIMS 8

/* A tensor as the kernels see it: element (i0..) at
 *   data + sum_k i_k * strides[k] * elsize(dtype)   (data = first element). */
typedef struct ctc_t {
  char *data;
  int dtype;   /* ct_dtype */
  int ndim;
  int device;  /* CUDA ordinal */
  int64_t numel;
  int64_t shape[CTC_MAX_DIMS];
  int64_t strides[CTC_MAX_DIMS]; /* elements */
} ctc_t;

/* device.cu */
int ct__cuda_device_count(void);
bool ct__cuda_device_usable(int dev); /* visible, compute capability 8.0+ */
ct_status ct__cuda_set_device(int index);
int ct__cuda_current_device(void);
ct_status ct__cuda_synchronize(int dev);
void *ct__cuda_stream_new(int dev);
void ct__cuda_stream_free(int dev, void *stream);
ct_status ct__cuda_stream_set_current(int dev, void *stream);
ct_status ct__cuda_stream_synchronize(int dev, void *stream);
void *ct__cuda_event_new(int dev, bool timing);
void ct__cuda_event_free(int dev, void *event);
ct_status ct__cuda_event_record(int dev, void *event, void *stream);
ct_status ct__cuda_event_synchronize(int dev, void *event);
ct_status ct__cuda_stream_wait_event(int dev, void *stream, void *event);
ct_status ct__cuda_event_elapsed_ms(int dev, void *start, void *end, float *ms);
ct_status ct__cuda_device_properties(int dev, ct_cuda_device_properties *out);
ct_status ct__cuda_driver_version(int *version);
ct_status ct__cuda_runtime_version(int *version);

/* allocator.cu */
void *ct__cuda_alloc(int dev, size_t nbytes, bool pinned);
/* Device memory for a workspace the caller can do without (a cuDNN algorithm
 * with alternatives): a cached block or one new segment, else NULL with no
 * error recorded and the cache kept (ct__cuda_alloc would empty it and retry).
 * Freed with ct__cuda_free. */
void *ct__cuda_alloc_workspace(int dev, size_t nbytes);
/* Every invariant of a pool (blocks tile their segments, free neighbours are
 * merged, each free block sits in its bin, the statistics add up): false with
 * a message in msg if one is broken. For tests. */
bool ct__cuda_allocator_check(int dev, bool pinned, char *msg, size_t n);
void ct__cuda_free(int dev, void *ptr, size_t nbytes, bool pinned);
ct_status ct__cuda_memory_stats(int dev, ct_memory_stats *out);
ct_status ct__cuda_empty_cache(int dev);
/* The backend's record_stream slot (backend.h). */
ct_status ct__cuda_record_stream(int dev, void *data, bool pinned, void *stream);
/* After a non-blocking transfer between pinned host memory at `host` and dev:
 * the pinned block is in use on dev's current stream until its free. */
void ct__cuda_pinned_in_use(int dev, const void *host);
/* ct_stream_free, after synchronizing `stream`: the allocator forgets it. */
void ct__cuda_forget_stream(int dev, void *stream);

/* copy.cu */
ct_status ct__cuda_copy(const ctc_t *dst, const ctc_t *src);
ct_status ct__cuda_copy_from_host(const ctc_t *dst, const void *src, size_t nbytes, bool non_blocking);
ct_status ct__cuda_copy_to_host(void *dst, const ctc_t *src, size_t nbytes, bool non_blocking);
ct_status ct__cuda_fill(const ctc_t *dst, double value);

/* unary.cu, binary.cu */
ct_status ct__cuda_unary(ct_unary_op op, const ctc_t *out, const ctc_t *x, double p0, double p1);
ct_status ct__cuda_binary(ct_binary_op op, const ctc_t *out, const ctc_t *a, const ctc_t *b);
ct_status ct__cuda_binary_scalar(ct_binary_op op, const ctc_t *out, const ctc_t *a, double s,
                                 bool reversed);
ct_status ct__cuda_axpy(const ctc_t *out, const ctc_t *a, const ctc_t *b, double alpha);
ct_status ct__cuda_where(const ctc_t *out, const ctc_t *cond, const ctc_t *a, const ctc_t *b);

/* reduce.cu, arg_reduce.cu, softmax.cu, softmax_backward.cu */
ct_status ct__cuda_reduce(ct_reduce_op op, const ctc_t *out, const ctc_t *x, const bool *mask,
                          double p);
ct_status ct__cuda_arg_reduce(bool is_max, const ctc_t *values, const ctc_t *indices,
                              const ctc_t *x, int dim);
ct_status ct__cuda_softmax(const ctc_t *out, const ctc_t *x, int dim, bool log);
ct_status ct__cuda_softmax_backward(const ctc_t *gx, const ctc_t *g, const ctc_t *y, int dim,
                                   bool log);

/* version.cu: "CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.13.0" */
void ct__cuda_library_versions(char *buf, size_t size);

/* unary_backward.cu */
ct_status ct__cuda_unary_backward(ct_unary_op op, const ctc_t *gx, const ctc_t *g, const ctc_t *x,
                                  const ctc_t *y, double p0, double p1);

/* matmul.cu */
ct_status ct__cuda_matmul(const ctc_t *out, const ctc_t *a, const ctc_t *b, bool beta_one);
void ct__cuda_set_allow_tf32(bool allow);

/* index.cu */
ct_status ct__cuda_index_select(const ctc_t *out, const ctc_t *x, int dim, const ctc_t *index);
ct_status ct__cuda_gather(const char *op, const ctc_t *out, const ctc_t *x, int dim, const ctc_t *index);
ct_status ct__cuda_scatter(const ctc_t *self, int dim, const ctc_t *index, const ctc_t *src, bool add);
ct_status ct__cuda_masked_select(const ctc_t *out, const ctc_t *x, const ctc_t *mask);
ct_status ct__cuda_count_nonzero(const ctc_t *mask, int64_t *count);
ct_status ct__cuda_triangle(const ctc_t *out, const ctc_t *x, int64_t k, bool upper);

/* deterministic.cu: scatter(_add) and index_put with the sort-based paths of
 * ct_use_deterministic_algorithms (same contracts as ct__cuda_scatter and
 * ct__cuda_index_put); sort.cu: the stable sort they use, of n (key, id)
 * pairs ascending in arrays of P >= n elements (a power of two; the rest is
 * padding it writes). */
ct_status ct__cuda_scatter_sorted(const ctc_t *self, int dim, const ctc_t *index, const ctc_t *src,
                                  bool add);
ct_status ct__cuda_index_put_sorted(const ctc_t *dst, const ctc_t *values, const ctc_t *lin,
                                    const ct_adv_index_params *p, bool accumulate);
ct_status ct__cuda_sort_pairs(const char *op, int dev, uint64_t *keys, int64_t *ids, int64_t n,
                              int64_t P);

/* random.cu, optim.cu */
ct_status ct__cuda_random(const ctc_t *out, const ct_random_params *p, const ctc_t *probs);
ct_status ct__cuda_optimizer_step(const ct_optim_params *p, const ctc_t *params, const ctc_t *grads,
                                  const ctc_t *s0, const ctc_t *s1, const ctc_t *s2,
                                  const bool *has, int n);
/* amp.cu: the amp_unscale slot (backend.h) */
ct_status ct__cuda_amp_unscale(const ctc_t *grads, int n, double inv_scale, const ctc_t *found_inf);

/* conv.cu (cuDNN), pool.cu, norm.cu: the neural-network slots (backend.h);
 * NULL descriptors stand for NULL tensors. */
ct_status ct__cuda_conv2d(const ctc_t *out, const ctc_t *x, const ctc_t *w, const ctc_t *bias,
                          const ct_conv2d_params *p);
ct_status ct__cuda_conv2d_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb,
                                   const ctc_t *g, const ctc_t *x, const ctc_t *w,
                                   const ct_conv2d_params *p);
void ct__cuda_conv_set_allow_tf32(bool allow);
/* The cuDNN plan cache (conv.cu): calls that found their plan, calls that
 * made one, plans kept. */
void ct__cuda_conv_plan_stats(uint64_t *hits, uint64_t *misses, int *entries);
ct_status ct__cuda_pool2d(bool is_max, const ctc_t *out, const ctc_t *indices, const ctc_t *x,
                          const ct_pool2d_params *p);
ct_status ct__cuda_pool2d_backward(bool is_max, const ctc_t *gx, const ctc_t *g,
                                   const ctc_t *indices, const ct_pool2d_params *p);
ct_status ct__cuda_batch_norm(const ctc_t *out, const ctc_t *save_mean, const ctc_t *save_invstd,
                              const ctc_t *x, const ctc_t *weight, const ctc_t *bias,
                              const ctc_t *running_mean, const ctc_t *running_var, bool training,
                              double momentum, double eps);
ct_status ct__cuda_batch_norm_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb, const ctc_t *g,
                                       const ctc_t *x, const ctc_t *weight, const ctc_t *save_mean,
                                       const ctc_t *save_invstd, bool training);
ct_status ct__cuda_layer_norm(const ctc_t *out, const ctc_t *mean, const ctc_t *rstd, const ctc_t *x,
                              const ctc_t *weight, const ctc_t *bias, int64_t cols, double eps);
ct_status ct__cuda_layer_norm_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb, const ctc_t *g,
                                       const ctc_t *x, const ctc_t *weight, const ctc_t *mean,
                                       const ctc_t *rstd, int64_t cols);
/* row norms: group, instance, RMS norm (norm.cu) */
ct_status ct__cuda_row_norm(const ctc_t *out, const ctc_t *mean, const ctc_t *rstd, const ctc_t *x,
                            const ctc_t *weight, const ctc_t *bias, const ct_row_norm_params *p);
ct_status ct__cuda_row_norm_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb, const ctc_t *g,
                                     const ctc_t *x, const ctc_t *weight, const ctc_t *mean,
                                     const ctc_t *rstd, const ct_row_norm_params *p);
/* adaptive pooling (pool.cu) */
ct_status ct__cuda_adaptive_pool2d(bool is_max, const ctc_t *out, const ctc_t *indices, const ctc_t *x);
ct_status ct__cuda_adaptive_pool2d_backward(bool is_max, const ctc_t *gx, const ctc_t *g,
                                            const ctc_t *indices);
/* upsampling (upsample.cu) */
ct_status ct__cuda_upsample2d(const ctc_t *out, const ctc_t *x, const ct_interp_params *p);
ct_status ct__cuda_upsample2d_backward(const ctc_t *gx, const ctc_t *g, const ct_interp_params *p);

/* sort-scan family: scan.cu, remap.cu */
ct_status ct__cuda_cumulative(bool prod, bool reverse, const ctc_t *out, const ctc_t *x, int dim);
ct_status ct__cuda_remap(const ctc_t *out, const ctc_t *x, const ct_remap_params *p);
ct_status ct__cuda_argsort(const ctc_t *indices, const ctc_t *x, bool descending); /* sort.cu */
/* The first k of the argsort (backend.h `topk`), k <= 1024; whether it takes
 * rows of n for k (the op layer sorts otherwise). sort.cu */
ct_status ct__cuda_topk(const ctc_t *indices, const ctc_t *x, int64_t k, bool largest);
bool ct__cuda_topk_wanted(int64_t n, int64_t k);

/* adv_index.cu (advanced indexing); idx: p->n descriptors */
ct_status ct__cuda_index_linearize(const ctc_t *lin, const ctc_t *idx, const ct_adv_index_params *p);
ct_status ct__cuda_index_gather(const ctc_t *out, const ctc_t *src, const ctc_t *lin,
                                const ct_adv_index_params *p);
ct_status ct__cuda_index_put(const ctc_t *dst, const ctc_t *values, const ctc_t *lin,
                             const ct_adv_index_params *p, bool accumulate);
/* search.cu */
ct_status ct__cuda_searchsorted(const ctc_t *out, const ctc_t *sorted, const ctc_t *values, bool right);
ct_status ct__cuda_sort_flat(const ctc_t *out, const ctc_t *x);

/* rnn.cu (recurrent cells) */
ct_status ct__cuda_rnn_cell(const ct_rnn_cell_params *p, const ctc_t *h_new, const ctc_t *c_new,
                            const ctc_t *ws, const ctc_t *gi, const ctc_t *gh,
                            const ctc_t *state);
ct_status ct__cuda_rnn_cell_backward(const ct_rnn_cell_params *p, const ctc_t *grad_gi,
                                     const ctc_t *grad_gh, const ctc_t *grad_state,
                                     const ctc_t *grad_h, const ctc_t *grad_c, const ctc_t *state,
                                     const ctc_t *ws);

/* attention.cu (attention) */
ct_status ct__cuda_sdpa(const ctc_t *out, const ctc_t *lse, const ctc_t *q, const ctc_t *k,
                        const ctc_t *v, const ctc_t *mask, const ct_sdpa_params *p);
ct_status ct__cuda_sdpa_backward(const ctc_t *gq, const ctc_t *gk, const ctc_t *gv, const ctc_t *g,
                                 const ctc_t *q, const ctc_t *k, const ctc_t *v, const ctc_t *out,
                                 const ctc_t *lse, const ctc_t *mask, const ct_sdpa_params *p);

/* solver.cu (linalg family; contracts: backend.h, "Linear algebra: factorizations") */
ct_status ct__cuda_lu_factor(const ctc_t *a, const ctc_t *piv, const ctc_t *info);
ct_status ct__cuda_lu_solve(const ctc_t *lu, const ctc_t *piv, const ctc_t *rhs, bool trans);
ct_status ct__cuda_cholesky(const ctc_t *a, const ctc_t *info);
ct_status ct__cuda_eigh(const ctc_t *a, const ctc_t *w, const ctc_t *info, bool upper);
ct_status ct__cuda_svd(const ctc_t *a, const ctc_t *s, const ctc_t *u, const ctc_t *vt,
                       const ctc_t *info, bool full);
ct_status ct__cuda_geqrf(const ctc_t *a, const ctc_t *tau);
ct_status ct__cuda_orgqr(const ctc_t *q, const ctc_t *tau);

#ifdef __cplusplus
}
#endif
#endif /* CT_CUDA_KERNELS_H */
