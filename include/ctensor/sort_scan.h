/* ctensor/sort_scan.h: cumulative sums and products, flipping and rolling,
 * repeating and padding, sorting and top-k, slicing with negative steps.
 *
 * Semantics are PyTorch's (torch.cumsum, torch.cumprod, torch.flip,
 * torch.roll, torch.sort, torch.topk, torch.kthvalue, Tensor.repeat,
 * torch.repeat_interleave, torch.nn.functional.pad), on CPU and CUDA, for every dtype,
 * differentiable where PyTorch's are. Results are new tensors (copies, never views). Bad arguments
 * fail with CT_ERR_ARG naming the op and the values.
 *
 *   ct_tensor *c = ct_cumsum(x, -1);                           // running sums along the last dim
 *   ct_tensor *f = ct_flip(x, (int[]){0, 1}, 2);                // x[::-1, ::-1]
 *   ct_tensor *r = ct_roll(x, (int64_t[]){1}, (int[]){0}, 1);   // torch.roll(x, 1, 0)
 *   ct_tensor *idx, *v = ct_topk(x, 5, -1, true, true, &idx);   // 5 largest per row
 *   ct_tensor *s = ct_slice_stepped(x, 0, CT_END, CT_END, -2);   // x[::-2]
 */
#ifndef CTENSOR_SORT_SCAN_H
#define CTENSOR_SORT_SCAN_H

#include <stdint.h>

#include "ctensor/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Cumulative sums and products ----------------------------------------- */

/* Running sum / product along dim (negative dims count from the end); the
 * result has x's shape. Integer and bool inputs give i64 (as torch); f16 and
 * bf16 accumulate in f32 and round each output to their dtype; f32
 * accumulates in f64. A 0-d x is treated as 1 element (dim 0 or -1).
 * Gradients as torch's: cumprod's is exact where x holds zeros (the first
 * zero of a slice gets the product of the others, later positions 0). */
CT_API ct_tensor *ct_cumsum(const ct_tensor *x, int dim);
CT_API ct_tensor *ct_cumprod(const ct_tensor *x, int dim);

/* ---- Flip and roll --------------------------------------------------------- */

/* x with the order of elements reversed along each of dims[0..ndims)
 * (torch.flip). A dim may appear once. */
CT_API ct_tensor *ct_flip(const ct_tensor *x, const int *dims, int ndims);
/* Elements shifted by shifts[i] along dims[i] (i < n), wrapping around
 * (torch.roll): out[(j + shift) mod size] = x[j]. Shifts may be negative or
 * larger than the size. dims == NULL (n must be 1): x is rolled as if
 * flattened, then given its shape back. */
CT_API ct_tensor *ct_roll(const ct_tensor *x, const int64_t *shifts, const int *dims, int n);

/* ---- Repeating and padding ------------------------------------------------------ */

/* x tiled repeats[i] times along dim i (torch's x.repeat(*repeats)): n >=
 * x's ndim; with more repeats than dims, x gets leading size-1 dims first.
 * Repeats >= 0. */
CT_API ct_tensor *ct_repeat(const ct_tensor *x, const int64_t *repeats, int n);
/* Each element repeated `repeats` times in place along dim
 * (torch.repeat_interleave); dim CT_DIM_ALL: of the flattened x, giving a
 * 1-d result. repeats >= 0. */
CT_API ct_tensor *ct_repeat_interleave(const ct_tensor *x, int64_t repeats, int dim);
/* Element i along dim repeated repeats[i] times: repeats is a 1-d integer
 * tensor of x's size there (or one element, used for all) on x's device,
 * values >= 0; its values are read on the host (a synchronization on a GPU:
 * they size the result). dim CT_DIM_ALL flattens x first. */
CT_API ct_tensor *ct_repeat_interleave_tensor(const ct_tensor *x, const ct_tensor *repeats,
                                              int dim);

typedef enum ct_pad_mode { CT_PAD_CONSTANT, CT_PAD_REFLECT, CT_PAD_REPLICATE } ct_pad_mode;
/* torch.nn.functional.pad: pad[0], pad[1] elements before and after the last
 * dim, pad[2], pad[3] around the one before it, ... (npad even, npad / 2 <=
 * ndim). CONSTANT fills with `value`; REFLECT mirrors x without repeating
 * its edge (each pad < the dim's size); REPLICATE repeats the edge (the dim
 * not empty). Pads are >= 0 (torch's negative pads, which crop, are refused:
 * use ct_narrow). Any dims may be padded in every mode (torch limits reflect
 * and replicate to the last 3). Differentiable. */
CT_API ct_tensor *ct_pad(const ct_tensor *x, const int64_t *pad, int npad, ct_pad_mode mode,
                         double value);

/* ---- Sorting ---------------------------------------------------------------- */

/* x sorted along dim (negative dims count from the end), ascending or
 * descending; *indices (if indices != NULL) receives the i64 positions of
 * the sorted elements along dim. The sort is stable (equal elements keep
 * their order, in both directions); nan is above every number (last
 * ascending, first descending) and -0 equals +0, as torch.sort(stable=True).
 * Every dtype; the gradient flows to the positions the values came from. */
CT_API ct_tensor *ct_sort(const ct_tensor *x, int dim, bool descending, ct_tensor **indices);
/* The indices of ct_sort alone (i64). */
CT_API ct_tensor *ct_argsort(const ct_tensor *x, int dim, bool descending);
/* The k largest (smallest when !largest) elements along dim and, if indices
 * != NULL, their i64 positions, as torch.topk: 0 <= k <= size of dim; nan
 * counts as the largest. The result is always sorted (largest first, or
 * smallest first); `sorted` is accepted for torch's signature. Ties are
 * taken in index order. */
CT_API ct_tensor *ct_topk(const ct_tensor *x, int64_t k, int dim, bool largest, bool sorted,
                          ct_tensor **indices);
/* The k-th smallest element along dim (1 <= k <= size), and its position, as
 * torch.kthvalue; keepdim keeps dim with size 1. Among equal elements, the
 * k-th in index order. */
CT_API ct_tensor *ct_kthvalue(const ct_tensor *x, int64_t k, int dim, bool keepdim,
                              ct_tensor **indices);

/* ---- Slicing with any step ------------------------------------------------- */

/* An omitted bound, as Python's x[:end] or x[start:]: as `start` or `end` of
 * ct_slice_stepped, the slice runs to that end of the dim in the direction
 * of its step; as `end` of ct_slice, to the end of the dim. */
#define CT_END INT64_MAX

/* Python's x[start:end:step] along dim, for any nonzero step: start and end
 * count from the end when negative and are clamped as Python clamps them;
 * CT_END leaves them open (x[::-1] is start = end = CT_END, step = -1). A
 * positive step gives the view ct_slice gives; a negative step gives a copy
 * (the flip of a view: tensors have no negative strides). Differentiable. */
CT_API ct_tensor *ct_slice_stepped(const ct_tensor *x, int dim, int64_t start, int64_t end,
                                   int64_t step);

#ifdef __cplusplus
}
#endif

#endif /* CTENSOR_SORT_SCAN_H */
