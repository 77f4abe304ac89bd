/* Backward of the factorization ops (ops/linalg_factor.c), torch's formulas:
 *   solve    X = A^-1 B:     gB = A^-T g (through the forward's LU),
 *                            gA = -gB X^T
 *   inv      Y = A^-1:       gA = -Y^T g Y^T
 *   det      d = det A:      gA = g d A^-T  (A^-T through the forward's LU)
 *   slogdet  l = log|det A|: gA = g A^-T
 *   cholesky A = L L^T:      P = tril(L^T gL), P = (P + tril(P, -1)^T) / 2,
 *                            gA = L^-T P L^-1
 *   eigh     A = V diag(L) V^T: S = (V^T gV - (V^T gV)^T) / 2,
 *                            R_ij = S_ij / (L_j - L_i) (i != j), R_ii = gL_i,
 *                            gA = V R V^T. Repeated eigenvalues divide by zero:
 *                            the gradient is then not finite, as torch's
 *                            (only functions of the eigenvalues, or of
 *                            eigenspaces, are well defined there).
 * det and slogdet need A^-1: at a singular A their gradient is not finite
 * (torch switches to an SVD there; documented in ctensor/linalg.h). Batch
 * dims that the forward broadcast are summed by the engine. */
#include "autograd/node.h"
#include "ops/index.h"
#include "ops/linalg_factor.h"

typedef struct solve_node {
  ct_saved lu, piv, x;
  bool vec; /* b and x are vectors: (..., n) */
} solve_node;

static void solve_backward(ct_bw *c, const ct_tensor *g) {
  const solve_node *s = CT_BW_STATE(c, solve_node);
  const ct_tensor *gm = s->vec && g ? bw_unsqueeze(c, g, g->ndim) : g;
  const ct_tensor *lu = bw_saved(c, &s->lu), *piv = bw_saved(c, &s->piv);
  ct_tensor *gb = lu && piv && gm
                      ? bw_keep(c, ct__linalg_lu_solve("linalg_solve backward", lu, piv, gm, true))
                      : NULL;
  if (!gb) bw_fail(c);
  BW_GRAD(c, 1, s->vec && gb ? bw_squeeze(c, gb, gb->ndim - 1) : gb);
  if (bw_needs(c, 0)) {
    const ct_tensor *x = bw_saved(c, &s->x);
    const ct_tensor *xm = s->vec && x ? bw_unsqueeze(c, x, x->ndim) : x;
    bw_set(c, 0, bw_neg(c, bw_matmul(c, gb, bw_mT(c, xm))));
  }
}

ct_tensor *ct__ag_linalg_solve(ct_tensor *x, const ct_tensor *a, const ct_tensor *b,
                               const ct_tensor *lu, const ct_tensor *piv, bool vec) {
  const ct_tensor *ins[2] = {a, b};
  if (!x || !ct__ag_needed(ins, 2)) return x;
  ct_node *n = CT_NODE_NEW(solve_node, "LinalgSolveBackward", solve_backward, 2, ins);
  if (n) {
    solve_node *s = CT_NODE_STATE(n, solve_node);
    s->vec = vec;
    ct__save(n, &s->lu, lu);
    ct__save(n, &s->piv, piv);
    if (ct__requires_grad(a)) ct__save_output(n, &s->x, x);
  }
  return ct__ag_record(x, n);
}

typedef struct inv_node {
  ct_saved y;
} inv_node;

static void inv_backward(ct_bw *c, const ct_tensor *g) {
  const inv_node *s = CT_BW_STATE(c, inv_node);
  const ct_tensor *yt = bw_mT(c, bw_saved(c, &s->y));
  BW_GRAD(c, 0, bw_neg(c, bw_matmul(c, bw_matmul(c, yt, g), yt)));
}

ct_tensor *ct__ag_linalg_inv(ct_tensor *y, const ct_tensor *a) {
  if (!y || !ct__ag_needed(&a, 1)) return y;
  ct_node *n = CT_NODE_NEW(inv_node, "LinalgInvExBackward", inv_backward, 1, &a);
  if (n) ct__save_output(n, &CT_NODE_STATE(n, inv_node)->y, y);
  return ct__ag_record(y, n);
}

typedef struct det_node {
  ct_saved lu, piv, det;
  bool log; /* slogdet's logabsdet: g A^-T */
} det_node;

