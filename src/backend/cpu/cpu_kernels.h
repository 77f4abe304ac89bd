/* The CPU backend's kernels, one family per file (same names as the CUDA
 * backend's files): copy.c, unary.c, binary.c, reduce.c, softmax.c,
 * matmul.c, index.c, random.c. Contracts: backend/backend.h. */
#ifndef CT_CPU_KERNELS_H
#define CT_CPU_KERNELS_H

#include "backend/backend.h"

/* memory (cpu_backend.c) */
void *ct__cpu_alloc(int device_index, size_t nbytes, bool pinned);
void ct__cpu_free(int device_index, void *ptr, size_t nbytes, bool pinned);

/* copy.c */
ct_status ct__cpu_copy(ct_tensor *dst, const ct_tensor *src);
ct_status ct__cpu_copy_from_host(ct_tensor *dst, const void *src, size_t nbytes, bool non_blocking);
ct_status ct__cpu_copy_to_host(void *dst, const ct_tensor *src, size_t nbytes, bool non_blocking);
ct_status ct__cpu_fill(ct_tensor *dst, double value);

/* unary.c */
ct_status ct__cpu_unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1);

/* binary.c */
ct_status ct__cpu_binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct__cpu_binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                                bool reversed);
ct_status ct__cpu_axpy(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_status ct__cpu_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                        const ct_tensor *b);

/* reduce.c */
ct_status ct__cpu_reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                         const bool *reduce_mask, double p);
ct_status ct__cpu_arg_reduce(bool is_max, ct_tensor *values, ct_tensor *indices, const ct_tensor *x,
                             int dim);

/* softmax.c */
ct_status ct__cpu_softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log);

/* matmul.c */
ct_status ct__cpu_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one);

/* index.c */
ct_status ct__cpu_index_select(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index);
ct_status ct__cpu_gather(const char *op, ct_tensor *out, const ct_tensor *x, int dim,
                         const ct_tensor *index);
ct_status ct__cpu_scatter(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src,
                          bool add);
ct_status ct__cpu_masked_select(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask);
ct_status ct__cpu_count_nonzero(const ct_tensor *mask, int64_t *count);
ct_status ct__cpu_triangle(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper);

/* unary_backward.c, softmax.c */
ct_status ct__cpu_unary_backward(ct_unary_op op, ct_tensor *grad_x, const ct_tensor *grad_out,
                                 const ct_tensor *x, const ct_tensor *y, double p0, double p1);
ct_status ct__cpu_softmax_backward(ct_tensor *grad_x, const ct_tensor *grad_out, const ct_tensor *y,
                                   int dim, bool log);

/* conv.c, pool.c, norm.c */
ct_status ct__cpu_conv2d(ct_tensor *out, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias, const ct_conv2d_params *p);
ct_status ct__cpu_conv2d_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                  const ct_tensor *grad_out, const ct_tensor *x, const ct_tensor *w,
                                  const ct_conv2d_params *p);
ct_status ct__cpu_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x,
                         const ct_pool2d_params *p);
ct_status ct__cpu_pool2d_backward(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                  const ct_tensor *indices, const ct_pool2d_params *p);
ct_status ct__cpu_batch_norm(ct_tensor *out, ct_tensor *save_mean, ct_tensor *save_invstd,
                             const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                             ct_tensor *running_mean, ct_tensor *running_var, bool training,
                             double momentum, double eps);
ct_status ct__cpu_batch_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x,
                                      const ct_tensor *weight, const ct_tensor *save_mean,
                                      const ct_tensor *save_invstd, bool training);
ct_status ct__cpu_layer_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                             const ct_tensor *weight, const ct_tensor *bias, int64_t cols,
                             double eps);
ct_status ct__cpu_layer_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x,
                                      const ct_tensor *weight, const ct_tensor *mean,
                                      const ct_tensor *rstd, int64_t cols);
ct_status ct__cpu_row_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                           const ct_tensor *weight, const ct_tensor *bias,
                           const ct_row_norm_params *p);
ct_status ct__cpu_row_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                    const ct_tensor *grad_out, const ct_tensor *x,
                                    const ct_tensor *weight, const ct_tensor *mean,
                                    const ct_tensor *rstd, const ct_row_norm_params *p);
/* pool_adaptive.c */
ct_status ct__cpu_adaptive_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices,
                                  const ct_tensor *x);
ct_status ct__cpu_adaptive_pool2d_backward(bool is_max, ct_tensor *grad_x,
                                           const ct_tensor *grad_out, const ct_tensor *indices);
/* upsample.c */
ct_status ct__cpu_upsample2d(ct_tensor *out, const ct_tensor *x, const ct_interp_params *p);
ct_status ct__cpu_upsample2d_backward(ct_tensor *grad_x, const ct_tensor *grad_out,
                                      const ct_interp_params *p);

