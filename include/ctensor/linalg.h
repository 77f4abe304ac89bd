/* ctensor/linalg.h: linear algebra of square matrices (torch.linalg), on the
 * CPU through LAPACK (OpenBLAS's, opened with the BLAS on first use) and on
 * CUDA through cuSOLVER.
 *
 *   ct_tensor *a = ct_randn(CT_SHAPE(8, 4, 4), NULL);   // 8 matrices 4 x 4
 *   ct_tensor *b = ct_randn(CT_SHAPE(8, 4, 2), NULL);
 *   ct_tensor *x = ct_linalg_solve(a, b);                // a @ x == b
 *   ct_tensor *d = ct_linalg_det(a);                     // (8)
 *
 * Common rules (torch.linalg's):
 *  - matrices are the last two dims; leading dims are a batch, and every
 *    matrix of the batch is handled independently;
 *  - f32 and f64 only (CT_ERR_DTYPE for integers, bool and halves), on one
 *    device (CT_ERR_DEVICE); a non-square matrix is CT_ERR_SHAPE;
 *  - a failure of the factorization (a singular matrix for solve and inv,
 *    a matrix that is not positive-definite for cholesky) is CT_ERR_ARG
 *    naming the operation, the batch element and LAPACK's info value. Finding
 *    it reads a flag per matrix on the host, so on CUDA these calls wait for
 *    the factorization (as torch's do);
 *  - results may be column-major views (strides (..., 1, n)), as torch's;
 *  - everything is differentiable (autograd), with torch's formulas. The
 *    gradients of det and slogdet go through A^-1: at a singular matrix they
 *    are not finite here (torch switches to an SVD there).
 */
#ifndef CTENSOR_LINALG_H
#define CTENSOR_LINALG_H

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X with a @ X = b (torch.linalg.solve). a (..., n, n); b (..., n, k), or a
 * vector (n) / (..., n) when b.ndim == 1 or b's shape is a's without its last
 * dim (the result is then a vector too). Batch dims broadcast; dtypes
 * promote. LU with partial pivoting (getrf + getrs). Gradients:
 * gb = solve(a^T, g), ga = -gb @ X^T. */
CT_API ct_tensor *ct_linalg_solve(const ct_tensor *a, const ct_tensor *b);
/* a^-1 (torch.linalg.inv), a (..., n, n). Gradient: -Y^T g Y^T (Y = a^-1). */
CT_API ct_tensor *ct_linalg_inv(const ct_tensor *a);
/* det(a) (torch.linalg.det), shape (...): the product of U's diagonal of
 * the LU factorization, with the sign of its row exchanges. A singular
 * matrix gives 0 (no error). Gradient: g det(a) a^-T. */
CT_API ct_tensor *ct_linalg_det(const ct_tensor *a);
/* sign and log|det| of a (torch.linalg.slogdet): returns logabsdet (...)
 * and stores sign (..., a new reference: -1, 0 or 1) in *sign when sign is
 * not NULL. A singular matrix gives sign 0 and logabsdet -inf. Only
 * logabsdet is differentiable: g a^-T. On failure returns NULL and leaves
 * *sign NULL. */
CT_API ct_tensor *ct_linalg_slogdet(const ct_tensor *a, ct_tensor **sign);
/* Cholesky factor of a symmetric positive-definite a (torch.linalg.cholesky):
 * L lower triangular with a = L L^T, or (upper) U = L^T with a = U^T U.
 * Reads only a's lower triangle. A matrix that is not positive-definite is
 * CT_ERR_ARG naming the batch element and the order of the leading minor
 * that is not (LAPACK's info). Gradient (torch's): with
 * P = tril(L^T gL), P = (P + tril(P, -1)^T) / 2, ga = L^-T P L^-1. */
CT_API ct_tensor *ct_linalg_cholesky(const ct_tensor *a, bool upper);

/* Eigenvalues (..., n), ascending, of the symmetric matrices a (..., n, n)
 * (torch.linalg.eigh), and in *eigenvectors (when not NULL; a new
 * reference) the orthonormal eigenvectors V (..., n, n), one per column:
 * a = V diag(values) V^T. Only a's lower triangle is read (upper: its upper
 * one; torch's UPLO). syevd (divide and conquer). Eigenvectors are unique
 * only up to sign (and within repeated eigenvalues), as in every library.
 * No convergence is CT_ERR_ARG naming the batch element. Gradient (torch's):
 * with S = (V^T gV - gV^T V) / 2, R_ij = S_ij / (L_j - L_i) off the
 * diagonal and R_ii = gL_i, ga = V R V^T. Like torch's, it is not finite when
 * eigenvalues repeat and the loss depends on the eigenvectors (only a loss
 * that depends on the eigenvalues, or is invariant to the choice of
 * eigenvectors of a repeated eigenvalue, has a gradient there). On failure
 * returns NULL and leaves *eigenvectors NULL. */
CT_API ct_tensor *ct_linalg_eigh(const ct_tensor *a, bool upper, ct_tensor **eigenvectors);

/* Singular values S (..., k), descending, of a (..., m, n), k = min(m, n)
 * (torch.linalg.svd): a = U diag(S) Vh. *u (when not NULL) receives U
 * (..., m, k), or (..., m, m) with full_matrices; *vh receives Vh (..., k, n),
 * or (..., n, n). gesdd on the CPU, gesvd on CUDA. Singular vectors are
 * unique only up to sign (and within repeated singular values). Gradient
 * (torch's svd_backward): see src/autograd/grad_linalg_factor.c; like
 * torch's, it is not finite when singular values repeat (or are 0 with
 * m != n) and the loss depends on U or Vh, and with full_matrices only the
 * first k columns of U (rows of Vh) carry gradients. No convergence is
 * CT_ERR_ARG naming the batch element. On failure returns NULL and leaves
 * *u and *vh NULL. */
