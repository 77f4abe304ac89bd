/* Internal entry points of the factorization ops (ops/linalg_factor.c), for
 * their backward formulas. They return untracked new references (NULL with
 * the error recorded on failure). */
#ifndef CT_OPS_LINALG_FACTOR_H
#define CT_OPS_LINALG_FACTOR_H

#include "core/internal.h"

/* The backend of a, a batch of f32/f64 matrices (..., m, n) on a device
 * with the family's slots; else NULL with an error naming op. */
const struct ct_backend *ct__linalg_check_matrix(const char *op, const ct_tensor *a);
/* The same for square matrices (..., n, n). */
const struct ct_backend *ct__linalg_check_square(const char *op, const ct_tensor *a);
/* shape = a's batch dims, then d0, d1 (d1 < 0: d0 alone); returns the ndim. */
int ct__linalg_shape_with(const ct_tensor *a, int64_t d0, int64_t d1, int64_t *shape);
/* A view of x's last two dims [r0, r0 + nr) x [c0, c0 + nc), transposed when
 * mT (then (..., nc, nr)). */
ct_tensor *ct__linalg_block(const ct_tensor *x, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                            bool mT);
/* A (B, rows, cols) view of contiguous t (..., rows, cols); (B, cols) when
 * rows is 0, (B) when both are. */
ct_tensor *ct__linalg_flat(const ct_tensor *t, int64_t rows, int64_t cols);
/* What a positive info of a factorization means. */
typedef enum { CT_LINALG_SINGULAR, CT_LINALG_NOT_PD, CT_LINALG_NO_CONVERGENCE } ct_linalg_failure;
/* Reads info (...) i32 on the host: CT_ERR_ARG naming op, the first batch
 * element whose info is nonzero, and what it means. */
ct_status ct__linalg_check_info(const char *op, const ct_tensor *info, ct_linalg_failure kind);
/* The identity (n, n) of dtype on dev. */
ct_tensor *ct__linalg_eye(int64_t n, ct_dtype dtype, ct_device dev);

/* LU factorization of the square f32/f64 matrices a (..., n, n), as LAPACK
 * sees them (column-major: the LU of a^T). *lu (..., n, n) contiguous, *piv
 * (..., n) i32, *info (...) i32 (still on the device; unread). */
ct_status ct__linalg_lu(const char *op, const ct_tensor *a, ct_tensor **lu, ct_tensor **piv,
                        ct_tensor **info);
/* X (bshape..., n, k) with A X = rhs (transpose_a: A^T X = rhs), where
 * (lu, piv) = ct__linalg_lu(A); rhs (..., n, k) of lu's dtype, batch dims
 * broadcast with lu's. The result is a column-major view. */
ct_tensor *ct__linalg_lu_solve(const char *op, const ct_tensor *lu, const ct_tensor *piv,
                               const ct_tensor *rhs, bool transpose_a);
/* A^-1 (transpose_a: A^-T) from (lu, piv) = ct__linalg_lu(A), without
 * checking for singularity. */
ct_tensor *ct__linalg_inv_from_lu(const char *op, const ct_tensor *lu, const ct_tensor *piv,
                                  bool transpose_a);
/* a^-1 without autograd (CT_ERR_ARG for a singular matrix). */
ct_tensor *ct__linalg_inv(const char *op, const ct_tensor *a);

#endif /* CT_OPS_LINALG_FACTOR_H */