static void det_backward(ct_bw *c, const ct_tensor *g) {
  const det_node *s = CT_BW_STATE(c, det_node);
  const ct_tensor *lu = bw_saved(c, &s->lu), *piv = bw_saved(c, &s->piv);
  ct_tensor *inv_t = lu && piv
                         ? bw_keep(c, ct__linalg_inv_from_lu(s->log ? "linalg_slogdet backward"
                                                                    : "linalg_det backward",
                                                             lu, piv, true))
                         : NULL;
  if (!inv_t) bw_fail(c);
  const ct_tensor *coeff = s->log ? g : bw_mul(c, g, bw_saved(c, &s->det));
  if (coeff) coeff = bw_unsqueeze(c, bw_unsqueeze(c, coeff, coeff->ndim), coeff->ndim + 1);
  BW_GRAD(c, 0, bw_mul(c, inv_t, coeff));
}

ct_tensor *ct__ag_linalg_det(ct_tensor *r, const ct_tensor *a, const ct_tensor *lu,
                             const ct_tensor *piv, bool log) {
  if (!r || !ct__ag_needed(&a, 1)) return r;
  ct_node *n = CT_NODE_NEW(det_node, log ? "LinalgSlogdetBackward" : "LinalgDetBackward",
                           det_backward, 1, &a);
  if (n) {
    det_node *s = CT_NODE_STATE(n, det_node);
    s->log = log;
    ct__save(n, &s->lu, lu);
    ct__save(n, &s->piv, piv);
    if (!log) ct__save_output(n, &s->det, r);
  }
  return ct__ag_record(r, n);
}

typedef struct cholesky_node {
  ct_saved l;
} cholesky_node;

/* tril(x, k) (upper: triu) in the node's scope */
static ct_tensor *bw_triangle(ct_bw *c, const ct_tensor *x, int64_t k, bool upper) {
  return x ? bw_keep(c, ct__triangle((ct_tensor *)x, k, upper, false)) : NULL;
}

static void cholesky_backward(ct_bw *c, const ct_tensor *g) {
  const cholesky_node *s = CT_BW_STATE(c, cholesky_node);
  const ct_tensor *l = bw_saved(c, &s->l);
  ct_tensor *p = bw_triangle(c, bw_matmul(c, bw_mT(c, l), g), 0, false);
  p = bw_scale(c, bw_add(c, p, bw_mT(c, bw_triangle(c, p, -1, false))), 0.5);
  ct_tensor *linv = l ? bw_keep(c, ct__linalg_inv("linalg_cholesky backward", l)) : NULL;
  if (!linv) bw_fail(c);
  BW_GRAD(c, 0, bw_matmul(c, bw_matmul(c, bw_mT(c, linv), p), linv));
}

ct_tensor *ct__ag_linalg_cholesky(ct_tensor *l, const ct_tensor *a) {
  if (!l || !ct__ag_needed(&a, 1)) return l;
  ct_node *n = CT_NODE_NEW(cholesky_node, "LinalgCholeskyExBackward", cholesky_backward, 1, &a);
  if (n) ct__save_output(n, &CT_NODE_STATE(n, cholesky_node)->l, l);
  return ct__ag_record(l, n);
}

typedef struct eigh_node {
  ct_saved p; /* the packed output: eigenvalues in row 0, V below */
} eigh_node;

/* rows [start, start + rows) of x (..., r, c) */
static const ct_tensor *bw_rows(ct_bw *c, const ct_tensor *x, int64_t start, int64_t rows) {
  if (!x) return NULL;
  int nd = x->ndim;
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
  shape[nd - 2] = rows;
  return bw_view(c, x, shape, x->strides, nd, x->offset + start * x->strides[nd - 2]);
}

static void eigh_backward(ct_bw *c, const ct_tensor *g) {
  const eigh_node *s = CT_BW_STATE(c, eigh_node);
  const ct_tensor *p = bw_saved(c, &s->p);
  if (!p || !g) {
    bw_fail(c);
    return;
  }
  int nd = p->ndim;
  int64_t n = p->shape[nd - 1];
  const ct_tensor *l = bw_squeeze(c, bw_rows(c, p, 0, 1), nd - 2), *v = bw_rows(c, p, 1, n);
  const ct_tensor *gl = bw_squeeze(c, bw_rows(c, g, 0, 1), nd - 2), *gv = bw_rows(c, g, 1, n);
  ct_tensor *vtgv = bw_matmul(c, bw_mT(c, v), gv);
  ct_tensor *skew = bw_scale(c, bw_sub(c, vtgv, bw_mT(c, vtgv)), 0.5);
  ct_tensor *eye = bw_keep(c, ct__linalg_eye(n, p->dtype, ct__device(p)));
  /* E_ij = L_j - L_i, 1 on the diagonal (where skew is 0) */
  ct_tensor *e = bw_add(c, bw_sub(c, bw_unsqueeze(c, l, nd - 2), bw_unsqueeze(c, l, nd - 1)), eye);
  ct_tensor *r = bw_add(c, bw_div(c, skew, e), bw_mul(c, bw_unsqueeze(c, gl, nd - 1), eye));
  BW_GRAD(c, 0, bw_matmul(c, bw_matmul(c, v, r), bw_mT(c, v)));
}

