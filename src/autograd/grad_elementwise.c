/* Backward formulas of the elementwise families: unary (through the fused
 * unary_backward kernel), binary, binary with a scalar, add_scaled, where,
 * and the in-place axpy forms. */
#include <math.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"

/* ---- Unary ------------------------------------------------------------------ */

static ct_status unary_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
  const ct_tensor *x = ct__node_saved(n, 0), *y = ct__node_saved(n, 1);
  if (!x || !y) return ct_last_error();
  ct_tensor *gc = ct__cast(g, y->dtype), *xc = ct__cast(x, y->dtype);
  ct_tensor *gx = gc && xc ? ct__empty(y->shape, y->ndim, y->dtype, ct__device(y)) : NULL;
  ct_status st = gx ? ct__backend_of(gx)->unary_backward((ct_unary_op)n->op, gx, gc, xc, y, n->p[0],
                                                        n->p[1])
                    : ct_last_error();
  ct__release(gc);
  ct__release(xc);
  if (st != CT_OK) {
    ct__release(gx);
    return st;
  }
  grad_in[0] = gx;
  return CT_OK;
}

ct_tensor *ct__ag_unary(ct_tensor *r, int op, const ct_tensor *x, double p0, double p1) {
  if (!r || !ct__ag_needed(&x, 1) || !ct_dtype_is_floating(r->dtype)) return r;
  ct_node *n = ct__node_new(ct__unary_info[op].name, unary_backward, 1, &x);
  if (!n || !ct__node_save(n, 0, x) || !ct__node_save(n, 1, r)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  n->op = op;
  n->p[0] = p0;
  n->p[1] = p1;
  return ct__ag_attach(r, n);
}

/* ---- Binary ------------------------------------------------------------------ */

/* Small helpers: each returns a new untracked tensor or NULL. */
static ct_tensor *mul(const ct_tensor *a, const ct_tensor *b) { return ct__binary(CT_BOP_MUL, NULL, a, b); }
static ct_tensor *divide(const ct_tensor *a, const ct_tensor *b) { return ct__binary(CT_BOP_DIV, NULL, a, b); }
static ct_tensor *scal(const ct_tensor *a, double s) { return ct__binary_scalar(CT_BOP_MUL, NULL, a, s, false); }
static ct_tensor *neg(const ct_tensor *a) { return ct__unary(CT_UOP_NEG, NULL, a, 0, 0); }

/* grad * (mask ? 1 : 0) + grad * 0.5 * (a == b): maximum/minimum routing. */
static ct_tensor *route(const ct_tensor *g, const ct_tensor *a, const ct_tensor *b, ct_binary_op wins) {
  ct_tensor *win = ct__binary(wins, NULL, a, b);
  ct_tensor *tie = ct__binary(CT_BOP_EQ, NULL, a, b);
  ct_tensor *half = tie ? scal(g, 0.5) : NULL;
  ct_tensor *zero = half ? ct__zeros(NULL, 0, g->dtype, ct__device(g)) : NULL;
  ct_tensor *t1 = zero ? ct__where(NULL, tie, half, zero) : NULL;
  ct_tensor *r = t1 && win ? ct__where(NULL, win, g, t1) : NULL;
  ct__release(win), ct__release(tie), ct__release(half), ct__release(zero), ct__release(t1);
  return r;
}

static ct_status binary_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *a = NULL, *b = NULL, *y = NULL;
  ct_binary_op op = (ct_binary_op)n->op;
  bool need_a = ct__node_needs(n, 0), need_b = ct__node_needs(n, 1);
  if (n->saved[0] && !(a = ct__node_saved(n, 0))) return ct_last_error();
  if (n->saved[1] && !(b = ct__node_saved(n, 1))) return ct_last_error();
  if (n->saved[2] && !(y = ct__node_saved(n, 2))) return ct_last_error();
  switch (op) {
  case CT_BOP_ADD:
    if (need_a) gi[0] = ct__retain(g);
    if (need_b) gi[1] = ct__retain(g);
    break;
  case CT_BOP_SUB:
    if (need_a) gi[0] = ct__retain(g);
    if (need_b && !(gi[1] = neg(g))) return ct_last_error();
    break;
  case CT_BOP_MUL:
    if (need_a && !(gi[0] = mul(g, b))) return ct_last_error();
    if (need_b && !(gi[1] = mul(g, a))) return ct_last_error();
    break;
  case CT_BOP_DIV: {
    ct_tensor *ga = divide(g, b);
    if (!ga) return ct_last_error();
    if (need_b) { /* -g * y / b = -ga * y */
      ct_tensor *t = mul(ga, y);
      gi[1] = t ? neg(t) : NULL;
      ct__release(t);
      if (!gi[1]) return ct__release(ga), ct_last_error();
    }
    if (need_a) gi[0] = ga;
    else ct__release(ga);
    break;
  }
  case CT_BOP_POW: {
    if (need_a) { /* g * b * a^(b-1) */
      ct_tensor *bm1 = ct__binary_scalar(CT_BOP_SUB, NULL, b, 1, false);
      ct_tensor *p = bm1 ? ct__binary(CT_BOP_POW, NULL, a, bm1) : NULL;
      ct_tensor *t = p ? mul(p, b) : NULL;
      gi[0] = t ? mul(g, t) : NULL;
      ct__release(bm1), ct__release(p), ct__release(t);
      if (!gi[0]) return ct_last_error();
    }
    if (need_b) { /* g * y * log(a), 0 where a == 0 and b >= 0 (as torch) */
      ct_tensor *la = ct__unary(CT_UOP_LOG, NULL, a, 0, 0);
      ct_tensor *t = la ? mul(y, la) : NULL;
      ct_tensor *az = t ? ct__binary_scalar(CT_BOP_EQ, NULL, a, 0, false) : NULL;
      ct_tensor *bp = az ? ct__binary_scalar(CT_BOP_GE, NULL, b, 0, false) : NULL;
      ct_tensor *m = bp ? ct__binary(CT_BOP_LOGICAL_AND, NULL, az, bp) : NULL;
      ct_tensor *z = m ? ct__zeros(NULL, 0, t->dtype, ct__device(t)) : NULL;
      ct_tensor *safe = z ? ct__where(NULL, m, z, t) : NULL;
      gi[1] = safe ? mul(g, safe) : NULL;
      ct__release(la), ct__release(t), ct__release(az), ct__release(bp), ct__release(m);
      ct__release(z), ct__release(safe);
      if (!gi[1]) return ct_last_error();
    }
    break;
  }
  case CT_BOP_MAXIMUM:
  case CT_BOP_MINIMUM: {
    ct_binary_op a_wins = op == CT_BOP_MAXIMUM ? CT_BOP_GT : CT_BOP_LT;
    if (need_a && !(gi[0] = route(g, a, b, a_wins))) return ct_last_error();
    if (need_b && !(gi[1] = route(g, b, a, a_wins))) return ct_last_error();
    break;
  }
  case CT_BOP_FMOD:
  case CT_BOP_REMAINDER: {
    if (need_a) gi[0] = ct__retain(g);
    if (need_b) { /* -g * trunc(a / b) (fmod) or -g * floor(a / b) (remainder) */
      ct_tensor *q = divide(a, b);
      ct_tensor *r = q ? ct__unary(op == CT_BOP_FMOD ? CT_UOP_TRUNC : CT_UOP_FLOOR, NULL, q, 0, 0) : NULL;
      ct_tensor *t = r ? mul(g, r) : NULL;
      gi[1] = t ? neg(t) : NULL;
      ct__release(q), ct__release(r), ct__release(t);
      if (!gi[1]) return ct_last_error();
    }
    break;
  }
  case CT_BOP_ATAN2: { /* d/da = b / (a²+b²), d/db = -a / (a²+b²) */
    ct_tensor *a2 = mul(a, a), *b2 = mul(b, b);
    ct_tensor *den = a2 && b2 ? ct__binary(CT_BOP_ADD, NULL, a2, b2) : NULL;
    ct_tensor *gd = den ? divide(g, den) : NULL;
    if (need_a && gd) gi[0] = mul(gd, b);
    if (need_b && gd) {
      ct_tensor *t = mul(gd, a);
      gi[1] = t ? neg(t) : NULL;
      ct__release(t);
    }
    ct__release(a2), ct__release(b2), ct__release(den), ct__release(gd);
    if ((need_a && !gi[0]) || (need_b && !gi[1])) return ct_last_error();
    break;
  }
  default:
    return ct__fail_status(CT_ERR_STATE, "backward: %s is not differentiable",
                           ct__binary_info[op].name);
  }
  return CT_OK;
}

