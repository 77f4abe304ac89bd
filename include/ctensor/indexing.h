/* ctensor/indexing.h: advanced indexing with integer tensors, as NumPy's and
 * torch's x[i0, i1, ...] and x[i0, i1, ...] = v.
 *
 * indices[k] indexes dim k of x; a NULL entry takes that dim whole (":"), and
 * dims past n are taken whole. The index tensors (any integer dtype, on x's
 * device; negative values count from the end) broadcast together to a shape
 * B, and the result is x with the indexed dims replaced by B: where the first
 * indexed dim was when the indexed dims are adjacent, else in front (torch's
 * and NumPy's rule):
 *
 *   x (5, 6, 7);  i, j (2, 3) i64
 *   ct_index(x, (ct_tensor *[]){i, j}, 2)        -> (2, 3, 7)   x[i, j]
 *   ct_index(x, (ct_tensor *[]){NULL, i, j}, 3)  -> (5, 2, 3)   x[:, i, j]
 *   ct_index(x, (ct_tensor *[]){i, NULL, j}, 3)  -> (2, 3, 6)   x[i, :, j]
 *
 * An index outside [-size, size) is CT_ERR_ARG naming it, its dim and the
 * size; on CUDA it is found by the kernel and reported at the next
 * synchronization, as the other index ops. Bool masks are not taken here
 * (ct_masked_select, ct_masked_fill). All are differentiable: the gradient of
 * ct_index is an accumulating put into zeros. */
#ifndef CTENSOR_INDEXING_H
#define CTENSOR_INDEXING_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x[indices[0], ..., indices[n-1]]: a new tensor (a copy, not a view), of x's
 * dtype. 1 <= n <= ndim(x), with at least one non-NULL index. */
CT_API ct_tensor *ct_index(const ct_tensor *x, ct_tensor *const *indices, int n);
/* x with x[indices] = values (accumulate: += values), as torch.index_put;
 * values (a dtype castable to x's) broadcast to the shape of x[indices].
 * With accumulate, repeated index points add every value (deterministic on
 * the CPU, in row-major order; atomics on CUDA, so float sums may differ in
 * the last bits between runs); without it one of the repeated values is left
 * (the last on the CPU, unspecified on CUDA), as torch. */
CT_API ct_tensor *ct_index_put(const ct_tensor *x, ct_tensor *const *indices, int n,
                               const ct_tensor *values, bool accumulate);
/* In place: writes x and returns it (no new reference), as torch.index_put_. */
CT_API ct_tensor *ct_index_put_(ct_tensor *x, ct_tensor *const *indices, int n,
                                const ct_tensor *values, bool accumulate);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_INDEXING_H */
