/* TEMPORARY during bring-up: kernels not yet written report so. Each family's
 * file removes its entries here; this file must be gone before release. */
#include "backend/cpu/cpu_kernels.h"
#define PENDING(op) return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: not implemented yet", op)
ct_status ct__cpu_unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1) { PENDING("unary"); }
ct_status ct__cpu_binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { PENDING("binary"); }
ct_status ct__cpu_binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s, bool reversed) { PENDING("binary_scalar"); }
ct_status ct__cpu_axpy(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha) { PENDING("axpy"); }
ct_status ct__cpu_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) { PENDING("where"); }
ct_status ct__cpu_reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x, const bool *reduce_mask, double p) { PENDING("reduce"); }
ct_status ct__cpu_arg_reduce(bool is_max, ct_tensor *values, ct_tensor *indices, const ct_tensor *x, int dim) { PENDING("arg_reduce"); }
ct_status ct__cpu_softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log) { PENDING("softmax"); }
ct_status ct__cpu_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one) { PENDING("matmul"); }
ct_status ct__cpu_index_select(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index) { PENDING("index_select"); }
ct_status ct__cpu_gather(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index) { PENDING("gather"); }
ct_status ct__cpu_scatter(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src, bool add) { PENDING("scatter"); }
ct_status ct__cpu_masked_select(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask) { PENDING("masked_select"); }
ct_status ct__cpu_count_nonzero(const ct_tensor *mask, int64_t *count) { PENDING("count_nonzero"); }
ct_status ct__cpu_triangle(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper) { PENDING("triangle"); }
ct_status ct__cpu_random(ct_tensor *out, const ct_random_params *p) { PENDING("random"); }
