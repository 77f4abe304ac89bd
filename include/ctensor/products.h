/* ctensor/products.h: matrix products with an added term, outer products, einsum.
 *
 * Names and semantics follow PyTorch (torch.addmm, torch.baddbmm,
 * torch.outer). All are differentiable; addmm and baddbmm call the same
 * BLAS (CPU) or cuBLAS (CUDA) product as ct_matmul, accumulating into the
 * result in place of a separate sum when alpha is 1.
 *
 *   // y = 0.5 * bias + x @ w   (bias (m) broadcasts to (n, m))
 *   ct_tensor *y = ct_addmm(bias, x, w, 0.5, 1.0);
 *   // scores (B, T, T) = mask + q @ k^T / sqrt(d)
 *   ct_tensor *s = ct_baddbmm(mask, q, ct_transpose(k, 1, 2), 1.0, 1.0 / sqrt(d));
 */
#ifndef CTENSOR_PRODUCTS_H
#define CTENSOR_PRODUCTS_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* beta * input + alpha * (m1 @ m2), as torch.addmm: m1 (n, k), m2 (k, m),
 * input broadcastable to (n, m). m1, m2 and input have one dtype (no
 * promotion, as torch; CT_ERR_DTYPE otherwise) and one device; bool is
 * refused; for integer dtypes beta and alpha must be integral. With beta == 0
 * input is not read (nan and inf in it do not propagate), as torch. */
CT_API ct_tensor *ct_addmm(const ct_tensor *input, const ct_tensor *m1, const ct_tensor *m2,
                           double beta, double alpha);
/* Batched: beta * input + alpha * (b1 @ b2) with b1 (B, n, k), b2 (B, k, m)
 * and input broadcastable to (B, n, m), as torch.baddbmm. Same rules as
 * ct_addmm. */
CT_API ct_tensor *ct_baddbmm(const ct_tensor *input, const ct_tensor *b1, const ct_tensor *b2,
                             double beta, double alpha);
/* Outer product of two 1-d tensors: out[i][j] = a[i] * b[j] (dtypes promote
 * as ct_mul), as torch.outer. */
CT_API ct_tensor *ct_outer(const ct_tensor *a, const ct_tensor *b);

/* Einstein summation, as torch.einsum and numpy.einsum:
 *   ct_einsum("ij,jk->ik", (ct_tensor *[]){a, b}, 2)      matrix product
 *   ct_einsum("bhqd,bhkd->bhqk", (ct_tensor *[]){q, k}, 2) attention scores
 *   ct_einsum("ii", &x, 1)                                trace
 *   ct_einsum("...ij->...ji", &x, 1)                      batched transpose
 * Labels are letters, one per dim of its operand; "..." stands for the dims
 * no label names (broadcast across operands as NumPy, aligned on the right);
 * spaces are ignored. A label repeated in one term takes the diagonal; a
 * label missing from the output is summed over. Without "->" the output is
 * the ellipsis dims, then the labels used exactly once, in alphabetical
 * order (upper case first). Operands (1 to 64, one device) promote as
 * ct_matmul. The result is computed with diagonal, sum, permute, reshape and
 * bmm, pairwise from the left, and is differentiable through them. A
 * malformed equation is CT_ERR_ARG naming the position in it; operands that
 * don't fit their terms are CT_ERR_SHAPE. */
CT_API ct_tensor *ct_einsum(const char *equation, ct_tensor *const *operands, int n);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_PRODUCTS_H */
