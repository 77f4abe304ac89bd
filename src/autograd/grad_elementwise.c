/* Backward of the elementwise family: unary ops (the fused unary_backward
 * kernel), binary ops and their scalar forms, add_scaled, where, and the
 * writes that replace values (fill_, random fills, copy_).
 *
 * Each op saves what its gradient reads and nothing else, as PyTorch does:
 * exp, tanh, sigmoid, sqrt, relu... save their output only, so their input
 * may be modified in place afterwards; mul saves b only if a needs a
 * gradient. The same recording serves the in-place forms (a.mul_(b)). */
#include <math.h>

#include "autograd/node.h"
#include "ops/elementwise.h"

/* ---- Unary ------------------------------------------------------------------------- */

typedef struct unary_node {
  ct_unary_op op;
  double p0, p1; /* clamp: lo, hi; leaky_relu: slope */
  ct_saved x, y; /* input, output: whichever the derivative reads */
} unary_node;

/* From the op table's rows (ops/op_table.h): the node's name and what
 * d op / dx reads (CT_READS_*), the same column the backward kernels read. */
typedef struct unary_rule {
  const char *name; /* NULL: not differentiable (bool results) */
  unsigned char reads;
} unary_rule;

static const unary_rule UNARY[] = {
#define X(E, n, r, api, READS, grad, node) [CT_UOP_##E] = {node, CT_READS_##READS},
    CT_UNARY_OPS(X)
#undef X
};
_Static_assert(sizeof UNARY / sizeof UNARY[0] == CT_UOP_COUNT,
               "UNARY needs one entry per unary op");

static void unary_backward(ct_bw *c, const ct_tensor *g) {
  const unary_node *s = CT_BW_STATE(c, unary_node);
  const ct_tensor *x = s->x.t ? bw_saved(c, &s->x) : NULL, *y = s->y.t ? bw_saved(c, &s->y) : NULL;
  if (c->st != CT_OK) return;
  /* The kernel takes both x and y and reads the one the derivative needs:
   * the saved one stands for both (the gradient for neither). */
  const ct_tensor *xy = x ? x : y ? y : g;
  ct_dtype dt = xy == g ? g->dtype : xy->dtype;
  ct_tensor *gc = bw_cast(c, g, dt), *xc = bw_cast(c, xy, dt);
  ct_tensor *gx = bw_empty(c, g->shape, g->ndim, dt, ct__device(g));
  if (gx && gc && xc &&
      bw_ok(c, ct__backend_of(gx)->unary_backward(s->op, gx, gc, xc, xc, s->p0, s->p1)))
    bw_set(c, 0, gx);
}

ct_tensor *ct__ag_unary(ct_tensor *r, int op, const ct_tensor *x, double p0, double p1) {
  const unary_rule *rule = &UNARY[op];
  if (!r || !ct__ag_needed(&x, 1) || !ct_dtype_is_floating(r->dtype)) return r;
  CT_ASSERT(rule->name != NULL); /* a floating result needs a row in UNARY */
  ct_node *n = CT_NODE_NEW(unary_node, rule->name, unary_backward, 1, &x);
  if (n) {
    unary_node *s = CT_NODE_STATE(n, unary_node);
    *s = (unary_node){.op = (ct_unary_op)op, .p0 = p0, .p1 = p1};
    if (rule->reads == CT_READS_IN) ct__save(n, &s->x, x);
    if (rule->reads == CT_READS_OUT) ct__save_output(n, &s->y, r);
  }
  return ct__ag_record(r, n);
}

/* ---- Binary -------------------------------------------------------------------------- */

typedef struct binary_node {
  ct_binary_op op;
  ct_saved a, b, y; /* operands and output: what the needed gradients read */
} binary_node;

/* g where a wins against b, g / 2 where they tie, 0 elsewhere (maximum /
 * minimum; wins: GT or LT). */
static ct_tensor *route(ct_bw *c, const ct_tensor *g, const ct_tensor *a, const ct_tensor *b,
                        ct_binary_op wins) {
  ct_tensor *tie = bw_where(c, bw_binary(c, CT_BOP_EQ, a, b), bw_scale(c, g, 0.5), bw_zero(c, g));
  return bw_where(c, bw_binary(c, wins, a, b), g, tie);
}

typedef void (*binary_formula)(ct_bw *c, const binary_node *s, const ct_tensor *g);

