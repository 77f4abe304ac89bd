/* Backward of reductions, max/min along a dim, and softmax. The output
 * gradient g first gets back the reduced dims (size 1: gk, and yk for the
 * output), then broadcasts over them. Formulas as PyTorch's, including its
 * values where the plain derivative is undefined:
 *   sum: g        mean: g / N        logsumexp: g exp(x - y)
 *   prod: g y / x without zeros in the slice; with one zero, the product of
 *         the others at the zero and 0 elsewhere; with more, 0
 *   max/min (no dim): g split evenly among the elements equal to y
 *   var: g 2 (x - mean) / (N - c)    std: g (x - mean) / ((N - c) y), 0 where y
 * == 0 norm: p = 2: g x / y; 1: g sign x; inf: max of |x|; else g sign(x)
 * |x|^(p-1) / y^(p-1); all 0 where y == 0 or x == 0 */
#include <math.h>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/reduce.h"

/* t (same numel) as a contiguous tensor of `shape`: a view when t is
 * contiguous, else a copy viewed. */
static ct_tensor *contiguous_as(const ct_tensor *t, const int64_t *shape, int ndim) {
  ct_tensor *c = ct__contiguous(t);
  if (!c) return NULL;
  int64_t st[CT_MAX_DIMS];
  ct__contiguous_strides(shape, ndim, st);
  ct_tensor *r = ct__view_of(c, c->dtype, shape, st, ndim, c->offset);
  ct__release(c);
  return r;
}

ct_tensor *ct__sum_to_shape(const ct_tensor *g, const int64_t *shape, int ndim) {
  int lead = g->ndim - ndim;
  if (lead < 0) return contiguous_as(g, shape, ndim); /* same numel, fewer dims */
  ct_reduce_opts r = {.keepdim = true};
  for (int d = 0; d < g->ndim; d++)
    if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) r.dims[r.ndims++] = d;
  ct_tensor *s = r.ndims == 0 ? ct__retain(g) : ct__reduce(CT_ROP_SUM, NULL, g, &r, 0);
  if (!s) return NULL;
  ct_tensor *out = contiguous_as(s, shape, ndim); /* drops the size-1 leading dims */
  ct__release(s);
  return out;
}

typedef struct reduce_node {
  ct_reduce_op op;
  bool reduced[CT_MAX_DIMS]; /* which dims of x were reduced */
  bool keepdim;
  double p;      /* var/std: the correction; norm: the order */
  double count;  /* N, the number of elements reduced into each output */
  ct_saved x, y; /* input, output: what the formula reads */
} reduce_node;

/* t with size-1 dims put back where reduced (a view), for keepdim == false. */
static ct_tensor *unsqueeze_reduced(ct_bw *c, const ct_tensor *t, const bool *reduced,
                                    bool keepdim) {
  const ct_input_meta *in = &c->node->in[0];
  if (!t || keepdim || t->ndim == in->ndim) return (ct_tensor *)t;
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int d = 0, k = 0; d < in->ndim; d++) {
    if (reduced[d])
      shape[d] = 1, strides[d] = 0;
    else
      shape[d] = t->shape[k], strides[d] = t->strides[k], k++;
  }
  return bw_view(c, t, shape, strides, in->ndim, t->offset);
}

/* The reduced dims, kept (sums over the same elements as the forward). */
static ct_reduce_opts same_dims(const ct_bw *c, const reduce_node *s) {
  ct_reduce_opts r = {.keepdim = true};
  for (int d = 0; d < c->node->in[0].ndim; d++)
    if (s->reduced[d]) r.dims[r.ndims++] = d;
  return r;
}

/* d loss / dx of each reduction, from gk and yk (reduced dims restored). */
typedef ct_tensor *(*reduce_formula)(ct_bw *c, const reduce_node *s, const ct_tensor *gk,
                                     const ct_tensor *x, const ct_tensor *yk);

static ct_tensor *sum_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                           const ct_tensor *yk) {
  return bw_expand(c, gk, c->node->in[0].shape, c->node->in[0].ndim);
}
static ct_tensor *mean_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                            const ct_tensor *yk) {
  return bw_expand(c, bw_scale(c, gk, 1.0 / s->count), c->node->in[0].shape, c->node->in[0].ndim);
}
static ct_tensor *prod_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                            const ct_tensor *yk) {
  ct_reduce_opts r = same_dims(c, s);
  ct_tensor *zero = bw_is_zero(c, x);
  ct_tensor *zeros_in_slice = bw_reduce(c, CT_ROP_SUM, bw_cast(c, zero, x->dtype), &r);
  ct_tensor *others = bw_reduce(c, CT_ROP_PROD, bw_where(c, zero, bw_const(c, x, 1), x), &r);
  ct_tensor *at_lone_zero =
      bw_binary(c, CT_BOP_LOGICAL_AND, zero, bw_scalar(c, CT_BOP_EQ, zeros_in_slice, 1));
  ct_tensor *with_zeros = bw_where(c, at_lone_zero, others, bw_zero(c, x));
  ct_tensor *d = bw_where(c, bw_is_zero(c, zeros_in_slice), bw_div(c, yk, x), with_zeros);
  return bw_mul(c, gk, d);
}
/* An even split of g among the elements of x equal to yk (m: |x| for norm inf).
 */
