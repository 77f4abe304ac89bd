/* Backward of the layers of src/nn: conv2d, max/avg pooling, batch norm,
 * layer norm (through the backend's backward slots) and embedding (the
 * gradient rows scatter-added into a dense zero gradient). Dropout is
 * recorded as a multiplication. Unbatched (C, H, W) inputs ran as a batch of
 * one: their gradient loses that dim again. */
#include "autograd/node.h"
#include "ops/index.h"

/* g cast to dtype, contiguous, viewed as shape. */
static ct_tensor *grad_as(ct_bw *c, const ct_tensor *g, ct_dtype dtype, const int64_t *shape,
                          int ndim) {
  return bw_reshape(c, bw_cast(c, g, dtype), shape, ndim);
}

/* A gradient of `shape`, or NULL when input k needs none. */
static ct_tensor *grad_buffer(ct_bw *c, int k, const int64_t *shape, int ndim,
                              const ct_tensor *like) {
  return bw_needs(c, k) ? bw_empty(c, shape, ndim, like->dtype, ct__device(like)) : NULL;
}

/* ---- conv2d -------------------------------------------------------------------------- */

typedef struct conv2d_node {
  ct_saved x, w; /* x (N, C_in, H, W) contiguous, w (C_out, C_in / groups, kH, kW) */
  ct_conv2d_params p;
  bool unbatched; /* the input was (C, H, W) */
} conv2d_node;

static void conv2d_backward(ct_bw *c, const ct_tensor *g) {
  const conv2d_node *s = CT_BW_STATE(c, conv2d_node);
  const ct_tensor *x = bw_saved(c, &s->x), *w = bw_saved(c, &s->w);
  if (!x || !w) return;
  int64_t out[4] = {x->shape[0], w->shape[0], g->shape[g->ndim - 2], g->shape[g->ndim - 1]};
  ct_tensor *g4 = grad_as(c, g, x->dtype, out, 4);
  ct_tensor *gx = grad_buffer(c, 0, x->shape, 4, x), *gw = grad_buffer(c, 1, w->shape, 4, x);
  ct_tensor *gb = grad_buffer(c, 2, w->shape, 1, x);
  if (c->st != CT_OK || !bw_ok(c, ct__backend_of(x)->conv2d_backward(gx, gw, gb, g4, x, w, &s->p)))
    return;
  if (gx) bw_set(c, 0, s->unbatched ? bw_reshape(c, gx, x->shape + 1, 3) : gx);
  if (gw) bw_set(c, 1, gw);
  if (gb) bw_set(c, 2, gb);
}

ct_tensor *ct__ag_conv2d(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                         const ct_tensor *bias, const ct_tensor *x4, const ct_tensor *w_c,
                         const ct_conv2d_params *p, bool unbatched) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(conv2d_node, "ConvolutionBackward", conv2d_backward, 3, ins);
  if (n) {
    conv2d_node *s = CT_NODE_STATE(n, conv2d_node);
    s->p = *p;
    s->unbatched = unbatched;
    ct__save(n, &s->x, x4);
    ct__save(n, &s->w, w_c);
  }
  return ct__ag_record(r, n);
}

/* ---- max / avg pooling ------------------------------------------------------------------ */

typedef struct pool2d_node {
  bool is_max;
  ct_pool2d_params p;
  ct_saved indices; /* max: the argmax of each window (N, C, H_out, W_out) i64 */
} pool2d_node;

static void pool2d_backward(ct_bw *c, const ct_tensor *g) {
  const pool2d_node *s = CT_BW_STATE(c, pool2d_node);
  const ct_input_meta *in = &c->node->in[0];
  const ct_tensor *idx = s->is_max ? bw_saved(c, &s->indices) : NULL;
  if (c->st != CT_OK || !bw_needs(c, 0)) return;
  bool unbatched = in->ndim == 3;
  int64_t xs[4] = {1, 0, 0, 0};
  memcpy(xs + unbatched, in->shape, sizeof(int64_t) * (size_t)in->ndim);
  int64_t gs[4] = {xs[0], xs[1], g->shape[g->ndim - 2], g->shape[g->ndim - 1]};
  ct_tensor *g4 = grad_as(c, g, g->dtype, gs, 4);
  ct_tensor *gx = bw_empty(c, xs, 4, g->dtype, ct__device(g));
  if (g4 && gx && bw_ok(c, ct__backend_of(gx)->pool2d_backward(s->is_max, gx, g4, idx, &s->p)))
    bw_set(c, 0, unbatched ? bw_reshape(c, gx, in->shape, 3) : gx);
}

ct_tensor *ct__ag_pool2d(ct_tensor *r, const ct_tensor *x, bool is_max, const ct_tensor *indices,
                         const ct_pool2d_params *p) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n =
      CT_NODE_NEW(pool2d_node, is_max ? "MaxPool2DWithIndicesBackward" : "AvgPool2DBackward",
                  pool2d_backward, 1, &x);
  if (n) {
    pool2d_node *s = CT_NODE_STATE(n, pool2d_node);
    s->is_max = is_max;
    s->p = *p;
    if (is_max) ct__save(n, &s->indices, indices);
  }
  return ct__ag_record(r, n);
}

/* ---- batch norm: through the batch statistics in training, the running ones
 * (constants) in evaluation ------------------------------------------------------------- */

typedef struct batch_norm_node {
  ct_saved x, w, mean, invstd; /* x (N, C, S); w (C) or not saved; statistics (C) */
  bool training;
} batch_norm_node;

