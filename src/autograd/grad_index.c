/* Backward of indexing, joining and masking ops.
 *   index_select, gather: scatter-add the gradient back into zeros
 *   scatter: g with the written positions zeroed; src gets gather(g)
 *   scatter_add: g; src gets gather(g)
 *   masked_select: scatter-add into the positions the mask selected
 *   masked_fill: g where the mask is false, 0 where true
 *   cat / stack: slices of g;  tril / triu: the same triangle of g */
#include <stdlib.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"
#include "ops/index.h"

static ct_tensor *as_i64(const ct_tensor *t) { return ct__cast(t, CT_I64); }

/* zeros of `shape`, then scatter_add(dim, index, src) into it. */
static ct_tensor *scatter_into_zeros(const int64_t *shape, int ndim, int dim, const ct_tensor *index,
                                     const ct_tensor *src) {
  ct_tensor *z = ct__zeros(shape, ndim, src->dtype, ct__device(src));
  ct_tensor *ic = z ? ct__contiguous(index) : NULL;
  ct_tensor *sc = ic ? ct__contiguous(src) : NULL;
  ct_tensor *r = sc ? ct__scatter(z, dim, ic, sc, true, true) : NULL;
  ct__release(ic), ct__release(sc);
  if (!r) {
    ct__release(z);
    return NULL;
  }
  return z;
}

/* ---- index_select ---- */
static ct_status index_select_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *idx = ct__node_saved(n, 0);
  if (!idx) return ct_last_error();
  int dim = (int)n->ip[0];
  /* the index broadcast over g's shape along dim */
  int64_t strides[CT_MAX_DIMS] = {0};
  if (g->ndim) strides[dim] = idx->ndim ? idx->strides[0] : 0;
  ct_tensor *ix = ct__view_of(idx, idx->dtype, g->shape, strides, g->ndim, idx->offset);
  gi[0] = ix ? scatter_into_zeros(n->in[0].shape, n->in[0].ndim, dim, ix, g) : NULL;
  ct__release(ix);
  return gi[0] ? CT_OK : ct_last_error();
}

/* Records r = op(x, dim, index) with inputs ins[0..n_ins) (x first): the
 * node saves the index as i64 (slot 0), the wrapped dim (ip[0]) and `flag`
 * (ip[1]). */
static ct_tensor *record_indexed(ct_tensor *r, const char *name, ct_backward_fn fn,
                                 const ct_tensor *const *ins, int n_ins, int dim,
                                 const ct_tensor *index, int64_t flag) {
  if (!r || !ct__ag_needed(ins, n_ins)) return r;
  ct_node *n = ct__node_new(name, fn, n_ins, ins);
  ct_tensor *i64 = n ? as_i64(index) : NULL;
  bool ok = i64 && ct__node_save(n, 0, i64);
  ct__release(i64);
  if (!ok) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  n->ip[0] = dim < 0 ? dim + ins[0]->ndim : dim;
  n->ip[1] = flag;
  return ct__ag_attach(r, n);
}

ct_tensor *ct__ag_index_select(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index) {
  const ct_tensor *ins[2] = {x, NULL};
  return record_indexed(r, "IndexSelectBackward", index_select_backward, ins, 2, dim, index, 0);
}

/* ---- gather / scatter / scatter_add ---- */
static ct_status gather_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *idx = ct__node_saved(n, 0);
  if (!idx) return ct_last_error();
  gi[0] = scatter_into_zeros(n->in[0].shape, n->in[0].ndim, (int)n->ip[0], idx, g);
  return gi[0] ? CT_OK : ct_last_error();
}

ct_tensor *ct__ag_gather(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index) {
  const ct_tensor *ins[2] = {x, NULL};
  return record_indexed(r, "GatherBackward", gather_backward, ins, 2, dim, index, 0);
}

/* inputs: x, index, src */
static ct_status scatter_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *idx = ct__node_saved(n, 0);
  if (!idx) return ct_last_error();
  int dim = (int)n->ip[0];
  bool add = n->ip[1] != 0;
  ct_status st = CT_OK;
  if (ct__node_needs(n, 0)) {
    if (add) {
      gi[0] = ct__retain(g);
    } else { /* positions overwritten by src get no gradient */
      ct_tensor *gc = ct__clone(g);
      ct_tensor *z = gc ? ct__zeros(idx->shape, idx->ndim, g->dtype, ct__device(g)) : NULL;
      ct_tensor *ic = z ? ct__contiguous(idx) : NULL;
      ct_tensor *r = ic ? ct__scatter(gc, dim, ic, z, false, true) : NULL;
      ct__release(z), ct__release(ic);
      if (r) gi[0] = gc;
      else ct__release(gc), st = ct_last_error();
    }
  }
  if (st == CT_OK && ct__node_needs(n, 2) && !(gi[2] = ct__gather(g, dim, idx))) st = ct_last_error();
  return st;
}

ct_tensor *ct__ag_scatter(ct_tensor *r, const ct_tensor *x, int dim, const ct_tensor *index,
                          const ct_tensor *src, bool add) {
  const ct_tensor *ins[3] = {x, index, src};
  return record_indexed(r, add ? "ScatterAddBackward" : "ScatterBackward", scatter_backward, ins, 3,
                        dim, index, add);
}

