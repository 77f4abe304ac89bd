/* The QR decomposition (torch.linalg.qr, modes 'reduced' and 'complete'):
 * A = Q R with Q orthonormal (m x k, or m x m) and R upper triangular (k x n,
 * or m x n), k = min(m, n), through geqrf + orgqr (LAPACK, cuSOLVER).
 *
 * LAPACK factors column-major A: A's transpose is copied once (its storage is
 * A column-major); R is the upper triangle of that storage read transposed,
 * and Q is built in place over the reflectors (orgqr) and returned as a
 * column-major view. Q and R are packed into one result P (..., m + n, k)
 * (Q, then R^T) so that one node carries both gradients, as eigh and svd.
 * 'complete' with m > n is not differentiable (as torch): a backward through
 * it fails with an error saying so. */
#include "autograd/autograd_internal.h"
#include "ops/index.h"
#include "ops/linalg_factor.h"
#include "ops/ops_internal.h"

#include "ctensor/linalg.h"

/* Q (..., m, kq) and R (..., kr, n) without autograd. */
static ct_status factor(const ct_backend *be, const ct_tensor *a, bool complete, ct_tensor **q_out,
                        ct_tensor **r_out) {
  int nd = a->ndim;
  int64_t m = a->shape[nd - 2], n = a->shape[nd - 1], k = m < n ? m : n;
  int64_t kq = complete ? m : k, kr = complete ? m : k, shape[CT_MAX_DIMS];
  ct_device dev = ct__device(a);
  ct_tensor *at = ct__linalg_block(a, 0, m, 0, n, true);
  ct_tensor *x = at ? ct__clone(at) : NULL; /* (..., n, m): A column-major */
  ct__release(at);
  ct_tensor *tau = ct__empty(shape, ct__linalg_shape_with(a, k, -1, shape), a->dtype, dev);
  ct_tensor *qb = ct__zeros(shape, ct__linalg_shape_with(a, kq, m, shape), a->dtype, dev);
  ct_status st = x && tau && qb ? CT_OK : CT_ERR_OOM;
  bool work = st == CT_OK && m > 0 && n > 0 && tau->numel > 0;
  if (work) {
    ct_tensor *x3 = ct__linalg_flat(x, n, m), *t2 = ct__linalg_flat(tau, 0, k);
    st = x3 && t2 ? be->geqrf(x3, t2) : CT_ERR_OOM;
    ct__release(x3);
    /* Q starts as the reflectors (the first k columns) */
    ct_tensor *dst = qb ? ct__linalg_block(qb, 0, k, 0, m, false) : NULL,
              *src = ct__linalg_block(x, 0, k, 0, m, false);
    if (st == CT_OK) st = dst && src ? ct__copy_into(dst, src) : CT_ERR_OOM;
    ct__release(dst), ct__release(src);
    ct_tensor *q3 = ct__linalg_flat(qb, kq, m);
    if (st == CT_OK) st = q3 && t2 ? be->orgqr(q3, t2) : CT_ERR_OOM;
    ct__release(q3), ct__release(t2);
  } else if (st == CT_OK && kq > 0 && qb->numel > 0) { /* no reflectors: Q = I */
    ct_tensor *e = ct__linalg_eye(m, a->dtype, dev),
              *ek = e ? ct__linalg_block(e, 0, kq, 0, m, false) : NULL;
    st = ek ? ct__copy_into(qb, ek) : CT_ERR_OOM;
    ct__release(ek), ct__release(e);
  }
  ct_tensor *r = NULL;
  if (st == CT_OK) {
    ct_tensor *rv = ct__linalg_block(x, 0, n, 0, kr, true); /* (..., kr, n) */
    r = rv ? ct__triangle(rv, 0, true, false) : NULL;
    ct__release(rv);
    if (!r) st = ct_last_error() ? ct_last_error() : CT_ERR_OOM;
  }
  ct__release(x), ct__release(tau);
  if (st != CT_OK) {
    ct__release(qb), ct__release(r);
    return st;
  }
  *q_out = ct__linalg_block(qb, 0, kq, 0, m, true); /* column-major (..., m, kq) */
  ct__release(qb);
  *r_out = r;
  return *q_out ? CT_OK : CT_ERR_OOM;
}

/* P (..., m + n, k): Q then R^T. */
static ct_tensor *pack(const ct_tensor *q, const ct_tensor *r, int64_t m, int64_t n, int64_t k) {
  int64_t shape[CT_MAX_DIMS];
  ct_tensor *p =
      ct__empty(shape, ct__linalg_shape_with(q, m + n, k, shape), q->dtype, ct__device(q));
  ct_tensor *pq = p ? ct__linalg_block(p, 0, m, 0, k, false) : NULL;
  ct_tensor *pr = p ? ct__linalg_block(p, m, n, 0, k, false) : NULL,
            *rt = ct__linalg_block(r, 0, k, 0, n, true);
  ct_status st = pq && pr && rt ? ct__copy_into(pq, q) : CT_ERR_OOM;
  if (st == CT_OK) st = ct__copy_into(pr, rt);
  ct__release(pq), ct__release(pr), ct__release(rt);
  if (st != CT_OK) {
    ct__release(p);
    return NULL;
  }
  return p;
}

ct_tensor *ct_linalg_qr(const ct_tensor *a, bool complete, ct_tensor **r) {
  static const char op[] = "linalg_qr";
  if (r) *r = NULL;
  const ct_backend *be = ct__linalg_check_matrix(op, a);
  if (!be) return NULL;
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
  ct_tensor *q = NULL, *rr = NULL;
  if (factor(be, a, complete, &q, &rr) != CT_OK) return NULL;
  if (complete && m > n) { /* not differentiable (torch's rule) */
    q = ct__ag_linalg_qr_undefined(q, a);
    rr = ct__ag_linalg_qr_undefined(rr, a);
    if (!q || !rr) {
      ct__release(q), ct__release(rr);
      return NULL;
    }
    if (r)
      *r = ct__track(rr);
    else
      ct__release(rr);
    return ct__track(q);
  }
  ct_tensor *p = ct__ag_linalg_qr(pack(q, rr, m, n, k), a, m, n);
  ct__release(q), ct__release(rr);
  ct_tensor *qv = p ? ct_narrow(p, -2, 0, m) : NULL;
  ct_tensor *rt = qv && r ? ct_narrow(p, -2, m, n) : NULL;
  ct_tensor *rv = rt ? ct_transpose(rt, -2, -1) : NULL;
  ct__release(p);
  ct_free(rt);
  if (!qv || (r && !rv)) {
    ct_free(qv), ct_free(rv);
    return NULL;
  }
  if (r) *r = rv;
  return qv;
}
