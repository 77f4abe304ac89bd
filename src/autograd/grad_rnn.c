/* Backward of the fused LSTM/GRU cell (nn/rnn_cell.c): the backend's fused
 * kernel turns the gradient of the cell's output and what the forward kept
 * (the old state and the workspace of activated gates) into the gradients of
 * the two gate pre-activations and of the old state, in one pass. */
#include "autograd/node.h"

typedef struct rnn_cell_node {
  ct_saved state; /* (N, H): c for the LSTM, h for the GRU */
  ct_saved ws;    /* (N, 5H) LSTM, (N, 4H) GRU: backend/params.h */
  ct_rnn_cell_params p;
} rnn_cell_node;

static void rnn_cell_backward(ct_bw *c, const ct_tensor *g) {
  const rnn_cell_node *s = CT_BW_STATE(c, rnn_cell_node);
  const ct_tensor *state = bw_saved(c, &s->state), *ws = bw_saved(c, &s->ws);
  if (c->st != CT_OK) return;
  bool lstm = s->p.kind == CT_RNN_CELL_LSTM;
  int64_t N = s->p.N, H = s->p.H, G = (lstm ? 4 : 3) * H;
  ct_device dev = ct__device(state);
  ct_tensor *g_out = bw_contiguous(c, bw_cast(c, g, state->dtype));
  ct_tensor *g_gi = bw_empty(c, (int64_t[]){N, G}, 2, state->dtype, dev);
  ct_tensor *g_gh = lstm ? NULL : bw_empty(c, (int64_t[]){N, G}, 2, state->dtype, dev);
  ct_tensor *g_state = bw_empty(c, (int64_t[]){N, H}, 2, state->dtype, dev);
  /* the LSTM's g_out is (2, N, H): the gradients of h' and c' */
  const int64_t hs[2] = {N, H}, st[2] = {H, 1};
  ct_tensor *g_h = lstm ? bw_view(c, g_out, hs, st, 2, g_out ? g_out->offset : 0) : g_out;
  ct_tensor *g_c = lstm ? bw_view(c, g_out, hs, st, 2, g_out ? g_out->offset + N * H : 0) : NULL;
  if (c->st != CT_OK || !bw_ok(c, ct__backend_of(state)->rnn_cell_backward(
                                      &s->p, g_gi, g_gh, g_state, g_h, g_c, state, ws)))
    return;
  BW_GRAD(c, 0, g_gi);
  BW_GRAD(c, 1, lstm ? g_gi : g_gh); /* the LSTM sums gi + gh: one gradient for both */
  BW_GRAD(c, 2, g_state);
}

ct_tensor *ct__ag_rnn_cell(ct_tensor *r, const ct_tensor *const inputs[3], const ct_tensor *state,
                           const ct_tensor *ws, const ct_rnn_cell_params *p) {
  if (!r || !ct__ag_needed(inputs, 3)) return r;
  ct_node *n = CT_NODE_NEW(rnn_cell_node,
                           p->kind == CT_RNN_CELL_LSTM ? "LstmCellBackward" : "GruCellBackward",
                           rnn_cell_backward, 3, inputs);
  if (n) {
    rnn_cell_node *s = CT_NODE_STATE(n, rnn_cell_node);
    s->p = *p;
    ct__save(n, &s->state, state);
    ct__save(n, &s->ws, ws);
  }
  return ct__ag_record(r, n);
}
