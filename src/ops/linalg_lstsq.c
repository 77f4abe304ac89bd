/* Least squares, torch.linalg.lstsq, every output and driver.
 *
 * gels (every device; CUDA's only driver, as torch's), for a (..., m, n) of
 * full rank, composed from recorded ops (qr, solve, matmul), so it is
 * differentiable with their gradients:
 *   m >= n: a = Q R,     X = R^-1 Q^T B   (the least-squares solution)
 *   m <  n: a^T = Q R,   X = Q R^-T B     (the minimum-norm solution)
 * A rank-deficient a is CT_ERR_ARG (a singular R), as torch's gels.
 *
 * gelsy, gelsd, gelss (the CPU): LAPACK's drivers through the backend's
 * lstsq slot (cpu/lapack_lstsq.c), on column-major copies. Their gradient
 * is torch's formula, the derivative of pinv(a) @ b: when one is wanted,
 * P = pinv(a) @ b is recorded (pinv from the SVD, singular values below the
 * cut dropped) and the solution returned as X + (P - detach(P)), which adds
 * exact zeros to the driver's values and routes the gradient through P.
 *
 * residuals (m > n, full rank) are |a X - b|^2 summed over the rows, from
 * recorded ops: differentiable, and equal to LAPACK's (the squared trailing
 * rows of Q^T b, which torch reports) up to rounding. */
#include <stdio.h>

#include "ops/ops_internal.h"

#include "ctensor/autograd.h"
#include "ctensor/linalg.h"
#include "ctensor/ops.h"

static const char OP[] = "linalg_lstsq";

/* The triangular solve of gels. A singular R means a rank-deficient a: the
 * error names lstsq and its driver, as torch's, not the solve inside. */
static ct_tensor *solve_r(const ct_tensor *r, const ct_tensor *rhs) {
  if (!r || !rhs) return NULL;
  ct_tensor *x = ct_linalg_solve(r, rhs);
  if (!x && ct_last_error() == CT_ERR_ARG) {
    char why[512];
    snprintf(why, sizeof why, "%s", ct_last_error_message());
    ct__fail(CT_ERR_ARG,
             "%s: driver 'gels' needs a of full rank, and this one does not have it "
             "(R of its QR factorization is singular: %s); a rank-revealing driver (gelsy, gelsd, "
             "gelss) takes it on the CPU",
             OP, why);
  }
  return x;
}

/* gels: the QR composition. */
static ct_tensor *solve_gels(const ct_tensor *a, const ct_tensor *b, int64_t m, int64_t n) {
  ct_tensor *r = NULL;
  if (m >= n) {
    ct_tensor *q = ct_linalg_qr(a, false, &r);
    return q ? solve_r(r, ct_matmul(ct_transpose(q, -2, -1), b)) : NULL;
  }
  ct_tensor *q = ct_linalg_qr(ct_transpose(a, -2, -1), false, &r);
  return q ? ct_matmul(q, solve_r(ct_transpose(r, -2, -1), b)) : NULL;
}

/* pinv(a) @ b, recorded: V diag(1/s, 0 below rcond * max s) U^T b. */
static ct_tensor *pinv_solve(const ct_tensor *a, const ct_tensor *b, double rcond) {
  ct_tensor *u = NULL, *vh = NULL;
  ct_tensor *s = ct_linalg_svd(a, false, &u, &vh); /* (..., p) */
  if (!s) return NULL;
  ct_tensor *keep = ct_gt(s, ct_mul_scalar(ct_max(s, CT_DIMS_KEEP(-1)), rcond));
  /* 1/s where kept; the dropped ones divide 1, so no inf reaches the gradient */
  ct_tensor *sinv = ct_where(keep, ct_reciprocal(ct_where(keep, s, ct_ones_like(s, NULL))),
                             ct_zeros_like(s, NULL));
  ct_tensor *ub = ct_matmul(ct_transpose(u, -2, -1), b);  /* (..., p, k) */
  ct_tensor *scaled = ct_mul(ct_unsqueeze(sinv, -1), ub); /* diag(1/s) U^T b */
  return ct_matmul(ct_transpose(vh, -2, -1), scaled);     /* (..., n, k) */
}

typedef struct lapack_out {
  ct_tensor *x, *rank, *s;
} lapack_out;

