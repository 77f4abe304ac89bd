/* Backward of advanced indexing (ops/adv_index.c), with the forward's plan
 * (its geometry and index points) kept in the node:
 *   r = x[idx]:                     gx = zeros(x).index_put_(idx, g, accumulate=true)
 *   r = x.index_put(idx, v, acc):   gx = g (acc), else g with x[idx] zeroed;
 *                                   gv = g[idx] (summed to v's shape by the engine) */
#include "autograd/node.h"
#include "ops/adv_index.h"

typedef struct index_node {
  ct_adv_geom g;
  bool accumulate; /* index_put */
  ct_saved lin;
} index_node;

static void index_backward(ct_bw *c, const ct_tensor *g) {
  const index_node *s = CT_BW_STATE(c, index_node);
  const ct_tensor *lin = bw_saved(c, &s->lin);
  const ct_input_meta *in = &c->node->in[0];
  ct_tensor *gx = bw_zeros(c, in->shape, in->ndim, g->dtype, ct__device(g));
  if (gx && lin && bw_ok(c, ct__adv_put(gx, &s->g, lin, g, true))) bw_set(c, 0, gx);
}

static void index_put_backward(ct_bw *c, const ct_tensor *g) {
  const index_node *s = CT_BW_STATE(c, index_node);
  const ct_tensor *lin = bw_saved(c, &s->lin);
  if (!lin) return;
  if (bw_needs(c, 0) && s->accumulate) {
    bw_set(c, 0, g);
  } else if (bw_needs(c, 0)) { /* the overwritten positions get no gradient */
    ct_tensor *gx = bw_clone(c, g), *z = bw_zeros(c, NULL, 0, g->dtype, ct__device(g));
    if (gx && z && bw_ok(c, ct__adv_put(gx, &s->g, lin, z, false))) bw_set(c, 0, gx);
  }
  BW_GRAD(c, 1, bw_keep(c, ct__adv_gather(g, &s->g, lin)));
}

static ct_tensor *record(ct_tensor *r, const char *name, ct_backward_fn fn,
                         const ct_tensor *const *ins, int n_ins, const ct_adv_geom *g,
                         const ct_tensor *lin, bool accumulate) {
  if (!r || !ct__ag_needed(ins, n_ins)) return r;
  ct_node *n = CT_NODE_NEW(index_node, name, fn, n_ins, ins);
  if (n) {
    index_node *s = CT_NODE_STATE(n, index_node);
    s->g = *g;
    s->accumulate = accumulate;
    ct__save(n, &s->lin, lin);
  }
  return ct__ag_record(r, n);
}

ct_tensor *ct__ag_index(ct_tensor *r, const ct_tensor *x, const ct_adv_geom *g,
                        const ct_tensor *lin) {
  return record(r, "IndexBackward", index_backward, &x, 1, g, lin, false);
}

ct_tensor *ct__ag_index_put(ct_tensor *r, const ct_tensor *x, const ct_tensor *values,
                            const ct_adv_geom *g, const ct_tensor *lin, bool accumulate) {
  const ct_tensor *ins[2] = {x, values};
  return record(r, "IndexPutBackward", index_put_backward, ins, 2, g, lin, accumulate);
}
