/* Backward of the sort-scan family.
 *   cumsum: the reversed cumsum of g (sum over j >= k of g[j])
 *   cumprod: torch's formula, exact with zeros: before a slice's first zero,
 *     revcumsum(g * out) / x; at the first zero, revcumsum of g times the
 *     product of the others (the cumprod with that zero replaced by 1);
 *     after it, 0
 *   flip, roll: the inverse remap of g (the same flip; the opposite roll)
 *   repeat, repeat_interleave, reflect/replicate padding: g scatter-added
 *     back along each remapped dim (an element read k times gets k terms)
 *   constant padding: g's window over x */
#include <string.h>

#include "autograd/node.h"
#include "core/alloc.h"
#include "ops/sort_scan.h"

/* ---- cumsum / cumprod ---- */

typedef struct cumulative_node {
  int dim;
  ct_saved x, out; /* cumprod */
} cumulative_node;

static ct_tensor *bw_cumulative(ct_bw *c, const ct_tensor *x, int dim, bool prod, bool reverse) {
  return x ? bw_keep(c, ct__cumulative(x, dim, prod, reverse)) : NULL;
}

static void cumsum_backward(ct_bw *c, const ct_tensor *g) {
  const cumulative_node *s = CT_BW_STATE(c, cumulative_node);
  BW_GRAD(c, 0, bw_cumulative(c, g, s->dim, false, true));
}

static void cumprod_backward(ct_bw *c, const ct_tensor *g) {
  const cumulative_node *s = CT_BW_STATE(c, cumulative_node);
  if (!bw_needs(c, 0)) return;
  const ct_tensor *x = bw_saved(c, &s->x), *out = bw_saved(c, &s->out);
  int d = s->dim;
  ct_tensor *zero = bw_is_zero(c, x);
  ct_tensor *zeros_so_far = bw_cumulative(c, zero, d, false, false); /* i64 */
  ct_tensor *before = bw_is_zero(c, zeros_so_far);                   /* k < first zero */
  ct_tensor *first =
      bw_where(c, zero, bw_is_zero(c, bw_scalar(c, CT_BOP_SUB, zeros_so_far, 1)), zero);
  ct_tensor *g0 = bw_zero(c, g);
  /* k before the first zero: x[k] != 0 there */
  ct_tensor *x_safe = bw_where(c, before, x, bw_const(c, x, 1));
  ct_tensor *ga = bw_where(
      c, before, bw_div(c, bw_cumulative(c, bw_mul(c, g, out), d, false, true), x_safe), g0);
  /* the first zero: the products with that zero taken as 1, from it on */
  ct_tensor *p = bw_cumulative(c, bw_where(c, first, bw_const(c, x, 1), x), d, true, false);
  ct_tensor *gb = bw_where(
      c, first, bw_cumulative(c, bw_where(c, before, g0, bw_mul(c, g, p)), d, false, true), g0);
  bw_set(c, 0, bw_add(c, ga, gb));
}

ct_tensor *ct__ag_cumulative(ct_tensor *r, const ct_tensor *x, int dim, bool prod) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = prod ? CT_NODE_NEW(cumulative_node, "CumprodBackward", cumprod_backward, 1, &x)
                    : CT_NODE_NEW(cumulative_node, "CumsumBackward", cumsum_backward, 1, &x);
  if (!n) return ct__ag_record(r, n);
  cumulative_node *s = CT_NODE_STATE(n, cumulative_node);
  s->dim = dim;
  if (prod) {
    ct__save(n, &s->x, x);
    ct__save_output(n, &s->out, r);
  }
  return ct__ag_record(r, n);
}

/* ---- flip / roll ---- */

typedef struct remap_node {
  ct_remap_params inverse;
  bool flat;
} remap_node;

static void remap_backward(ct_bw *c, const ct_tensor *g) {
  const remap_node *s = CT_BW_STATE(c, remap_node);
  BW_GRAD(c, 0,
          bw_keep(c, s->flat ? ct__roll_flat(g, s->inverse.shift[0])
                             : ct__remap(c->node->name, g, &s->inverse)));
}

