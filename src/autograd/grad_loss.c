/* Backward of the fused class-index losses of src/nn/loss.c (cross_entropy
 * from logits, nll_loss from log-probabilities), over rows (M, C). With s_i
 * the upstream factor of row i (g, g / M or g / denom by reduction), a_i its
 * weight (w[t_i] valid_i (1 - eps), or 1 - eps) and p = softmax:
 *   d loss / d logits[i]  = s_i (b_i p_i - a_i onehot(t_i) - (eps / C))
 *   d loss / d logp[i, c] = -s_i a_i onehot(t_i)
 * (b_i = a_i with weights or ignore_index, else 1). Rows with a_i = 0 (an
 * ignored target) get 0 even when every target is ignored and the mean's
 * divisor is 0 (the loss is then nan, its gradient 0, as PyTorch's). */
#include <math.h>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/index.h"

typedef struct class_loss_node {
  ct_saved logp;   /* (M, C) log-probabilities (logits only) */
  ct_saved target; /* (M, 1) i64, ignored rows pointing at class 0 */
  ct_saved a;      /* (M, 1) per-row factor, or not saved (then 1 - eps) */
  ct_saved denom;  /* 0-d divisor of the mean, or not saved (then M) */
  ct_reduction reduction;
  double eps; /* label smoothing */
  int64_t M, C;
  bool logits;
} class_loss_node;

/* Rows (M, C) back to the input's geometry: (N, C), (C), or (N, C, d...)
 * from (N, d..., C). */
static ct_tensor *from_rows(ct_bw *c, const ct_tensor *rows, const ct_input_meta *in) {
  int nd = in->ndim;
  if (nd <= 2) return bw_reshape(c, rows, in->shape, nd);
  int64_t sh[CT_MAX_DIMS], cst[CT_MAX_DIMS], st[CT_MAX_DIMS];
  sh[0] = in->shape[0];
  for (int d = 2; d < nd; d++) sh[d - 1] = in->shape[d];
  sh[nd - 1] = in->shape[1];
  ct__contiguous_strides(sh, nd, cst);
  st[0] = cst[0], st[1] = cst[nd - 1]; /* permute (N, d..., C) back to (N, C, d...) */
  for (int d = 2; d < nd; d++) st[d] = cst[d - 1];
  return bw_clone(c, bw_view(c, rows, in->shape, st, nd, rows->offset));
}

static void class_loss_backward(ct_bw *c, const ct_tensor *g) {
  const class_loss_node *s = CT_BW_STATE(c, class_loss_node);
  const ct_input_meta *in = &c->node->in[0];
  const ct_tensor *t = bw_saved(c, &s->target);
  const ct_tensor *logp = s->logits ? bw_saved(c, &s->logp) : NULL;
  const ct_tensor *a = s->a.t ? bw_saved(c, &s->a) : NULL;
  const ct_tensor *denom = s->denom.t ? bw_saved(c, &s->denom) : NULL;
  if (c->st != CT_OK || !bw_needs(c, 0)) return;
  int64_t M = s->M, C = s->C;
  ct_tensor *gc = bw_cast(c, g, in->dtype), *gs; /* s_i: (M, 1) or 0-d */
  if (s->reduction == CT_REDUCTION_NONE)
    gs = bw_reshape(c, gc, (int64_t[]){M, 1}, 2);
  else if (s->reduction == CT_REDUCTION_SUM)
    gs = gc;
  else
    gs = denom ? bw_div(c, gc, denom) : bw_scale(c, gc, M ? 1.0 / (double)M : NAN);
  ct_tensor *sa = a ? bw_mul(c, gs, a) : bw_scale(c, gs, 1 - s->eps); /* s_i a_i */
  if (a && denom) sa = bw_where(c, bw_is_zero(c, a), bw_zero(c, sa), sa);
  /* -s_i a_i as an (M, 1) tensor of its own: scatter's source */
  ct_tensor *neg = bw_scale(c, sa, -1.0);
  ct_tensor *neg_rows = neg && neg->numel == 1 && M != 1
                            ? bw_clone(c, bw_expand(c, neg, (int64_t[]){M, 1}, 2))
                            : bw_reshape(c, neg, (int64_t[]){M, 1}, 2);
  ct_tensor *grad; /* (M, C), written in place below */
  if (s->logits) {
    grad = bw_mul(c, bw_unary(c, CT_UOP_EXP, logp), a ? sa : gs); /* b_i = a_i, or 1 */
    if (grad && s->eps > 0 && !ct__add_scaled(grad, grad, gs, -s->eps / (double)C)) bw_fail(c);
  } else {
    grad = bw_zeros(c, (int64_t[]){M, C}, 2, in->dtype, in->device);
  }
  if (grad && neg_rows && !ct__scatter(grad, 1, t, neg_rows, true, true)) bw_fail(c);
  if (c->st == CT_OK) bw_set(c, 0, from_rows(c, grad, in));
}

ct_tensor *ct__ag_class_loss(ct_tensor *r, const ct_tensor *x, const ct_class_loss_args *v) {
  if (!r || !ct__ag_needed(&x, 1)) return r;
  ct_node *n =
      CT_NODE_NEW(class_loss_node, v->logits ? "CrossEntropyLossBackward" : "NllLossBackward",
                  class_loss_backward, 1, &x);
  if (n) {
    class_loss_node *s = CT_NODE_STATE(n, class_loss_node);
    *s = (class_loss_node){
        .reduction = v->reduction, .eps = v->eps, .M = v->M, .C = v->C, .logits = v->logits};
    if (v->logits) ct__save(n, &s->logp, v->logp);
    ct__save(n, &s->target, v->target);
    ct__save(n, &s->a, v->a);
    ct__save(n, &s->denom, v->denom);
  }
  return ct__ag_record(r, n);
}
