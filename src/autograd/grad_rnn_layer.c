/* Backward of one direction of one LSTM/GRU layer (nn/rnn_layer.c), as
 * cuDNN's and torch's fused RNNs: the steps in reverse, each
 *   dh_t = dY_t + dGH_{t+1} @ W_hh (GRU: + the direct part z * dh_{t+1})
 *   dc_t = dC_t + the cell's dc of step t+1 (LSTM)
 *   the backend's fused cell backward: dG_t (LSTM: of the summed
 *   pre-activations, the gradient of both projections; GRU: dGI_t, dGH_t)
 * on preallocated (N, H) buffers and windows of the (L, N, G*H) gradients;
 * then whole-sequence GEMMs: d_in = dGI @ W_ih, dW_ih = dGI^T @ in,
 * dW_hh = dGH^T @ (h0, h_1 .. h_{L-1} in the walk's order), the biases as
 * column sums. "t+1" is the next step of the walk (t-1 for the reverse
 * direction). */
#include "autograd/node.h"

typedef struct rnn_layer_node {
  ct_saved in, h0, c0, w_ih, w_hh, out, ws;
  ct_rnn_layer_params p;
} rnn_layer_node;

/* What the reverse walk reads and writes. g: the output's gradient,
 * contiguous (out's layout); dgi, dgh (L, N, G) (the same tensor for the
 * LSTM); dh, dc_in (N, H) scratch; carry (N, H): the cell's grad_state of the
 * last step walked (LSTM: dc; GRU: the direct part of dh). */
typedef struct walk_bufs {
  const ct_tensor *g, *out, *ws, *h0, *c0, *w_hh;
  ct_tensor *dgi, *dgh, *dh, *dc_in, *carry;
} walk_bufs;

static bool walk(ct_bw *b, const ct_rnn_layer_params *p, const walk_bufs *w) {
  bool lstm = p->cell.kind == CT_RNN_CELL_LSTM;
  int64_t L = p->L, N = p->cell.N, H = p->cell.H, G = (lstm ? 4 : 3) * H, NH = N * H;
  const ct_backend *be = ct__backend_of(w->out);
  /* windows moved from step to step (ct__rnn_seek) */
  ct_tensor *gy = bw_keep(b, ct__rnn_window(w->g, N, H, 0, false));
  ct_tensor *gc = lstm ? bw_keep(b, ct__rnn_window(w->g, N, H, 0, false)) : NULL;
  ct_tensor *dgi = bw_keep(b, ct__rnn_window(w->dgi, N, G, 0, false));
  ct_tensor *dgh = lstm ? NULL : bw_keep(b, ct__rnn_window(w->dgh, N, G, 0, false));
  ct_tensor *dgh3 = bw_keep(b, ct__rnn_window(w->dgh, N, G, 0, true));
  ct_tensor *ws = bw_keep(b, ct__rnn_window(w->ws, N, (lstm ? 5 : 4) * H, 0, false));
  ct_tensor *sp = bw_keep(b, ct__rnn_window(w->out, N, H, 0, false));
  ct_tensor *w_hh3 = bw_keep(b, ct__rnn_mat(w->w_hh, false));
  ct_tensor *dh3 = bw_keep(b, ct__rnn_window(w->dh, N, H, 0, true));
  ct_tensor *dgh2 = bw_keep(b, ct__rnn_window(w->dgh, N, G, 0, false)), *packed = NULL;
  if (b->st != CT_OK) return false;
  ct_status st = ct__rnn_pack_w_hh(be, w->w_hh, false, &packed);
  if (packed) bw_keep(b, packed);
  for (int64_t s = L - 1; s >= 0 && st == CT_OK; s--) {
    int64_t t = p->reverse ? L - 1 - s : s, tn = p->reverse ? t - 1 : t + 1;
    int64_t tp = p->reverse ? t + 1 : t - 1;
    ct__rnn_seek(gy, w->g, t * NH);
    const ct_tensor *grad_h = gy, *grad_c = NULL;
    if (s < L - 1) { /* the paths through step tn */
      ct__rnn_seek(dgh3, w->dgh, tn * N * G);
      ct__rnn_seek(dgh2, w->dgh, tn * N * G);
      if (st == CT_OK) st = be->copy(w->dh, gy);
      if (st == CT_OK && packed)
        st = be->rnn_matmul_packed(w->dh, dgh2, packed, true);
      else if (st == CT_OK)
        st = be->matmul(dh3, dgh3, w_hh3, true);
      if (st == CT_OK && !lstm) st = be->binary(CT_BOP_ADD, w->dh, w->dh, w->carry);
      grad_h = w->dh;
    }
    if (lstm) {
      ct__rnn_seek(gc, w->g, (L + t) * NH);
      grad_c = gc;
      if (s < L - 1 && st == CT_OK) st = be->binary(CT_BOP_ADD, w->dc_in, gc, w->carry);
      if (s < L - 1) grad_c = w->dc_in;
    }
    if (s > 0) ct__rnn_seek(sp, w->out, ((lstm ? L : 0) + tp) * NH);
    const ct_tensor *state = s > 0 ? sp : lstm ? w->c0 : w->h0;
    ct__rnn_seek(dgi, w->dgi, t * N * G);
    if (dgh) ct__rnn_seek(dgh, w->dgh, t * N * G);
    ct__rnn_seek(ws, w->ws, t * N * (lstm ? 5 : 4) * H);
    if (st == CT_OK)
      st = be->rnn_cell_backward(&p->cell, dgi, dgh, w->carry, grad_h, grad_c, state, ws);
  }
  return bw_ok(b, st);
}