CT_API ct_tensor *ct_linalg_svd(const ct_tensor *a, bool full_matrices, ct_tensor **u,
                                ct_tensor **vh);

/* QR decomposition a = Q R (torch.linalg.qr): returns Q (..., m, k) with
 * orthonormal columns and stores in *r (when not NULL; a new reference) the
 * upper-triangular R (..., k, n), k = min(m, n); complete: Q (..., m, m) and
 * R (..., m, n) (torch's mode 'complete'). geqrf + orgqr (Householder).
 * Gradients (torch's): both modes when m <= n and 'reduced' for any shape;
 * 'complete' with m > n is not differentiable, as in torch (a backward
 * through it fails with CT_ERR_ARG). The gradient needs R^-1: it is not
 * finite when a has dependent columns. On failure returns NULL and leaves
 * *r NULL. */
CT_API ct_tensor *ct_linalg_qr(const ct_tensor *a, bool complete, ct_tensor **r);

/* Matrix norm over the last two dims (torch.linalg.matrix_norm): ord is
 * "fro" (Frobenius), "nuc" (nuclear: sum of singular values), "2" / "-2"
 * (largest / smallest singular value), "1" / "-1" (max / min column sum of
 * |a|), "inf" / "-inf" (max / min row sum). Result (...), or (..., 1, 1)
 * with keepdim. Composed from recorded ops (svd for nuc, 2, -2), so it is
 * differentiable with their gradients. Another ord is CT_ERR_ARG. */
CT_API ct_tensor *ct_linalg_matrix_norm(const ct_tensor *a, const char *ord, bool keepdim);

/* Least squares, torch.linalg.lstsq: for a (..., m, n) and b (..., m, k),
 * batch dims broadcasting, X (..., n, k) minimizing |a X - b| column by
 * column (the minimum-norm one when several do). The driver (torch's names):
 *  - "gelsy" (the CPU's default, as torch's): a complete orthogonal
 *    factorization with column pivoting, rank-revealing;
 *  - "gelsd", "gelss": through the SVD (divide and conquer, or not),
 *    rank-revealing, and they return the singular values;
 *  - "gels" (CUDA's default and only driver, as torch's): QR, for a of full
 *    rank only: a rank-deficient a is CT_ERR_ARG (a singular R).
 * gelsy, gelsd and gelss are LAPACK's routines, called as they are; gels is
 * composed from qr, solve and matmul. Another driver, or one other than gels
 * on CUDA, is CT_ERR_ARG. rcond (the rank-revealing drivers): singular values
 * (gelsy: the condition estimate) below rcond times the largest count as
 * zero; 0 means torch's default, the dtype's epsilon times max(m, n); a
 * negative value the machine precision (LAPACK's: half the dtype's epsilon;
 * for gelsy too, whose routine alone would read it as no threshold). */
typedef struct ct_lstsq_opts {
  const char *driver; /* NULL: "gelsy" on the CPU, "gels" on CUDA */
  double rcond;       /* 0: eps(dtype) * max(m, n) */
} ct_lstsq_opts;

/* Every output of torch.linalg.lstsq (new references, NULL on failure):
 *  - solution (..., n, k);
 *  - residuals (..., k): the squared residuals |a X - b|^2 of each column
 *    when m > n and every matrix of a has rank n (gels, gelsd, gelss; gels
 *    needs full rank anyway); else an empty (0) tensor, as torch (always
 *    empty for gelsy);
 *  - rank (...) i64: the rank the driver found (gelsy, gelsd, gelss), else
 *    an empty (0) i64 tensor;
 *  - singular_values (..., min(m, n)), descending (gelsd, gelss), else an
 *    empty (0) tensor.
 * solution and residuals are differentiable. gels records its composition;
 * for the LAPACK drivers the gradient is torch's formula, that of
 * pinv(a) @ b, recorded through an SVD-built pinv (singular values below
 * the cut dropped) only when a gradient is wanted, the values being the
 * driver's. An empty problem (m, n or k = 0) is solved, as torch: the zero
 * (or empty) minimum-norm solution with zero gradients, rank 0 when m or n
 * is 0 (a's rank when only k is). */
typedef struct ct_lstsq_result {
  ct_tensor *solution, *residuals, *rank, *singular_values;
} ct_lstsq_result;

/* Fills *out (zeroed first, so that it may be freed field by field
 * whatever the outcome). opts NULL: the defaults. */
CT_API ct_status ct_linalg_lstsq_ex(const ct_tensor *a, const ct_tensor *b,
                                    const ct_lstsq_opts *opts, ct_lstsq_result *out);
/* The solution of ct_linalg_lstsq_ex with the default driver. */
CT_API ct_tensor *ct_linalg_lstsq(const ct_tensor *a, const ct_tensor *b);

/* The cross product of 3-vectors (torch.linalg.cross, the array API's
 * linalg.cross): out[..., i, ...] = a_j b_k - a_k b_j over (i, j, k) the
 * cyclic orders of (0, 1, 2), in dim `dim` of the result, whose other dims
 * broadcast (dim < 0 counts from the end, so -1 is the last dim of both). Both
 * operands have size 3 in that dim (it does not broadcast: CT_ERR_SHAPE
 * otherwise, as for an operand without it); numeric dtypes, promoted
 * (CT_ERR_DTYPE for bool); differentiable in both. A composition of views,
 * mul, sub and cat, on any device. */
CT_API ct_tensor *ct_linalg_cross(const ct_tensor *a, const ct_tensor *b, int dim);

#ifdef __cplusplus
}
#endif

#endif /* CTENSOR_LINALG_H */