static ct_tensor *even_split(ct_bw *c, const reduce_node *s, const ct_tensor *gk,
                             const ct_tensor *m, const ct_tensor *yk) {
  ct_reduce_opts r = same_dims(c, s);
  ct_tensor *mask = bw_cast(c, bw_binary(c, CT_BOP_EQ, m, yk), gk->dtype);
  return bw_mul(c, gk, bw_div(c, mask, bw_reduce(c, CT_ROP_SUM, mask, &r)));
}
static ct_tensor *max_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                           const ct_tensor *yk) {
  return even_split(c, s, gk, x, yk);
}
static ct_tensor *logsumexp_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk,
                                 const ct_tensor *x, const ct_tensor *yk) {
  return bw_mul(c, gk, bw_unary(c, CT_UOP_EXP, bw_sub(c, x, yk)));
}
static ct_tensor *centered(ct_bw *c, const reduce_node *s, const ct_tensor *x) {
  ct_reduce_opts r = same_dims(c, s);
  return bw_sub(c, x, bw_reduce(c, CT_ROP_MEAN, x, &r));
}
static ct_tensor *var_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                           const ct_tensor *yk) {
  return bw_mul(c, gk, bw_scale(c, centered(c, s, x), 2.0 / (s->count - s->p)));
}
static ct_tensor *std_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                           const ct_tensor *yk) {
  ct_tensor *g_y = bw_where(c, bw_is_zero(c, yk), bw_zero(c, gk), bw_div(c, gk, yk));
  return bw_mul(c, g_y, bw_scale(c, centered(c, s, x), 1.0 / (s->count - s->p)));
}
static ct_tensor *norm_grad(ct_bw *c, const reduce_node *s, const ct_tensor *gk, const ct_tensor *x,
                            const ct_tensor *yk) {
  double p = s->p;
  ct_tensor *sign = bw_unary(c, CT_UOP_SIGN, x);
  if (p == 0) return bw_zeros(c, x->shape, x->ndim, gk->dtype, ct__device(gk));
  if (p == 1) return bw_mul(c, gk, sign);
  if (isinf(p)) return bw_mul(c, sign, even_split(c, s, gk, bw_unary(c, CT_UOP_ABS, x), yk));
  ct_tensor *d;
  if (p == 2) {
    d = bw_div(c, x, yk);
  } else { /* sign(x) |x|^(p-1) / y^(p-1) */
    ct_tensor *num = bw_scalar(c, CT_BOP_POW, bw_unary(c, CT_UOP_ABS, x), p - 1);
    d = bw_mul(c, sign, bw_div(c, num, bw_scalar(c, CT_BOP_POW, yk, p - 1)));
  }
  ct_tensor *undefined = bw_binary(c, CT_BOP_LOGICAL_OR, bw_is_zero(c, x), bw_is_zero(c, yk));
  return bw_mul(c, gk, bw_where(c, undefined, bw_zero(c, gk), d));
}

enum { READS_X = 1, READS_Y = 2 };
typedef struct reduce_rule {
  const char *name;
  reduce_formula grad; /* NULL: bool results (all, any) */
  unsigned char reads;
} reduce_rule;

static const reduce_rule REDUCE[] = {
    [CT_ROP_SUM] = {"SumBackward", sum_grad, 0},
    [CT_ROP_MEAN] = {"MeanBackward", mean_grad, 0},
    [CT_ROP_PROD] = {"ProdBackward", prod_grad, READS_X | READS_Y},
    [CT_ROP_MAX] = {"MaxBackward", max_grad, READS_X | READS_Y},
    [CT_ROP_MIN] = {"MinBackward", max_grad, READS_X | READS_Y},
    [CT_ROP_LOGSUMEXP] = {"LogsumexpBackward", logsumexp_grad, READS_X | READS_Y},
    [CT_ROP_ALL] = {NULL, NULL, 0},
    [CT_ROP_ANY] = {NULL, NULL, 0},
    [CT_ROP_VAR] = {"VarBackward", var_grad, READS_X},
    [CT_ROP_STD] = {"StdBackward", std_grad, READS_X | READS_Y},
    [CT_ROP_NORM] = {"NormBackward", norm_grad, READS_X | READS_Y},
};
_Static_assert(sizeof REDUCE / sizeof REDUCE[0] == CT_ROP_COUNT,
               "REDUCE needs one entry per reduction");