/* A driver of the backend's lstsq slot, without recording. */
static bool solve_lapack(const ct_backend *bk, const ct_tensor *a, const ct_tensor *b,
                         ct_lstsq_driver drv, double rcond, lapack_out *o) {
  int nd = ct_ndim(a);
  int64_t m = ct_shape(a)[nd - 2], n = ct_shape(a)[nd - 1], k = ct_shape(b)[ct_ndim(b) - 1];
  int64_t bs[CT_MAX_DIMS + 2];
  int nb = 0;
  if (!ct__broadcast_shapes(ct_shape(a), nd - 2, ct_shape(b), ct_ndim(b) - 2, bs, &nb)) {
    char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
    ct__fail(CT_ERR_SHAPE, "%s: the batch dims of a %s and b %s don't broadcast", OP,
             ct__shape_str(a, s1, sizeof s1), ct__shape_str(b, s2, sizeof s2));
    return false;
  }
  int64_t batch = 1, ldb = m > n ? m : n, p = m < n ? m : n;
  for (int d = 0; d < nb; d++) batch *= bs[d];
  ct_tensor_opts ot = {.dtype = ct_dtype_of(a), .device = ct__device(a)};
  ct_tensor_opts oi = {.dtype = CT_I32, .device = ct__device(a)};
  ct_tensor_opts ol = {.dtype = CT_I64, .device = ct__device(a)};
  /* column-major copies: a^T (batch, n, m); b^T in (batch, k, ldb) */
  ct_tensor *acm = ct_empty((int64_t[]){batch, n, m}, 3, &ot);
  ct_tensor *bcm = ct_zeros((int64_t[]){batch, k, ldb}, 3, &ot);
  bs[nb] = n, bs[nb + 1] = m;
  ct_tensor *av = ct_reshape(acm, bs, nb + 2);
  bs[nb] = m, bs[nb + 1] = n;
  if (!ct_copy_(av, ct_transpose(ct_expand(a, bs, nb + 2), -2, -1))) return false;
  bs[nb] = k, bs[nb + 1] = ldb;
  ct_tensor *bv = ct_reshape(bcm, bs, nb + 2);
  bs[nb] = m, bs[nb + 1] = k;
  if (!ct_copy_(ct_narrow(bv, -1, 0, m), ct_transpose(ct_expand(b, bs, nb + 2), -2, -1)))
    return false;
  ct_tensor *rank = ct_empty((int64_t[]){batch}, 1, &ol);
  ct_tensor *info = ct_zeros((int64_t[]){batch}, 1, &oi);
  ct_tensor *s = drv == CT_LSTSQ_GELSY ? NULL : ct_empty((int64_t[]){batch, p}, 2, &ot);
  if (!rank || !info || (drv != CT_LSTSQ_GELSY && !s)) return false;
  if (bk->lstsq(acm, bcm, rank, s, info, drv, rcond) != CT_OK) return false;
  int32_t *inf = ct__data(info);
  for (int64_t i = 0; i < batch; i++)
    if (inf[i] != 0) {
      ct__fail(CT_ERR_ARG, "%s: the SVD of batch element %lld did not converge (LAPACK's info %d)",
               OP, (long long)i, (int)inf[i]);
      return false;
    }
  o->x = ct_transpose(ct_narrow(bv, -1, 0, n), -2, -1); /* (..., n, k), column-major */
  o->rank = ct_reshape(rank, bs, nb);
  bs[nb] = p;
  o->s = s ? ct_reshape(s, bs, nb + 1) : NULL;
  return o->x && o->rank && (!s || o->s);
}

/* The driver of opts on a's device, or -1 for gels (the error recorded:
 * -2). */
static int parse_driver(const ct_tensor *a, const ct_lstsq_opts *opts, const ct_backend *bk) {
  static const char *const names[3] = {"gelsy", "gelsd", "gelss"};
  const char *d = opts && opts->driver ? opts->driver : bk->lstsq ? "gelsy" : "gels";
  int drv = -2;
  for (int i = 0; i < 3; i++)
    if (strcmp(d, names[i]) == 0) drv = i;
  if (strcmp(d, "gels") == 0) drv = -1;
  if (drv == -2)
    ct__fail(CT_ERR_ARG, "%s: driver must be one of gelsy, gelsd, gelss, gels, got '%s'", OP, d);
  else if (drv >= 0 && !bk->lstsq) {
    ct__fail(CT_ERR_ARG, "%s: the driver '%s' does not run on %s; only 'gels' does (as torch)", OP,
             d, ct_device_name(ct__device(a)));
    drv = -2;
  }
  return drv;
}

