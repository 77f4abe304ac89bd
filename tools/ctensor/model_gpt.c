/* model_gpt.c: the byte-level GPT of `ctensor train --model gpt`: a
 * decoder-only transformer over the 256 byte values, in GPT-2's shape
 * (nanoGPT's names where torch's layers allow them):
 *
 *   wte   token embedding (256, d), also the output head (weights tied: the
 *         logits are h @ wte^T, so the table is trained by both ends and
 *         saved once)
 *   wpe   learned position embedding (context, d)
 *   h.i   GPT_LAYERS pre-norm blocks: torch.nn.TransformerEncoderLayer with
 *         norm_first, GELU, 4d feed-forward, no dropout, run with a causal
 *         mask (position t attends to positions <= t)
 *   ln_f  final LayerNorm
 *
 * Embeddings start as GPT-2's, N(0, 0.02): the default N(0, 1) of
 * ct_embedding_new would, through the tied head, start the logits with a
 * standard deviation of about sqrt(d) and the loss far above log(256). */
#include <stdlib.h>

#include "cli.h"

typedef struct gpt {
  ct_module *wte, *wpe, *ln_f;
  ct_module *blocks[GPT_LAYERS];
} gpt;

/* idx (B, t) integer bytes, 1 <= t <= GPT_CONTEXT -> logits (B, 256, t):
 * classes in dim 1, as ct_cross_entropy takes (N, C, d) with targets (N, d). */
static ct_tensor *gpt_forward(ct_module *m, void *self, const ct_tensor *idx) {
  (void)m;
  gpt *g = self;
  if (!idx) return NULL;
  ct_tensor *wte = ct_module_get(g->wte, "weight"), *wpe = ct_module_get(g->wpe, "weight");
  int64_t t = ct_size(idx, ct_ndim(idx) - 1);
  /* (B, t, d) + (t, d); a t past the context fails in ct_narrow with its sizes. */
  ct_tensor *h = ct_add(ct_module_forward(g->wte, idx), ct_narrow(wpe, 0, 0, t));
  const ct_attention_masks causal = {.is_causal = true};
  for (int i = 0; i < GPT_LAYERS; i++)
    h = ct_transformer_encoder_layer_forward(g->blocks[i], h, &causal);
  ct_tensor *logits = ct_linear(ct_module_forward(g->ln_f, h), wte, NULL); /* (B, t, 256) */
  return ct_transpose(logits, -1, -2);
}

static const ct_module_vtable gpt_vt = {"GPT", gpt_forward, free};

/* N(0, 0.02) in place of an embedding's N(0, 1) (same draws, scaled). */
static bool scale_init(ct_module *emb) {
  ct_tensor *w = ct_module_get(emb, "weight");
  ct_no_grad_begin();
  bool ok = w && ct_mul_scalar_(w, 0.02) != NULL;
  ct_no_grad_end();
  return ok;
}

ct_module *cli_gpt_new(void) {
  gpt *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  ct_module *m = ct_module_new(&gpt_vt, g);
  if (!m) {
    free(g);
    return NULL;
  }
  /* Registered in forward order: the state_dict order. */
  bool ok =
      (g->wte = ct_module_register_module(m, "wte", ct_embedding_new(256, GPT_D, NULL))) &&
      (g->wpe = ct_module_register_module(m, "wpe", ct_embedding_new(GPT_CONTEXT, GPT_D, NULL))) &&
      scale_init(g->wte) && scale_init(g->wpe);
  ct_module *h = ok ? ct_module_register_module(m, "h", ct_sequential_new()) : NULL;
  ok = h != NULL;
  const ct_transformer_opts block = {.d_model = GPT_D,
                                     .nhead = GPT_HEADS,
                                     .dim_feedforward = 4 * GPT_D,
                                     .gelu = true,
                                     .batch_first = true,
                                     .norm_first = true};
  for (int i = 0; ok && i < GPT_LAYERS; i++)
    ok = (g->blocks[i] = ct_sequential_add(h, ct_transformer_encoder_layer_new(&block, NULL)));
  ok = ok && (g->ln_f = ct_module_register_module(m, "ln_f",
                                                  ct_layer_norm_new(CT_SHAPE(GPT_D), 1e-5, NULL)));
  if (!ok) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}
