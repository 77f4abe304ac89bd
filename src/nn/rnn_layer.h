/* One direction of one LSTM or GRU layer over a whole sequence as one
 * autograd node (nn/rnn_layer.c, its backward autograd/grad_rnn_layer.c):
 * the input projection of every step in one matmul, then per step the hidden
 * projection and the backend's fused cell writing h' (and c') straight into
 * the output sequence. The modules (nn/rnn.c) call it for f32 and f64 on
 * backends with the rnn_cell slots. */
#ifndef CT_NN_RNN_LAYER_H
#define CT_NN_RNN_LAYER_H

#include "backend/params.h"
#include "core/internal.h"

typedef struct ct_rnn_layer_args {
  ct_rnn_cell_kind kind;
  bool reverse; /* walk the steps from L - 1 down to 0 */
  /* in (L, N, I) with L >= 1, h0 and c0 (LSTM only) (N, H), w_ih (G*H, I),
   * w_hh (G*H, H), b_ih and b_hh (G*H) or NULL: one floating dtype (f32 or
   * f64) and one device whose backend has the matmul and rnn_cell slots
   * (checked by the caller). Any strides. */
  const ct_tensor *in, *h0, *c0, *w_ih, *w_hh, *b_ih, *b_hh;
} ct_rnn_layer_args;

/* The layer's outputs, recorded for autograd and tracked: LSTM (2, L, N, H)
 * = the h sequence (index 0, the layer's output) and the c sequence (1);
 * GRU (L, N, H) = the h sequence. The final states are the last step's rows
 * (step 0 for the reverse direction). NULL on failure. */
ct_tensor *ct__rnn_layer(const ct_rnn_layer_args *a);

#endif /* CT_NN_RNN_LAYER_H */
