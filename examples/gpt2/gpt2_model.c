/* gpt2_model.c: GPT-2 from ctensor's built-in modules (Embedding, LayerNorm,
 * Linear) and three user modules (CausalSelfAttention, MLP, Block); see
 * gpt2_model.h for the architecture and the parameter names. Shapes: B batch,
 * T sequence, E = n_embd, H = n_head, D = E / H. */
#include "gpt2_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_EPS 1e-5
#define INIT_STD 0.02

/* ---- CausalSelfAttention: c_attn (E -> 3E), heads, c_proj (E -> E) --------- */

typedef struct gpt2_attn {
  ct_module *c_attn, *c_proj;
  int64_t n_head;
  bool unfused;
} gpt2_attn;

/* The reference composition softmax(q k^T / sqrt(D) + causal mask) v, with
 * the (B, H, T, T) scores and probabilities held for the backward pass. */
static ct_tensor *attention_unfused(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v) {
  int64_t T = ct_shape(q)[2], D = ct_shape(q)[3];
  bool *upper = (bool *)malloc((size_t)(T * T) * sizeof *upper); /* true above the diagonal: masked */
  if (!upper) return NULL;
  for (int64_t i = 0; i < T; i++)
    for (int64_t j = 0; j < T; j++) upper[i * T + j] = j > i;
  ct_tensor_opts opts = {.dtype = CT_BOOL, .device = ct_device_of(q)};
  ct_tensor *mask =
      ct_from_data_typed(upper, CT_BOOL, CT_SHAPE(T, T),
                         &opts);
  free(upper);
  ct_tensor *scores = ct_mul_scalar(ct_matmul(q, ct_transpose(k, 2, 3)), 1.0 / sqrt((double)D));
  ct_tensor *probs = ct_softmax(ct_masked_fill(scores, mask, -INFINITY), 3);
  return ct_matmul(probs, v);
}

static ct_tensor *attn_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  gpt2_attn *a = (gpt2_attn *)self;
  if (!x || ct_ndim(x) < 2) return ct_module_forward(a->c_proj, x); /* NULL, or linear's error */
  int nd = ct_ndim(x); /* x (..., T, E): the leading dims are the batch */
  int64_t T = ct_shape(x)[nd - 2], E = ct_shape(x)[nd - 1], H = a->n_head;
  int64_t B = T * E > 0 ? ct_numel(x) / (T * E) : 0;
  ct_tensor *qkv = ct_module_forward(a->c_attn, ct_reshape(x, CT_SHAPE(B, T, E))); /* (B, T, 3E) */
  ct_tensor *parts[3] = {NULL, NULL, NULL};
  if (ct_split(qkv, E, 2, parts, 3) != 3) return NULL;
  for (int i = 0; i < 3; i++) /* (B, T, E) -> (B, H, T, D) */
    parts[i] = ct_transpose(ct_reshape(parts[i], CT_SHAPE(B, T, H, E / H)), 1, 2);
  ct_tensor *y = a->unfused ? attention_unfused(parts[0], parts[1], parts[2])
                            : ct_scaled_dot_product_attention(parts[0], parts[1], parts[2], NULL,
                                                              true, 0.0, 0.0, NULL);
  y = ct_reshape(ct_transpose(y, 1, 2), ct_shape(x), nd); /* heads side by side, x's shape */
  return ct_module_forward(a->c_proj, y);
}

static const ct_module_vtable attn_vtable = {"CausalSelfAttention", attn_forward, free};

/* ---- MLP: c_fc (E -> 4E), tanh GELU, c_proj (4E -> E) ------------------------ */

typedef struct gpt2_mlp {
  ct_module *c_fc, *c_proj;
} gpt2_mlp;

static ct_tensor *mlp_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  gpt2_mlp *p = (gpt2_mlp *)self;
  return ct_module_forward(p->c_proj, ct_gelu_tanh(ct_module_forward(p->c_fc, x)));
}

static const ct_module_vtable mlp_vtable = {"MLP", mlp_forward, free};

/* ---- Block: pre-norm attention and MLP with residuals ------------------------ */

