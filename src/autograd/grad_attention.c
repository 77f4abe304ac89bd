/* Backward of scaled dot-product attention: the backend's fused kernel
 * recomputes the scores tile by tile from q, k, v, the output and the
 * per-row logsumexp saved by the forward pass (backend.h's sdpa_backward);
 * the dropout mask is regenerated from the saved Philox key. */
#include "autograd/node.h"

typedef struct sdpa_node {
  ct_saved q, k, v;  /* (BH, L, E), (BH, S, E), (BH, S, Ev) contiguous */
  ct_saved out, lse; /* (BH, L, Ev), (BH, L) */
  ct_saved mask;     /* the kernel's additive mask, or not saved */
  ct_sdpa_params p;
  int64_t bshape[CT_MAX_DIMS]; /* the broadcast batch dims */
  int nb;
} sdpa_node;

/* A (BH, rows, cols) gradient viewed as (bshape, rows, cols): the engine sums
 * it over the dims the input was broadcast along. */
static ct_tensor *unflatten(ct_bw *c, const sdpa_node *s, const ct_tensor *g) {
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, s->bshape, sizeof(int64_t) * (size_t)s->nb);
  shape[s->nb] = g ? g->shape[1] : 0, shape[s->nb + 1] = g ? g->shape[2] : 0;
  return bw_reshape(c, g, shape, s->nb + 2);
}

static void sdpa_backward(ct_bw *c, const ct_tensor *g) {
  const sdpa_node *s = CT_BW_STATE(c, sdpa_node);
  const ct_tensor *q = bw_saved(c, &s->q), *k = bw_saved(c, &s->k), *v = bw_saved(c, &s->v);
  const ct_tensor *out = bw_saved(c, &s->out), *lse = bw_saved(c, &s->lse);
  const ct_tensor *mask = s->mask.t ? bw_saved(c, &s->mask) : NULL;
  if (c->st != CT_OK) return;
  ct_tensor *g3 = bw_reshape(c, bw_contiguous(c, bw_cast(c, g, q->dtype)), out->shape, 3);
  ct_device dev = ct__device(q);
  ct_tensor *gq = bw_empty(c, q->shape, 3, q->dtype, dev),
            *gk = bw_empty(c, k->shape, 3, q->dtype, dev);
  ct_tensor *gv = bw_empty(c, v->shape, 3, q->dtype, dev);
  if (c->st != CT_OK ||
      !bw_ok(c, ct__backend_of(q)->sdpa_backward(gq, gk, gv, g3, q, k, v, out, lse, mask, &s->p)))
    return;
  BW_GRAD(c, 0, unflatten(c, s, gq));
  BW_GRAD(c, 1, unflatten(c, s, gk));
  BW_GRAD(c, 2, unflatten(c, s, gv));
}

ct_tensor *ct__ag_sdpa(ct_tensor *r, const ct_tensor *const inputs[3],
                       const ct_tensor *const saved[6], const ct_sdpa_params *p) {
  if (!r || !ct__ag_needed(inputs, 3)) return r;
  ct_node *n =
      CT_NODE_NEW(sdpa_node, "ScaledDotProductAttentionBackward", sdpa_backward, 3, inputs);
  if (n) {
    sdpa_node *s = CT_NODE_STATE(n, sdpa_node);
    s->p = *p;
    s->nb = r->ndim - 2;
    memcpy(s->bshape, r->shape, sizeof(int64_t) * (size_t)s->nb);
    ct_saved *slots[6] = {&s->q, &s->k, &s->v, &s->out, &s->lse, &s->mask};
    for (int i = 0; i < 6; i++) ct__save(n, slots[i], saved[i]);
  }
  return ct__ag_record(r, n);
}