static void add_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  BW_GRAD(c, 0, g);
  BW_GRAD(c, 1, g);
}
static void sub_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  BW_GRAD(c, 0, g);
  BW_GRAD(c, 1, bw_neg(c, g));
}
static void mul_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  BW_GRAD(c, 0, bw_mul(c, g, bw_saved(c, &s->b)));
  BW_GRAD(c, 1, bw_mul(c, g, bw_saved(c, &s->a)));
}
static void div_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  const ct_tensor *b = bw_saved(c, &s->b);
  ct_tensor *g_b = bw_div(c, g, b); /* d/da = 1 / b */
  BW_GRAD(c, 0, g_b);
  BW_GRAD(c, 1, bw_neg(c, bw_div(c, bw_mul(c, g_b, bw_saved(c, &s->a)), b))); /* -a / b^2 */
}
static void pow_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  const ct_tensor *a = bw_saved(c, &s->a), *b = bw_saved(c, &s->b);
  /* d/da = b a^(b-1), 0 where b == 0 */
  if (bw_needs(c, 0)) {
    ct_tensor *d = bw_mul(c, b, bw_binary(c, CT_BOP_POW, a, bw_scalar(c, CT_BOP_SUB, b, 1)));
    bw_set(c, 0, bw_mul(c, g, bw_where(c, bw_is_zero(c, b), bw_zero(c, g), d)));
  }
  /* d/db = y log a, 0 where a == 0 and b >= 0 */
  if (bw_needs(c, 1)) {
    ct_tensor *d = bw_mul(c, bw_saved(c, &s->y), bw_unary(c, CT_UOP_LOG, a));
    ct_tensor *zero =
        bw_binary(c, CT_BOP_LOGICAL_AND, bw_is_zero(c, a), bw_scalar(c, CT_BOP_GE, b, 0));
    bw_set(c, 1, bw_mul(c, g, bw_where(c, zero, bw_zero(c, g), d)));
  }
}
static void maximum_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  ct_binary_op wins = s->op == CT_BOP_MAXIMUM ? CT_BOP_GT : CT_BOP_LT;
  const ct_tensor *a = bw_saved(c, &s->a), *b = bw_saved(c, &s->b);
  BW_GRAD(c, 0, route(c, g, a, b, wins));
  BW_GRAD(c, 1, route(c, g, b, a, wins));
}
static void fmod_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  /* d/da = 1; d/db = -trunc(a / b) (fmod) or -floor(a / b) (remainder) */
  ct_unary_op round = s->op == CT_BOP_FMOD ? CT_UOP_TRUNC : CT_UOP_FLOOR;
  BW_GRAD(c, 0, g);
  BW_GRAD(c, 1,
          bw_neg(c, bw_mul(c, g,
                           bw_unary(c, round, bw_div(c, bw_saved(c, &s->a), bw_saved(c, &s->b))))));
}
static void atan2_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  /* d/da = b / (a² + b²), d/db = -a / (a² + b²) */
  const ct_tensor *a = bw_saved(c, &s->a), *b = bw_saved(c, &s->b);
  ct_tensor *g_r2 = bw_div(c, g, bw_add(c, bw_mul(c, a, a), bw_mul(c, b, b)));
  BW_GRAD(c, 0, bw_mul(c, g_r2, b));
  BW_GRAD(c, 1, bw_neg(c, bw_mul(c, g_r2, a)));
}
static void hypot_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  /* d/da = a / y, d/db = b / y (nan where both are 0, as torch) */
  ct_tensor *g_y = bw_div(c, g, bw_saved(c, &s->y));
  BW_GRAD(c, 0, bw_mul(c, g_y, bw_saved(c, &s->a)));
  BW_GRAD(c, 1, bw_mul(c, g_y, bw_saved(c, &s->b)));
}
static void logaddexp_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  /* the softmax weights: d/da = sigmoid(a - b), d/db = sigmoid(b - a) */
  const ct_tensor *a = bw_saved(c, &s->a), *b = bw_saved(c, &s->b);
  BW_GRAD(c, 0, bw_mul(c, g, bw_unary(c, CT_UOP_SIGMOID, bw_sub(c, a, b))));
  BW_GRAD(c, 1, bw_mul(c, g, bw_unary(c, CT_UOP_SIGMOID, bw_sub(c, b, a))));
}
/* g * d copysign(a, b)/da = g * y / a: 1 where the signs agree, -1 where
 * not, 0 at a == 0 (as torch). */
