/* The pointwise part of the LSTM and GRU cells (torch's formulas), forward
 * and backward, written once for the CPU (backend/cpu/rnn.c) and CUDA
 * (backend/cuda/rnn.cu) kernels; one element (row n, unit j) per call. The
 * nonlinearities are core/unary_math.h's, so for f32 they are exp_math.h's
 * vectorizable polynomials and the fused kernels give the bits of the
 * sigmoid/tanh ops they replace.
 *
 * LSTM, pre-activations a = x W_ih^T + b_ih + h W_hh^T + b_hh split (i, f, g, o):
 *   i, f, o = sigmoid(a_i, a_f, a_o);  g = tanh(a_g)
 *   c' = f c + i g;  h' = o tanh(c')
 * GRU, input part gi and hidden part gh split (r, z, n):
 *   r = sigmoid(gi_r + gh_r);  z = sigmoid(gi_z + gh_z)
 *   n = tanh(gi_n + r gh_n);  h' = (h - n) z + n   (torch's order of operations)
 * The backward formulas read what the forward kept (rnn_math_t.h). */
#ifndef CT_CORE_RNN_MATH_H
#define CT_CORE_RNN_MATH_H

#include "core/unary_math.h"

#define CT_TEMPLATE "core/rnn_math_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

#endif /* CT_CORE_RNN_MATH_H */
