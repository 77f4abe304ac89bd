/* The tools backward formulas are written with (node.h): the node-local
 * scope, saved-tensor access with the version check, and the internal ops
 * wrapped so that every result belongs to the scope and NULL passes
 * through. */
#include <stdio.h>
#include <stdlib.h>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/linalg.h"
#include "ops/reduce.h"

void bw_fail(ct_bw *b) {
  if (b->st != CT_OK) return;
  b->st = ct_last_error();
  if (b->st == CT_OK) b->st = ct__fail_status(CT_ERR_STATE, "backward: %s failed", b->node->name);
}

bool bw_ok(ct_bw *b, ct_status st) {
  if (st != CT_OK && b->st == CT_OK) b->st = st;
  return st == CT_OK;
}

ct_tensor *bw_keep(ct_bw *b, ct_tensor *t) {
  if (!t) {
    bw_fail(b);
    return NULL;
  }
  if (b->n_tmp == b->cap_tmp) {
    int cap = 2 * b->cap_tmp;
    ct_tensor **grown = ct__ag_malloc((size_t)cap * sizeof *grown);
    if (!grown) {
      ct__release(t);
      bw_ok(b, ct__fail_status(CT_ERR_OOM, "backward: out of host memory in %s", b->node->name));
      return NULL;
    }
    memcpy(grown, b->tmp, (size_t)b->n_tmp * sizeof *grown);
    if (b->tmp != b->tmp_small) free(b->tmp);
    b->tmp = grown;
    b->cap_tmp = cap;
  }
  b->tmp[b->n_tmp++] = t;
  return t;
}

void bw_set(ct_bw *b, int k, const ct_tensor *g) {
  if (!g) {
    bw_fail(b);
    return;
  }
  ct__release(b->grad_in[k]);
  b->grad_in[k] = ct__retain(g);
}

/* "[f32 (2, 3)], which is output 0 of MulBackward" (torch's wording; the
 * node that made it when it was saved). */
static void describe(const ct_saved *slot, char *buf, size_t size) {
  char shape[CT_SHAPE_STR_MAX];
  const char *of = slot->made_by;
  snprintf(buf, size, "[%s %s]%s%s%s", ct_dtype_name(slot->t->dtype),
           ct__shape_str(slot->t, shape, sizeof shape), of ? ", which is output 0 of " : "",
           of ? of : "", of ? "," : "");
}

const ct_tensor *bw_saved(ct_bw *b, const ct_saved *slot) {
  ct_node *n = b->node;
  if (b->st != CT_OK) return NULL;
  if (n->saved_freed) {
    bw_ok(b, ct__fail_status(CT_ERR_STATE,
                             "backward: trying to backward through %s a second time, but its saved "
                             "tensors were freed; pass retain_graph = true to the first backward",
                             n->name));
    return NULL;
  }
  if (!slot->t) {
    bw_ok(b, ct__fail_status(CT_ERR_STATE, "backward: %s reads a tensor it did not save", n->name));
    return NULL;
  }
  uint32_t v = atomic_load(&slot->t->storage->version);
  if (v != slot->version) {
    char what[CT_SHAPE_STR_MAX + 96];
    describe(slot, what, sizeof what);
    bw_ok(b, ct__fail_status(CT_ERR_STATE,
                             "backward: one of the variables needed for gradient computation has "
                             "been modified by an inplace operation: %s is at version %u; expected "
                             "version %u instead (%s saved it; clone it before modifying it, or "
                             "modify it after backward)",
                             what, v, slot->version, n->name));
    return NULL;
  }
  return slot->t;
}

/* ---- Ops ------------------------------------------------------------------------------ */