ct_tensor *ct__ag_binary(ct_tensor *r, int op, const ct_tensor *a, const ct_tensor *b) {
  const ct_tensor *ins[2] = {a, b};
  if (!r || ct__binary_info[op].rule == CT_BRULE_COMPARE || !ct__ag_needed(ins, 2)) return r;
  ct_node *n = ct__node_new(ct__binary_info[op].name, binary_backward, 2, ins);
  if (!n) return ct__ag_attach(r, NULL);  /* releases r; the error is recorded */
  n->op = op;
  bool ok = true;
  switch (op) {
  case CT_BOP_ADD:
  case CT_BOP_SUB: break;
  case CT_BOP_DIV: ok = ct__node_save(n, 1, b) && ct__node_save(n, 2, r); break;
  case CT_BOP_POW: ok = ct__node_save(n, 0, a) && ct__node_save(n, 1, b) && ct__node_save(n, 2, r); break;
  default: ok = ct__node_save(n, 0, a) && ct__node_save(n, 1, b); break;
  }
  if (!ok) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

/* ---- Binary with a scalar --------------------------------------------------- */

static ct_status scalar_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  ct_binary_op op = (ct_binary_op)n->op;
  double s = n->p[0];
  bool rev = n->p[1] != 0;
  const ct_tensor *a = NULL, *y = NULL;
  if (n->saved[0] && !(a = ct__node_saved(n, 0))) return ct_last_error();
  if (n->saved[1] && !(y = ct__node_saved(n, 1))) return ct_last_error();
  ct_tensor *r = NULL;
  switch (op) {
  case CT_BOP_ADD: r = ct__retain(g); break;
  case CT_BOP_SUB: r = rev ? neg(g) : ct__retain(g); break;
  case CT_BOP_MUL: r = scal(g, s); break;
  case CT_BOP_DIV:
    if (!rev) {
      r = scal(g, 1.0 / s);
    } else { /* d(s/a) = -s/a² = -y/a */
      ct_tensor *t = divide(y, a);
      ct_tensor *u = t ? mul(g, t) : NULL;
      r = u ? neg(u) : NULL;
      ct__release(t), ct__release(u);
    }
    break;
  case CT_BOP_POW:
    if (!rev) { /* s * a^(s-1) */
      ct_tensor *p = s == 0 ? NULL : ct__binary_scalar(CT_BOP_POW, NULL, a, s - 1, false);
      ct_tensor *t = p ? scal(p, s) : s == 0 ? ct__zeros(a->shape, a->ndim, g->dtype, ct__device(g)) : NULL;
      r = t ? mul(g, t) : NULL;
      ct__release(p), ct__release(t);
    } else { /* d(s^a) = s^a * ln s */
      ct_tensor *t = scal(y, log(s));
      r = t ? mul(g, t) : NULL;
      ct__release(t);
    }
    break;
  case CT_BOP_MAXIMUM:
  case CT_BOP_MINIMUM: {
    ct_tensor *sv = ct__zeros(NULL, 0, a->dtype, ct__device(a));
    if (sv && ct__backend_of(sv)->fill(sv, s) == CT_OK)
      r = route(g, a, sv, op == CT_BOP_MAXIMUM ? CT_BOP_GT : CT_BOP_LT);
    ct__release(sv);
    break;
  }
  case CT_BOP_FMOD:
  case CT_BOP_REMAINDER:
    if (!rev) {
      r = ct__retain(g);
    } else { /* d(s mod a)/da = -trunc/floor(s / a) */
      ct_tensor *q = ct__binary_scalar(CT_BOP_DIV, NULL, a, s, true);
      ct_tensor *f = q ? ct__unary(op == CT_BOP_FMOD ? CT_UOP_TRUNC : CT_UOP_FLOOR, NULL, q, 0, 0) : NULL;
      ct_tensor *t = f ? mul(g, f) : NULL;
      r = t ? neg(t) : NULL;
      ct__release(q), ct__release(f), ct__release(t);
    }
    break;
  case CT_BOP_ATAN2: { /* atan2(a, s): s/(a²+s²); atan2(s, a): -s/(a²+s²) */
    ct_tensor *a2 = mul(a, a);
    ct_tensor *den = a2 ? ct__binary_scalar(CT_BOP_ADD, NULL, a2, s * s, false) : NULL;
    ct_tensor *t = den ? ct__binary_scalar(CT_BOP_DIV, NULL, den, rev ? -s : s, true) : NULL;
    r = t ? mul(g, t) : NULL;
    ct__release(a2), ct__release(den), ct__release(t);
    break;
  }
  default:
    return ct__fail_status(CT_ERR_STATE, "backward: %s is not differentiable", ct__binary_info[op].name);
  }
  if (!r) return ct_last_error();
  gi[0] = r;
  return CT_OK;
}

