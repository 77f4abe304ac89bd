/* MultiheadAttention and TransformerEncoderLayer modules (ctensor/transformer.h):
 * compositions of linear, layer norm, dropout and the fused
 * scaled_dot_product_attention, with torch's parameter names, masks and
 * layouts. Their forwards run in a scope of their own and keep only the
 * result. */
#include <math.h>

#include "ctensor/transformer.h"
#include "core/alloc.h"
#include "nn/module_internal.h"

/* ---- MultiheadAttention -------------------------------------------------------- */

typedef struct mha_impl {
  int64_t E, H;
  double dropout;
  bool batch_first;
  ct_tensor *in_w, *in_b; /* (3E, E), (3E) or NULL */
  ct_module *out_proj;
} mha_impl;

static const char mha_op[] = "multihead_attention";

/* The additive float form of a torch MHA mask (bool: true -> -inf), of dtype
 * dt on device; NULL passes. */
static ct_tensor *additive(const ct_tensor *m, ct_dtype dt, ct_device dev) {
  if (!m || m->dtype != CT_BOOL) return m ? ct_cast(m, dt) : NULL;
  ct_tensor *z = ct_zeros(ct_shape(m), ct_ndim(m), &(ct_tensor_opts){.dtype = dt, .device = dev});
  return ct_masked_fill(z, m, -INFINITY);
}

/* One additive mask (N or 1, H or 1, L, S) from attn_mask and
 * key_padding_mask (torch's conventions), or NULL when there is none;
 * *causal tells the kernel to apply the causal triangle itself. */
static bool merged_mask(const mha_impl *a, const ct_attention_masks *mk, int64_t N, int64_t L,
                        int64_t S, bool unbatched, ct_dtype dt, ct_device dev, ct_tensor **out,
                        bool *causal) {
  *out = NULL;
  *causal = false;
  if (!mk) return true;
  const ct_tensor *am = mk->attn_mask, *kpm = mk->key_padding_mask;
  char s[CT_SHAPE_STR_MAX];
  ct_tensor *m = NULL;
  if (am) {
    bool per_head =
        am->ndim == 3 && am->shape[0] == N * a->H && am->shape[1] == L && am->shape[2] == S;
    if (!(am->ndim == 2 && am->shape[0] == L && am->shape[1] == S) && !per_head) {
      ct__fail(CT_ERR_SHAPE,
               "%s: expected attn_mask of shape (%lld, %lld) or (%lld, %lld, %lld), got %s", mha_op,
               (long long)L, (long long)S, (long long)(N * a->H), (long long)L, (long long)S,
               ct__shape_str(am, s, sizeof s));
      return false;
    }
    m = additive(am, dt, dev);
    if (per_head) m = ct_reshape(m, CT_SHAPE(N, a->H, L, S));
  } else if (mk->is_causal) {
    if (!kpm) {
      *causal = true;
      return true;
    }
    ct_tensor *upper =
        ct_triu(ct_ones(CT_SHAPE(L, S), &(ct_tensor_opts){.dtype = CT_BOOL, .device = dev}), 1);
    m = additive(upper, dt, dev);
  }
  if (kpm) {
    bool ok = unbatched ? kpm->ndim == 1 && kpm->shape[0] == S
                        : kpm->ndim == 2 && kpm->shape[0] == N && kpm->shape[1] == S;
    if (!ok) {
      ct__fail(CT_ERR_SHAPE, "%s: expected key_padding_mask of shape (%lld, %lld), got %s", mha_op,
               (long long)N, (long long)S, ct__shape_str(kpm, s, sizeof s));
      return false;
    }
    ct_tensor *k = ct_reshape(additive(kpm, dt, dev), CT_SHAPE(N, 1, 1, S));
    m = m ? ct_add(m, k) : k;
  }
  *out = m;
  return m != NULL;
}

/* x (N, T, E) -> (N, H, T, E / H) through the rows [part E, (part + 1) E) of
 * the input projection. */
static ct_tensor *project_heads(const mha_impl *a, const ct_tensor *x, int part) {
  ct_tensor *w = ct_narrow(a->in_w, 0, part * a->E, a->E);
  ct_tensor *b = a->in_b ? ct_narrow(a->in_b, 0, part * a->E, a->E) : NULL;
  ct_tensor *y = ct_linear(x, w, b);
  if (!y) return NULL;
  int64_t N = ct_shape(x)[0], T = ct_shape(x)[1];
  return ct_transpose(ct_reshape(y, CT_SHAPE(N, T, a->H, a->E / a->H)), 1, 2);
}

/* x in the caller's layout -> (N, T, E). */
static ct_tensor *to_batch_major(const mha_impl *a, const ct_tensor *x, bool unbatched) {
  if (unbatched) return ct_unsqueeze(x, 0);
  return a->batch_first ? ct_alias(x) : ct_transpose(x, 0, 1);
}

