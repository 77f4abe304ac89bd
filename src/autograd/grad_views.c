/* Backward of views and of the ops whose gradient is the identity up to a
 * cast or a device move: reshape-like views reshape the gradient back,
 * permutations permute it back, expands are summed by the engine, and
 * strided views (slice, select, narrow, diagonal) scatter it into zeros
 * through the same geometry; contiguous/clone/cast pass it through, and ct_to
 * moves it back to the input's device. */
#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

/* ip layout for strided views. */
enum { G_VSTRIDES = 0, G_ISTRIDES = 8, G_VOFF = 16, G_IOFF = 17, G_VNDIM = 18, G_VSHAPE = 19 };

static ct_status reshape_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_input_meta *in = &n->in[0];
  ct_tensor *c = ct__contiguous(g);
  if (!c) return ct_last_error();
  int64_t st[CT_MAX_DIMS];
  ct__contiguous_strides(in->shape, in->ndim, st);
  gi[0] = ct__view_of(c, c->dtype, in->shape, st, in->ndim, c->offset);
  ct__release(c);
  return gi[0] ? CT_OK : ct_last_error();
}

static ct_status permute_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  int nd = g->ndim;
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  for (int i = 0; i < nd; i++) { /* output dim i came from input dim perm[i] */
    int src = (int)n->ip[i];
    shape[src] = g->shape[i];
    strides[src] = g->strides[i];
  }
  gi[0] = ct__view_of(g, g->dtype, shape, strides, nd, g->offset);
  return gi[0] ? CT_OK : ct_last_error();
}

static ct_status expand_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  (void)n;
  gi[0] = ct__retain(g); /* the engine sums the broadcast dims */
  return CT_OK;
}

static ct_status strided_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  const ct_input_meta *in = &n->in[0];
  int64_t numel = ct__shape_numel(in->shape, in->ndim);
  if (numel == 0) {
    gi[0] = ct__zeros(in->shape, in->ndim, g->dtype, ct__device(g));
    return gi[0] ? CT_OK : ct_last_error();
  }
  int64_t span = 1;
  for (int d = 0; d < in->ndim; d++) span += (in->shape[d] - 1) * n->ip[G_ISTRIDES + d];
  ct_tensor *buf = ct__zeros(&span, 1, g->dtype, ct__device(g));
  if (!buf) return ct_last_error();
  int vnd = (int)n->ip[G_VNDIM];
  ct_tensor *gv = ct__view_of(buf, buf->dtype, &n->ip[G_VSHAPE], &n->ip[G_VSTRIDES], vnd,
                              n->ip[G_VOFF] - n->ip[G_IOFF]);
  ct_status st = gv ? ct__backend_of(buf)->copy(gv, g) : ct_last_error();
  ct__release(gv);
  if (st == CT_OK) {
    gi[0] = ct__view_of(buf, buf->dtype, in->shape, &n->ip[G_ISTRIDES], in->ndim, 0);
    if (!gi[0]) st = ct_last_error();
  }
  ct__release(buf);
  return st;
}

ct_tensor *ct__ag_view(ct_tensor *v, const ct_tensor *t, int kind, const int *perm) {
  if (!v || !ct__ag_needed(&t, 1)) return v;
  static const char *const names[] = {"ViewBackward", "PermuteBackward", "ExpandBackward",
                                      "AsStridedBackward"};
  static const ct_backward_fn fns[] = {reshape_backward, permute_backward, expand_backward,
                                       strided_backward};
  if (kind == CT_VIEW_STRIDED && ct__has_internal_overlap(t)) {
    ct__release(v);
    return ct__fail(CT_ERR_STATE,
                    "autograd: slicing an expanded (broadcast) tensor that requires grad is not "
                    "supported; make it contiguous first");
  }
  ct_node *n = ct__node_new(names[kind], fns[kind], 1, &t);
  if (!n) return ct__ag_attach(v, NULL);
  if (kind == CT_VIEW_PERMUTE) {
    for (int i = 0; i < v->ndim; i++) n->ip[i] = perm[i];
  } else if (kind == CT_VIEW_STRIDED) {
    for (int d = 0; d < v->ndim; d++) n->ip[G_VSTRIDES + d] = v->strides[d], n->ip[G_VSHAPE + d] = v->shape[d];
    for (int d = 0; d < t->ndim; d++) n->ip[G_ISTRIDES + d] = t->strides[d];
    n->ip[G_VOFF] = v->offset;
    n->ip[G_IOFF] = t->offset;
    n->ip[G_VNDIM] = v->ndim;
  }
  return ct__ag_attach(v, n);
}

static ct_status identity_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  (void)n;
  gi[0] = ct__retain(g); /* the engine casts to the input's dtype */
  return CT_OK;
}

ct_tensor *ct__ag_identity(ct_tensor *r, const ct_tensor *t, const char *name) {
  if (!r || r == t || !ct__ag_needed(&t, 1) || !ct_dtype_is_floating(r->dtype)) return r;
  ct_node *n = ct__node_new(name, identity_backward, 1, &t);
  return ct__ag_attach(r, n);
}

/* ---- ct_to: the gradient goes back to the input's device ---------------------- */

static ct_status to_backward(ct_node *n, const ct_tensor *g, ct_tensor **gi) {
  ct_to_opts o = {0};
  ct_tensor *moved = ct_to(g, n->in[0].device, &o); /* tracked only inside a scope */
  if (!moved) return ct_last_error();
  /* ct_to returns a tracked handle when a scope is open; take our own reference
   * and let the scope (if any) drop its one. */
  gi[0] = ct__retain(moved);
  ct_free(moved);
  return CT_OK;
}

ct_tensor *ct__autograd_record_to(ct_tensor *r, const ct_tensor *t) {
  if (!r || !ct__ag_needed(&t, 1)) return r;
  ct_node *n = ct__node_new("ToCopyBackward", to_backward, 1, &t);
  return ct__ag_attach(r, n);
}
