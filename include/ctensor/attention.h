/* ctensor/attention.h: scaled dot-product attention, fused.
 *
 * ct_scaled_dot_product_attention computes, with PyTorch's semantics
 * (torch.nn.functional.scaled_dot_product_attention),
 *
 *   out = dropout(softmax(scale * q @ k^T + mask)) @ v
 *
 * without ever holding the (..., L, S) matrix of scores: the kernels walk
 * the keys in tiles with an online softmax (a running maximum and sum per
 * query row) and keep only the output and each row's logsumexp for the
 * backward pass, which recomputes the scores tile by tile. Memory is
 * O(L * Ev + L) per batch entry instead of O(L * S).
 *
 *   // q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev) -> out (B, H, L, Ev)
 *   ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, NULL, true, 0.0, 0.0, NULL);
 *
 * Differentiable in q, k and v. CPU: f32 and f64 (f16/bf16 computed in f32);
 * CUDA: f32, f16 and bf16 with f32 accumulation, and f64.
 */
#ifndef CTENSOR_ATTENTION_H
#define CTENSOR_ATTENTION_H

#include <stdbool.h>

#include "ctensor/api.h"
#include "ctensor/random.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attention of queries q (..., L, E) over keys k (..., S, E) and values
 * v (..., S, Ev), giving (..., L, Ev). The batch dims ("...", at least none)
 * of q, k and v broadcast against each other; the three share one floating
 * dtype and one device.
 *  - attn_mask (may be NULL): broadcastable to (..., L, S); bool (true: the
 *    key takes part, as torch) or a float of q's dtype added to the scores.
 *    It is not differentiated.
 *  - is_causal: query i sees keys j <= i (the top-left aligned lower
 *    triangle, as torch); an error together with attn_mask, as in torch.
 *  - dropout_p in [0, 1]: each attention weight is dropped with probability
 *    dropout_p and the kept ones scaled by 1 / (1 - dropout_p). The mask is
 *    drawn from `generator` (NULL: the default generator; one 64-bit draw
 *    per call keys it), the same on the CPU and CUDA for one generator state,
 *    and regenerated, not stored, by the backward pass. Pass 0 in evaluation.
 *  - scale: the factor of the scores; 0 means 1 / sqrt(E), torch's default.
 * A query row whose keys are all masked out gives nan, as torch's reference
 * (math) implementation; S = 0 gives zeros. Errors (CT_ERR_SHAPE, _DTYPE,
 * _ARG, _DEVICE) name the op and the offending shapes or values. */
CT_API ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k,
                                                  const ct_tensor *v, const ct_tensor *attn_mask,
                                                  bool is_causal, double dropout_p, double scale,
                                                  ct_generator *generator);

#ifdef __cplusplus
}
#endif

#endif /* CTENSOR_ATTENTION_H */
