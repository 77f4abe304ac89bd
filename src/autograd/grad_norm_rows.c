/* Backward of the row normalizations (src/nn/norm_rows.c: group norm,
 * instance norm, RMS norm) through the backend's row_norm_backward slot. */
#include "autograd/node.h"

typedef struct row_norm_node {
  ct_saved x, w, mean, rstd; /* x contiguous; w (groups * channels) or not saved;
                              * per-row statistics (mean not saved for rms) */
  ct_row_norm_params p;
} row_norm_node;

static void row_norm_backward(ct_bw *c, const ct_tensor *g) {
  const row_norm_node *s = CT_BW_STATE(c, row_norm_node);
  const ct_tensor *x = bw_saved(c, &s->x), *rstd = bw_saved(c, &s->rstd);
  const ct_tensor *mean = s->mean.t ? bw_saved(c, &s->mean) : NULL;
  const ct_tensor *w = s->w.t ? bw_saved(c, &s->w) : NULL;
  if (c->st != CT_OK) return;
  ct_tensor *gc = bw_reshape(c, bw_cast(c, g, x->dtype), x->shape, x->ndim);
  ct_tensor *gx = bw_needs(c, 0) ? bw_empty(c, x->shape, x->ndim, x->dtype, ct__device(x)) : NULL;
  const ct_input_meta *wm = &c->node->in[1], *bm = &c->node->in[2];
  ct_tensor *gw = bw_needs(c, 1) ? bw_empty(c, wm->shape, wm->ndim, x->dtype, ct__device(x)) : NULL;
  ct_tensor *gb = bw_needs(c, 2) ? bw_empty(c, bm->shape, bm->ndim, x->dtype, ct__device(x)) : NULL;
  if (c->st != CT_OK ||
      !bw_ok(c, ct__backend_of(x)->row_norm_backward(gx, gw, gb, gc, x, w, mean, rstd, &s->p)))
    return;
  if (gx) bw_set(c, 0, gx);
  if (gw) bw_set(c, 1, gw);
  if (gb) bw_set(c, 2, gb);
}

ct_tensor *ct__ag_row_norm(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                           const ct_tensor *bias, const ct_tensor *x_c, const ct_tensor *w_c,
                           const ct_tensor *mean, const ct_tensor *rstd,
                           const ct_row_norm_params *p, const char *name) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(row_norm_node, name, row_norm_backward, 3, ins);
  if (n) {
    row_norm_node *s = CT_NODE_STATE(n, row_norm_node);
    s->p = *p;
    ct__save(n, &s->x, x_c);
    ct__save(n, &s->w, w_c);
    ct__save(n, &s->mean, mean);
    ct__save(n, &s->rstd, rstd);
  }
  return ct__ag_record(r, n);
}
