/* Linear algebra through factorizations (torch.linalg): solve, inv, det,
 * slogdet (LU with partial pivoting) and cholesky, batched over leading dims.
 *
 * The backends take LAPACK's column-major matrices (backend.h, "Linear
 * algebra: factorizations"). A contiguous row-major A is, to LAPACK, A^T, so
 *  - the LU kept here is that of A^T: det(A) = det(A^T) needs no copy, and
 *    A X = B is solved as (A^T)^T X = B (getrs with 'T');
 *  - right-hand sides are copied as B^T (contiguous), which is B column-major,
 *    and the solution comes back as a column-major view (as torch's);
 *  - cholesky of a symmetric A reads A's lower triangle as LAPACK's upper one
 *    (potrf 'U': A = U^T U with U column-major), and U column-major is L
 *    row-major: the factor needs no copy.
 * Failures of the math (info > 0) are read back on the host and reported
 * naming the batch element, as torch does for solve, inv and cholesky. */
#include "ops/linalg_factor.h"

#include "autograd/autograd_internal.h"
#include "core/alloc.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/ops_internal.h"
#include "ops/reduce.h"

#include "ctensor/linalg.h"

static int64_t batch_of(const ct_tensor *t, int matrix_dims) {
  int64_t b = 1;
  for (int d = 0; d + matrix_dims < t->ndim; d++) b *= t->shape[d];
  return b;
}

const ct_backend *ct__linalg_check_matrix(const char *op, const ct_tensor *a) {
  if (!a) return NULL;
  char s[CT_SHAPE_STR_MAX];
  if (a->ndim < 2)
    return ct__fail(CT_ERR_SHAPE, "%s: expected a matrix or a batch of matrices, got shape %s", op,
                    ct__shape_str(a, s, sizeof s));
  if (a->dtype != CT_F32 && a->dtype != CT_F64)
    return ct__fail(CT_ERR_DTYPE, "%s: expected an f32 or f64 tensor, got %s", op,
                    ct_dtype_name(a->dtype));
  const ct_backend *be = ct__backend_for(op, a);
  if (!be) return NULL;
  if (!be->lu_factor || !be->lu_solve || !be->cholesky || !be->eigh || !be->svd || !be->geqrf ||
      !be->orgqr)
    return ct__fail(CT_ERR_UNAVAILABLE, "%s: not implemented on %s", op,
                    ct_device_name(ct__device(a)));
  return be;
}