/* ---- masked_select / masked_fill ---- */
static ct_status masked_select_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *mask = ct__node_saved(n, 0);
  if (!mask) return ct_last_error();
  /* shape the selection was made in: broadcast of x and mask */
  int64_t shape[CT_MAX_DIMS];
  int nd;
  ct__broadcast_shapes(n->in[0].shape, n->in[0].ndim, mask->shape, mask->ndim, shape, &nd);
  int64_t numel = ct__shape_numel(shape, nd);
  /* flat positions of the selected elements, in selection order */
  ct_tensor *pos = ct__empty(shape, nd, CT_I64, ct__device(g));
  ct_status st = pos ? CT_OK : ct_last_error();
  if (st == CT_OK) { /* pos = 0, 1, 2, ... written through a host buffer */
    int64_t *h = malloc(sizeof(int64_t) * (size_t)(numel ? numel : 1));
    if (!h) st = ct__fail_status(CT_ERR_OOM, "masked_select backward: out of host memory");
    for (int64_t i = 0; h && i < numel; i++) h[i] = i;
    if (h && numel) st = ct__backend_of(pos)->copy_from_host(pos, h, sizeof(int64_t) * (size_t)numel, false);
    free(h);
  }
  ct_tensor *sel = st == CT_OK ? ct__masked_select(pos, mask) : NULL;
  if (st == CT_OK && sel) {
    ct_tensor *flat = scatter_into_zeros(&numel, 1, 0, sel, g);
    if (flat) {
      int64_t strides[CT_MAX_DIMS];
      ct__contiguous_strides(shape, nd, strides);
      gi[0] = ct__view_of(flat, flat->dtype, shape, strides, nd, 0);
      ct__release(flat);
    }
  }
  if (st == CT_OK && !gi[0]) st = ct_last_error();
  ct__release(pos), ct__release(sel);
  return st;
}

ct_tensor *ct__ag_masked_select(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  const ct_tensor *ins[2] = {x, NULL};
  ct_node *n = ct__node_new("MaskedSelectBackward", masked_select_backward, 2, ins);
  if (!n || !ct__node_save(n, 0, mask)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

static ct_status masked_fill_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_tensor *mask = ct__node_saved(n, 0);
  if (!mask) return ct_last_error();
  ct_tensor *z = ct__zeros(NULL, 0, g->dtype, ct__device(g));
  gi[0] = z ? ct__where(NULL, mask, z, g) : NULL;
  ct__release(z);
  return gi[0] ? CT_OK : ct_last_error();
}

ct_tensor *ct__ag_masked_fill(ct_tensor *r, const ct_tensor *x, const ct_tensor *mask) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  const ct_tensor *ins[2] = {x, NULL};
  ct_node *n = ct__node_new("MaskedFillBackward", masked_fill_backward, 2, ins);
  if (!n || !ct__node_save(n, 0, mask)) {
    ct__node_release(n);
    return ct__ag_attach(r, NULL);
  }
  return ct__ag_attach(r, n);
}

/* ---- cat / stack ---- */
static ct_status cat_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  int dim = (int)n->ip[0];
  bool stack = n->ip[1] != 0;
  int64_t offset = 0;
  for (int k = 0; k < n->n_inputs; k++) {
    const ct_input_meta *in = &n->in[k];
    int64_t len = stack ? 1 : in->shape[dim];
    if (ct__node_needs(n, k)) {
      int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
      int nd = 0;
      for (int d = 0; d < g->ndim; d++) {
        if (stack && d == dim) continue; /* select: drop the stacked dim */
        shape[nd] = d == dim ? len : g->shape[d];
        strides[nd++] = g->strides[d];
      }
      gi[k] = ct__view_of(g, g->dtype, shape, strides, nd, g->offset + offset * g->strides[dim]);
      if (!gi[k]) return ct_last_error();
    }
    offset += len;
  }
  return CT_OK;
}

ct_tensor *ct__ag_cat(ct_tensor *r, ct_tensor *const *tensors, int count, int dim, bool stack) {
  if (!r || !ct__ag_needed((const ct_tensor *const *)tensors, count)) return r;
  ct_node *n = ct__node_new(stack ? "StackBackward" : "CatBackward", cat_backward, count,
                            (const ct_tensor *const *)tensors);
  if (!n) return ct__ag_attach(r, NULL);
  int nd = stack ? r->ndim : tensors[0]->ndim;
  n->ip[0] = dim < 0 ? dim + nd : dim;
  n->ip[1] = stack;
  return ct__ag_attach(r, n);
}

/* ---- tril / triu ---- */
static ct_status triangle_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  ct_tensor *gc = ct__clone(g);
  ct_tensor *r = gc ? ct__triangle(gc, n->ip[0], n->ip[1] != 0, true) : NULL;
  if (!r) {
    ct__release(gc);
    return ct_last_error();
  }
  gi[0] = gc;
  return CT_OK;
}

ct_tensor *ct__ag_triangle(ct_tensor *r, const ct_tensor *x, int64_t k, bool upper) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = ct__node_new(upper ? "TriuBackward" : "TrilBackward", triangle_backward, 1, &x);
  if (!n) return ct__ag_attach(r, NULL);
  n->ip[0] = k;
  n->ip[1] = upper;
  return ct__ag_attach(r, n);
}
