/* The singular value decomposition (torch.linalg.svd): A = U diag(S) Vh with
 * S descending, reduced (U (m, k), Vh (k, n), k = min(m, n)) or full (U
 * (m, m), Vh (n, n)), through gesdd (LAPACK) and gesvd (cuSOLVER).
 *
 * The backend takes tall column-major matrices (rows >= columns, as
 * cuSOLVER's gesvd requires). A row-major A (m, n) is the column-major n x m
 * matrix A^T: when n >= m it is passed as is, A^T = U' S V'^T, so U is V'
 * (vt's storage read row-major) and Vh is U'^T (u's storage read row-major):
 * no copy. When m > n, A^T's storage (a transposed copy) is A column-major,
 * and U, Vh are the transposes of u's and vt's storage: views.
 *
 * Three differentiable outputs from one node, as eigh (linalg_eigh.c): U's
 * first k columns, S and V = Vh^T are packed into P (..., m + 1 + n, k), the
 * node is recorded on P, and the results are views of P. Full matrices
 * append the other columns of U (rows of Vh) as constants (ct_cat): their
 * gradient is not propagated, as torch's svd_backward narrows to k. */
#include "autograd/autograd_internal.h"
#include "ops/linalg_factor.h"
#include "ops/ops_internal.h"

#include "ctensor/linalg.h"

/* A view of t (..., r, c) contiguous with its last two dims swapped (a
 * column-major view), or t itself (a new reference) when !swap. */
static ct_tensor *maybe_mT(const ct_tensor *t, bool swap) {
  if (!t) return NULL;
  if (!swap) return ct__retain(t);
  int nd = t->ndim;
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(sh, t->shape, sizeof(int64_t) * (size_t)nd);
  memcpy(st, t->strides, sizeof(int64_t) * (size_t)nd);
  sh[nd - 2] = t->shape[nd - 1], sh[nd - 1] = t->shape[nd - 2];
  st[nd - 2] = t->strides[nd - 1], st[nd - 1] = t->strides[nd - 2];
  return ct__view_of(t, t->dtype, sh, st, nd, t->offset);
}

