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

/* shape = batch dims of a, then d0, d1 (d1 < 0: d0 alone) */
static int shape_with(const ct_tensor *a, int64_t d0, int64_t d1, int64_t *shape) {
  int nb = a->ndim - 2;
  memcpy(shape, a->shape, sizeof(int64_t) * (size_t)nb);
  shape[nb] = d0;
  if (d1 < 0) return nb + 1;
  shape[nb + 1] = d1;
  return nb + 2;
}

/* A view of x's last two dims [r0, r0 + nr) x [c0, c0 + nc), transposed when
 * mT. */
static ct_tensor *block(const ct_tensor *x, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                        bool mT) {
  int nd = x->ndim;
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(sh, x->shape, sizeof(int64_t) * (size_t)nd);
  memcpy(st, x->strides, sizeof(int64_t) * (size_t)nd);
  sh[nd - 2] = mT ? nc : nr, sh[nd - 1] = mT ? nr : nc;
  if (mT) st[nd - 2] = x->strides[nd - 1], st[nd - 1] = x->strides[nd - 2];
  return ct__view_of(x, x->dtype, sh, st, nd,
                     x->offset + r0 * x->strides[nd - 2] + c0 * x->strides[nd - 1]);
}

/* Q (..., m, kq) and R (..., kr, n) without autograd. */
static ct_status factor(const ct_backend *be, const ct_tensor *a, bool complete, ct_tensor **q_out,
                        ct_tensor **r_out) {
  int nd = a->ndim;
  int64_t m = a->shape[nd - 2], n = a->shape[nd - 1], k = m < n ? m : n;
  int64_t kq = complete ? m : k, kr = complete ? m : k, shape[CT_MAX_DIMS];
  ct_device dev = ct__device(a);
  ct_tensor *at = block(a, 0, m, 0, n, true);
  ct_tensor *x = at ? ct__clone(at) : NULL; /* (..., n, m): A column-major */
  ct__release(at);
  ct_tensor *tau = ct__empty(shape, shape_with(a, k, -1, shape), a->dtype, dev);
  ct_tensor *qb = ct__zeros(shape, shape_with(a, kq, m, shape), a->dtype, dev);
  ct_status st = x && tau && qb ? CT_OK : CT_ERR_OOM;
  bool work = st == CT_OK && m > 0 && n > 0 && tau->numel > 0;
  if (work) {
    ct_tensor *x3 = ct__linalg_flat(x, n, m), *t2 = ct__linalg_flat(tau, 0, k);
    st = x3 && t2 ? be->geqrf(x3, t2) : CT_ERR_OOM;
    ct__release(x3);
    /* Q starts as the reflectors (the first k columns) */
    ct_tensor *dst = qb ? block(qb, 0, k, 0, m, false) : NULL, *src = block(x, 0, k, 0, m, false);
    if (st == CT_OK) st = dst && src ? ct__copy_into(dst, src) : CT_ERR_OOM;
    ct__release(dst), ct__release(src);
    ct_tensor *q3 = ct__linalg_flat(qb, kq, m);
    if (st == CT_OK) st = q3 && t2 ? be->orgqr(q3, t2) : CT_ERR_OOM;
    ct__release(q3), ct__release(t2);
  } else if (st == CT_OK && kq > 0 && qb->numel > 0) { /* no reflectors: Q = I */
    ct_tensor *e = ct__linalg_eye(m, a->dtype, dev), *ek = e ? block(e, 0, kq, 0, m, false) : NULL;
    st = ek ? ct__copy_into(qb, ek) : CT_ERR_OOM;
    ct__release(ek), ct__release(e);
  }
  ct_tensor *r = NULL;
  if (st == CT_OK) {
    ct_tensor *rv = block(x, 0, n, 0, kr, true); /* (..., kr, n) */
    r = rv ? ct__triangle(rv, 0, true, false) : NULL;
    ct__release(rv);
    if (!r) st = ct_last_error() ? ct_last_error() : CT_ERR_OOM;
  }
  ct__release(x), ct__release(tau);
  if (st != CT_OK) {
    ct__release(qb), ct__release(r);
    return st;
  }
  *q_out = block(qb, 0, kq, 0, m, true); /* column-major (..., m, kq) */
  ct__release(qb);
  *r_out = r;
  return *q_out ? CT_OK : CT_ERR_OOM;
}

/* P (..., m + n, k): Q then R^T. */
static ct_tensor *pack(const ct_tensor *q, const ct_tensor *r, int64_t m, int64_t n, int64_t k) {
  int64_t shape[CT_MAX_DIMS];
  ct_tensor *p = ct__empty(shape, shape_with(q, m + n, k, shape), q->dtype, ct__device(q));
  ct_tensor *pq = p ? block(p, 0, m, 0, k, false) : NULL;
  ct_tensor *pr = p ? block(p, m, n, 0, k, false) : NULL, *rt = block(r, 0, k, 0, n, true);
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
  if (!be->geqrf || !be->orgqr)
    return ct__fail(CT_ERR_UNAVAILABLE, "%s: not implemented on %s", op,
                    ct_device_name(ct__device(a)));
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