typedef struct gpt2_block {
  ct_module *ln_1, *attn, *ln_2, *mlp;
} gpt2_block;

static ct_tensor *block_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  gpt2_block *b = (gpt2_block *)self;
  ct_tensor *h = ct_add(x, ct_module_forward(b->attn, ct_module_forward(b->ln_1, x)));
  return ct_add(h, ct_module_forward(b->mlp, ct_module_forward(b->ln_2, h)));
}

static const ct_module_vtable block_vtable = {"Block", block_forward, free};

/* ---- GPT: embeddings, blocks, ln_f, tied lm_head ----------------------------- */

typedef struct gpt2 {
  gpt2_config cfg;
  ct_module *wte, *wpe, *h, *ln_f, *lm_head;
} gpt2;

static ct_tensor *gpt_forward(ct_module *m, void *self, const ct_tensor *idx) {
  (void)m;
  gpt2 *g = (gpt2 *)self;
  if (!idx) return NULL;
  int64_t T = ct_ndim(idx) > 0 ? ct_shape(idx)[ct_ndim(idx) - 1] : 1; /* idx (..., T) */
  ct_scope_begin(); /* the activations live on in the autograd graph, not here */
  ct_tensor_opts opts2 = {.dtype = CT_I64, .device = ct_device_of(idx)};
  ct_tensor *pos =
      ct_arange(0, (double)T, 1, &opts2);
  ct_tensor *x =
      ct_add(ct_module_forward(g->wte, idx), ct_module_forward(g->wpe, pos)); /* (B, T, E) */
  x = ct_module_forward(g->ln_f, ct_module_forward(g->h, x));
  ct_tensor *logits = ct_keep(ct_module_forward(g->lm_head, x)); /* (..., T, V) */
  ct_scope_end();
  return logits;
}

/* The container `transformer` only groups parameters under their names; the
 * GPT module runs its children itself. */
static ct_tensor *container_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)self;
  (void)x;
  (void)m;
  return NULL;
}

static const ct_module_vtable gpt_vtable = {"GPT", gpt_forward, free};
static const ct_module_vtable container_vtable = {"ModuleDict", container_forward, free};

/* Redraws a parameter from N(0, std). */
static bool init_normal(ct_module *m, const char *name, double std, ct_generator *gen) {
  ct_tensor *t = ct_module_get(m, name);
  ct_no_grad_begin();
  bool ok = t && ct_normal_(t, 0.0, std, gen);
  ct_no_grad_end();
  return ok;
}

/* A Linear with nanoGPT's initialization (weight N(0, std), bias zeros). */
static ct_module *linear(ct_module *parent, const char *name, int64_t in, int64_t out, bool bias,
                         double std, const ct_module_opts *o) {
  ct_module *l = ct_module_register_module(parent, name, ct_linear_new(in, out, bias, o));
  if (!l || !init_normal(l, "weight", std, o->generator)) return NULL;
  if (bias) {
    ct_no_grad_begin();
    bool ok = ct_zero_(ct_module_get(l, "bias")) != NULL;
    ct_no_grad_end();
    if (!ok) return NULL;
  }
  return l;
}

/* A user module `name` of parent whose self is a zeroed struct of `size`. */
static ct_module *child(ct_module *parent, const char *name, const ct_module_vtable *vt,
                        size_t size, void **self) {
  *self = calloc(1, size);
  ct_module *c = *self ? ct_module_new(vt, *self) : NULL;
  if (!c) {
    free(*self);
    return NULL;
  }
  return ct_module_register_module(parent, name, c);
}