static void reduce_backward(ct_bw *c, const ct_tensor *g) {
  const reduce_node *s = CT_BW_STATE(c, reduce_node);
  const ct_tensor *x = s->x.t ? bw_saved(c, &s->x) : NULL, *y = s->y.t ? bw_saved(c, &s->y) : NULL;
  if (c->st != CT_OK) return;
  ct_tensor *gk = unsqueeze_reduced(c, g, s->reduced, s->keepdim);
  ct_tensor *yk = unsqueeze_reduced(c, y, s->reduced, s->keepdim);
  BW_GRAD(c, 0, REDUCE[s->op].grad(c, s, gk, x, yk));
}

ct_tensor *ct__ag_reduce(ct_tensor *r, int op, const ct_tensor *x, const ct_reduce_opts *opts,
                         double p) {
  const reduce_rule *rule = &REDUCE[op];
  if (!r || !ct__ag_needed(&x, 1) || !ct_dtype_is_floating(r->dtype)) return r; /* all, any */
  CT_ASSERT(rule->grad != NULL); /* a floating result needs a row in REDUCE */
  bool mask[CT_MAX_DIMS];
  int64_t shape[CT_MAX_DIMS];
  int nd;
  if (!ct__reduce_dims(ct__reduce_names[op], x, opts, mask, shape, &nd))
    return ct__ag_record(r, NULL);
  ct_node *n = CT_NODE_NEW(reduce_node, rule->name, reduce_backward, 1, &x);
  if (n) {
    reduce_node *s = CT_NODE_STATE(n, reduce_node);
    *s =
        (reduce_node){.op = (ct_reduce_op)op, .keepdim = opts && opts->keepdim, .p = p, .count = 1};
    for (int d = 0; d < x->ndim; d++)
      if ((s->reduced[d] = mask[d])) s->count *= (double)x->shape[d];
    if (rule->reads & READS_X) ct__save(n, &s->x, x);
    if (rule->reads & READS_Y) ct__save_output(n, &s->y, r);
  }
  return ct__ag_record(r, n);
}

/* ---- max/min along a dim (values): g scattered to the saved indices
 * ------------ */

typedef struct max_dim_node {
  int dim;
  bool keepdim;
  bool reduced[CT_MAX_DIMS];
  ct_saved indices;
} max_dim_node;

static void max_dim_backward(ct_bw *c, const ct_tensor *g) {
  const max_dim_node *s = CT_BW_STATE(c, max_dim_node);
  const ct_input_meta *in = &c->node->in[0];
  ct_tensor *gk = unsqueeze_reduced(c, g, s->reduced, s->keepdim);
  ct_tensor *ik = unsqueeze_reduced(c, bw_saved(c, &s->indices), s->reduced, s->keepdim);
  ct_tensor *z = bw_zeros(c, in->shape, in->ndim, g->dtype, ct__device(g));
  ct_tensor *gc = bw_contiguous(c, gk), *ic = bw_contiguous(c, ik);
  if (z && gc && ic && !ct__scatter(z, s->dim, ic, gc, false, true)) bw_fail(c);
  BW_GRAD(c, 0, z);
}

ct_tensor *ct__ag_max_dim(ct_tensor *values, const ct_tensor *indices, const ct_tensor *x, int dim,
                          bool keepdim) {
  if (!values || !ct__ag_needed(&x, 1)) return values;
  ct_node *n = CT_NODE_NEW(max_dim_node, "MaxBackward", max_dim_backward, 1, &x);
  if (n) {
    max_dim_node *s = CT_NODE_STATE(n, max_dim_node);
    s->dim = dim;
    s->keepdim = keepdim;
    for (int d = 0; d < x->ndim; d++) s->reduced[d] = d == dim;
    ct__save(n, &s->indices, indices);
  }
  return ct__ag_record(values, n);
}

/* ---- softmax / log_softmax: from the output, by the backend's kernel
 * ----------- */

typedef struct softmax_node {
  int dim;
  bool log;
  ct_saved y;
} softmax_node;

static void softmax_backward(ct_bw *c, const ct_tensor *g) {
  const softmax_node *s = CT_BW_STATE(c, softmax_node);
  const ct_tensor *y = bw_saved(c, &s->y);
  if (!y) return;
  ct_tensor *gc = bw_contiguous(c, bw_cast(c, g, y->dtype)), *yc = bw_contiguous(c, y);
  ct_tensor *gx = bw_empty(c, y->shape, y->ndim, y->dtype, ct__device(y));
  if (gc && yc && gx && bw_ok(c, ct__backend_of(gx)->softmax_backward(gx, gc, yc, s->dim, s->log)))
    bw_set(c, 0, gx);
}

ct_tensor *ct__ag_softmax(ct_tensor *r, const ct_tensor *x, int dim, bool log) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = CT_NODE_NEW(softmax_node, log ? "LogSoftmaxBackward" : "SoftmaxBackward",
                           softmax_backward, 1, &x);
  if (n) {
    softmax_node *s = CT_NODE_STATE(n, softmax_node);
    s->dim = dim < 0 ? dim + (x->ndim > 0 ? x->ndim : 1) : dim;
    s->log = log;
    ct__save_output(n, &s->y, r);
  }
  return ct__ag_record(r, n);
}