ct_tensor *ct__ag_linalg_eigh(ct_tensor *p, const ct_tensor *a) {
  if (!p || !ct__ag_needed(&a, 1)) return p;
  ct_node *n = CT_NODE_NEW(eigh_node, "LinalgEighBackward", eigh_backward, 1, &a);
  if (n) ct__save_output(n, &CT_NODE_STATE(n, eigh_node)->p, p);
  return ct__ag_record(p, n);
}

typedef struct svd_node {
  ct_saved p; /* the packed output: U (m rows), S (1 row), V (n rows) */
  int64_t m, n;
} svd_node;

static void svd_backward(ct_bw *c, const ct_tensor *g) {
  const svd_node *s = CT_BW_STATE(c, svd_node);
  const ct_tensor *p = bw_saved(c, &s->p);
  if (!p || !g) {
    bw_fail(c);
    return;
  }
  int nd = p->ndim;
  int64_t m = s->m, n = s->n, k = p->shape[nd - 1];
  const ct_tensor *u = bw_rows(c, p, 0, m), *v = bw_rows(c, p, m + 1, n);
  const ct_tensor *sv = bw_squeeze(c, bw_rows(c, p, m, 1), nd - 2);
  const ct_tensor *gu = bw_rows(c, g, 0, m), *gv = bw_rows(c, g, m + 1, n);
  const ct_tensor *gs = bw_squeeze(c, bw_rows(c, g, m, 1), nd - 2);
  const ct_tensor *s_row = bw_unsqueeze(c, sv, nd - 2), *s_col = bw_unsqueeze(c, sv, nd - 1);
  ct_tensor *eye = bw_keep(c, ct__linalg_eye(k, p->dtype, ct__device(p)));
  ct_tensor *utgu = bw_matmul(c, bw_mT(c, u), gu), *vtgv = bw_matmul(c, bw_mT(c, v), gv);
  ct_tensor *skew_u = bw_sub(c, utgu, bw_mT(c, utgu)), *skew_v = bw_sub(c, vtgv, bw_mT(c, vtgv));
  ct_tensor *s2_row = bw_mul(c, s_row, s_row), *s2_col = bw_mul(c, s_col, s_col);
  ct_tensor *e = bw_add(c, bw_sub(c, s2_row, s2_col), eye);
  ct_tensor *r = bw_div(c, bw_add(c, bw_mul(c, skew_u, s_row), bw_mul(c, s_col, skew_v)), e);
  r = bw_add(c, r, bw_mul(c, bw_unsqueeze(c, gs, nd - 2), eye));
  const ct_tensor *vt = bw_mT(c, v);
  ct_tensor *ga;
  if (m > k) { /* (U R + (I - U U^T) gU S^-1) V^T */
    ct_tensor *gus = bw_div(c, gu, s_row);
    ct_tensor *proj = bw_sub(c, gus, bw_matmul(c, u, bw_matmul(c, bw_mT(c, u), gus)));
    ga = bw_matmul(c, bw_add(c, bw_matmul(c, u, r), proj), vt);
  } else if (n > k) { /* U (R V^T + S^-1 gV^T (I - V V^T)) */
    ct_tensor *sgv = bw_div(c, bw_mT(c, gv), s_col);
    ct_tensor *proj = bw_sub(c, sgv, bw_matmul(c, bw_matmul(c, sgv, v), vt));
    ga = bw_matmul(c, u, bw_add(c, bw_matmul(c, r, vt), proj));
  } else {
    ga = bw_matmul(c, bw_matmul(c, u, r), vt);
  }
  BW_GRAD(c, 0, ga);
}

