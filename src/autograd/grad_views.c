/* Backward of views and of the ops whose gradient is the identity up to a
 * cast or a device move: reshape-like views reshape the gradient back,
 * permutations permute it back, expands are summed by the engine, and
 * strided views (slice, select, narrow, diagonal, and a view's history
 * regenerated from its base) scatter it into zeros through the same
 * geometry (for an expanded input, the view's geometry over a contiguous
 * input of its shape: the logical one); contiguous/clone/cast pass it through, and ct_to moves it
 * back to the input's device. A recorded view remembers its base, so that an in-place write through
 * it can rewrite the base's history (inplace.c). */
#include "autograd/node.h"
#include "ops/ops_internal.h"

typedef struct reshape_node {
  char unused; /* the input's shape (in[0]) is all it needs */
} reshape_node;

static void reshape_backward(ct_bw *c, const ct_tensor *g) {
  const ct_input_meta *in = &c->node->in[0];
  BW_GRAD(c, 0, bw_reshape(c, g, in->shape, in->ndim));
}

typedef struct permute_node {
  int perm[CT_MAX_DIMS]; /* output dim i is input dim perm[i] */
} permute_node;

static void permute_backward(ct_bw *c, const ct_tensor *g) {
  const permute_node *s = CT_BW_STATE(c, permute_node);
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int i = 0; i < g->ndim; i++)
    shape[s->perm[i]] = g->shape[i], strides[s->perm[i]] = g->strides[i];
  BW_GRAD(c, 0, bw_view(c, g, shape, strides, g->ndim, g->offset));
}

static void identity_backward(ct_bw *c, const ct_tensor *g) {
  BW_GRAD(c, 0, g); /* the engine sums broadcast dims and casts to the input's dtype */
}

/* A view by geometry (slices, and views regenerated over their base). */
typedef struct strided_node {
  ct_view_geometry geo;
} strided_node;

static void strided_backward(ct_bw *c, const ct_tensor *g) {
  ct_tensor *whole, *part; /* zeros laid out as the input, g copied into the view's elements */
  if (bw_needs(c, 0) &&
      bw_base_layout(c, &CT_BW_STATE(c, strided_node)->geo, &c->node->in[0], g, &whole, &part) &&
      bw_ok(c, ct__backend_of(part)->copy(part, g)))
    bw_set(c, 0, whole);
}

ct_node *ct__as_strided_node(const ct_tensor *v, const ct_tensor *base, ct_edge base_edge) {
  const ct_tensor *none = NULL;
  ct_node *n = CT_NODE_NEW(strided_node, "AsStridedBackward", strided_backward, 1, &none);
  if (!n) return NULL;
  ct__view_geometry_of(&CT_NODE_STATE(n, strided_node)->geo, v, base);
  ct_input_meta *in = &n->in[0];
  memcpy(in->shape, base->shape, sizeof in->shape);
  in->ndim = base->ndim;
  in->dtype = base->dtype;
  in->device = ct__device(base);
  n->next[0] = base_edge;
  if (base_edge.fn) atomic_fetch_add(&base_edge.fn->refcount, 1);
  ct__retain(base_edge.leaf);
  return n;
}

/* Records n (NULL: failed) as v's history, v a view of t. */
static ct_tensor *record_view(ct_tensor *v, const ct_tensor *t, ct_node *n) {
  if (!(v = ct__ag_record(v, n))) return NULL;
  /* remember the base (the root owning the memory) for in-place writes */
  const ct_tensor *base = t->autograd->view_base ? t->autograd->view_base : t;
  struct ct_autograd_meta *m = v->autograd;
  m->view_base = ct__retain(base);
  m->view_base_fn = base->autograd->grad_fn;
  return v;
}

ct_tensor *ct__ag_view_logical(ct_tensor *v, const ct_tensor *t, const int64_t *view_strides,
                               int64_t view_offset) {
  if (!v || !ct__ag_needed(&t, 1)) return v;
  ct_node *n = CT_NODE_NEW(strided_node, "AsStridedBackward", strided_backward, 1, &t);
  if (n) {
    ct_view_geometry *g = &CT_NODE_STATE(n, strided_node)->geo;
    memcpy(g->view_shape, v->shape, sizeof g->view_shape);
    memcpy(g->view_strides, view_strides, sizeof(int64_t) * (size_t)v->ndim);
    g->view_ndim = v->ndim;
    g->view_offset = view_offset;
    ct__contiguous_strides(t->shape, t->ndim, g->base_strides);
    g->base_offset = 0;
  }
  return record_view(v, t, n);
}

ct_tensor *ct__ag_view(ct_tensor *v, const ct_tensor *t, int kind, const int *perm) {
  if (!v || !ct__ag_needed(&t, 1)) return v;
  if (kind == CT_VIEW_STRIDED && ct__has_internal_overlap(t)) {
    ct__release(v);
    return ct__fail(CT_ERR_STATE,
                    "autograd: a strided view of an overlapping tensor that requires grad needs "
                    "its logical geometry (ct__ag_view_logical)");
  }
  ct_node *n = NULL;
  switch (kind) {
    case CT_VIEW_RESHAPE:
      n = CT_NODE_NEW(reshape_node, "ViewBackward", reshape_backward, 1, &t);
      break;
    case CT_VIEW_EXPAND:
      n = CT_NODE_NEW(reshape_node, "ExpandBackward", identity_backward, 1, &t);
      break;
    case CT_VIEW_PERMUTE:
      if ((n = CT_NODE_NEW(permute_node, "PermuteBackward", permute_backward, 1, &t)))
        memcpy(CT_NODE_STATE(n, permute_node)->perm, perm, sizeof(int) * (size_t)v->ndim);
      break;
    default:
      if ((n = CT_NODE_NEW(strided_node, "AsStridedBackward", strided_backward, 1, &t)))
        ct__view_geometry_of(&CT_NODE_STATE(n, strided_node)->geo, v, t);
      break;
  }
  return record_view(v, t, n);
}

ct_tensor *ct__ag_identity(ct_tensor *r, const ct_tensor *t, const char *name) {
  if (!r || r == t || !ct__ag_needed(&t, 1) || !ct_dtype_is_floating(r->dtype)) return r;
  return ct__ag_record(r, CT_NODE_NEW(reshape_node, name, identity_backward, 1, &t));
}

/* ---- ct_to: the gradient goes back to the input's device ---------------------- */

static void to_backward(ct_bw *c, const ct_tensor *g) {
  if (!bw_needs(c, 0)) return;
  ct_tensor *moved = ct_to(g, c->node->in[0].device, NULL); /* tracked only inside a scope */
  bw_set(c, 0, moved); /* our own reference; the scope (if any) drops its one */
  ct_free(moved);
}

ct_tensor *ct__autograd_record_to(ct_tensor *r, const ct_tensor *t) {
  if (!r || !ct__ag_needed(&t, 1)) return r;
  return ct__ag_record(r, CT_NODE_NEW(reshape_node, "ToCopyBackward", to_backward, 1, &t));
}