const ct_backend *ct__linalg_check_square(const char *op, const ct_tensor *a) {
  if (!a) return NULL;
  char s[CT_SHAPE_STR_MAX];
  if (a->ndim >= 2 && a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
    return ct__fail(CT_ERR_SHAPE, "%s: expected square matrices, got %lld by %lld (shape %s)", op,
                    (long long)a->shape[a->ndim - 2], (long long)a->shape[a->ndim - 1],
                    ct__shape_str(a, s, sizeof s));
  return ct__linalg_check_matrix(op, a);
}

int ct__linalg_shape_with(const ct_tensor *a, int64_t d0, int64_t d1, int64_t *shape) {
  int nb = a->ndim - 2;
  memcpy(shape, a->shape, sizeof(int64_t) * (size_t)nb);
  shape[nb] = d0;
  if (d1 < 0) return nb + 1;
  shape[nb + 1] = d1;
  return nb + 2;
}

ct_tensor *ct__linalg_block(const ct_tensor *x, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                            bool mT) {
  if (!x) return NULL;
  int nd = x->ndim;
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(sh, x->shape, sizeof(int64_t) * (size_t)nd);
  memcpy(st, x->strides, sizeof(int64_t) * (size_t)nd);
  sh[nd - 2] = mT ? nc : nr, sh[nd - 1] = mT ? nr : nc;
  if (mT) st[nd - 2] = x->strides[nd - 1], st[nd - 1] = x->strides[nd - 2];
  return ct__view_of(x, x->dtype, sh, st, nd,
                     x->offset + r0 * x->strides[nd - 2] + c0 * x->strides[nd - 1]);
}

/* A (B, rows, cols) view of contiguous t's (..., rows, cols) (or (B, cols)
 * view when rows is 0, or (B) when both are). */
ct_tensor *ct__linalg_flat(const ct_tensor *t, int64_t rows, int64_t cols) {
  int64_t b = t->numel ? t->numel / ((rows ? rows : 1) * (cols ? cols : 1)) : 0;
  if (!t->numel) b = batch_of(t, (rows ? 1 : 0) + (cols ? 1 : 0));
  if (rows)
    return ct__view_of(t, t->dtype, (int64_t[]){b, rows, cols}, (int64_t[]){rows * cols, cols, 1},
                       3, t->offset);
  if (cols)
    return ct__view_of(t, t->dtype, (int64_t[]){b, cols}, (int64_t[]){cols, 1}, 2, t->offset);
  return ct__view_of(t, t->dtype, (int64_t[]){b}, (int64_t[]){1}, 1, t->offset);
}

/* The first matrix whose info is nonzero: CT_ERR_ARG naming op, the batch
 * element and info (cholesky: not positive-definite; else: singular). */
ct_status ct__linalg_check_info(const char *op, const ct_tensor *info, ct_linalg_failure kind) {
  int64_t b = info->numel;
  if (b == 0) return CT_OK;
  int32_t *host = ct__malloc((size_t)b * sizeof *host);
  if (!host)
    return ct__fail_status(CT_ERR_OOM, "%s: out of memory reading %lld flags", op, (long long)b);
  ct_status st = ct__backend_of(info)->copy_to_host(host, info, (size_t)b * sizeof *host, false);
  for (int64_t i = 0; st == CT_OK && i < b; i++) {
    int v = host[i];
    if (v == 0) continue;
    if (v < 0)
      st = ct__fail_status(CT_ERR_INTERNAL, "%s: LAPACK rejected argument %d (batch element %lld)",
                           op, -v, (long long)i);
    else if (kind == CT_LINALG_NO_CONVERGENCE)
      st = ct__fail_status(CT_ERR_ARG,
                           "%s: (batch element %lld) the algorithm failed to converge because the "
                           "input matrix is ill-conditioned or has too many repeated eigenvalues "
                           "(info = %d)",
                           op, (long long)i, v);
    else if (kind == CT_LINALG_NOT_PD)
      st = ct__fail_status(CT_ERR_ARG,
                           "%s: (batch element %lld) the factorization could not be completed "
                           "because the input is not positive-definite (the leading minor of "
                           "order %d is not positive-definite; info = %d)",
                           op, (long long)i, v, v);
    else
      st = ct__fail_status(CT_ERR_ARG,
                           "%s: (batch element %lld) the solver failed because the input matrix "
                           "is singular (U[%d, %d] of its LU factorization is zero; info = %d)",
                           op, (long long)i, v - 1, v - 1, v);
    break;
  }
  ct__free(host);
  return st;
}

ct_status ct__linalg_lu(const char *op, const ct_tensor *a, ct_tensor **lu, ct_tensor **piv,
                        ct_tensor **info) {
  *lu = *piv = *info = NULL;
  const ct_backend *be = ct__backend_of(a);
  int64_t n = a->shape[a->ndim - 1];
  ct_device dev = ct__device(a);
  *lu = ct__clone(a);
  *piv = ct__empty(a->shape, a->ndim - 1, CT_I32, dev);
  *info = ct__empty(a->shape, a->ndim - 2, CT_I32, dev);
  ct_status st = *lu && *piv && *info ? CT_OK : CT_ERR_OOM;
  if (st == CT_OK && n > 0 && a->numel > 0) {
    ct_tensor *l3 = ct__linalg_flat(*lu, n, n), *p2 = ct__linalg_flat(*piv, 0, n),
              *i1 = ct__linalg_flat(*info, 0, 0);
    st = l3 && p2 && i1 ? be->lu_factor(l3, p2, i1) : CT_ERR_OOM;
    ct__release(l3);
    ct__release(p2);
    ct__release(i1);
  } else if (st == CT_OK && (*info)->numel) {
    st = be->fill(*info, 0); /* 0 x 0 matrices: nothing to factor */
  }
  if (st != CT_OK) {
    ct__release(*lu), ct__release(*piv), ct__release(*info);
    *lu = *piv = *info = NULL;
  }
  return st;
}

/* t (bshape..., rows, cols) broadcast from t (..., rows, cols), copied
 * contiguous with its last two dims swapped when swap (LAPACK's column-major
 * right-hand sides), else as is. A fresh tensor. */
static ct_tensor *expanded_copy(const ct_tensor *t, const int64_t *bshape, int nbd, int mat_dims,
                                bool swap) {
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, bshape, sizeof(int64_t) * (size_t)nbd);
  for (int d = 0; d < mat_dims; d++) shape[nbd + d] = t->shape[t->ndim - mat_dims + d];
  ct_tensor *ex = ct__broadcast_to(t, shape, nbd + mat_dims);
  if (!ex) return NULL;
  ct_tensor *src = ex;
  if (swap) {
    int nd = nbd + 2;
    int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
    memcpy(sh, ex->shape, sizeof(int64_t) * (size_t)nd);
    memcpy(st, ex->strides, sizeof(int64_t) * (size_t)nd);
    sh[nd - 2] = ex->shape[nd - 1], sh[nd - 1] = ex->shape[nd - 2];
    st[nd - 2] = ex->strides[nd - 1], st[nd - 1] = ex->strides[nd - 2];
    src = ct__view_of(ex, ex->dtype, sh, st, nd, ex->offset);
    ct__release(ex);
    if (!src) return NULL;
  }
  ct_tensor *c = ct__clone(src);
  ct__release(src);
  return c;
}

