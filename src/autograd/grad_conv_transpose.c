/* Backward of conv_transpose2d (src/nn/conv_transpose.c), y = conv2d's input
 * gradient at x: grad_x = conv2d(grad_y, w) (the backend's conv2d slot),
 * grad_w = conv2d's weight gradient with grad_y as the input and x as the
 * output gradient, grad_b = grad_y summed over (N, H, W). Unbatched (C, H, W)
 * inputs ran as a batch of one: their gradient loses that dim again. */
#include "autograd/node.h"

typedef struct conv_transpose2d_node {
  ct_saved x, w; /* x (N, C_in, H, W) contiguous, w (C_in, C_out / groups, kH, kW) */
  ct_conv2d_params p;
  bool unbatched; /* the input was (C, H, W) */
} conv_transpose2d_node;

static void conv_transpose2d_backward(ct_bw *c, const ct_tensor *g) {
  const conv_transpose2d_node *s = CT_BW_STATE(c, conv_transpose2d_node);
  const ct_tensor *x = bw_saved(c, &s->x), *w = bw_saved(c, &s->w);
  if (!x || !w) return;
  const ct_backend *be = ct__backend_of(x);
  int64_t ys[4] = {x->shape[0], w->shape[1] * s->p.groups, g->shape[g->ndim - 2],
                   g->shape[g->ndim - 1]};
  ct_tensor *g4 = bw_reshape(c, bw_contiguous(c, bw_cast(c, g, x->dtype)), ys, 4);
  if (c->st != CT_OK) return;
  if (bw_needs(c, 0)) {
    ct_tensor *gx = bw_empty(c, x->shape, 4, x->dtype, ct__device(x));
    if (gx && bw_ok(c, be->conv2d(gx, g4, w, NULL, &s->p)))
      bw_set(c, 0, s->unbatched ? bw_reshape(c, gx, x->shape + 1, 3) : gx);
  }
  if (bw_needs(c, 1)) {
    ct_tensor *gw = bw_empty(c, w->shape, 4, x->dtype, ct__device(x));
    if (gw && bw_ok(c, be->conv2d_backward(NULL, gw, NULL, x, g4, w, &s->p))) bw_set(c, 1, gw);
  }
  BW_GRAD(c, 2, bw_reduce(c, CT_ROP_SUM, g4, CT_DIMS(0, 2, 3)));
}

ct_tensor *ct__ag_conv_transpose2d(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                                   const ct_tensor *bias, const ct_tensor *x4, const ct_tensor *w_c,
                                   const ct_conv2d_params *p, bool unbatched) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n =
      CT_NODE_NEW(conv_transpose2d_node, "ConvolutionBackward", conv_transpose2d_backward, 3, ins);
  if (n) {
    conv_transpose2d_node *s = CT_NODE_STATE(n, conv_transpose2d_node);
    s->p = *p;
    s->unbatched = unbatched;
    ct__save(n, &s->x, x4);
    ct__save(n, &s->w, w_c);
  }
  return ct__ag_record(r, n);
}