static bool build_block(ct_module *h, int index, const gpt2_config *c, const ct_module_opts *o) {
  char name[24];
  snprintf(name, sizeof name, "%d", index);
  gpt2_block *b;
  gpt2_attn *a;
  gpt2_mlp *p;
  const int64_t E = c->n_embd;
  const double proj_std = INIT_STD / sqrt(2.0 * (double)c->n_layer);
  ct_module *blk = child(h, name, &block_vtable, sizeof *b, (void **)&b);
  if (!blk) return false;
  b->ln_1 = ct_module_register_module(blk, "ln_1", ct_layer_norm_new(&E, 1, LN_EPS, o));
  b->attn = child(blk, "attn", &attn_vtable, sizeof *a, (void **)&a);
  if (!b->ln_1 || !b->attn) return false;
  a->n_head = c->n_head;
  a->unfused = c->unfused_attention;
  a->c_attn = linear(b->attn, "c_attn", E, 3 * E, true, INIT_STD, o);
  a->c_proj = linear(b->attn, "c_proj", E, E, true, proj_std, o);
  b->ln_2 = ct_module_register_module(blk, "ln_2", ct_layer_norm_new(&E, 1, LN_EPS, o));
  b->mlp = child(blk, "mlp", &mlp_vtable, sizeof *p, (void **)&p);
  if (!a->c_attn || !a->c_proj || !b->ln_2 || !b->mlp) return false;
  p->c_fc = linear(b->mlp, "c_fc", E, 4 * E, true, INIT_STD, o);
  p->c_proj = linear(b->mlp, "c_proj", 4 * E, E, true, proj_std, o);
  return p->c_fc && p->c_proj;
}

ct_module *gpt2_new(const gpt2_config *cfg, const ct_module_opts *opts) {
  static const ct_module_opts defaults = {CT_F32}; /* the zero value: f32 on the CPU */
  const ct_module_opts o = opts ? *opts : defaults;
  if (!cfg || cfg->vocab_size <= 0 || cfg->block_size <= 0 || cfg->n_layer <= 0 ||
      cfg->n_head <= 0 || cfg->n_embd <= 0 || cfg->n_embd % cfg->n_head != 0)
    return NULL;
  gpt2 *g = (gpt2 *)calloc(1, sizeof *g);
  ct_module *m = g ? ct_module_new(&gpt_vtable, g) : NULL;
  if (!m) {
    free(g);
    return NULL;
  }
  g->cfg = *cfg;
  void *unused;
  ct_module *tr = child(m, "transformer", &container_vtable, 1, &unused);
  if (!tr) {
    ct_module_free(m);
    return NULL;
  }
  g->wte = ct_module_register_module(tr, "wte", ct_embedding_new(cfg->vocab_size, cfg->n_embd, &o));
  g->wpe = ct_module_register_module(tr, "wpe", ct_embedding_new(cfg->block_size, cfg->n_embd, &o));
  g->h = ct_module_register_module(tr, "h", ct_sequential_new());
  bool ok = g->wte && g->wpe && g->h && init_normal(g->wte, "weight", INIT_STD, o.generator) &&
            init_normal(g->wpe, "weight", INIT_STD, o.generator);
  for (int i = 0; ok && i < cfg->n_layer; i++) ok = build_block(g->h, i, cfg, &o);
  const int64_t E = cfg->n_embd;
  g->ln_f = ok ? ct_module_register_module(tr, "ln_f", ct_layer_norm_new(&E, 1, LN_EPS, &o)) : NULL;
  g->lm_head = g->ln_f ? ct_module_register_module(m, "lm_head",
                                                   ct_linear_new(E, cfg->vocab_size, false, &o))
                       : NULL;
  /* torch: self.lm_head.weight = self.transformer.wte.weight */
  if (!g->lm_head ||
      ct_module_tie_parameter(m, "lm_head.weight", ct_module_get(g->wte, "weight")) != CT_OK)
    {
    ct_module_free(m);
    return NULL;
  }
  return m;
}

const gpt2_config *gpt2_config_of(ct_module *gpt) {
  gpt2 *g = (gpt2 *)ct_module_self(gpt);
  return &g->cfg;
}

ct_tensor *gpt2_loss(ct_module *gpt, const ct_tensor *idx, const ct_tensor *targets) {
  ct_scope_begin();
  ct_tensor *logits = ct_module_forward(gpt, idx); /* (B, T, V) */
  ct_tensor *loss = ct_cross_entropy(ct_flatten(logits, 0, -2), ct_flatten(targets, 0, -1), NULL);
  ct_keep(loss);
  ct_scope_end();
  return loss;
}
