/* Backward of indexing, joining and masking ops.
 *   index_select, gather: scatter-add the gradient back into zeros
 *   scatter: g with the written positions zeroed; src gets gather(g)
 *   scatter_add: g; src gets gather(g)
 *   masked_select: scatter-add into the positions the mask selected
 *   masked_fill: g where the mask is false, 0 where true
 *   cat / stack: slices of g;  tril / triu: the same triangle of g */
#include <stdlib.h>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/index.h"

/* index_select, gather, scatter, scatter_add: the index (as i64) and the dim. */
typedef struct indexed_node {
  int dim;
  bool add; /* scatter_add (else scatter) */
  ct_saved index;
} indexed_node;

static void index_select_backward(ct_bw *c, const ct_tensor *g) {
  const indexed_node *s = CT_BW_STATE(c, indexed_node);
  const ct_tensor *idx = bw_saved(c, &s->index);
  if (!idx) return;
  /* the index broadcast over g's shape along dim */
  int64_t strides[CT_MAX_DIMS] = {0};
  if (g->ndim) strides[s->dim] = idx->ndim ? idx->strides[0] : 0;
  ct_tensor *ix = bw_view(c, idx, g->shape, strides, g->ndim, idx->offset);
  const ct_input_meta *in = &c->node->in[0];
  BW_GRAD(c, 0, bw_scatter_add_into_zeros(c, in->shape, in->ndim, s->dim, ix, g));
}

static void gather_backward(ct_bw *c, const ct_tensor *g) {
  const indexed_node *s = CT_BW_STATE(c, indexed_node);
  const ct_input_meta *in = &c->node->in[0];
  BW_GRAD(c, 0,
          bw_scatter_add_into_zeros(c, in->shape, in->ndim, s->dim, bw_saved(c, &s->index), g));
}

/* inputs: x, index, src */
static void scatter_backward(ct_bw *c, const ct_tensor *g) {
  const indexed_node *s = CT_BW_STATE(c, indexed_node);
  const ct_tensor *idx = bw_saved(c, &s->index);
  if (!idx) return;
  if (bw_needs(c, 0) && s->add) {
    bw_set(c, 0, g);
  } else if (bw_needs(c, 0)) { /* positions overwritten by src get no gradient */
    ct_tensor *gx = bw_clone(c, g),
              *z = bw_zeros(c, idx->shape, idx->ndim, g->dtype, ct__device(g));
    ct_tensor *ic = bw_contiguous(c, idx);
    bw_set(c, 0, gx && z && ic && ct__scatter(gx, s->dim, ic, z, false, true) ? gx : NULL);
  }
  BW_GRAD(c, 2, bw_keep(c, ct__gather(g, s->dim, idx)));
}

/* Records r = op(x, dim, index) with inputs ins[0..n_ins) (x first). */
static ct_tensor *record_indexed(ct_tensor *r, const char *name, ct_backward_fn fn,
                                 const ct_tensor *const *ins, int n_ins, int dim,
                                 const ct_tensor *index, bool add) {
  if (!r || !ct__ag_needed(ins, n_ins)) return r;
  ct_node *n = CT_NODE_NEW(indexed_node, name, fn, n_ins, ins);
  if (n) {
    indexed_node *s = CT_NODE_STATE(n, indexed_node);
    s->dim = dim < 0 ? dim + ins[0]->ndim : dim;
    s->add = add;
    ct_tensor *i64 = ct__cast(index, CT_I64);
    if (!i64) n->broken = true;
    ct__save(n, &s->index, i64);
    ct__release(i64);
  }
  return ct__ag_record(r, n);
}

ct_tensor *ct__ag_index_select(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index) {
  const ct_tensor *ins[2] = {x, NULL};
  return record_indexed(r, "IndexSelectBackward", index_select_backward, ins, 2, dim, index, false);
}

ct_tensor *ct__ag_gather(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index) {
  const ct_tensor *ins[2] = {x, NULL};
  return record_indexed(r, "GatherBackward", gather_backward, ins, 2, dim, index, false);
}

ct_tensor *ct__ag_scatter(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index,
                          const ct_tensor *src, bool add) {
  const ct_tensor *ins[3] = {x, index, src};
  return record_indexed(r, add ? "ScatterAddBackward" : "ScatterBackward", scatter_backward, ins, 3,
                        dim, index, add);
}

/* ---- masked_select / masked_fill ---- */

typedef struct masked_node {
  ct_saved mask;
} masked_node;