ct_tensor *bw_unary(ct_bw *b, ct_unary_op op, const ct_tensor *x) {
  return x ? bw_keep(b, ct__unary(op, NULL, x, 0, 0)) : NULL;
}
ct_tensor *bw_binary(ct_bw *b, ct_binary_op op, const ct_tensor *x, const ct_tensor *y) {
  return x && y ? bw_keep(b, ct__binary(op, NULL, x, y)) : NULL;
}
ct_tensor *bw_scalar(ct_bw *b, ct_binary_op op, const ct_tensor *x, double s) {
  return x ? bw_keep(b, ct__binary_scalar(op, NULL, x, s, false)) : NULL;
}
ct_tensor *bw_add(ct_bw *b, const ct_tensor *x, const ct_tensor *y) {
  return bw_binary(b, CT_BOP_ADD, x, y);
}
ct_tensor *bw_sub(ct_bw *b, const ct_tensor *x, const ct_tensor *y) {
  return bw_binary(b, CT_BOP_SUB, x, y);
}
ct_tensor *bw_mul(ct_bw *b, const ct_tensor *x, const ct_tensor *y) {
  return bw_binary(b, CT_BOP_MUL, x, y);
}
ct_tensor *bw_div(ct_bw *b, const ct_tensor *x, const ct_tensor *y) {
  return bw_binary(b, CT_BOP_DIV, x, y);
}
ct_tensor *bw_neg(ct_bw *b, const ct_tensor *x) { return bw_unary(b, CT_UOP_NEG, x); }
ct_tensor *bw_scale(ct_bw *b, const ct_tensor *x, double s) {
  return bw_scalar(b, CT_BOP_MUL, x, s);
}
ct_tensor *bw_is_zero(ct_bw *b, const ct_tensor *x) { return bw_scalar(b, CT_BOP_EQ, x, 0); }

ct_tensor *bw_where(ct_bw *b, const ct_tensor *c, const ct_tensor *x, const ct_tensor *y) {
  return c && x && y ? bw_keep(b, ct__where(NULL, c, x, y)) : NULL;
}

ct_tensor *bw_zeros(ct_bw *b, const int64_t *shape, int ndim, ct_dtype dtype, ct_device device) {
  return bw_keep(b, ct__zeros(shape, ndim, dtype, device));
}
ct_tensor *bw_zero(ct_bw *b, const ct_tensor *like) {
  return like ? bw_zeros(b, NULL, 0, like->dtype, ct__device(like)) : NULL;
}
ct_tensor *bw_const(ct_bw *b, const ct_tensor *like, double v) {
  ct_tensor *t = like ? bw_empty(b, NULL, 0, like->dtype, ct__device(like)) : NULL;
  return t && bw_ok(b, ct__backend_of(t)->fill(t, v)) ? t : NULL;
}
ct_tensor *bw_empty(ct_bw *b, const int64_t *shape, int ndim, ct_dtype dtype, ct_device device) {
  return bw_keep(b, ct__empty(shape, ndim, dtype, device));
}
ct_tensor *bw_cast(ct_bw *b, const ct_tensor *x, ct_dtype dtype) {
  return x ? bw_keep(b, ct__cast(x, dtype)) : NULL;
}
ct_tensor *bw_contiguous(ct_bw *b, const ct_tensor *x) {
  return x ? bw_keep(b, ct__contiguous(x)) : NULL;
}
ct_tensor *bw_clone(ct_bw *b, const ct_tensor *x) { return x ? bw_keep(b, ct__clone(x)) : NULL; }
ct_tensor *bw_reduce(ct_bw *b, ct_reduce_op op, const ct_tensor *x, const ct_reduce_opts *r) {
  return x ? bw_keep(b, ct__reduce(op, NULL, x, r, 0)) : NULL;
}
ct_tensor *bw_matmul(ct_bw *b, const ct_tensor *x, const ct_tensor *y) {
  return x && y ? bw_keep(b, ct__matmul(NULL, x, y)) : NULL;
}

/* ---- Views ------------------------------------------------------------------------------ */

ct_tensor *bw_view(ct_bw *b, const ct_tensor *x, const int64_t *shape, const int64_t *strides,
                   int ndim, int64_t offset) {
  return x ? bw_keep(b, ct__view_of(x, x->dtype, shape, strides, ndim, offset)) : NULL;
}

