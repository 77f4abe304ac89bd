/* gpt2_model.h: GPT-2 (Radford et al., 2019) as a ctensor module, written
 * with the public API only. One definition serves the character-level
 * example (examples/gpt_train.c), the GPT-2 124M benchmark
 * (bench/bench_gpt2.c) and the golden test against PyTorch
 * (tests/test_golden.c).
 *
 *   ct_module *gpt = gpt2_new(&(gpt2_config){.vocab_size = 65, .block_size = 64,
 *                                            .n_layer = 4, .n_head = 4, .n_embd = 128},
 *                             NULL);
 *   ct_tensor *logits = ct_module_forward(gpt, idx);    // idx (B, T) i64 -> (B, T, V)
 *
 * The forward takes token ids (..., T) of an integer dtype, T <= block_size
 * (more fails in the position lookup, naming the index), and gives the logits
 * (..., T, V); leading dims are the batch, none for one sequence.
 *   ct_tensor *loss = gpt2_loss(gpt, idx, targets);     // mean cross entropy, a scalar
 *
 * The architecture is GPT-2's as nanoGPT and llm.c write it: token and
 * position embeddings; n_layer pre-norm blocks
 *   x = x + c_proj(attention(c_attn(ln_1(x))))      causal, n_head heads
 *   x = x + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x))))  E -> 4E -> E
 * a final LayerNorm, and lm_head, whose weight is wte's (tied: one tensor).
 * LayerNorm eps is 1e-5; no dropout. Parameter names are the state_dict keys
 * of nanoGPT's `GPT` (and llm.c's train_gpt2.py), Linear weights (out, in):
 *   transformer.wte.weight (V, E)             transformer.wpe.weight (block_size, E)
 *   transformer.h.<i>.ln_1.weight, .bias (E)  transformer.h.<i>.attn.c_attn.weight (3E, E), .bias
 *   transformer.h.<i>.attn.c_proj.weight (E, E), .bias
 *   transformer.h.<i>.ln_2.weight, .bias      transformer.h.<i>.mlp.c_fc.weight (4E, E), .bias
 *   transformer.h.<i>.mlp.c_proj.weight (E, 4E), .bias
 *   transformer.ln_f.weight, .bias            lm_head.weight (= transformer.wte.weight)
 * so a safetensors file of that state_dict loads with ct_module_load. */
#ifndef CT_EXAMPLES_GPT2_MODEL_H
#define CT_EXAMPLES_GPT2_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <ctensor.h>

typedef struct gpt2_config {
  int64_t vocab_size; /* V */
  int64_t block_size; /* the longest sequence: rows of wpe */
  int64_t n_layer, n_head, n_embd;
  /* Attention as the composition matmul, causal mask, softmax, matmul, which
   * holds the (B, n_head, T, T) scores, instead of the fused
   * ct_scaled_dot_product_attention; for measuring what fusing saves. */
  bool unfused_attention;
} gpt2_config;

/* A GPT-2 with nanoGPT's initialization: every Linear and Embedding weight
 * N(0, 0.02), the residual projections (attn.c_proj, mlp.c_proj) N(0, 0.02 /
 * sqrt(2 n_layer)), biases zero, LayerNorm weight one and bias zero; draws
 * from opts->generator. NULL with CT_ERR_ARG when a size is not positive or
 * n_embd is not divisible by n_head. ct_module_free releases it. */
ct_module *gpt2_new(const gpt2_config *cfg, const ct_module_opts *opts);

/* The configuration gpt was built with (gpt must come from gpt2_new). */
const gpt2_config *gpt2_config_of(ct_module *gpt);

/* The mean cross entropy of the logits for idx (..., T) against targets of the same shape,
 * both i64 token indices; T <= block_size. */
ct_tensor *gpt2_loss(ct_module *gpt, const ct_tensor *idx, const ct_tensor *targets);

#endif /* CT_EXAMPLES_GPT2_MODEL_H */