ct_tensor *ct__linalg_lu_solve(const char *op, const ct_tensor *lu, const ct_tensor *piv,
                               const ct_tensor *rhs, bool transpose_a) {
  if (!lu || !piv || !rhs) return NULL;
  int64_t n = lu->shape[lu->ndim - 1], k = rhs->shape[rhs->ndim - 1];
  int64_t bshape[CT_MAX_DIMS];
  int nbd = 0;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  if (!ct__broadcast_shapes(lu->shape, lu->ndim - 2, rhs->shape, rhs->ndim - 2, bshape, &nbd) ||
      nbd + 2 > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "%s: the batch dims of shapes %s and %s don't broadcast", op,
                    ct__shape_str(lu, s1, sizeof s1), ct__shape_str(rhs, s2, sizeof s2));
  const ct_backend *be = ct__backend_of(lu);
  bool shared = batch_of(lu, 2) == 1;
  ct_tensor *x = expanded_copy(rhs, bshape, nbd, 2, true); /* (bshape..., k, n) */
  ct_tensor *l = shared ? ct__retain(lu) : expanded_copy(lu, bshape, nbd, 2, false);
  ct_tensor *p = shared ? ct__retain(piv) : expanded_copy(piv, bshape, nbd, 1, false);
  ct_tensor *l3 = l ? ct__linalg_flat(l, n, n) : NULL, *p2 = p ? ct__linalg_flat(p, 0, n) : NULL;
  ct_tensor *x3 = x ? ct__linalg_flat(x, k, n) : NULL;
  ct_status st = l3 && p2 && x3 ? CT_OK : CT_ERR_OOM;
  /* LAPACK's matrix is A^T: A X = B is op = transpose */
  if (st == CT_OK && x->numel > 0) st = be->lu_solve(l3, p2, x3, !transpose_a);
  ct_tensor *r = NULL;
  if (st == CT_OK) {
    int64_t sh[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(sh, bshape, sizeof(int64_t) * (size_t)nbd);
    for (int d = 0; d < nbd + 2; d++) strides[d] = x->strides[d];
    sh[nbd] = n, sh[nbd + 1] = k;
    strides[nbd] = 1, strides[nbd + 1] = n; /* column-major */
    r = ct__view_of(x, x->dtype, sh, strides, nbd + 2, x->offset);
  }
  ct__release(l3), ct__release(p2), ct__release(x3);
  ct__release(l), ct__release(p), ct__release(x);
  return r;
}

/* An identity matrix (n, n) of dtype on dev. */
ct_tensor *ct__linalg_eye(int64_t n, ct_dtype dtype, ct_device dev) {
  ct_tensor *e = ct__zeros((int64_t[]){n, n}, 2, dtype, dev);
  if (!e || n == 0) return e;
  ct_tensor *diag = ct__view_of(e, dtype, (int64_t[]){n}, (int64_t[]){n + 1}, 1, e->offset);
  ct_status st = diag ? ct__backend_of(e)->fill(diag, 1.0) : CT_ERR_OOM;
  ct__release(diag);
  if (st != CT_OK) {
    ct__release(e);
    return NULL;
  }
  return e;
}

ct_tensor *ct__linalg_inv_from_lu(const char *op, const ct_tensor *lu, const ct_tensor *piv,
                                  bool transpose_a) {
  if (!lu || !piv) return NULL;
  ct_tensor *e = ct__linalg_eye(lu->shape[lu->ndim - 1], lu->dtype, ct__device(lu));
  ct_tensor *r = e ? ct__linalg_lu_solve(op, lu, piv, e, transpose_a) : NULL;
  ct__release(e);
  return r;
}

/* ---- solve, inv ------------------------------------------------------------- */

/* X solving A X = B, and the LU of A kept for the gradient. */
static ct_tensor *solve_impl(const char *op, const ct_tensor *a, const ct_tensor *b, bool check,
                             ct_tensor **lu_out, ct_tensor **piv_out) {
  ct_tensor *lu, *piv, *info;
  if (ct__linalg_lu(op, a, &lu, &piv, &info) != CT_OK) return NULL;
  ct_tensor *x = ct__linalg_check_info(op, info, CT_LINALG_SINGULAR) == CT_OK || !check
                     ? ct__linalg_lu_solve(op, lu, piv, b, false)
                     : NULL;
  ct__release(info);
  if (x && lu_out) {
    *lu_out = lu, *piv_out = piv;
  } else {
    ct__release(lu), ct__release(piv);
  }
  return x;
}

ct_tensor *ct__linalg_inv(const char *op, const ct_tensor *a) {
  if (!ct__linalg_check_square(op, a)) return NULL;
  ct_tensor *e = ct__linalg_eye(a->shape[a->ndim - 1], a->dtype, ct__device(a));
  ct_tensor *r = e ? solve_impl(op, a, e, true, NULL, NULL) : NULL;
  ct__release(e);
  return r;
}

ct_tensor *ct_linalg_inv(const ct_tensor *a) {
  static const char op[] = "linalg_inv";
  if (!ct__linalg_check_square(op, a)) return NULL;
  ct_tensor *e = ct__linalg_eye(a->shape[a->ndim - 1], a->dtype, ct__device(a));
  ct_tensor *r = e ? solve_impl(op, a, e, true, NULL, NULL) : NULL;
  ct__release(e);
  return ct__track(ct__ag_linalg_inv(r, a));
}

ct_tensor *ct_linalg_solve(const ct_tensor *a, const ct_tensor *b) {
  static const char op[] = "linalg_solve";
  if (!a || !b || !ct__linalg_check_square(op, a)) return NULL;
  if (!ct__check_same_device(op, a, b)) return NULL;
  if (a->dtype != b->dtype)
    return ct__fail(CT_ERR_DTYPE, "%s: expected a and b to have the same dtype, got %s and %s", op,
                    ct_dtype_name(a->dtype), ct_dtype_name(b->dtype));
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  int64_t n = a->shape[a->ndim - 1];
  /* torch's rule: b is a vector when 1-d, or when it is a's shape without
   * the last dim */
  bool vec = b->ndim == 1;
  if (b->ndim == a->ndim - 1) {
    vec = true;
    for (int d = 0; d < b->ndim; d++) vec = vec && b->shape[d] == a->shape[d];
  }
  bool fits = vec ? b->shape[b->ndim - 1] == n : b->ndim >= 2 && b->shape[b->ndim - 2] == n;
  if (!fits)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: a of shape %s and b of shape %s are incompatible (b needs %lld rows)", op,
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb), (long long)n);
  ct_tensor *bm = NULL;
  if (vec) { /* (..., n) -> (..., n, 1) */
    int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
    memcpy(sh, b->shape, sizeof(int64_t) * (size_t)b->ndim);
    memcpy(st, b->strides, sizeof(int64_t) * (size_t)b->ndim);
    sh[b->ndim] = 1, st[b->ndim] = 1;
    bm = ct__view_of(b, b->dtype, sh, st, b->ndim + 1, b->offset);
  } else {
    bm = ct__retain(b);
  }
  ct_tensor *lu = NULL, *piv = NULL;
  ct_tensor *x = bm ? solve_impl(op, a, bm, true, &lu, &piv) : NULL;
  ct__release(bm);
  if (x && vec) { /* (..., n, 1) -> (..., n) */
    ct_tensor *v = ct__view_of(x, x->dtype, x->shape, x->strides, x->ndim - 1, x->offset);
    ct__release(x);
    x = v;
  }
  x = ct__ag_linalg_solve(x, a, b, lu, piv, vec);
  ct__release(lu), ct__release(piv);
  return ct__track(x);
}

