/* Backward of adaptive average and max pooling (src/nn/pool_adaptive.c)
 * through the backend's adaptive_pool2d_backward slot. Unbatched (C, H, W)
 * inputs ran as a batch of one: their gradient loses that dim again. */
#include "autograd/node.h"

typedef struct adaptive_pool2d_node {
  bool is_max;
  ct_saved indices; /* max: the argmax of each window, i64 of the output's shape */
} adaptive_pool2d_node;

static void adaptive_pool2d_backward(ct_bw *c, const ct_tensor *g) {
  const adaptive_pool2d_node *s = CT_BW_STATE(c, adaptive_pool2d_node);
  const ct_input_meta *in = &c->node->in[0];
  const ct_tensor *idx = s->is_max ? bw_saved(c, &s->indices) : NULL;
  if (c->st != CT_OK || !bw_needs(c, 0)) return;
  bool unbatched = in->ndim == 3;
  int64_t xs[4] = {1, 0, 0, 0};
  memcpy(xs + unbatched, in->shape, sizeof(int64_t) * (size_t)in->ndim);
  int64_t gs[4] = {xs[0], xs[1], g->shape[g->ndim - 2], g->shape[g->ndim - 1]};
  ct_tensor *g4 = bw_reshape(c, bw_contiguous(c, bw_cast(c, g, in->dtype)), gs, 4);
  const ct_tensor *i4 = idx ? bw_reshape(c, idx, gs, 4) : NULL;
  ct_tensor *gx = bw_empty(c, xs, 4, in->dtype, in->device);
  if (g4 && gx && (!s->is_max || i4) &&
      bw_ok(c, ct__backend_of(gx)->adaptive_pool2d_backward(s->is_max, gx, g4, i4)))
    bw_set(c, 0, unbatched ? bw_reshape(c, gx, in->shape, 3) : gx);
}

ct_tensor *ct__ag_adaptive_pool2d(ct_tensor *r, const ct_tensor *x, bool is_max,
                                  const ct_tensor *indices) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n = CT_NODE_NEW(adaptive_pool2d_node,
                           is_max ? "AdaptiveMaxPool2DBackward" : "AdaptiveAvgPool2DBackward",
                           adaptive_pool2d_backward, 1, &x);
  if (n) {
    adaptive_pool2d_node *s = CT_NODE_STATE(n, adaptive_pool2d_node);
    s->is_max = is_max;
    if (is_max) ct__save(n, &s->indices, indices);
  }
  return ct__ag_record(r, n);
}