static bool check_inputs(const mha_impl *a, const ct_tensor *q, const ct_tensor *k,
                         const ct_tensor *v) {
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX], s3[CT_SHAPE_STR_MAX];
  bool ok = (q->ndim == 2 || q->ndim == 3) && k->ndim == q->ndim && v->ndim == q->ndim &&
            q->shape[q->ndim - 1] == a->E && k->shape[k->ndim - 1] == a->E &&
            v->shape[v->ndim - 1] == a->E;
  int bd = q->ndim == 3 ? (a->batch_first ? 0 : 1) : -1, sd = q->ndim == 3 ? 1 - (bd == 1) : 0;
  if (ok && bd >= 0) ok = k->shape[bd] == q->shape[bd] && v->shape[bd] == q->shape[bd];
  if (ok) ok = k->shape[sd] == v->shape[sd];
  if (!ok)
    ct__fail(
        CT_ERR_SHAPE,
        "%s: expected query, key and value of shapes %s with embed_dim %lld, got %s, %s and %s",
        mha_op,
        a->batch_first ? "(N, L, E), (N, S, E), (N, S, E)" : "(L, N, E), (S, N, E), (S, N, E)",
        (long long)a->E, ct__shape_str(q, s1, sizeof s1), ct__shape_str(k, s2, sizeof s2),
        ct__shape_str(v, s3, sizeof s3));
  return ok;
}

static ct_tensor *mha_run(ct_module *m, const ct_tensor *query, const ct_tensor *key,
                          const ct_tensor *value, const ct_attention_masks *mk) {
  const mha_impl *a = ct__module_impl(m);
  if (!check_inputs(a, query, key, value)) return NULL;
  bool unbatched = query->ndim == 2;
  if (ct_scope_begin() != CT_OK) return NULL;
  ct_tensor *q = project_heads(a, to_batch_major(a, query, unbatched), 0);
  ct_tensor *k = project_heads(a, to_batch_major(a, key, unbatched), 1);
  ct_tensor *v = project_heads(a, to_batch_major(a, value, unbatched), 2);
  ct_tensor *out = NULL, *mask = NULL;
  bool causal;
  if (q && k && v &&
      merged_mask(a, mk, q->shape[0], q->shape[2], k->shape[2], unbatched, query->dtype,
                  ct_device_of(query), &mask, &causal)) {
    double p = ct_module_is_training(m) ? a->dropout : 0.0;
    ct_tensor *o = ct_scaled_dot_product_attention(q, k, v, mask, causal, p, 0.0, NULL);
    int64_t N = q->shape[0], L = q->shape[2];
    o = o ? ct_reshape(ct_contiguous(ct_transpose(o, 1, 2)), CT_SHAPE(N, L, a->E)) : NULL;
    out = o ? ct_module_forward(a->out_proj, o) : NULL;
    if (out)
      out = unbatched        ? ct_reshape(out, CT_SHAPE(L, a->E))
            : a->batch_first ? out
                             : ct_transpose(out, 0, 1);
  }
  if (out) ct_keep(out);
  ct_scope_end();
  return out;
}

static ct_tensor *mha_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)self;
  return ct_multihead_attention_forward(m, x, x, x, NULL);
}
static const ct_module_vtable mha_vt = {"MultiheadAttention", mha_forward, ct__free};

ct_tensor *ct_multihead_attention_forward(ct_module *mha, const ct_tensor *query,
                                          const ct_tensor *key, const ct_tensor *value,
                                          const ct_attention_masks *masks) {
  if (!mha || !query || !key || !value) {
    if (!mha) ct__fail(CT_ERR_ARG, "%s: no module given", mha_op);
    return NULL;
  }
  if (ct__module_vtable(mha) != &mha_vt)
    return ct__fail(CT_ERR_ARG, "%s: expected a MultiheadAttention module, got %s", mha_op,
                    ct_module_type_name(mha));
  return mha_run(mha, query, key, value, masks);
}

ct_module *ct_multihead_attention_new(int64_t embed_dim, int64_t num_heads, double dropout,
                                      bool bias, bool batch_first, const ct_module_opts *opts) {
  static const char op[] = "multihead_attention_new";
  ct_module_opts o;
  if (!ct__module_opts(op, opts, &o)) return NULL;
  if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0)
    return ct__fail(CT_ERR_ARG,
                    "%s: embed_dim (%lld) must be a positive multiple of num_heads (%lld)", op,
                    (long long)embed_dim, (long long)num_heads);
  if (!(dropout >= 0 && dropout <= 1))
    return ct__fail(CT_ERR_ARG, "%s: dropout must be in [0, 1], got %g", op, dropout);
  mha_impl *a = ct__calloc(1, sizeof *a);
  if (!a) return ct__fail(CT_ERR_OOM, "%s: out of host memory", op);
  ct_module *m = ct__module_new_builtin(&mha_vt, a);
  if (!m) return NULL;
  a->E = embed_dim, a->H = num_heads, a->dropout = dropout, a->batch_first = batch_first;
  int64_t E = embed_dim;
  /* xavier_uniform_: U(-b, b), b = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / (E + 3E)) */
  a->in_w = ct_module_register_parameter(
      m, "in_proj_weight", ct__init_uniform(CT_SHAPE(3 * E, E), sqrt(6.0 / (4.0 * (double)E)), &o));
  bool ok = a->in_w != NULL;
  if (ok && bias)
    ok = (a->in_b = ct_module_register_parameter(
              m, "in_proj_bias", ct__init_full(CT_SHAPE(3 * E), 0.0, o.dtype, &o))) != NULL;
  if (ok)
    ok = (a->out_proj = ct_module_register_module(m, "out_proj", ct_linear_new(E, E, bias, &o))) !=
         NULL;
  if (ok && bias) { /* torch zeroes out_proj.bias */
    ct_no_grad_begin();
    ok = ct_zero_(ct_module_get(a->out_proj, "bias")) != NULL;
    ct_no_grad_end();
  }
  if (ok) return m;
  ct_module_free(m);
  return NULL;
}