/* ---- det, slogdet -------------------------------------------------------------- */

/* The diagonal (..., n) of lu (..., n, n) contiguous: a view. */
static ct_tensor *diagonal_of(const ct_tensor *lu) {
  int nd = lu->ndim;
  int64_t n = lu->shape[nd - 1], sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(sh, lu->shape, sizeof(int64_t) * (size_t)(nd - 1));
  memcpy(st, lu->strides, sizeof(int64_t) * (size_t)(nd - 1));
  st[nd - 2] = n + 1;
  return ct__view_of(lu, lu->dtype, sh, st, nd - 1, lu->offset);
}

/* (-1)^(row exchanges) of each factorization, (...) of dtype: piv[i] != i + 1
 * counts one exchange. */
static ct_tensor *permutation_sign(const ct_tensor *piv, ct_dtype dtype) {
  int64_t n = piv->shape[piv->ndim - 1];
  int32_t *host = ct__malloc((size_t)(n ? n : 1) * sizeof *host);
  if (!host) return ct__fail(CT_ERR_OOM, "linalg: out of memory for %lld pivots", (long long)n);
  for (int64_t i = 0; i < n; i++) host[i] = (int32_t)(i + 1);
  ct_tensor *ident = ct__empty(&n, 1, CT_I32, ct__device(piv));
  ct_status st =
      ident ? ct__backend_of(ident)->copy_from_host(ident, host, (size_t)n * sizeof *host, false)
            : CT_ERR_OOM;
  ct__free(host);
  if (st != CT_OK) {
    ct__release(ident);
    return NULL;
  }
  ct_tensor *moved = ct__binary(CT_BOP_NE, NULL, piv, ident);
  ct_reduce_opts last = {.dims = {-1}, .ndims = 1};
  ct_tensor *count = moved ? ct__reduce(CT_ROP_SUM, NULL, moved, &last, 0) : NULL;
  ct_tensor *odd = count ? ct__binary_scalar(CT_BOP_REMAINDER, NULL, count, 2, false) : NULL;
  ct_tensor *twice = odd ? ct__binary_scalar(CT_BOP_MUL, NULL, odd, -2, false) : NULL;
  ct_tensor *sign = twice ? ct__binary_scalar(CT_BOP_ADD, NULL, twice, 1, false) : NULL;
  ct_tensor *r = sign ? ct__cast(sign, dtype) : NULL;
  ct__release(ident), ct__release(moved), ct__release(count), ct__release(odd);
  ct__release(twice), ct__release(sign);
  return r;
}

