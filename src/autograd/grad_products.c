/* Backward of addmm and baddbmm, r = beta * input + alpha * (m1 @ m2):
 *   g_input = beta * g   (summed to input's broadcast shape by the engine;
 *                         zeros for beta == 0, as torch)
 *   g_m1 = alpha * g @ m2^T,   g_m2 = alpha * m1^T @ g   (bw_matmul batches) */
#include "autograd/node.h"

typedef struct addmm_node {
  double beta, alpha;
  ct_saved m1, m2;
} addmm_node;

static ct_tensor *scaled(ct_bw *c, ct_tensor *t, double s) {
  return s == 1.0 ? t : bw_scale(c, t, s);
}

static void addmm_backward(ct_bw *c, const ct_tensor *g) {
  const addmm_node *s = CT_BW_STATE(c, addmm_node);
  BW_GRAD(c, 0, s->beta == 1.0 ? g : bw_scale(c, g, s->beta));
  BW_GRAD(c, 1, scaled(c, bw_matmul(c, g, bw_mT(c, bw_saved(c, &s->m2))), s->alpha));
  BW_GRAD(c, 2, scaled(c, bw_matmul(c, bw_mT(c, bw_saved(c, &s->m1)), g), s->alpha));
}

ct_tensor *ct__ag_addmm(ct_tensor *r, const ct_tensor *input, const ct_tensor *m1,
                        const ct_tensor *m2, double beta, double alpha) {
  const ct_tensor *ins[3] = {input, m1, m2};
  if (!r || !ct__ag_needed(ins, 3)) return r;
  ct_node *n = CT_NODE_NEW(addmm_node, m1->ndim == 3 ? "BaddbmmBackward" : "AddmmBackward",
                           addmm_backward, 3, ins);
  if (n) {
    addmm_node *s = CT_NODE_STATE(n, addmm_node);
    s->beta = beta, s->alpha = alpha;
    if (ct__requires_grad(m2)) ct__save(n, &s->m1, m1);
    if (ct__requires_grad(m1)) ct__save(n, &s->m2, m2);
  }
  return ct__ag_record(r, n);
}
