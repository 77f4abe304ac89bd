/* Elementwise family, op layer: comparisons and logical ops (bool results, via
 * ct__binary), where, and the whole-tensor checks allclose and equal. */
#include <stdlib.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"

/* ---- Comparisons and logic ---------------------------------------------------- */

#define DEFINE_PUBLIC_COMPARE(E, name)                                                 \
  ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b) {                       \
    return ct__track(ct__binary(CT_BOP_##E, NULL, a, b));                              \
  }                                                                                    \
  ct_tensor *ct_##name##_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { \
    if (!a || !b || !ct__ew_need_out(#name "_out", out)) return NULL;                  \
    return ct__binary(CT_BOP_##E, out, a, b);                                          \
  }                                                                                    \
  ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s) {                        \
    return ct__track(ct__binary_scalar(CT_BOP_##E, NULL, a, s, false));                \
  }
/* One set per COMPARE row of the op table (ops/op_table.h). */
CT_BINARY_COMPARE_OPS(DEFINE_PUBLIC_COMPARE)

/* ---- where ----------------------------------------------------------------------- */

ct_tensor *ct__where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                     const ct_tensor *b) {
  if (!cond || !a || !b) return NULL;
  if (!ct__check_same_device("where", cond, a) || !ct__check_same_device("where", a, b))
    return NULL;
  ct_dtype rd = ct__result_type(a, b);
  int64_t ab[CT_MAX_DIMS], shape[CT_MAX_DIMS];
  int nab, ndim;
  if (!ct__ew_broadcast("where", a->shape, a->ndim, b->shape, b->ndim, ab, &nab) ||
      !ct__ew_broadcast("where", cond->shape, cond->ndim, ab, nab, shape, &ndim))
    return NULL;
  const ct_backend *be = ct__backend_for("where", a);
  if (!be) return NULL;
  CT_NEED_SLOT(be, where, "where", a);
  const ct_tensor *ins[3] = {cond, a, b};
  ct_tensor *res = ct__ew_result("where", out, shape, ndim, rd, ct__device(a), ins, 3);
  if (!res) return NULL;
  ct_tensor *tc = NULL, *ta = NULL, *tb = NULL;
  const ct_tensor *xc = ct__ew_operand(cond, CT_BOOL, res, &tc); /* nonzero -> true */
  const ct_tensor *xa = xc ? ct__ew_operand(a, rd, res, &ta) : NULL;
  const ct_tensor *xb = xa ? ct__ew_operand(b, rd, res, &tb) : NULL;
  ct_status st = xb ? be->where(res, xc, xa, xb) : ct_last_error();
  ct__release(tc);
  ct__release(ta);
  ct__release(tb);
  return ct__finish_out(out, res, st);
}

ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
  return ct__track(ct__ag_where(ct__where(NULL, cond, a, b), cond, a, b));
}

ct_tensor *ct_where_scalar(const ct_tensor *cond, const ct_tensor *a, double b) {
  if (!cond || !a) return NULL;
  /* b becomes a 0-d tensor of the scalar-promoted dtype on a's device; like a
   * fill, it must fit that dtype (torch.where(c, i8, 1000) raises) */
  ct_dtype sd = ct__scalar_dtype(a->dtype, b);
  if (!ct__check_scalar_fits("where", b, sd)) return NULL;
  ct_tensor *sb = ct__empty(NULL, 0, sd, ct__device(a));
  if (!sb) return NULL;
  ct_tensor *r = NULL;
  if (ct__backend_of(sb)->fill(sb, b) == CT_OK)
    r = ct__ag_where(ct__where(NULL, cond, a, sb), cond, a, sb);
  ct__release(sb);
  return ct__track(r);
}

/* ---- allclose, equal -------------------------------------------------------------- */

/* Whether every element of the bool tensor m is true (*ok); false on error. */
static bool all_true(const ct_tensor *m, bool *ok) {
  *ok = true;
  if (m->numel == 0) return true;
  ct_tensor *c = ct__contiguous(m);
  uint8_t *buf = c ? ct__malloc((size_t)m->numel) : NULL;
  bool done = false;
  if (c && !buf) ct__fail(CT_ERR_OOM, "allclose: out of host memory");
  if (buf && ct__backend_of(c)->copy_to_host(buf, c, (size_t)m->numel, false) == CT_OK) {
    for (int64_t i = 0; i < m->numel && *ok; i++) *ok = buf[i] != 0;
    done = true;
  }
  free(buf);
  ct__release(c);
  return done;
}

bool ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
  if (!a || !b) return false;
  if (!ct__check_same_device("allclose", a, b)) return false;
  int64_t shape[CT_MAX_DIMS];
  int ndim;
  if (!ct__ew_broadcast("allclose", a->shape, a->ndim, b->shape, b->ndim, shape, &ndim))
    return false;
  /* close = (a == b) | (isfinite(|a - b|) & |a - b| <= atol + rtol * |b|), as
   * torch.isclose: equal infinities are close, nan is never close. */
  ct_dtype p = ct__result_type(a, b);
  if (!ct_dtype_is_floating(p)) p = CT_F64;
  ct_tensor *ca = ct__cast(a, p), *cb = ca ? ct__cast(b, p) : NULL;
  ct_tensor *eq = ct__binary(CT_BOP_EQ, NULL, a, b);
  ct_tensor *diff = ct__binary(CT_BOP_SUB, NULL, ca, cb);
  ct_tensor *tol = ct__unary(CT_UOP_ABS, NULL, cb, 0, 0);
  /* in-place steps return their first argument, or NULL on failure */
  bool good = eq && ct__unary(CT_UOP_ABS, diff, diff, 0, 0) &&
              ct__binary_scalar(CT_BOP_MUL, tol, tol, rtol, false) &&
              ct__binary_scalar(CT_BOP_ADD, tol, tol, atol, false);
  ct_tensor *close = good ? ct__binary(CT_BOP_LE, NULL, diff, tol) : NULL;
  ct_tensor *finite = close ? ct__unary(CT_UOP_ISFINITE, NULL, diff, 0, 0) : NULL;
  good = finite && ct__binary(CT_BOP_LOGICAL_AND, close, close, finite) &&
         ct__binary(CT_BOP_LOGICAL_OR, close, close, eq);
  bool ok = false;
  if (good && !all_true(close, &ok)) ok = false;
  ct__release(ca);
  ct__release(cb);
  ct__release(eq);
  ct__release(diff);
  ct__release(tol);
  ct__release(close);
  ct__release(finite);
  return ok;
}

bool ct_equal(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return false;
  bool same = a->ndim == b->ndim;
  for (int d = 0; d < a->ndim && same; d++) same = a->shape[d] == b->shape[d];
  if (!same) {
    char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
    ct__fail(CT_ERR_SHAPE, "equal: shapes %s and %s differ", ct__shape_str(a, sa, sizeof sa),
             ct__shape_str(b, sb, sizeof sb));
    return false;
  }
  ct_tensor *eq = ct__binary(CT_BOP_EQ, NULL, a, b);
  bool ok = false;
  if (eq && !all_true(eq, &ok)) ok = false;
  ct__release(eq);
  return ok;
}