static bool check_args(const ct_tensor *a, const ct_tensor *b) {
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (ct_ndim(a) < 2 || ct_ndim(b) < 2) {
    ct__fail(CT_ERR_SHAPE, "%s: expected a (..., m, n) and b (..., m, k), got shapes %s and %s", OP,
             ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
    return false;
  }
  int64_t m = ct_shape(a)[ct_ndim(a) - 2];
  if (ct_shape(b)[ct_ndim(b) - 2] != m) {
    ct__fail(CT_ERR_SHAPE, "%s: a of shape %s and b of shape %s have different rows (%lld != %lld)",
             OP, ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb), (long long)m,
             (long long)ct_shape(b)[ct_ndim(b) - 2]);
    return false;
  }
  if (ct_dtype_of(a) != ct_dtype_of(b)) {
    ct__fail(CT_ERR_DTYPE, "%s: expected a and b to have the same dtype, got %s and %s", OP,
             ct_dtype_name(ct_dtype_of(a)), ct_dtype_name(ct_dtype_of(b)));
    return false;
  }
  if (ct_dtype_of(a) != CT_F32 && ct_dtype_of(a) != CT_F64) {
    ct__fail(CT_ERR_DTYPE, "%s: expected f32 or f64 matrices, got %s", OP,
             ct_dtype_name(ct_dtype_of(a)));
    return false;
  }
  return ct__check_same_device(OP, a, b);
}

/* An empty problem (no rows, columns or right-hand sides; a rank-revealing
 * driver): the minimum-norm solution is exactly a^T b (zeros or empty),
 * recorded so the gradients are torch's zeros. No rows or columns: rank 0
 * (torch's) and no singular values; no right-hand side: the driver run on
 * one zero column (LAPACK refuses none) for a's rank and singular values. */
static bool solve_empty(const ct_backend *bk, const ct_tensor *a, const ct_tensor *b,
                        ct_lstsq_driver drv, double rcond, ct_lstsq_result *r) {
  int nd = ct_ndim(a);
  int64_t m = ct_shape(a)[nd - 2], n = ct_shape(a)[nd - 1];
  r->solution = ct_matmul(ct_transpose(a, -2, -1), b);
  if (!r->solution) return false;
  int nb = ct_ndim(r->solution) - 2;
  int64_t bs[CT_MAX_DIMS];
  memcpy(bs, ct_shape(r->solution), sizeof(int64_t) * (size_t)nb);
  ct_tensor_opts ot = {.dtype = ct_dtype_of(a), .device = ct__device(a)};
  ct_tensor_opts ol = {.dtype = CT_I64, .device = ct__device(a)};
  if (m == 0 || n == 0) {
    bs[nb] = 0;
    r->rank = ct_zeros(bs, nb, &ol);
    r->singular_values =
        drv == CT_LSTSQ_GELSY ? ct_empty((int64_t[]){0}, 1, &ot) : ct_zeros(bs, nb + 1, &ot);
    return r->rank && r->singular_values;
  }
  bs[nb] = m, bs[nb + 1] = 1;
  ct_tensor *b1 = ct_zeros(bs, nb + 2, &ot);
  lapack_out o = {0};
  ct_no_grad_begin();
  bool ok = b1 && solve_lapack(bk, a, b1, drv, rcond, &o);
  ct_no_grad_end();
  if (!ok) return false;
  r->rank = o.rank;
  r->singular_values = o.s ? o.s : ct_empty((int64_t[]){0}, 1, &ot);
  return r->rank && r->singular_values;
}

/* Every output but the residuals, in the current scope; *drv: the driver
 * (-1: gels). */