ct_tensor *ct__ag_binary_scalar(ct_tensor *r, int op, const ct_tensor *a, double s, bool reversed) {
  if (!r || ct__binary_info[op].rule == CT_BRULE_COMPARE || !ct__ag_needed(&a, 1)) return r;
  ct_node *n = ct__node_new(ct__binary_info[op].name, scalar_backward, 1, &a);
  if (!n) return ct__ag_attach(r, NULL);
  n->op = op;
  n->p[0] = s;
  n->p[1] = reversed;
  bool ok = true;
  if (op != CT_BOP_ADD && op != CT_BOP_SUB && op != CT_BOP_MUL) ok = ct__node_save(n, 0, a);
  if (ok && (op == CT_BOP_DIV || op == CT_BOP_POW)) ok = ct__node_save(n, 1, r);
  if (!ok) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

/* ---- add_scaled and where ----------------------------------------------------- */

static ct_status add_scaled_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  if (ct__node_needs(n, 0)) gi[0] = ct__retain(g);
  if (ct__node_needs(n, 1) && !(gi[1] = n->p[0] == 1 ? ct__retain(g) : scal(g, n->p[0])))
    return ct_last_error();
  return CT_OK;
}

ct_tensor *ct__ag_add_scaled(ct_tensor *r, const ct_tensor *a, const ct_tensor *b, double alpha) {
  const ct_tensor *ins[2] = {a, b};
  if (!r || !ct__ag_needed(ins, 2)) return r;
  ct_node *n = ct__node_new("add", add_scaled_backward, 2, ins);
  if (!n) return ct__ag_attach(r, NULL);
  n->p[0] = alpha;
  return ct__ag_attach(r, n);
}