/* ---- TransformerEncoderLayer ----------------------------------------------------- */

typedef struct encoder_impl {
  bool norm_first, gelu;
  ct_module *sa, *l1, *drop, *l2, *n1, *n2, *d1, *d2;
} encoder_impl;

static const char enc_op[] = "transformer_encoder_layer";

static ct_tensor *sa_block(const encoder_impl *e, const ct_tensor *x,
                           const ct_attention_masks *mk) {
  return ct_module_forward(e->d1, ct_multihead_attention_forward(e->sa, x, x, x, mk));
}
static ct_tensor *ff_block(const encoder_impl *e, const ct_tensor *x) {
  ct_tensor *h = ct_module_forward(e->l1, x);
  h = e->gelu ? ct_gelu(h) : ct_relu(h);
  return ct_module_forward(e->d2, ct_module_forward(e->l2, ct_module_forward(e->drop, h)));
}

static ct_tensor *encoder_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)self;
  return ct_transformer_encoder_layer_forward(m, x, NULL);
}
static const ct_module_vtable encoder_vt = {"TransformerEncoderLayer", encoder_forward, ct__free};

ct_tensor *ct_transformer_encoder_layer_forward(ct_module *layer, const ct_tensor *src,
                                                const ct_attention_masks *masks) {
  if (!layer) return ct__fail(CT_ERR_ARG, "%s: no module given", enc_op);
  if (!src) return NULL;
  if (ct__module_vtable(layer) != &encoder_vt)
    return ct__fail(CT_ERR_ARG, "%s: expected a TransformerEncoderLayer module, got %s", enc_op,
                    ct_module_type_name(layer));
  const encoder_impl *e = ct__module_impl(layer);
  if (ct_scope_begin() != CT_OK) return NULL;
  ct_tensor *x;
  if (e->norm_first) {
    x = ct_add(src, sa_block(e, ct_module_forward(e->n1, src), masks));
    x = x ? ct_add(x, ff_block(e, ct_module_forward(e->n2, x))) : NULL;
  } else {
    x = ct_module_forward(e->n1, ct_add(src, sa_block(e, src, masks)));
    x = x ? ct_module_forward(e->n2, ct_add(x, ff_block(e, x))) : NULL;
  }
  if (x) ct_keep(x);
  ct_scope_end();
  return x;
}

ct_module *ct_transformer_encoder_layer_new(const ct_transformer_opts *t,
                                            const ct_module_opts *opts) {
  static const char op[] = "transformer_encoder_layer_new";
  if (!t) return ct__fail(CT_ERR_ARG, "%s: options with d_model and nhead are required", op);
  int64_t D = t->d_model, F = t->dim_feedforward ? t->dim_feedforward : 2048;
  double eps = t->layer_norm_eps != 0 ? t->layer_norm_eps : 1e-5;
  if (F < 1)
    return ct__fail(CT_ERR_ARG, "%s: dim_feedforward must be positive, got %lld", op, (long long)F);
  encoder_impl *e = ct__calloc(1, sizeof *e);
  if (!e) return ct__fail(CT_ERR_OOM, "%s: out of host memory", op);
  ct_module *m = ct__module_new_builtin(&encoder_vt, e);
  if (!m) return NULL;
  e->norm_first = t->norm_first, e->gelu = t->gelu;
  /* torch's registration order, hence its state_dict order */
  bool ok =
      (e->sa = ct_module_register_module(
           m, "self_attn",
           ct_multihead_attention_new(D, t->nhead, t->dropout, true, t->batch_first, opts))) &&
      (e->l1 = ct_module_register_module(m, "linear1", ct_linear_new(D, F, true, opts))) &&
      (e->drop = ct_module_register_module(m, "dropout", ct_dropout_new(t->dropout))) &&
      (e->l2 = ct_module_register_module(m, "linear2", ct_linear_new(F, D, true, opts))) &&
      (e->n1 = ct_module_register_module(m, "norm1", ct_layer_norm_new(CT_SHAPE(D), eps, opts))) &&
      (e->n2 = ct_module_register_module(m, "norm2", ct_layer_norm_new(CT_SHAPE(D), eps, opts))) &&
      (e->d1 = ct_module_register_module(m, "dropout1", ct_dropout_new(t->dropout))) &&
      (e->d2 = ct_module_register_module(m, "dropout2", ct_dropout_new(t->dropout)));
  if (ok) return m;
  ct_module_free(m);
  return NULL;
}