ct_tensor *ct__ag_linalg_svd(ct_tensor *p, const ct_tensor *a, int64_t m, int64_t n) {
  if (!p || !ct__ag_needed(&a, 1)) return p;
  ct_node *node = CT_NODE_NEW(svd_node, "LinalgSvdBackward", svd_backward, 1, &a);
  if (node) {
    svd_node *s = CT_NODE_STATE(node, svd_node);
    s->m = m, s->n = n;
    ct__save_output(node, &s->p, p);
  }
  return ct__ag_record(p, node);
}

typedef struct qr_node {
  ct_saved p; /* the packed output: Q (m rows), R^T (n rows) */
  int64_t m, n;
} qr_node;

/* columns [c0, c0 + cnt) of x */
static const ct_tensor *bw_cols(ct_bw *c, const ct_tensor *x, int64_t c0, int64_t cnt) {
  if (!x) return NULL;
  int nd = x->ndim;
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
  shape[nd - 1] = cnt;
  return bw_view(c, x, shape, x->strides, nd, x->offset + c0 * x->strides[nd - 1]);
}

/* (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T for square R */
static ct_tensor *qr_square_grad(ct_bw *c, const ct_tensor *q, const ct_tensor *r,
                                 const ct_tensor *gq, const ct_tensor *gr) {
  ct_tensor *mm = bw_sub(c, bw_matmul(c, r, bw_mT(c, gr)), bw_matmul(c, bw_mT(c, gq), q));
  ct_tensor *sym = bw_add(c, bw_triangle(c, mm, 0, false), bw_mT(c, bw_triangle(c, mm, -1, false)));
  ct_tensor *lhs = bw_add(c, gq, bw_matmul(c, q, sym));
  ct_tensor *rinv = r ? bw_keep(c, ct__linalg_inv("linalg_qr backward", r)) : NULL;
  return bw_matmul(c, lhs, bw_mT(c, rinv));
}

static void qr_backward(ct_bw *c, const ct_tensor *g) {
  const qr_node *s = CT_BW_STATE(c, qr_node);
  const ct_tensor *p = bw_saved(c, &s->p);
  if (!p || !g) {
    bw_fail(c);
    return;
  }
  int64_t m = s->m, n = s->n;
  const ct_tensor *q = bw_rows(c, p, 0, m), *r = bw_mT(c, bw_rows(c, p, m, n));
  const ct_tensor *gq = bw_rows(c, g, 0, m), *gr = bw_mT(c, bw_rows(c, g, m, n));
  if (m >= n) {
    BW_GRAD(c, 0, qr_square_grad(c, q, r, gq, gr));
    return;
  }
  const ct_tensor *r1 = bw_cols(c, r, 0, m), *r2 = bw_cols(c, r, m, n - m);
  const ct_tensor *gr1 = bw_cols(c, gr, 0, m), *gr2 = bw_cols(c, gr, m, n - m);
  ct_tensor *gq2 = bw_add(c, gq, bw_matmul(c, q, bw_matmul(c, r2, bw_mT(c, gr2))));
  ct_tensor *parts[2] = {qr_square_grad(c, q, r1, gq2, gr1), bw_matmul(c, q, gr2)};
  BW_GRAD(c, 0, parts[0] && parts[1] ? bw_keep(c, ct__cat(parts, 2, parts[0]->ndim - 1)) : NULL);
}

ct_tensor *ct__ag_linalg_qr(ct_tensor *p, const ct_tensor *a, int64_t m, int64_t n) {
  if (!p || !ct__ag_needed(&a, 1)) return p;
  ct_node *node = CT_NODE_NEW(qr_node, "LinalgQrBackward", qr_backward, 1, &a);
  if (node) {
    qr_node *s = CT_NODE_STATE(node, qr_node);
    s->m = m, s->n = n;
    ct__save_output(node, &s->p, p);
  }
  return ct__ag_record(p, node);
}

static void qr_undefined_backward(ct_bw *c, const ct_tensor *g) {
  (void)g;
  ct__fail(CT_ERR_ARG,
           "linalg_qr: the QR decomposition is not differentiable when complete is "
           "true and the input has more rows than columns (as in torch)");
  bw_fail(c);
}

ct_tensor *ct__ag_linalg_qr_undefined(ct_tensor *t, const ct_tensor *a) {
  if (!t || !ct__ag_needed(&a, 1)) return t;
  ct_node *node = CT_NODE_NEW(qr_node, "LinalgQrBackward", qr_undefined_backward, 1, &a);
  return ct__ag_record(t, node);
}
