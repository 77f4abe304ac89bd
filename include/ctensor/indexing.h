/* ctensor/indexing.h: advanced indexing with integer tensors and bool masks,
 * as NumPy's and torch's x[i0, i1, ...] and x[i0, i1, ...] = v.
 *
 * indices[k] indexes dim k of x (or the next dims after a mask of several
 * dims, below); a NULL entry takes that dim whole (":"), and dims past the
 * indices are taken whole. The index tensors (any integer dtype, on x's
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
 * synchronization, as the other index ops.
 *
 * A bool mask among the indices (torch's x[mask]) covers as many dims of x as
 * it has, and its shape must be theirs (else CT_ERR_SHAPE); it stands for the
 * K points where it is true, in row-major order, as an index of shape (K),
 * and broadcasts with the other indices as that index would (torch expands
 * masks so, through nonzero: on CUDA reading K waits for the device):
 *
 *   x (4, 5, 6);  m (4, 5) bool with K true;  b (5) bool with K' true
 *   ct_index(x, (ct_tensor *[]){m}, 1)           -> (K, 6)      x[m]
 *   ct_index(x, (ct_tensor *[]){NULL, b}, 2)     -> (4, K', 6)  x[:, b]
 *   ct_index_put_(x, (ct_tensor *[]){m}, 1, v, false)           x[m] = v
 *
 * with v of a shape that broadcasts to (K, 6): a scalar-like (1) or 0-d v
 * fills, a (K, 6) one writes row by row. A 0-d bool index (x[True]) is
 * CT_ERR_ARG. All are differentiable: the gradient of ct_index is an
 * accumulating put into zeros (the mask itself has none). */
#ifndef CTENSOR_INDEXING_H
#define CTENSOR_INDEXING_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x[indices[0], ..., indices[n-1]]: a new tensor (a copy, not a view), of x's
 * dtype. 1 <= n, the indices covering at most ndim(x) dims, with at least
 * one non-NULL index. */
CT_API ct_tensor *ct_index(const ct_tensor *x, ct_tensor *const *indices, int n);
/* x with x[indices] = values (accumulate: += values), as torch.index_put;
 * values (a dtype castable to x's) broadcast to the shape of x[indices].
 * With accumulate, repeated index points add every value (deterministic on
 * the CPU, in row-major order; atomics on CUDA, so float sums may differ in
 * the last bits between runs); without it one of the repeated values is left
 * (the last on the CPU, unspecified on CUDA), as torch. With
 * ct_use_deterministic_algorithms(true) CUDA does as the CPU, bit for bit. */
CT_API ct_tensor *ct_index_put(const ct_tensor *x, ct_tensor *const *indices, int n,
                               const ct_tensor *values, bool accumulate);
/* In place: writes x and returns it (no new reference), as torch.index_put_. */
CT_API ct_tensor *ct_index_put_(ct_tensor *x, ct_tensor *const *indices, int n,
                                const ct_tensor *values, bool accumulate);

/* ---- Searching, counting, distinct values ----
 * Not differentiable (as torch). nonzero and bincount size their result from
 * the data: on CUDA they wait for the device to read a count (as torch). */

/* The coordinates of x's nonzero elements (true for bool), in row-major
 * order: an (N, ndim) i64 tensor, as torch.nonzero. */
CT_API ct_tensor *ct_nonzero(const ct_tensor *x);
/* Occurrences of each value of x (1-d, integers >= 0), as torch.bincount:
 * out[v] = number of i with x[i] == v, or the sum of weights[i] over them
 * (weights: NULL or 1-d of x's length). Length max(max(x) + 1, minlength)
 * (minlength for an empty x). Dtype i64 without weights, f32 for f32
 * weights, else f64 (torch's rule). A negative value is CT_ERR_ARG. */
CT_API ct_tensor *ct_bincount(const ct_tensor *x, const ct_tensor *weights, int64_t minlength);
/* Where values would be inserted in sorted to keep it sorted, as
 * torch.searchsorted: i64 of values' shape; right = false: the first position
 * i with values <= sorted[i], true: the first with values < sorted[i]. sorted
 * (ascending; nans, if any, last) is 1-d, shared by every value, or (..., L)
 * with the leading dims of values (..., M), one row per row. Any dtypes
 * (searched in f64 when either is floating, else in i64). The search is
 * torch's, comparison for comparison: a nan value gives L. */
CT_API ct_tensor *ct_searchsorted(const ct_tensor *sorted, const ct_tensor *values, bool right);
/* The distinct values of x (flattened), ascending, as torch.unique with
 * dim=None: a 1-d tensor of x's dtype. inverse (NULL: not wanted) gets, for
 * each element of x, the index of its value in the result (i64, x's shape);
 * counts (NULL: not wanted) how often each value occurs (i64). The result is
 * sorted whatever `sorted` says (torch allows it for sorted = false). nans
 * are one value, after every number (as NumPy's unique, equal_nan). On CUDA
 * the values are sorted by a merge sort (log2(n) launches) and the number of
 * distinct values is read back (a sync). */
CT_API ct_tensor *ct_unique(const ct_tensor *x, bool sorted, ct_tensor **inverse,
                            ct_tensor **counts);

/* The n-th forward difference of x along dim, as torch.diff / numpy.diff:
 * out[i] = x[i + 1] - x[i] (bool: x[i + 1] != x[i], as torch), applied n
 * times (n >= 0; n = 0 gives x's values). prepend and append (NULL: none)
 * are joined before and after x along dim first; they have x's ndim and
 * x's sizes in the other dims. Each round shortens dim by one (never below
 * 0). Differentiable (through the views and sub it is made of). Errors: a
 * 0-d x, n < 0, dim out of range, prepend/append of another shape. */
CT_API ct_tensor *ct_diff(const ct_tensor *x, int64_t n, int dim, const ct_tensor *prepend,
                          const ct_tensor *append);
/* Values of x at indices along dim, as the array API's take_along_axis
 * (2024.12) and numpy.take_along_axis: out[..., j, ...] = x[..., indices[...,
 * j, ...], ...]. indices (any integer dtype) has x's ndim; the other dims
 * broadcast (sizes equal or 1); out's size along dim is indices'. Negative
 * indices count from the end (-1: the last); an index outside [-size, size)
 * is CT_ERR_ARG naming "take_along_axis" and the value (on CUDA at the next
 * synchronization, as gather). Differentiable w.r.t. x: the gradient is
 * scatter-added (deterministic on CUDA under ct_use_deterministic_algorithms). */
CT_API ct_tensor *ct_take_along_axis(const ct_tensor *x, const ct_tensor *indices, int dim);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_INDEXING_H */
