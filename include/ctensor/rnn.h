/* ctensor/rnn.h: recurrent layers, torch.nn.LSTM and torch.nn.GRU.
 *
 *   ct_module *lstm = ct_lstm_new(&(ct_rnn_opts){.input_size = 32, .hidden_size = 64,
 *                                                .num_layers = 2, .batch_first = true}, NULL);
 *   ct_tensor *h_n, *c_n;
 *   ct_tensor *y = ct_lstm_forward(lstm, x, NULL, NULL, &h_n, &c_n);  // x (N, L, 32)
 *
 * Parameters carry torch's names and shapes, so a torch state_dict loads as
 * it is: weight_ih_l<k> (G*H, in), weight_hh_l<k> (G*H, H), bias_ih_l<k> and
 * bias_hh_l<k> (G*H), with G = 4 gates for the LSTM in torch's order
 * (input, forget, cell, output) and G = 3 for the GRU (reset, update, new);
 * all initialized U(-1/sqrt(H), 1/sqrt(H)) as torch. The cells follow
 * torch's formulas:
 *   LSTM: i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of x W_ih^T + b_ih + h W_hh^T + b_hh
 *         c' = f * c + i * g;  h' = o * tanh(c')
 *   GRU:  r, z = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr), ... (update gate likewise)
 *         n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn));  h' = (1 - z) * n + z * h
 * Each step is two matmuls (the input's projection made for every step at
 * once) and one fused kernel for the rest (ct_lstm_cell_pointwise,
 * ct_gru_cell_pointwise below); for f32 and f64 each layer and direction is
 * one autograd node whose backward walks the steps in reverse, as torch's
 * fused RNN; f16 and bf16 (and autocast regions) run the same formulas as
 * separate ops where matmul takes them.
 * Everything is differentiable (inputs, initial states and weights).
 *
 * dropout > 0 applies ct_dropout to the output of every layer but the last,
 * in training mode only (ct_module_train; the default generator draws the
 * masks), as torch. bidirectional adds a second set of weights per layer,
 * named with torch's "_reverse" suffix (weight_ih_l0_reverse...), that runs
 * the sequence backwards; a layer's output is then the two directions'
 * concatenated (2*H features, the forward first), the next layer's input
 * is 2*H wide, and the states are (num_layers*2, N, H), index 2*layer +
 * direction, as torch orders them. */
#ifndef CTENSOR_RNN_H
#define CTENSOR_RNN_H

#include "ctensor/api.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_rnn_opts {
  int64_t input_size;  /* > 0 */
  int64_t hidden_size; /* > 0 */
  int num_layers;      /* 0 means 1 */
  bool no_bias;        /* torch's bias=False: no bias_ih / bias_hh */
  bool batch_first;    /* x and the output are (N, L, features) instead of (L, N, features) */
  double dropout;      /* in [0, 1): dropout on every layer's output but the last (training) */
  bool bidirectional;  /* a reverse direction per layer: 2*hidden_size output features */
} ct_rnn_opts;

/* The modules (opts: dtype, device, generator of the initialization; NULL:
 * f32 on the CPU). Invalid sizes or dropout fail with CT_ERR_ARG. ct_module_forward(m,
 * x) runs them from zero states and returns the output alone. */
CT_API ct_module *ct_lstm_new(const ct_rnn_opts *rnn, const ct_module_opts *opts);
CT_API ct_module *ct_gru_new(const ct_rnn_opts *rnn, const ct_module_opts *opts);

/* Runs the LSTM over x: (L, N, input_size), (N, L, input_size) with
 * batch_first, or unbatched (L, input_size). h0 and c0 are (D*num_layers,
 * N, hidden_size) ((D*num_layers, hidden_size) unbatched) or NULL for zeros,
 * D = 2 when bidirectional, else 1. Returns the last layer's h at every
 * step, (L, N, D*hidden_size) (batch_first: (N, L, D*hidden_size);
 * unbatched: (L, D*hidden_size)), and, where h_n / c_n are not NULL, the
 * final states of every layer and direction, shaped as h0 (the reverse
 * direction's final state is its state after step 0). Wrong shapes fail
 * with CT_ERR_SHAPE naming them. */
CT_API ct_tensor *ct_lstm_forward(ct_module *m, const ct_tensor *x, const ct_tensor *h0,
                                  const ct_tensor *c0, ct_tensor **h_n, ct_tensor **c_n);
/* The GRU likewise (no cell state). */
CT_API ct_tensor *ct_gru_forward(ct_module *m, const ct_tensor *x, const ct_tensor *h0,
                                 ct_tensor **h_n);

/* The pointwise part of one step, fused: everything after the two gate
 * matmuls, for users who write their own recurrent loops.
 * LSTM: gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh, both (N, 4H); c (N,
 * H). Returns h' and sets *c_new to c' (both (N, H)), torch's formulas above.
 * GRU: gi, gh (N, 3H) likewise (gh's last H columns are h W_hn^T + b_hn,
 * which the reset gate scales); h (N, H). Returns h'.
 * One dtype and device for all; one kernel forward and one backward for f32
 * and f64. Wrong shapes fail with CT_ERR_SHAPE. */
CT_API ct_tensor *ct_lstm_cell_pointwise(const ct_tensor *gi, const ct_tensor *gh,
                                         const ct_tensor *c, ct_tensor **c_new);
CT_API ct_tensor *ct_gru_cell_pointwise(const ct_tensor *gi, const ct_tensor *gh,
                                        const ct_tensor *h);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_RNN_H */