static ct_tensor *copysign_da(ct_bw *c, const ct_tensor *g, const ct_tensor *a,
                              const ct_tensor *y) {
  return bw_mul(c, g, bw_where(c, bw_is_zero(c, a), bw_zero(c, g), bw_div(c, y, a)));
}
static void copysign_grad(ct_bw *c, const binary_node *s, const ct_tensor *g) {
  BW_GRAD(c, 0, copysign_da(c, g, bw_saved(c, &s->a), bw_saved(c, &s->y)));
  BW_GRAD(c, 1, bw_zeros(c, g->shape, g->ndim, g->dtype, ct__device(g))); /* as torch */
}

enum { READ_A = CT_BREADS_A, READ_B = CT_BREADS_B, READ_Y = CT_BREADS_Y };
typedef struct binary_rule {
  const char *name;
  binary_formula grad;        /* NULL: not differentiable */
  unsigned char for_a, for_b; /* what d/da and d/db read */
} binary_rule;

/* The op table's `grad` column names the formulas: <grad>_grad here, <grad>_s
 * for the scalar forms; NONE is none. */
#define NONE_grad NULL
#define NONE_s NULL
static const binary_rule BINARY[CT_BOP_COUNT] = {
#define X(E, n, r, grad, node, ra, rb, ...) \
  [CT_BOP_##E] = {node, grad##_grad, CT_BREADS_##ra, CT_BREADS_##rb},
    CT_BINARY_OPS(X)
#undef X
};

static void binary_backward(ct_bw *c, const ct_tensor *g) {
  const binary_node *s = CT_BW_STATE(c, binary_node);
  const binary_rule *rule = &BINARY[s->op];
  if (!rule->grad) {
    bw_ok(c, ct__fail_status(CT_ERR_STATE, "backward: %s is not differentiable",
                             ct__binary_info[s->op].name));
    return;
  }
  rule->grad(c, s, g);
}

ct_tensor *ct__ag_binary(ct_tensor *r, int op, const ct_tensor *a, const ct_tensor *b) {
  const ct_tensor *ins[2] = {a, b};
  if (!r || ct__binary_info[op].rule == CT_BRULE_COMPARE ||
      ct__binary_info[op].rule == CT_BRULE_INT || !ct__ag_needed(ins, 2))
    return r;
  const binary_rule *rule = &BINARY[op];
  CT_ASSERT(rule->name != NULL); /* every arithmetic op needs a row in BINARY */
  ct_node *n = CT_NODE_NEW(binary_node, rule->name, binary_backward, 2, ins);
  if (n) {
    binary_node *s = CT_NODE_STATE(n, binary_node);
    s->op = (ct_binary_op)op;
    unsigned reads =
        (ct__requires_grad(a) ? rule->for_a : 0) | (ct__requires_grad(b) ? rule->for_b : 0);
    if (reads & READ_A) ct__save(n, &s->a, a);
    if (reads & READ_B) ct__save(n, &s->b, b);
    if (reads & READ_Y) ct__save_output(n, &s->y, r);
  }
  return ct__ag_record(r, n);
}

/* ---- Binary with a scalar: x op s, or s op x (reversed) ------------------------------- */

typedef struct scalar_node {
  ct_binary_op op;
  double s;
  bool reversed;
  ct_saved x, y; /* the tensor operand, the output */
} scalar_node;

/* g times d(x op s)/dx, or d(s op x)/dx when reversed. */
typedef ct_tensor *(*scalar_formula)(ct_bw *c, const scalar_node *n, const ct_tensor *g);

static ct_tensor *zeros_like_grad(ct_bw *c, const ct_tensor *g) {
  return bw_zeros(c, g->shape, g->ndim, g->dtype, ct__device(g));
}
static ct_tensor *add_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  return (ct_tensor *)g;
}
static ct_tensor *sub_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  return n->reversed ? bw_neg(c, g) : (ct_tensor *)g;
}
static ct_tensor *mul_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  return bw_scale(c, g, n->s);
}
static ct_tensor *div_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  if (!n->reversed) return bw_scale(c, g, 1.0 / n->s); /* x / s: 1 / s */
  if (n->s == 0) return zeros_like_grad(c, g);         /* 0 / x */
  const ct_tensor *y = bw_saved(c, &n->y);             /* s / x: -s / x² = -y² / s */
  return bw_mul(c, g, bw_scale(c, bw_mul(c, y, y), -1.0 / n->s));
}
static ct_tensor *pow_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  double s = n->s;
  if (!n->reversed) { /* x^s: s x^(s-1), 0 for s == 0 */
    if (s == 0) return zeros_like_grad(c, g);
    return bw_mul(c, g, bw_scale(c, bw_scalar(c, CT_BOP_POW, bw_saved(c, &n->x), s - 1), s));
  }
  /* s^x: y ln s, 0 where s == 0 and x >= 0 */
  ct_tensor *d = bw_mul(c, g, bw_scale(c, bw_saved(c, &n->y), log(s)));
  if (s != 0) return d;
  return bw_where(c, bw_scalar(c, CT_BOP_GE, bw_saved(c, &n->x), 0), bw_zero(c, g), d);
}
static ct_tensor *maximum_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  const ct_tensor *x = bw_saved(c, &n->x);
  ct_tensor *sv = bw_const(c, x, n->s);
  return route(c, g, x, sv, n->op == CT_BOP_MAXIMUM ? CT_BOP_GT : CT_BOP_LT);
}
static ct_tensor *fmod_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  if (!n->reversed) return (ct_tensor *)g; /* x mod s: 1;  s mod x: -trunc/floor(s / x) */
  ct_tensor *q = bw_keep(c, ct__binary_scalar(CT_BOP_DIV, NULL, bw_saved(c, &n->x), n->s, true));
  ct_unary_op round = n->op == CT_BOP_FMOD ? CT_UOP_TRUNC : CT_UOP_FLOOR;
  return bw_neg(c, bw_mul(c, g, bw_unary(c, round, q)));
}
static ct_tensor *atan2_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  /* atan2(x, s): s / (x² + s²);  atan2(s, x): -s / (x² + s²) */
  const ct_tensor *x = bw_saved(c, &n->x);
  ct_tensor *r2 = bw_scalar(c, CT_BOP_ADD, bw_mul(c, x, x), n->s * n->s);
  double num = n->reversed ? -n->s : n->s;
  return bw_mul(c, g, bw_keep(c, ct__binary_scalar(CT_BOP_DIV, NULL, r2, num, true)));
}
static ct_tensor *hypot_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  /* hypot(x, s) and hypot(s, x): x / y */
  return bw_mul(c, g, bw_div(c, bw_saved(c, &n->x), bw_saved(c, &n->y)));
}
static ct_tensor *logaddexp_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  /* logaddexp(x, s) and logaddexp(s, x): sigmoid(x - s) */
  ct_tensor *d = bw_scalar(c, CT_BOP_SUB, bw_saved(c, &n->x), n->s);
  return bw_mul(c, g, bw_unary(c, CT_UOP_SIGMOID, d));
}
static ct_tensor *copysign_s(ct_bw *c, const scalar_node *n, const ct_tensor *g) {
  /* copysign(x, s): as copysign_grad's; copysign(s, x): 0 */
  if (n->reversed) return zeros_like_grad(c, g);
  return copysign_da(c, g, bw_saved(c, &n->x), bw_saved(c, &n->y));
}