/* Rows [t0, t0 + steps) of a contiguous (L, N, cols) t as a (steps * N, cols) matrix. */
static ct_tensor *steps(ct_bw *b, const ct_tensor *t, int64_t t0, int64_t n, int64_t N) {
  int64_t cols = t->shape[t->ndim - 1];
  return bw_view(b, t, (int64_t[]){n * N, cols}, (int64_t[]){cols, 1}, 2,
                 t->offset + t0 * N * cols);
}

/* dW_hh = sum over steps of dGH_t^T @ h_{t-1}: the first step walked against
 * h0, the others against the h sequence shifted by one step. */
static ct_tensor *grad_w_hh(ct_bw *b, const ct_rnn_layer_params *p, const walk_bufs *w) {
  int64_t L = p->L, N = p->cell.N, t0 = p->reverse ? L - 1 : 0;
  ct_tensor *gw = bw_matmul(b, bw_mT(b, steps(b, w->dgh, t0, 1, N)), w->h0);
  if (L == 1) return gw;
  /* forward: dGH_1.. with h_0..h_{L-2}; reverse: dGH_0..dGH_{L-2} with h_1..h_{L-1} */
  ct_tensor *hs =
      bw_view(b, w->out, (int64_t[]){L - 1, N, p->cell.H}, (int64_t[]){N * p->cell.H, p->cell.H, 1},
              3, w->out->offset + (p->reverse ? N * p->cell.H : 0));
  ct_tensor *rest =
      bw_matmul(b, bw_mT(b, steps(b, w->dgh, p->reverse ? 0 : 1, L - 1, N)),
                bw_reshape(b, bw_contiguous(b, hs), (int64_t[]){(L - 1) * N, p->cell.H}, 2));
  return bw_add(b, gw, rest);
}

