/* The symmetric eigendecomposition (torch.linalg.eigh): eigenvalues in
 * ascending order and orthonormal eigenvectors of a batch of symmetric
 * matrices, through syevd (LAPACK, cuSOLVER).
 *
 * The backend reads LAPACK's column-major triangle: the lower triangle of a
 * row-major A (torch's UPLO='L') is LAPACK's upper one. Its eigenvectors come
 * back column-major (each column one vector), which is V^T row-major.
 *
 * Two differentiable outputs from one node: the results are written into one
 * packed tensor P (..., n + 1, n), eigenvalues in row 0 and V below; the node
 * is recorded on P, and the eigenvalues and V returned are views of P
 * (ct_select, ct_narrow), whose own view nodes route each gradient into P's. */
#include "autograd/autograd_internal.h"
#include "ops/linalg_factor.h"
#include "ops/ops_internal.h"

#include "ctensor/linalg.h"

/* P (..., n + 1, n): w (..., n) in row 0, v (..., n, n) column-major below. */
static ct_tensor *pack(const ct_tensor *w, const ct_tensor *v) {
  int nd = v->ndim;
  int64_t n = v->shape[nd - 1], shape[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(shape, v->shape, sizeof(int64_t) * (size_t)nd);
  shape[nd - 2] = n + 1;
  ct_tensor *p = ct__empty(shape, nd, v->dtype, ct__device(v));
  if (!p) return NULL;
  /* row 0 of every matrix: w */
  for (int d = 0; d < nd - 2; d++) st[d] = p->strides[d];
  st[nd - 2] = 1;
  ct_tensor *row0 = ct__view_of(p, p->dtype, w->shape, st, nd - 1, p->offset);
  /* rows 1..n: V = the transpose of v's storage (column-major) */
  shape[nd - 2] = n;
  ct_tensor *below = ct__view_of(p, p->dtype, shape, p->strides, nd, p->offset + n);
  int64_t vt[CT_MAX_DIMS];
  memcpy(vt, v->strides, sizeof(int64_t) * (size_t)nd);
  vt[nd - 2] = v->strides[nd - 1], vt[nd - 1] = v->strides[nd - 2];
  ct_tensor *vv = ct__view_of(v, v->dtype, v->shape, vt, nd, v->offset);
  ct_status s = row0 && below && vv ? ct__copy_into(row0, w) : CT_ERR_OOM;
  if (s == CT_OK) s = ct__copy_into(below, vv);
  ct__release(row0), ct__release(below), ct__release(vv);
  if (s != CT_OK) {
    ct__release(p);
    return NULL;
  }
  return p;
}

ct_tensor *ct_linalg_eigh(const ct_tensor *a, bool upper, ct_tensor **eigenvectors) {
  static const char op[] = "linalg_eigh";
  if (eigenvectors) *eigenvectors = NULL;
  const ct_backend *be = ct__linalg_check_square(op, a);
  if (!be) return NULL;
  int nd = a->ndim;
  int64_t n = a->shape[nd - 1];
  ct_device dev = ct__device(a);
  ct_tensor *v = ct__clone(a);
  ct_tensor *w = ct__empty(a->shape, nd - 1, a->dtype, dev);
  ct_tensor *info = ct__empty(a->shape, nd - 2, CT_I32, dev);
  ct_status st = v && w && info ? CT_OK : CT_ERR_OOM;
  if (st == CT_OK && n > 0 && a->numel > 0) {
    ct_tensor *v3 = ct__linalg_flat(v, n, n), *w2 = ct__linalg_flat(w, 0, n);
    ct_tensor *i1 = ct__linalg_flat(info, 0, 0);
    /* row-major lower (upper) = LAPACK's upper (lower) */
    st = v3 && w2 && i1 ? be->eigh(v3, w2, i1, !upper) : CT_ERR_OOM;
    ct__release(v3), ct__release(w2), ct__release(i1);
    if (st == CT_OK) st = ct__linalg_check_info(op, info, CT_LINALG_NO_CONVERGENCE);
  }
  ct_tensor *p = st == CT_OK ? pack(w, v) : NULL;
  ct__release(v), ct__release(w), ct__release(info);
  p = ct__ag_linalg_eigh(p, a);
  if (!p) return NULL;
  ct_tensor *values = ct_select(p, -2, 0);
  ct_tensor *vectors = values && eigenvectors ? ct_narrow(p, -2, 1, n) : NULL;
  ct__release(p);
  if (eigenvectors && !vectors) {
    ct_free(values);
    return NULL;
  }
  if (eigenvectors) *eigenvectors = vectors;
  return values;
}