ct_tensor *ct_linalg_det(const ct_tensor *a) {
  static const char op[] = "linalg_det";
  if (!ct__linalg_check_square(op, a)) return NULL;
  ct_tensor *lu, *piv, *info;
  if (ct__linalg_lu(op, a, &lu, &piv, &info) != CT_OK) return NULL;
  ct_reduce_opts last = {.dims = {-1}, .ndims = 1};
  ct_tensor *diag = diagonal_of(lu);
  ct_tensor *prod = diag ? ct__reduce(CT_ROP_PROD, NULL, diag, &last, 0) : NULL;
  ct_tensor *sign = prod ? permutation_sign(piv, a->dtype) : NULL;
  ct_tensor *det = sign ? ct__binary(CT_BOP_MUL, NULL, prod, sign) : NULL;
  ct__release(diag), ct__release(prod), ct__release(sign), ct__release(info);
  det = ct__ag_linalg_det(det, a, lu, piv, false);
  ct__release(lu), ct__release(piv);
  return ct__track(det);
}

ct_tensor *ct_linalg_slogdet(const ct_tensor *a, ct_tensor **sign_out) {
  static const char op[] = "linalg_slogdet";
  if (sign_out) *sign_out = NULL;
  if (!ct__linalg_check_square(op, a)) return NULL;
  ct_tensor *lu, *piv, *info;
  if (ct__linalg_lu(op, a, &lu, &piv, &info) != CT_OK) return NULL;
  ct_reduce_opts last = {.dims = {-1}, .ndims = 1};
  ct_tensor *diag = diagonal_of(lu);
  ct_tensor *dsign = diag ? ct__unary(CT_UOP_SIGN, NULL, diag, 0, 0) : NULL;
  ct_tensor *dprod = dsign ? ct__reduce(CT_ROP_PROD, NULL, dsign, &last, 0) : NULL;
  ct_tensor *psign = dprod ? permutation_sign(piv, a->dtype) : NULL;
  ct_tensor *sign = psign ? ct__binary(CT_BOP_MUL, NULL, dprod, psign) : NULL;
  ct_tensor *mag = sign ? ct__unary(CT_UOP_ABS, NULL, diag, 0, 0) : NULL;
  ct_tensor *logs = mag ? ct__unary(CT_UOP_LOG, NULL, mag, 0, 0) : NULL;
  ct_tensor *logabs = logs ? ct__reduce(CT_ROP_SUM, NULL, logs, &last, 0) : NULL;
  ct__release(diag), ct__release(dsign), ct__release(dprod), ct__release(psign);
  ct__release(mag), ct__release(logs), ct__release(info);
  logabs = ct__ag_linalg_det(logabs, a, lu, piv, true);
  ct__release(lu), ct__release(piv);
  if (!logabs) {
    ct__release(sign);
    return NULL;
  }
  if (sign_out)
    *sign_out = ct__track(sign);
  else
    ct__release(sign);
  return ct__track(logabs);
}