ct_tensor *ct__ag_remap(ct_tensor *r, const ct_tensor *x, const ct_remap_params *p, bool flat,
                        const char *name) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = CT_NODE_NEW(remap_node, name, remap_backward, 1, &x);
  if (n) {
    remap_node *s = CT_NODE_STATE(n, remap_node);
    s->flat = flat;
    s->inverse = *p;
    /* a flip is its own inverse; a roll by s is undone by a roll by size - s */
    int nd = flat ? 1 : x->ndim;
    for (int d = 0; d < nd; d++) {
      int64_t size = flat ? x->numel : x->shape[d];
      if (p->kind[d] == CT_REMAP_ROLL) s->inverse.shift[d] = p->shift[d] ? size - p->shift[d] : 0;
    }
  }
  return ct__ag_record(r, n);
}

/* ---- repeat, repeat_interleave, reflect/replicate padding ---- */

typedef struct gather_remap_node {
  ct_remap_params p;
  int ndim;                      /* of the remapped view of x */
  int64_t in_shape[CT_MAX_DIMS]; /* the view's shape */
} gather_remap_node;

/* A 1-d i64 tensor of n host values on device. */
static ct_tensor *bw_index_from_host(ct_bw *c, const int64_t *v, int64_t n, ct_device device) {
  ct_tensor *t = bw_empty(c, &n, 1, CT_I64, device);
  if (t && n && !bw_ok(c, ct__backend_of(t)->copy_from_host(t, v, (size_t)n * sizeof *v, false)))
    return NULL;
  return t;
}

static void gather_remap_backward(ct_bw *c, const ct_tensor *g) {
  const gather_remap_node *s = CT_BW_STATE(c, gather_remap_node);
  if (!bw_needs(c, 0)) return;
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, g->shape, sizeof shape);
  const ct_tensor *cur = g;
  for (int d = 0; d < s->ndim && cur; d++) {
    if (s->p.kind[d] == CT_REMAP_SAME) continue;
    int64_t n_out = shape[d], n_in = s->in_shape[d];
    int64_t *src = ct__malloc_array((size_t)(n_out ? n_out : 1), sizeof *src);
    if (!src) {
      ct__fail(CT_ERR_OOM, "%s: out of memory for a gradient index", c->node->name);
      bw_fail(c);
      return;
    }
    for (int64_t i = 0; i < n_out; i++) src[i] = ct_remap_source(&s->p, d, i, n_in);
    ct_tensor *idx = bw_index_from_host(c, src, n_out, ct__device(g));
    ct__free(src);
    /* the index along d, broadcast over the other dims */
    int64_t st[CT_MAX_DIMS] = {0};
    st[d] = 1;
    ct_tensor *ix = idx ? bw_view(c, idx, shape, st, s->ndim, idx->offset) : NULL;
    shape[d] = n_in;
    cur = ix ? bw_scatter_add_into_zeros(c, shape, s->ndim, d, ix, bw_contiguous(c, cur)) : NULL;
  }
  const ct_input_meta *in = &c->node->in[0];
  bw_set(c, 0, cur ? bw_reshape(c, bw_contiguous(c, cur), in->shape, in->ndim) : NULL);
}

ct_tensor *ct__ag_gather_remap(ct_tensor *r, const ct_tensor *x, const ct_tensor *xv,
                               const ct_remap_params *p, const char *name) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = CT_NODE_NEW(gather_remap_node, name, gather_remap_backward, 1, &x);
  if (n) {
    gather_remap_node *s = CT_NODE_STATE(n, gather_remap_node);
    s->p = *p;
    s->ndim = xv->ndim;
    memcpy(s->in_shape, xv->shape, sizeof s->in_shape);
  }
  return ct__ag_record(r, n);
}

/* ---- constant padding ---- */

typedef struct pad_node {
  int64_t before[CT_MAX_DIMS];
} pad_node;

static void pad_backward(ct_bw *c, const ct_tensor *g) {
  const pad_node *s = CT_BW_STATE(c, pad_node);
  const ct_input_meta *in = &c->node->in[0];
  int64_t off = g->offset;
  for (int d = 0; d < g->ndim; d++) off += s->before[d] * g->strides[d];
  BW_GRAD(c, 0, bw_view(c, g, in->shape, g->strides, in->ndim, off));
}

ct_tensor *ct__ag_pad_constant(ct_tensor *r, const ct_tensor *x, const int64_t *before) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = CT_NODE_NEW(pad_node, "ConstantPadNdBackward", pad_backward, 1, &x);
  if (n) memcpy(CT_NODE_STATE(n, pad_node)->before, before, sizeof(int64_t) * CT_MAX_DIMS);
  return ct__ag_record(r, n);
}
