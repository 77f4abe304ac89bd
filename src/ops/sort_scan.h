/* Internal entry points of the sort-scan family (ops/sort_scan.c), for the
 * autograd layer. They return untracked new references without recording
 * autograd; errors as the public functions. */
#ifndef CT_OPS_SORT_SCAN_H
#define CT_OPS_SORT_SCAN_H

#include "backend/params.h"
#include "core/internal.h"

/* Running sum (prod) of x along dim (wrapped already; 0-d x: dim 0), from
 * the end with reverse; dtype as ct_cumsum's. */
ct_tensor *ct__cumulative(const ct_tensor *x, int dim, bool prod, bool reverse);
/* out[c] = x[src(c)] (params.h); x of any ndim (0-d: a copy). `op` names
 * errors. */
ct_tensor *ct__remap(const char *op, const ct_tensor *x, const ct_remap_params *p);
/* The same into a result of `shape` (x's ndim; repeat, pad). */
ct_tensor *ct__remap_to(const char *op, const ct_tensor *x, const ct_remap_params *p,
                        const int64_t *shape);
/* x rolled by shift as if flattened (shift in [0, numel)), x's shape. */
ct_tensor *ct__roll_flat(const ct_tensor *x, int64_t shift);

#endif /* CT_OPS_SORT_SCAN_H */
