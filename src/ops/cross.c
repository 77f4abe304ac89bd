/* linalg_cross (torch.linalg.cross, the array API's linalg.cross): the cross
 * product of 3-vectors along one dim, broadcasting the others. A composition
 * of narrow views, mul, sub and cat: three vectors' worth of arithmetic needs
 * no kernel family, and autograd, every dtype and every device come with the
 * ops it is made of. */
#include <stdio.h>

#include "ops/ops_internal.h"

/* The 3-vector dim of an operand: `dim` of the broadcast result (ndim n)
 * counted in the operand's own dims, or -1 (with the error) where the operand
 * lacks that dim or its size there is not 3 (that dim does not broadcast). */
static int operand_dim(const char *which, const ct_tensor *x, int dim, int n) {
  int d = dim - (n - x->ndim);
  if (d < 0) {
    ct__fail(CT_ERR_SHAPE, "linalg_cross: %s has %d dims, too few for dim %d of the %d-d result",
             which, x->ndim, dim, n);
    return -1;
  }
  if (x->shape[d] != 3) {
    char s[CT_SHAPE_STR_MAX];
    ct__fail(CT_ERR_SHAPE, "linalg_cross: %s of shape %s has size %lld in dim %d, expected 3",
             which, ct__shape_str(x, s, sizeof s), (long long)x->shape[d], d);
    return -1;
  }
  return d;
}

static ct_tensor *cross_body(const ct_tensor *a, int da, const ct_tensor *b, int db, int dim) {
  ct_tensor *x[3], *y[3], *c[3];
  for (int i = 0; i < 3; i++) {
    x[i] = ct_narrow(a, da, i, 1);
    y[i] = ct_narrow(b, db, i, 1);
  }
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3; /* c_i = x_j y_k - x_k y_j */
    c[i] = ct_sub(ct_mul(x[j], y[k]), ct_mul(x[k], y[j]));
  }
  return ct_cat(c, 3, dim);
}

ct_tensor *ct_linalg_cross(const ct_tensor *a, const ct_tensor *b, int dim) {
  if (!a || !b) return NULL;
  if (a->dtype == CT_BOOL || b->dtype == CT_BOOL)
    return ct__fail(CT_ERR_DTYPE, "linalg_cross: expected numeric tensors, got %s and %s",
                    ct_dtype_name(a->dtype), ct_dtype_name(b->dtype));
  int n = a->ndim > b->ndim ? a->ndim : b->ndim, d = dim;
  if (!ct__wrap_dim(&d, n))
    return ct__fail(CT_ERR_ARG, "linalg_cross: dim %d out of range for %d-d operands", dim, n);
  int da = operand_dim("the first operand", a, d, n);
  int db = da < 0 ? -1 : operand_dim("the second operand", b, d, n);
  if (db < 0) return NULL;
  ct_scope_begin();
  ct_tensor *r = cross_body(a, da, b, db, d);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}
