/* Least squares (torch.linalg.lstsq's solution) through QR, on every device:
 * for a (..., m, n) of full rank,
 *   m >= n: a = Q R,     X = R^-1 Q^T B   (the least-squares solution)
 *   m <  n: a^T = Q R,   X = Q R^-T B     (the minimum-norm solution)
 * composed from recorded ops (qr, solve, matmul), so it is differentiable
 * with their gradients. As torch's 'gels' driver (its only one on CUDA), a
 * needs full rank: a rank-deficient a is CT_ERR_ARG (a singular R). */
#include "core/internal.h"

#include "ctensor/linalg.h"
#include "ctensor/ops.h"

ct_tensor *ct_linalg_lstsq(const ct_tensor *a, const ct_tensor *b) {
  static const char op[] = "linalg_lstsq";
  if (!a || !b) return NULL;
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (ct_ndim(a) < 2 || ct_ndim(b) < 2)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: expected a (..., m, n) and b (..., m, k), got shapes %s and %s", op,
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  int64_t m = ct_shape(a)[ct_ndim(a) - 2], n = ct_shape(a)[ct_ndim(a) - 1];
  if (ct_shape(b)[ct_ndim(b) - 2] != m)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: a of shape %s and b of shape %s have different rows (%lld != %lld)", op,
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb), (long long)m,
                    (long long)ct_shape(b)[ct_ndim(b) - 2]);
  if (ct_dtype_of(a) != ct_dtype_of(b))
    return ct__fail(CT_ERR_DTYPE, "%s: expected a and b to have the same dtype, got %s and %s", op,
                    ct_dtype_name(ct_dtype_of(a)), ct_dtype_name(ct_dtype_of(b)));
  ct_scope_begin();
  ct_tensor *x = NULL, *r = NULL;
  if (m >= n) {
    ct_tensor *q = ct_linalg_qr(a, false, &r);
    x = q ? ct_linalg_solve(r, ct_matmul(ct_transpose(q, -2, -1), b)) : NULL;
  } else {
    ct_tensor *q = ct_linalg_qr(ct_transpose(a, -2, -1), false, &r);
    x = q ? ct_matmul(q, ct_linalg_solve(ct_transpose(r, -2, -1), b)) : NULL;
  }
  if (x) ct_keep(x);
  ct_scope_end();
  return x;
}