typedef struct scalar_rule {
  const char *name;
  scalar_formula grad;            /* NULL: not differentiable */
  unsigned char reads, reads_rev; /* READ_A (x) / READ_Y, for x op s and s op x */
} scalar_rule;

static const scalar_rule SCALAR[CT_BOP_COUNT] = {
#define X(E, n, r, grad, node, ra, rb, snode, sr, rsr) \
  [CT_BOP_##E] = {snode, grad##_s, CT_BREADS_##sr, CT_BREADS_##rsr},
    CT_BINARY_OPS(X)
#undef X
};

static void scalar_backward(ct_bw *c, const ct_tensor *g) {
  const scalar_node *n = CT_BW_STATE(c, scalar_node);
  if (!SCALAR[n->op].grad) {
    bw_ok(c, ct__fail_status(CT_ERR_STATE, "backward: %s is not differentiable",
                             ct__binary_info[n->op].name));
    return;
  }
  BW_GRAD(c, 0, SCALAR[n->op].grad(c, n, g));
}

ct_tensor *ct__ag_binary_scalar(ct_tensor *r, int op, const ct_tensor *a, double s, bool reversed) {
  if (!r || ct__binary_info[op].rule == CT_BRULE_COMPARE ||
      ct__binary_info[op].rule == CT_BRULE_INT || !ct__ag_needed(&a, 1))
    return r;
  const scalar_rule *rule = &SCALAR[op];
  CT_ASSERT(rule->name != NULL); /* every arithmetic op needs a row in SCALAR */
  ct_node *n = CT_NODE_NEW(scalar_node, rule->name, scalar_backward, 1, &a);
  if (n) {
    scalar_node *st = CT_NODE_STATE(n, scalar_node);
    *st = (scalar_node){.op = (ct_binary_op)op, .s = s, .reversed = reversed};
    unsigned reads = reversed ? rule->reads_rev : rule->reads;
    if (reads & READ_A) ct__save(n, &st->x, a);
    if (reads & READ_Y) ct__save_output(n, &st->y, r);
  }
  return ct__ag_record(r, n);
}

/* ---- add_scaled (a + alpha b) and where -------------------------------------------- */

typedef struct add_scaled_node {
  double alpha;
} add_scaled_node;

static void add_scaled_backward(ct_bw *c, const ct_tensor *g) {
  double alpha = CT_BW_STATE(c, add_scaled_node)->alpha;
  BW_GRAD(c, 0, g);
  BW_GRAD(c, 1, alpha == 1 ? g : bw_scale(c, g, alpha));
}

ct_tensor *ct__ag_add_scaled(ct_tensor *r, const ct_tensor *a, const ct_tensor *b, double alpha) {
  const ct_tensor *ins[2] = {a, b};
  if (!r || !ct__ag_needed(ins, 2)) return r;
  ct_node *n = CT_NODE_NEW(add_scaled_node, "AddBackward", add_scaled_backward, 2, ins);
  if (n) CT_NODE_STATE(n, add_scaled_node)->alpha = alpha;
  return ct__ag_record(r, n);
}

typedef struct where_node {
  ct_saved cond;
} where_node;

static void where_backward(ct_bw *c, const ct_tensor *g) {
  const ct_tensor *cond = bw_saved(c, &CT_BW_STATE(c, where_node)->cond);
  BW_GRAD(c, 1, bw_where(c, cond, g, bw_zero(c, g)));
  BW_GRAD(c, 2, bw_where(c, cond, bw_zero(c, g), g));
}

ct_tensor *ct__ag_where(ct_tensor *r, const ct_tensor *cond, const ct_tensor *a,
                        const ct_tensor *b) {
  const ct_tensor *ins[3] = {cond, a, b};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(where_node, "WhereBackward", where_backward, 3, ins);
  if (n) ct__save(n, &CT_NODE_STATE(n, where_node)->cond, cond);
  return ct__ag_record(r, n);
}

/* ---- Writes that replace values: fill_, zero_, random fills, copy_ ------------------- */

typedef struct overwrite_node {
  char unused; /* the gradient needs nothing */
} overwrite_node;

static void overwrite_backward(ct_bw *c, const ct_tensor *g) {
  const ct_input_meta *in = &c->node->in[0];
  BW_GRAD(c, 0, bw_zeros(c, in->shape, in->ndim, g->dtype, ct__device(g)));
}

ct_tensor *ct__ag_overwrite(ct_tensor *r, const ct_tensor *x, const char *name) {
  if (!r || !ct__ag_needed(&x, 1) || !ct_dtype_is_floating(r->dtype)) return r;
  return ct__ag_record(r, CT_NODE_NEW(overwrite_node, name, overwrite_backward, 1, &x));
}

/* dst's old value: 0; src: g moved back to src's device (cast by the engine). */
static void copy_backward(ct_bw *c, const ct_tensor *g) {
  overwrite_backward(c, g);
  if (!bw_needs(c, 1)) return;
  ct_device dev = c->node->in[1].device;
  if (ct_device_equal(dev, ct__device(g))) {
    bw_set(c, 1, g);
    return;
  }
  ct_tensor *moved = ct_to(g, dev, NULL); /* tracked only inside a scope: take our own reference */
  bw_set(c, 1, moved);
  ct_free(moved);
}

ct_tensor *ct__ag_copy(ct_tensor *r, const ct_tensor *dst, const ct_tensor *src) {
  const ct_tensor *ins[2] = {dst, src};
  if (!r || !ct__ag_needed(ins, 2) || !ct_dtype_is_floating(r->dtype)) return r;
  return ct__ag_record(r, CT_NODE_NEW(overwrite_node, "CopyBackwards", copy_backward, 2, ins));
}

ct_tensor *ct__zeros(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device) {
  ct_tensor *z = ct__empty(shape, ndim, dtype, device);
  if (z && ct__backend_of(z)->fill(z, 0.0) != CT_OK) {
    ct__release(z);
    return NULL;
  }
  return z;
}