/* optim.c */
ct_status ct__cpu_optimizer_step(const ct_optim_params *p, ct_tensor *const *params,
                                 ct_tensor *const *grads, ct_tensor *const *state0,
                                 ct_tensor *const *state1, ct_tensor *const *state2, int n);

/* amp.c */
ct_status ct__cpu_amp_unscale(ct_tensor *const *grads, int n, double inv_scale,
                              ct_tensor *found_inf);

/* random.c */
ct_status ct__cpu_random(ct_tensor *out, const ct_random_params *p, const ct_tensor *probs);

/* sort-scan family: scan.c, remap.c, sort.c, topk.c */
ct_status ct__cpu_cumulative(bool prod, bool reverse, ct_tensor *out, const ct_tensor *x, int dim);
ct_status ct__cpu_remap(ct_tensor *out, const ct_tensor *x, const ct_remap_params *p);
ct_status ct__cpu_argsort(ct_tensor *indices, const ct_tensor *x, bool descending); /* sort.c */
ct_status ct__cpu_topk(ct_tensor *indices, const ct_tensor *x, int64_t k,
                       bool largest); /* topk.c */
/* adv_index.c (advanced indexing) */
ct_status ct__cpu_index_linearize(ct_tensor *lin, const ct_tensor *const *idx,
                                  const ct_adv_index_params *p);
ct_status ct__cpu_index_gather(ct_tensor *out, const ct_tensor *src, const ct_tensor *lin,
                               const ct_adv_index_params *p);
ct_status ct__cpu_index_put(ct_tensor *dst, const ct_tensor *values, const ct_tensor *lin,
                            const ct_adv_index_params *p, bool accumulate);
/* search.c */
ct_status ct__cpu_searchsorted(ct_tensor *out, const ct_tensor *sorted, const ct_tensor *values,
                               bool right);
ct_status ct__cpu_sort_flat(ct_tensor *out, const ct_tensor *x);
/* rnn.c (recurrent cells) */
ct_status ct__cpu_rnn_cell(const ct_rnn_cell_params *p, ct_tensor *h_new, ct_tensor *c_new,
                           ct_tensor *ws, const ct_tensor *gi, const ct_tensor *gh,
                           const ct_tensor *state);
ct_status ct__cpu_rnn_cell_backward(const ct_rnn_cell_params *p, ct_tensor *grad_gi,
                                    ct_tensor *grad_gh, ct_tensor *grad_state,
                                    const ct_tensor *grad_h, const ct_tensor *grad_c,
                                    const ct_tensor *state, const ct_tensor *ws);
/* rnn_gemm.c (the recurrent GEMM on a packed weight) */
ct_status ct__cpu_rnn_pack(ct_tensor *packed, const ct_tensor *w, bool transposed);
ct_status ct__cpu_rnn_matmul_packed(ct_tensor *out, const ct_tensor *a, const ct_tensor *packed,
                                    bool beta_one);

/* attention.c (attention) */
ct_status ct__cpu_sdpa(ct_tensor *out, ct_tensor *lse, const ct_tensor *q, const ct_tensor *k,
                       const ct_tensor *v, const ct_tensor *mask, const ct_sdpa_params *p);
ct_status ct__cpu_sdpa_backward(ct_tensor *grad_q, ct_tensor *grad_k, ct_tensor *grad_v,
                                const ct_tensor *grad_out, const ct_tensor *q, const ct_tensor *k,
                                const ct_tensor *v, const ct_tensor *out, const ct_tensor *lse,
                                const ct_tensor *mask, const ct_sdpa_params *p);
/* lapack.c (linalg family; contracts: backend.h, "Linear algebra: factorizations") */
ct_status ct__cpu_lu_factor(ct_tensor *a, ct_tensor *piv, ct_tensor *info);
ct_status ct__cpu_lu_solve(const ct_tensor *lu, const ct_tensor *piv, ct_tensor *rhs, bool trans);
ct_status ct__cpu_cholesky(ct_tensor *a, ct_tensor *info);
ct_status ct__cpu_eigh(ct_tensor *a, ct_tensor *w, ct_tensor *info, bool upper);
ct_status ct__cpu_svd(ct_tensor *a, ct_tensor *s, ct_tensor *u, ct_tensor *vt, ct_tensor *info,
                      bool full);
ct_status ct__cpu_geqrf(ct_tensor *a, ct_tensor *tau);
ct_status ct__cpu_lstsq(ct_tensor *a, ct_tensor *b, ct_tensor *rank, ct_tensor *s, ct_tensor *info,
                        ct_lstsq_driver driver, double rcond);
ct_status ct__cpu_orgqr(ct_tensor *q, const ct_tensor *tau);

#endif /* CT_CPU_KERNELS_H */