/* ---- cholesky ------------------------------------------------------------------ */

ct_tensor *ct_linalg_cholesky(const ct_tensor *a, bool upper) {
  static const char op[] = "linalg_cholesky";
  const ct_backend *be = ct__linalg_check_square(op, a);
  if (!be) return NULL;
  int64_t n = a->shape[a->ndim - 1];
  ct_tensor *l = ct__clone(a);
  ct_tensor *info = ct__empty(a->shape, a->ndim - 2, CT_I32, ct__device(a));
  ct_status st = l && info ? CT_OK : CT_ERR_OOM;
  if (st == CT_OK && n > 0 && a->numel > 0) {
    ct_tensor *l3 = ct__linalg_flat(l, n, n), *i1 = ct__linalg_flat(info, 0, 0);
    st = l3 && i1 ? be->cholesky(l3, i1) : CT_ERR_OOM;
    ct__release(l3), ct__release(i1);
    if (st == CT_OK) st = ct__linalg_check_info(op, info, CT_LINALG_NOT_PD);
  }
  ct__release(info);
  /* potrf leaves the other triangle as it was */
  if (st == CT_OK && !ct__triangle(l, 0, false, true)) st = ct_last_error();
  if (st != CT_OK) {
    ct__release(l);
    return NULL;
  }
  l = ct__ag_linalg_cholesky(l, a);
  if (!upper || !l) return ct__track(l);
  ct_tensor *u = ct_transpose(l, -2, -1); /* U = L^T, a view (differentiable) */
  ct__release(l);
  return u;
}
