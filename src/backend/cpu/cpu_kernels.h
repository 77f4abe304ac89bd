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
ct_status ct__cpu_arg_reduce(bool is_max, ct_tensor *values, ct_tensor *indices,
                             const ct_tensor *x, int dim);

/* softmax.c */
ct_status ct__cpu_softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log);

/* matmul.c */
ct_status ct__cpu_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one);

/* index.c */
ct_status ct__cpu_index_select(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index);
ct_status ct__cpu_gather(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index);
ct_status ct__cpu_scatter(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src,
                          bool add);
ct_status ct__cpu_masked_select(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask);
ct_status ct__cpu_count_nonzero(const ct_tensor *mask, int64_t *count);
ct_status ct__cpu_triangle(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper);

/* random.c */
ct_status ct__cpu_random(ct_tensor *out, const ct_random_params *p);

#endif /* CT_CPU_KERNELS_H */
