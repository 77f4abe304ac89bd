/* Advanced indexing's internal entry points, for the public wrappers
 * (adv_index.c) and the gradients (autograd/grad_advindex.c).
 *
 * x[indices] is planned once: its result geometry (ct_adv_geom) and the
 * index points as one i64 each (lin, backend/params.h), checked against x's
 * shape. The plan then reads or writes any tensor of x's shape, whatever its
 * strides: x itself, or the zeros a gradient is scattered into. */
#ifndef CT_OPS_ADV_INDEX_H
#define CT_OPS_ADV_INDEX_H

#include "ops/ops_internal.h"

typedef struct ct_adv_geom {
  ct_adv_index_params p;      /* n, dims, sizes, radix (strides: per call) */
  int ndim;                   /* result */
  int64_t shape[CT_MAX_DIMS]; /* result */
  int bpos, nb;               /* the indices' broadcast dims: result dims [bpos, bpos + nb) */
  int xdim[CT_MAX_DIMS];      /* the other result dims: the dim of x each is */
  int x_ndim;
  int64_t x_shape[CT_MAX_DIMS];
} ct_adv_geom;

/* Plans x[indices[0], ..., indices[n-1]] (NULL entries: whole dims). *lin
 * gets the index points (a new reference: contiguous i64 of the broadcast
 * shape). false with the error recorded (op names it). */
bool ct__adv_plan(const char *op, const ct_tensor *x, ct_tensor *const *indices, int n,
                  ct_adv_geom *g, ct_tensor **lin);
/* x[indices] (x of the plan's shape): a new, untracked reference. */
ct_tensor *ct__adv_gather(const ct_tensor *x, const ct_adv_geom *g, const ct_tensor *lin);
/* dst[indices] = values (accumulate: +=); values broadcast to the result
 * shape and cast to dst's dtype (checked by the caller). dst is written in
 * place (its version is not bumped). */
ct_status ct__adv_put(ct_tensor *dst, const ct_adv_geom *g, const ct_tensor *lin,
                      const ct_tensor *values, bool accumulate);

/* The public entry a call with bool masks among its indices goes through. */
typedef enum { CT_ADV_GATHER, CT_ADV_PUT, CT_ADV_PUT_INPLACE } ct_adv_call;
/* When indices hold a bool mask (*handled set): the call made again with the
 * masks replaced by their nonzero() coordinates (adv_index_mask.c); returns
 * its result (x itself for CT_ADV_PUT_INPLACE). Else *handled is false and
 * the caller goes on. */
ct_tensor *ct__adv_with_masks(ct_adv_call call, ct_tensor *x, ct_tensor *const *indices, int n,
                              const ct_tensor *values, bool accumulate, bool *handled);

#endif /* CT_OPS_ADV_INDEX_H */