static ct_status where_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *c = ct__node_saved(n, 0);
  if (!c) return ct_last_error();
  ct_tensor *z = ct__zeros(NULL, 0, g->dtype, ct__device(g));
  if (!z) return ct_last_error();
  if (ct__node_needs(n, 1)) gi[1] = ct__where(NULL, c, g, z);
  if (ct__node_needs(n, 2)) gi[2] = ct__where(NULL, c, z, g);
  ct__release(z);
  if ((ct__node_needs(n, 1) && !gi[1]) || (ct__node_needs(n, 2) && !gi[2])) return ct_last_error();
  return CT_OK;
}

ct_tensor *ct__ag_where(ct_tensor *r, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
  const ct_tensor *ins[3] = {cond, a, b};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = ct__node_new("where", where_backward, 3, ins);
  if (!n || !ct__node_save(n, 0, cond)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

/* ---- In place ----------------------------------------------------------------- */

bool ct__ag_inplace_begin(const char *op, const ct_tensor *self, const ct_tensor *const *inputs,
                          int n, bool recordable) {
  if (!ct__grad_enabled()) return true;
  if (ct__requires_grad(self))
    return ct__fail(CT_ERR_STATE,
                    "%s: in-place write to a tensor that requires grad (%s); use the out-of-place "
                    "form, or write inside ct_no_grad_begin/ct_no_grad_end",
                    op, ct_is_leaf(self) ? "a leaf" : "made by a recorded op"),
           false;
  if (!recordable && ct__ag_needed(inputs, n))
    return ct__fail(CT_ERR_STATE,
                    "%s: in-place / out= forms don't record gradients, and an input requires grad; "
                    "use the out-of-place form",
                    op),
           false;
  return true;
}

ct_tensor *ct__ag_inplace_axpy(ct_tensor *self, const ct_tensor *b, double alpha) {
  if (!self || !ct__ag_needed(&b, 1)) return self;
  const ct_tensor *ins[2] = {NULL, b}; /* self had no history (checked before) */
  ct_node *n = ct__node_new("add_", add_scaled_backward, 2, ins);
  if (!n) return NULL;
  n->p[0] = alpha;
  ct__retain(self); /* ct__ag_attach releases its result on failure */
  if (!ct__ag_attach(self, n)) return NULL;
  ct__release(self);
  return self;
}

ct_tensor *ct__zeros(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device) {
  ct_tensor *z = ct__empty(shape, ndim, dtype, device);
  if (z && ct__backend_of(z)->fill(z, 0.0) != CT_OK) {
    ct__release(z);
    return NULL;
  }
  return z;
}