static bool solve(const ct_tensor *a, const ct_tensor *b, const ct_lstsq_opts *opts,
                  ct_lstsq_result *r, int *drv_out) {
  const ct_backend *bk = ct__backend_for(OP, a);
  if (!bk) return false;
  int drv = *drv_out = parse_driver(a, opts, bk);
  if (drv == -2) return false;
  int64_t m = ct_shape(a)[ct_ndim(a) - 2], n = ct_shape(a)[ct_ndim(a) - 1];
  ct_tensor_opts ot = {.dtype = ct_dtype_of(a), .device = ct__device(a)};
  ct_tensor_opts ol = {.dtype = CT_I64, .device = ct__device(a)};
  if (drv == -1) {
    /* no rows or columns: the zero (or empty) a^T b, as the other drivers */
    r->solution = m && n ? solve_gels(a, b, m, n) : ct_matmul(ct_transpose(a, -2, -1), b);
    r->rank = ct_empty((int64_t[]){0}, 1, &ol);
    r->singular_values = ct_empty((int64_t[]){0}, 1, &ot);
    return r->solution && r->rank && r->singular_values;
  }
  double eps = ct_dtype_of(a) == CT_F64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  double rcond = opts && opts->rcond != 0 ? opts->rcond : eps * (double)(m > n ? m : n);
  /* gelsd and gelss read a negative rcond as the machine precision; gelsy
   * as no threshold at all (a singular R then divides by zero): give it
   * that precision (LAPACK's, half the dtype's epsilon) */
  if (rcond < 0 && drv == CT_LSTSQ_GELSY) rcond = eps / 2;
  if (m == 0 || n == 0 || ct_shape(b)[ct_ndim(b) - 1] == 0)
    return solve_empty(bk, a, b, (ct_lstsq_driver)drv, rcond, r);
  lapack_out o = {0};
  ct_no_grad_begin();
  bool ok = solve_lapack(bk, a, b, (ct_lstsq_driver)drv, rcond, &o);
  ct_no_grad_end();
  if (!ok) return false;
  ct_tensor *x = o.x;
  if (ct_is_grad_enabled() && (ct_requires_grad(a) || ct_requires_grad(b))) {
    ct_tensor *pb = pinv_solve(a, b, rcond < 0 ? eps : rcond);
    x = pb ? ct_add(x, ct_sub(pb, ct_detach(pb))) : NULL;
  }
  r->solution = x;
  r->rank = o.rank;
  r->singular_values = o.s ? o.s : ct_empty((int64_t[]){0}, 1, &ot);
  return r->solution && r->singular_values;
}

ct_status ct_linalg_lstsq_ex(const ct_tensor *a, const ct_tensor *b, const ct_lstsq_opts *opts,
                             ct_lstsq_result *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "%s: out is NULL", OP);
  memset(out, 0, sizeof *out);
  if (!a || !b) return ct_last_error() != CT_OK ? ct_last_error() : CT_ERR_ARG;
  if (!check_args(a, b)) return ct_last_error();
  int64_t m = ct_shape(a)[ct_ndim(a) - 2], n = ct_shape(a)[ct_ndim(a) - 1];
  ct_lstsq_result r = {0};
  int drv = -2;
  ct_scope_begin();
  bool ok = solve(a, b, opts, &r, &drv);
  if (ok) { /* residuals: m > n, not gelsy, and every rank n (gels: or it failed) */
    double full = 1;
    if (m > n && drv > CT_LSTSQ_GELSY && ct_numel(r.rank) > 0)
      ok = ct_item(ct_all(ct_eq_scalar(r.rank, (double)n), NULL), &full) == CT_OK;
    bool want = m > n && drv != CT_LSTSQ_GELSY && full != 0;
    ct_tensor_opts ot = {.dtype = ct_dtype_of(a), .device = ct__device(a)};
    r.residuals = !ok    ? NULL
                  : want ? ct_sum(ct_square(ct_sub(ct_matmul(a, r.solution), b)), CT_DIMS(-2))
                         : ct_empty((int64_t[]){0}, 1, &ot);
    ok = r.residuals != NULL;
  }
  if (ok) {
    out->solution = ct_keep(r.solution), out->residuals = ct_keep(r.residuals);
    out->rank = ct_keep(r.rank), out->singular_values = ct_keep(r.singular_values);
  }
  ct_scope_end();
  return ok ? CT_OK : ct_last_error();
}

ct_tensor *ct_linalg_lstsq(const ct_tensor *a, const ct_tensor *b) {
  ct_lstsq_result r;
  if (ct_linalg_lstsq_ex(a, b, NULL, &r) != CT_OK) return NULL;
  ct_free(r.residuals), ct_free(r.rank), ct_free(r.singular_values);
  return r.solution;
}
