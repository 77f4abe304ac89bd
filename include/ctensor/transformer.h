/* ctensor/transformer.h: multi-head attention and the transformer encoder
 * layer as modules, with torch.nn.MultiheadAttention's and
 * torch.nn.TransformerEncoderLayer's parameters (state_dict names), defaults
 * and results; attention runs through ct_scaled_dot_product_attention
 * (attention.h), so no (L, S) matrix is held.
 *
 *   ct_module *layer = ct_transformer_encoder_layer_new(
 *       &(ct_transformer_opts){.d_model = 512, .nhead = 8, .batch_first = true}, NULL);
 *   ct_tensor *y = ct_module_forward(layer, x);          // x (N, L, 512)
 *
 * ct_module_forward passes one input; attention takes three (query, key,
 * value) and masks, so each module also has its own forward function with
 * every argument (ct_multihead_attention_forward,
 * ct_transformer_encoder_layer_forward). ct_module_forward(m, x) is
 * self-attention without masks. */
#ifndef CTENSOR_TRANSFORMER_H
#define CTENSOR_TRANSFORMER_H

#include <stdbool.h>

#include "ctensor/api.h"
#include "ctensor/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias,
 * batch_first=batch_first) with kdim = vdim = embed_dim: parameters
 * in_proj_weight (3E, E; xavier_uniform_), in_proj_bias (3E; zeros) and the
 * child out_proj (a Linear E -> E, bias zeros), the biases only with `bias`.
 * embed_dim must be divisible by num_heads (CT_ERR_ARG otherwise). */
CT_API ct_module *ct_multihead_attention_new(int64_t embed_dim, int64_t num_heads, double dropout,
                                             bool bias, bool batch_first,
                                             const ct_module_opts *opts);

/* Masks and flags of an attention call (all optional; a zeroed struct or NULL
 * means none), with torch.nn.MultiheadAttention's conventions, which are
 * NOT those of ct_scaled_dot_product_attention: a bool mask marks with true
 * the positions that may NOT be attended.
 *  - attn_mask: (L, S) or (N * num_heads, L, S); bool (true: masked out) or
 *    float, added to the scores;
 *  - key_padding_mask: (N, S) (or (S) unbatched); bool (true: ignore that
 *    key) or float, added;
 *  - is_causal: a causal mask, used when no attn_mask is given. */
typedef struct ct_attention_masks {
  const ct_tensor *attn_mask;
  const ct_tensor *key_padding_mask;
  bool is_causal;
} ct_attention_masks;

/* Attention output (L, N, E) ((N, L, E) with batch_first; (L, E) for
 * unbatched inputs) of query (L, N, E), key (S, N, E), value (S, N, E), as
 * torch's forward(query, key, value, need_weights=False): the attention
 * weights are not returned (they are never formed). Dropout applies in
 * training mode. */
CT_API ct_tensor *ct_multihead_attention_forward(ct_module *mha, const ct_tensor *query,
                                                 const ct_tensor *key, const ct_tensor *value,
                                                 const ct_attention_masks *masks);

/* torch.nn.TransformerEncoderLayer's arguments; zero fields take torch's
 * defaults where one exists. */
typedef struct ct_transformer_opts {
  int64_t d_model, nhead;  /* required */
  int64_t dim_feedforward; /* 0: 2048 */
  double dropout;          /* used as given (torch's default is 0.1) */
  bool gelu;               /* activation: false ReLU (torch's default), true GELU (erf) */
  double layer_norm_eps;   /* 0: 1e-5 */
  bool batch_first;        /* inputs (N, L, E) instead of (L, N, E) */
  bool norm_first;         /* pre-norm (x + sa(norm1(x))) instead of post-norm */
} ct_transformer_opts;

/* Children, as torch's: self_attn (MultiheadAttention), linear1 (d_model ->
 * dim_feedforward), dropout, linear2, norm1, norm2, dropout1, dropout2. */
CT_API ct_module *ct_transformer_encoder_layer_new(const ct_transformer_opts *t,
                                                   const ct_module_opts *opts);
/* The layer's forward(src, src_mask, src_key_padding_mask, is_causal), masks
 * as ct_attention_masks (torch's conventions). */
CT_API ct_tensor *ct_transformer_encoder_layer_forward(ct_module *layer, const ct_tensor *src,
                                                       const ct_attention_masks *masks);

#ifdef __cplusplus
}
#endif

#endif /* CTENSOR_TRANSFORMER_H */
