/* Internal entry points of the reduction and softmax family, for autograd and
 * losses. All return untracked results (a new reference, or `out` itself
 * when out is given) and NULL with an error recorded on failure; a NULL
 * input gives NULL and keeps the first error. */
#ifndef CT_OPS_REDUCE_H
#define CT_OPS_REDUCE_H

#include "ops/ops_internal.h"

/* Which dims of x the opts reduce (mask[d]) and the result shape (keepdim or
 * not). NULL opts or ndims == 0: every dim. CT_ERR_ARG naming `op` for an out
 * of range or repeated dim. */
bool ct__reduce_dims(const char *op, const ct_tensor *x, const ct_reduce_opts *r,
                     bool mask[CT_MAX_DIMS], int64_t *shape, int *ndim);

/* The dtype of op's result for an input dtype; CT_ERR_DTYPE (and false) when
 * op needs floating input. */
bool ct__reduce_result_dtype(ct_reduce_op op, ct_dtype in, ct_dtype *result);

/* op over the dims of r (p: the correction of VAR/STD, the order of NORM),
 * written into out when given (shape and dtype checked as the _out forms). */
ct_tensor *ct__reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                      const ct_reduce_opts *r, double p);

/* Max/min along dim (CT_DIM_ALL: over the flattened tensor, indices into it
 * in row-major order). Sets *values (x's dtype) and *indices (i64) to new
 * references for each pointer that is not NULL; returns CT_OK or the error. */
ct_status ct__arg_reduce(bool is_max, const ct_tensor *x, int dim, bool keepdim,
                         ct_tensor **values, ct_tensor **indices);

/* Softmax (log: log_softmax) of floating x along dim, into out when given. */
ct_tensor *ct__softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log);

#endif /* CT_OPS_REDUCE_H */