static void rnn_layer_backward(ct_bw *b, const ct_tensor *g) {
  const rnn_layer_node *s = CT_BW_STATE(b, rnn_layer_node);
  const ct_rnn_layer_params *p = &s->p;
  bool lstm = p->cell.kind == CT_RNN_CELL_LSTM;
  int64_t L = p->L, N = p->cell.N, H = p->cell.H, G = (lstm ? 4 : 3) * H;
  walk_bufs w = {.out = bw_saved(b, &s->out),
                 .ws = bw_saved(b, &s->ws),
                 .h0 = bw_saved(b, &s->h0),
                 .c0 = lstm ? bw_saved(b, &s->c0) : NULL,
                 .w_hh = bw_saved(b, &s->w_hh)};
  const ct_tensor *in = bw_saved(b, &s->in), *w_ih = bw_saved(b, &s->w_ih);
  if (b->st != CT_OK) return;
  ct_dtype dt = w.out->dtype;
  ct_device dev = ct__device(w.out);
  w.g = bw_contiguous(b, bw_cast(b, g, dt));
  w.dgi = bw_empty(b, (int64_t[]){L, N, G}, 3, dt, dev);
  w.dgh = lstm ? w.dgi : bw_empty(b, (int64_t[]){L, N, G}, 3, dt, dev);
  w.dh = bw_empty(b, (int64_t[]){N, H}, 2, dt, dev);
  w.dc_in = lstm ? bw_empty(b, (int64_t[]){N, H}, 2, dt, dev) : NULL;
  w.carry = bw_empty(b, (int64_t[]){N, H}, 2, dt, dev);
  if (b->st != CT_OK || !walk(b, p, &w)) return;
  ct_tensor *dgi = steps(b, w.dgi, 0, L, N), *dgh = steps(b, w.dgh, 0, L, N);
  BW_GRAD(b, 0, bw_reshape(b, bw_matmul(b, dgi, w_ih), (int64_t[]){L, N, p->I}, 3));
  if (bw_needs(b, 1)) {
    ct_tensor *dh0 = bw_matmul(b, steps(b, w.dgh, p->reverse ? L - 1 : 0, 1, N), w.w_hh);
    bw_set(b, 1, lstm ? dh0 : bw_add(b, dh0, w.carry));
  }
  if (lstm) BW_GRAD(b, 2, w.carry);
  BW_GRAD(b, 3, bw_matmul(b, bw_mT(b, dgi), bw_reshape(b, in, (int64_t[]){L * N, p->I}, 2)));
  BW_GRAD(b, 4, grad_w_hh(b, p, &w));
  const ct_reduce_opts rows = {.dims = {0}, .ndims = 1};
  ct_tensor *db_ih =
      bw_needs(b, 5) || (lstm && bw_needs(b, 6)) ? bw_reduce(b, CT_ROP_SUM, dgi, &rows) : NULL;
  BW_GRAD(b, 5, db_ih);
  BW_GRAD(b, 6, lstm ? db_ih : bw_reduce(b, CT_ROP_SUM, dgh, &rows)); /* LSTM: b_ih's */
}

ct_tensor *ct__ag_rnn_layer(ct_tensor *r, const ct_tensor *const inputs[7], const ct_tensor *in,
                            const ct_tensor *h0, const ct_tensor *c0, const ct_tensor *ws,
                            const ct_rnn_layer_params *p) {
  if (!r || !ct__ag_needed(inputs, 7)) return r;
  bool lstm = p->cell.kind == CT_RNN_CELL_LSTM;
  ct_node *n = CT_NODE_NEW(rnn_layer_node, lstm ? "LstmLayerBackward" : "GruLayerBackward",
                           rnn_layer_backward, 7, inputs);
  if (n) {
    rnn_layer_node *s = CT_NODE_STATE(n, rnn_layer_node);
    s->p = *p;
    ct__save(n, &s->in, in);
    ct__save(n, &s->h0, h0);
    if (lstm) ct__save(n, &s->c0, c0);
    ct__save(n, &s->w_ih, inputs[3]);
    ct__save(n, &s->w_hh, inputs[4]);
    ct__save(n, &s->ws, ws);
    ct__save_output(n, &s->out, r);
  }
  return ct__ag_record(r, n);
}