static void batch_norm_backward(ct_bw *c, const ct_tensor *g) {
  const batch_norm_node *s = CT_BW_STATE(c, batch_norm_node);
  const ct_tensor *x = bw_saved(c, &s->x), *mean = bw_saved(c, &s->mean);
  const ct_tensor *invstd = bw_saved(c, &s->invstd), *w = s->w.t ? bw_saved(c, &s->w) : NULL;
  if (c->st != CT_OK) return;
  int64_t C = x->shape[1];
  ct_tensor *g3 = grad_as(c, g, x->dtype, x->shape, 3);
  ct_tensor *gx = grad_buffer(c, 0, x->shape, 3, x), *gw = grad_buffer(c, 1, &C, 1, x);
  ct_tensor *gb = grad_buffer(c, 2, &C, 1, x);
  if (c->st != CT_OK || !bw_ok(c, ct__backend_of(x)->batch_norm_backward(gx, gw, gb, g3, x, w, mean,
                                                                         invstd, s->training)))
    return;
  const ct_input_meta *in = &c->node->in[0];
  if (gx) bw_set(c, 0, bw_reshape(c, gx, in->shape, in->ndim));
  if (gw) bw_set(c, 1, gw);
  if (gb) bw_set(c, 2, gb);
}

ct_tensor *ct__ag_batch_norm(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *bias, const ct_tensor *x3, const ct_tensor *w_c,
                             const ct_tensor *mean, const ct_tensor *invstd, bool training) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(batch_norm_node, "NativeBatchNormBackward", batch_norm_backward, 3, ins);
  if (n) {
    batch_norm_node *s = CT_NODE_STATE(n, batch_norm_node);
    s->training = training;
    ct__save(n, &s->x, x3);
    ct__save(n, &s->w, w_c);
    ct__save(n, &s->mean, mean);
    ct__save(n, &s->invstd, invstd);
  }
  return ct__ag_record(r, n);
}

/* ---- layer norm ----------------------------------------------------------------------- */

typedef struct layer_norm_node {
  ct_saved x, w, mean,
      rstd;     /* x contiguous; w (the last nd dims) or not saved; per-row statistics */
  int64_t cols; /* elements per normalized row */
  int nd;       /* normalized dims */
} layer_norm_node;

static void layer_norm_backward(ct_bw *c, const ct_tensor *g) {
  const layer_norm_node *s = CT_BW_STATE(c, layer_norm_node);
  const ct_tensor *x = bw_saved(c, &s->x), *mean = bw_saved(c, &s->mean);
  const ct_tensor *rstd = bw_saved(c, &s->rstd), *w = s->w.t ? bw_saved(c, &s->w) : NULL;
  if (c->st != CT_OK) return;
  const int64_t *wshape = x->shape + x->ndim - s->nd;
  ct_tensor *gc = grad_as(c, g, x->dtype, x->shape, x->ndim);
  ct_tensor *gx = grad_buffer(c, 0, x->shape, x->ndim, x),
            *gw = grad_buffer(c, 1, wshape, s->nd, x);
  ct_tensor *gb = grad_buffer(c, 2, wshape, s->nd, x);
  if (c->st != CT_OK ||
      !bw_ok(c, ct__backend_of(x)->layer_norm_backward(gx, gw, gb, gc, x, w, mean, rstd, s->cols)))
    return;
  if (gx) bw_set(c, 0, gx);
  if (gw) bw_set(c, 1, gw);
  if (gb) bw_set(c, 2, gb);
}

ct_tensor *ct__ag_layer_norm(ct_tensor *r, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *bias, const ct_tensor *x_c, const ct_tensor *w_c,
                             const ct_tensor *mean, const ct_tensor *rstd, int64_t cols, int nd) {
  const ct_tensor *ins[3] = {x, w, bias};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(layer_norm_node, "NativeLayerNormBackward", layer_norm_backward, 3, ins);
  if (n) {
    layer_norm_node *s = CT_NODE_STATE(n, layer_norm_node);
    s->cols = cols;
    s->nd = nd;
    ct__save(n, &s->x, x_c);
    ct__save(n, &s->w, w_c);
    ct__save(n, &s->mean, mean);
    ct__save(n, &s->rstd, rstd);
  }
  return ct__ag_record(r, n);
}

/* ---- embedding ---------------------------------------------------------------------------- */

typedef struct embedding_node {
  ct_saved indices; /* (M,) i64 */
} embedding_node;

static void embedding_backward(ct_bw *c, const ct_tensor *g) {
  const ct_tensor *idx = bw_saved(c, &CT_BW_STATE(c, embedding_node)->indices);
  if (!idx || !bw_needs(c, 1)) return;
  const ct_input_meta *wm = &c->node->in[1];
  int64_t M = idx->numel, D = wm->shape[1];
  ct_tensor *g2 = bw_reshape(c, g, (int64_t[]){M, D}, 2);
  /* index (M, D): each row's index repeated along the row (stride 0) */
  ct_tensor *ix =
      bw_view(c, idx, (int64_t[]){M, D}, (int64_t[]){idx->strides[0], 0}, 2, idx->offset);
  bw_set(c, 1, bw_scatter_add_into_zeros(c, wm->shape, 2, 0, ix, g2));
}

ct_tensor *ct__ag_embedding(ct_tensor *r, const ct_tensor *indices, const ct_tensor *weight,
                            const ct_tensor *flat) {
  const ct_tensor *ins[2] = {indices, weight};
  if (!r || !ct__ag_needed(ins, 2)) return r;
  ct_node *n = CT_NODE_NEW(embedding_node, "EmbeddingBackward", embedding_backward, 2, ins);
  if (n) ct__save(n, &CT_NODE_STATE(n, embedding_node)->indices, flat);
  return ct__ag_record(r, n);
}