static void masked_select_backward(ct_bw *c, const ct_tensor *g) {
  const ct_tensor *mask = bw_saved(c, &CT_BW_STATE(c, masked_node)->mask);
  if (!mask || !bw_needs(c, 0)) return;
  /* the selection was made in the broadcast shape of x and the mask */
  int64_t shape[CT_MAX_DIMS];
  int nd;
  ct__broadcast_shapes(c->node->in[0].shape, c->node->in[0].ndim, mask->shape, mask->ndim, shape,
                       &nd);
  int64_t numel = ct__shape_numel(shape, nd);
  /* flat positions of the selected elements, in selection order */
  ct_tensor *pos = bw_empty(c, shape, nd, CT_I64, ct__device(g));
  if (!pos) return;
  int64_t *h = ct__ag_malloc(sizeof(int64_t) * (size_t)(numel ? numel : 1));
  if (!h) {
    bw_ok(c, ct__fail_status(CT_ERR_OOM, "masked_select backward: out of host memory"));
    return;
  }
  for (int64_t i = 0; i < numel; i++) h[i] = i;
  ct_status st =
      numel ? ct__backend_of(pos)->copy_from_host(pos, h, sizeof(int64_t) * (size_t)numel, false)
            : CT_OK;
  free(h);
  if (!bw_ok(c, st)) return;
  ct_tensor *flat =
      bw_scatter_add_into_zeros(c, &numel, 1, 0, bw_keep(c, ct__masked_select(pos, mask)), g);
  bw_set(c, 0, bw_reshape(c, flat, shape, nd));
}

ct_tensor *ct__ag_masked_select(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  const ct_tensor *ins[2] = {x, NULL};
  ct_node *n = CT_NODE_NEW(masked_node, "MaskedSelectBackward", masked_select_backward, 2, ins);
  if (n) ct__save(n, &CT_NODE_STATE(n, masked_node)->mask, mask);
  return ct__ag_record(r, n);
}

static void masked_fill_backward(ct_bw *c, const ct_tensor *g) {
  const ct_tensor *mask = bw_saved(c, &CT_BW_STATE(c, masked_node)->mask);
  BW_GRAD(c, 0, bw_where(c, mask, bw_zero(c, g), g));
}

ct_tensor *ct__ag_masked_fill(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  const ct_tensor *ins[2] = {x, NULL};
  ct_node *n = CT_NODE_NEW(masked_node, "MaskedFillBackward", masked_fill_backward, 2, ins);
  if (n) ct__save(n, &CT_NODE_STATE(n, masked_node)->mask, mask);
  return ct__ag_record(r, n);
}

/* ---- cat / stack: each input gets its slice of g ---- */

typedef struct cat_node {
  int dim;
  bool stack;
} cat_node;

static void cat_backward(ct_bw *c, const ct_tensor *g) {
  const cat_node *s = CT_BW_STATE(c, cat_node);
  int64_t offset = 0;
  for (int k = 0; k < c->node->n_inputs; k++) {
    int64_t len = s->stack ? 1 : c->node->in[k].shape[s->dim];
    if (bw_needs(c, k)) {
      int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
      int nd = 0;
      for (int d = 0; d < g->ndim; d++) {
        if (s->stack && d == s->dim) continue; /* select: drop the stacked dim */
        shape[nd] = d == s->dim ? len : g->shape[d];
        strides[nd++] = g->strides[d];
      }
      bw_set(c, k, bw_view(c, g, shape, strides, nd, g->offset + offset * g->strides[s->dim]));
    }
    offset += len;
  }
}

ct_tensor *ct__ag_cat(ct_tensor *r, ct_tensor *const *tensors, int count, int dim, bool stack) {
  if (!r || !ct__ag_needed((const ct_tensor *const *)tensors, count)) return r;
  ct_node *n = CT_NODE_NEW(cat_node, stack ? "StackBackward" : "CatBackward", cat_backward, count,
                           (const ct_tensor *const *)tensors);
  if (n) {
    int nd = stack ? r->ndim : tensors[0]->ndim;
    *CT_NODE_STATE(n, cat_node) = (cat_node){.dim = dim < 0 ? dim + nd : dim, .stack = stack};
  }
  return ct__ag_record(r, n);
}

/* ---- tril / triu ---- */

typedef struct triangle_node {
  int64_t k;
  bool upper;
} triangle_node;

static void triangle_backward(ct_bw *c, const ct_tensor *g) {
  const triangle_node *s = CT_BW_STATE(c, triangle_node);
  ct_tensor *gx = bw_clone(c, g);
  BW_GRAD(c, 0, gx && ct__triangle(gx, s->k, s->upper, true) ? gx : NULL);
}

ct_tensor *ct__ag_triangle(ct_tensor *r, const ct_tensor *x, int64_t k, bool upper) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n =
      CT_NODE_NEW(triangle_node, upper ? "TriuBackward" : "TrilBackward", triangle_backward, 1, &x);
  if (n) *CT_NODE_STATE(n, triangle_node) = (triangle_node){.k = k, .upper = upper};
  return ct__ag_record(r, n);
}
