/* Backward of interpolate (src/nn/upsample.c) through the backend's
 * upsample2d_backward slot. 3-d (N, C, L) inputs ran as images of height 1:
 * their gradient gets their shape back. */
#include "autograd/node.h"

typedef struct upsample_node {
  ct_interp_params p;
} upsample_node;

static void upsample_backward(ct_bw *c, const ct_tensor *g) {
  const upsample_node *s = CT_BW_STATE(c, upsample_node);
  const ct_input_meta *in = &c->node->in[0];
  if (c->st != CT_OK || !bw_needs(c, 0)) return;
  const int64_t *sh = in->shape;
  bool one_d = in->ndim == 3;
  int64_t xs[4] = {sh[0], sh[1], one_d ? 1 : sh[2], sh[in->ndim - 1]};
  int64_t gs[4] = {sh[0], sh[1], s->p.h.n_out, s->p.w.n_out};
  ct_tensor *g4 = bw_reshape(c, bw_contiguous(c, bw_cast(c, g, in->dtype)), gs, 4);
  ct_tensor *gx = bw_empty(c, xs, 4, in->dtype, in->device);
  if (g4 && gx && bw_ok(c, ct__backend_of(gx)->upsample2d_backward(gx, g4, &s->p)))
    bw_set(c, 0, one_d ? bw_reshape(c, gx, in->shape, 3) : gx);
}

/* torch's node names, by mode and rank */
static const char *node_name(const ct_interp_params *p, bool one_d) {
  switch (p->w.kind) {
    case CT_INTERP_KIND_NEAREST:
      return one_d ? "UpsampleNearest1DBackward" : "UpsampleNearest2DBackward";
    case CT_INTERP_KIND_NEAREST_EXACT:
      return one_d ? "UpsampleNearestExact1DBackward" : "UpsampleNearestExact2DBackward";
    default:
      return one_d ? "UpsampleLinear1DBackward" : "UpsampleBilinear2DBackward";
  }
}

ct_tensor *ct__ag_upsample(ct_tensor *r, const ct_tensor *x, const ct_interp_params *p) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = CT_NODE_NEW(upsample_node, node_name(p, x->ndim == 3), upsample_backward, 1, &x);
  if (n) CT_NODE_STATE(n, upsample_node)->p = *p;
  return ct__ag_record(r, n);
}