ct_tensor *bw_mT(ct_bw *b, const ct_tensor *x) {
  if (!x) return NULL;
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  int nd = x->ndim;
  memcpy(shape, x->shape, sizeof shape);
  memcpy(strides, x->strides, sizeof strides);
  shape[nd - 2] = x->shape[nd - 1], shape[nd - 1] = x->shape[nd - 2];
  strides[nd - 2] = x->strides[nd - 1], strides[nd - 1] = x->strides[nd - 2];
  return bw_view(b, x, shape, strides, nd, x->offset);
}

ct_tensor *bw_unsqueeze(ct_bw *b, const ct_tensor *x, int d) {
  if (!x) return NULL;
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int i = 0, k = 0; i <= x->ndim; i++) {
    if (i == d)
      shape[i] = 1, strides[i] = 0;
    else
      shape[i] = x->shape[k], strides[i] = x->strides[k], k++;
  }
  return bw_view(b, x, shape, strides, x->ndim + 1, x->offset);
}

ct_tensor *bw_squeeze(ct_bw *b, const ct_tensor *x, int d) {
  if (!x) return NULL;
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int i = 0, k = 0; i < x->ndim; i++)
    if (i != d) shape[k] = x->shape[i], strides[k++] = x->strides[i];
  return bw_view(b, x, shape, strides, x->ndim - 1, x->offset);
}

ct_tensor *bw_expand(ct_bw *b, const ct_tensor *x, const int64_t *shape, int ndim) {
  return x ? bw_keep(b, ct__broadcast_to(x, shape, ndim)) : NULL;
}

ct_tensor *bw_reshape(ct_bw *b, const ct_tensor *x, const int64_t *shape, int ndim) {
  ct_tensor *c = bw_contiguous(b, x);
  if (!c) return NULL;
  int64_t strides[CT_MAX_DIMS];
  ct__contiguous_strides(shape, ndim, strides);
  return bw_view(b, c, shape, strides, ndim, c->offset);
}

ct_tensor *bw_scatter_add_into_zeros(ct_bw *b, const int64_t *shape, int ndim, int dim,
                                     const ct_tensor *index, const ct_tensor *src) {
  if (!index || !src) return NULL;
  ct_tensor *z = bw_zeros(b, shape, ndim, src->dtype, ct__device(src));
  ct_tensor *ic = bw_contiguous(b, index), *sc = bw_contiguous(b, src);
  return z && ic && sc && ct__scatter(z, dim, ic, sc, true, true) ? z : (bw_fail(b), NULL);
}

void ct__view_geometry_of(ct_view_geometry *geo, const ct_tensor *view, const ct_tensor *base) {
  memcpy(geo->view_shape, view->shape, sizeof geo->view_shape);
  memcpy(geo->view_strides, view->strides, sizeof geo->view_strides);
  memcpy(geo->base_strides, base->strides, sizeof geo->base_strides);
  geo->view_offset = view->offset;
  geo->base_offset = base->offset;
  geo->view_ndim = view->ndim;
}

bool bw_base_layout(ct_bw *b, const ct_view_geometry *geo, const ct_input_meta *base,
                    const ct_tensor *like, ct_tensor **whole, ct_tensor **part) {
  int64_t span = ct__shape_numel(base->shape, base->ndim) ? 1 : 0;
  for (int d = 0; d < base->ndim && span; d++) span += (base->shape[d] - 1) * geo->base_strides[d];
  ct_tensor *buf = bw_zeros(b, &span, 1, like->dtype, ct__device(like));
  *whole = bw_view(b, buf, base->shape, geo->base_strides, base->ndim, 0);
  *part = bw_view(b, buf, geo->view_shape, geo->view_strides, geo->view_ndim,
                  geo->view_offset - geo->base_offset);
  return *whole && *part;
}