/* P (..., m + 1 + n, k): U's first k columns, S, V's first k columns. */
static ct_tensor *pack(const ct_tensor *a, const ct_tensor *u, const ct_tensor *s,
                       const ct_tensor *vh, int64_t m, int64_t n, int64_t k) {
  int64_t shape[CT_MAX_DIMS];
  int nd = ct__linalg_shape_with(a, m + 1 + n, k, shape);
  ct_tensor *p = ct__empty(shape, nd, a->dtype, ct__device(a));
  if (!p) return NULL;
  ct_tensor *pu = ct__linalg_block(p, 0, m, 0, k, false),
            *ps = ct__linalg_block(p, m, 1, 0, k, false),
            *pv = ct__linalg_block(p, m + 1, n, 0, k, false);
  ct_tensor *uk = ct__linalg_block(u, 0, m, 0, k, false),
            *vk = ct__linalg_block(vh, 0, k, 0, n, false), *vt = maybe_mT(vk, true);
  /* s (..., k) as (..., 1, k) */
  int64_t ss[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int snd = ct__linalg_shape_with(a, 1, k, ss);
  for (int d = 0; d < snd; d++) st[d] = d < snd - 2 ? s->strides[d] : d == snd - 2 ? 0 : 1;
  ct_tensor *s2 = ct__view_of(s, s->dtype, ss, st, snd, s->offset);
  ct_status r = pu && ps && pv && uk && vt && s2 ? CT_OK : CT_ERR_OOM;
  if (r == CT_OK) r = ct__copy_into(pu, uk);
  if (r == CT_OK) r = ct__copy_into(ps, s2);
  if (r == CT_OK) r = ct__copy_into(pv, vt);
  ct__release(pu), ct__release(ps), ct__release(pv), ct__release(uk), ct__release(vk);
  ct__release(vt), ct__release(s2);
  if (r != CT_OK) {
    ct__release(p);
    return NULL;
  }
  return p;
}

/* The decomposition without autograd: U (..., m, m or k), S (..., k), Vh
 * (..., n or k, n) (views), or CT_ERR_*. */
static ct_status decompose(const char *op, const ct_backend *be, const ct_tensor *a, bool full,
                           ct_tensor **u_out, ct_tensor **s_out, ct_tensor **vh_out) {
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
  bool wide = n >= m; /* A^T (n x m, column-major) is tall: no transpose */
  int64_t rows = wide ? n : m, cols = k, ucols = full ? rows : cols, shape[CT_MAX_DIMS];
  ct_device dev = ct__device(a);
  ct_tensor *at = maybe_mT(a, !wide);
  ct_tensor *x = at ? ct__clone(at) : NULL; /* (..., cols, rows): column-major rows x cols */
  ct__release(at);
  ct_tensor *s = ct__empty(shape, ct__linalg_shape_with(a, k, -1, shape), a->dtype, dev);
  ct_tensor *u = ct__empty(shape, ct__linalg_shape_with(a, ucols, rows, shape), a->dtype, dev);
  ct_tensor *vt = ct__empty(shape, ct__linalg_shape_with(a, cols, cols, shape), a->dtype, dev);
  ct_tensor *info = ct__empty(a->shape, a->ndim - 2, CT_I32, dev);
  ct_status st = x && s && u && vt && info ? CT_OK : CT_ERR_OOM;
  if (st == CT_OK && k > 0 && info->numel > 0) {
    ct_tensor *x3 = ct__linalg_flat(x, cols, rows), *s2 = ct__linalg_flat(s, 0, k);
    ct_tensor *u3 = ct__linalg_flat(u, ucols, rows), *v3 = ct__linalg_flat(vt, cols, cols);
    ct_tensor *i1 = ct__linalg_flat(info, 0, 0);
    st = x3 && s2 && u3 && v3 && i1 ? be->svd(x3, s2, u3, v3, i1, full) : CT_ERR_OOM;
    ct__release(x3), ct__release(s2), ct__release(u3), ct__release(v3), ct__release(i1);
    if (st == CT_OK) st = ct__linalg_check_info(op, info, CT_LINALG_NO_CONVERGENCE);
  } else if (st == CT_OK && k == 0) { /* no singular values: identity vectors, as LAPACK */
    ct_tensor *eu = ct__linalg_eye(ucols, a->dtype, dev), *ev = ct__linalg_eye(cols, a->dtype, dev);
    st = eu && ev ? ct__copy_into(u, eu) : CT_ERR_OOM;
    if (st == CT_OK) st = ct__copy_into(vt, ev);
    ct__release(eu), ct__release(ev);
  }
  ct__release(x), ct__release(info);
  if (st == CT_OK) {
    /* wide: U = vt's storage, Vh = u's; tall: their transposes */
    *u_out = maybe_mT(wide ? vt : u, !wide);
    *vh_out = maybe_mT(wide ? u : vt, !wide);
    *s_out = ct__retain(s);
    if (!*u_out || !*vh_out) st = CT_ERR_OOM;
  }
  ct__release(s), ct__release(u), ct__release(vt);
  return st;
}

/* whole[..., :, k:] (rows: whole[..., k:, :]) as a constant copy */
static ct_tensor *rest(const ct_tensor *whole, int64_t k, bool rows) {
  int nd = whole->ndim;
  int64_t r = whole->shape[nd - 2], c = whole->shape[nd - 1];
  ct_tensor *v = rows ? ct__linalg_block(whole, k, r - k, 0, c, false)
                      : ct__linalg_block(whole, 0, r, k, c - k, false);
  ct_tensor *cp = v ? ct__clone(v) : NULL;
  ct__release(v);
  return cp;
}

ct_tensor *ct_linalg_svd(const ct_tensor *a, bool full_matrices, ct_tensor **u, ct_tensor **vh) {
  static const char op[] = "linalg_svd";
  if (u) *u = NULL;
  if (vh) *vh = NULL;
  const ct_backend *be = ct__linalg_check_matrix(op, a);
  if (!be) return NULL;
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
  ct_tensor *uf = NULL, *s = NULL, *vhf = NULL;
  if (decompose(op, be, a, full_matrices, &uf, &s, &vhf) != CT_OK) return NULL;
  ct_tensor *p = ct__ag_linalg_svd(pack(a, uf, s, vhf, m, n, k), a, m, n);
  ct__release(s);
  ct_tensor *values = p ? ct_select(p, -2, m) : NULL;
  ct_tensor *uk = values && u ? ct_narrow(p, -2, 0, m) : NULL;
  ct_tensor *vk = values && vh ? ct_narrow(p, -2, m + 1, n) : NULL;
  ct_tensor *vhk = vk ? ct_transpose(vk, -2, -1) : NULL;
  bool ok = values && (!u || uk) && (!vh || vhk);
  if (ok && u && full_matrices && m > k) { /* U's other columns: constants */
    ct_tensor *parts[2] = {uk, ct__track(rest(uf, k, false))};
    ct_tensor *whole = parts[1] ? ct_cat(parts, 2, -1) : NULL;
    ct_free(parts[1]), ct_free(uk);
    ok = (uk = whole) != NULL;
  }
  if (ok && vh && full_matrices && n > k) { /* Vh's other rows */
    ct_tensor *parts[2] = {vhk, ct__track(rest(vhf, k, true))};
    ct_tensor *whole = parts[1] ? ct_cat(parts, 2, -2) : NULL;
    ct_free(parts[1]), ct_free(vhk);
    ok = (vhk = whole) != NULL;
  }
  ct__release(uf), ct__release(vhf), ct__release(p);
  ct_free(vk);
  if (!ok) {
    ct_free(values), ct_free(uk), ct_free(vhk);
    return NULL;
  }
  if (u) *u = uk;
  if (vh) *vh = vhk;
  return values;
}
