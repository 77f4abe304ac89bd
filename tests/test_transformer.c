/* MultiheadAttention and TransformerEncoderLayer against torch.nn's, with
 * torch's weights copied in by state_dict name: outputs with bool and float
 * masks, key padding, causal, batch_first, unbatched inputs, pre- and
 * post-norm, ReLU and GELU; the input's and a weight's gradients; dropout
 * active only in training mode; the errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "from torch import nn\n"
    "d = sys.argv[1]; torch.manual_seed(0); torch.set_default_dtype(torch.float64)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "def save_state(prefix, m):\n"
    "    for k, v in m.state_dict().items(): save(prefix + '.' + k, v)\n"
    "E, H = 16, 4\n"
    "mha = nn.MultiheadAttention(E, H); save_state('mha', mha)\n"
    "q, k, v = torch.randn(5, 2, E), torch.randn(7, 2, E), torch.randn(7, 2, E)\n"
    "am = torch.rand(5, 7) > 0.7; am[:, 0] = False\n"
    "kpm = torch.zeros(2, 7, dtype=torch.bool); kpm[1, 5:] = True\n"
    "fm = torch.randn(2 * H, 5, 7)\n"
    "for n, t in [('q', q), ('k', k), ('v', v), ('am', am), ('kpm', kpm), ('fm', fm)]: save(n, t)\n"
    "save('mha_plain', mha(q, k, v, need_weights=False)[0])\n"
    "save('mha_masks', mha(q, k, v, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0])\n"
    "save('mha_float', mha(q, k, v, attn_mask=fm, need_weights=False)[0])\n"
    "save('mha_unbatched', mha(q[:, 0], k[:, 0], v[:, 0], need_weights=False)[0])\n"
    "cm = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)\n"
    "save('mha_causal', mha(q, q, q, attn_mask=cm, need_weights=False)[0])\n"
    "for name, nf, act, bf in [('post_relu', False, 'relu', False), ('pre_gelu', True, 'gelu', "
    "True)]:\n"
    "    layer = nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, activation=act, batch_first=bf, "
    "norm_first=nf)\n"
    "    save_state(name, layer)\n"
    "    x = torch.randn(2, 6, E).requires_grad_(); go = torch.randn(2, 6, E)\n"
    "    src = x if bf else x.transpose(0, 1)\n"
    "    y = layer(src, src_mask=torch.triu(torch.ones(6, 6, dtype=torch.bool), 1))\n"
    "    y = y if bf else y.transpose(0, 1)\n"
    "    y.backward(go)\n"
    "    save(name + '_x', x); save(name + '_go', go); save(name + '_y', y); save(name + '_gx', "
    "x.grad)\n"
    "    save(name + '_gw1', layer.linear1.weight.grad)\n";

static const char *dir;
static bool torch_data(void) {
  static bool tried;
  if (!tried) dir = ct_test_torch_outputs("transformer", TORCH_SCRIPT), tried = true;
  if (!dir) ct_test_skip("python3 with torch and numpy not available");
  return dir != NULL;
}

/* Copies torch's state_dict (saved as <prefix>.<name>.npy) into m. */
static void load_state(ct_module *m, const char *prefix) {
  ct_tensor *params[32];
  const char *names[32];
  int n = ct_module_state(m, params, names, 32);
  CHECK(n > 0 && n <= 32);
  ct_no_grad_begin();
  for (int i = 0; i < n && i < 32; i++) {
    char file[128];
    snprintf(file, sizeof file, "%s.%s", prefix, names[i]);
    ct_tensor *t = ct_test_load_output(dir, file);
    WITH_CONTEXT(CHECK_OK(t && ct_copy_(params[i], t)), "%s", file);
  }
  ct_no_grad_end();
}

static ct_tensor *load(const char *name) { return ct_test_load_output(dir, name); }

static ct_module_opts f64_opts(void) {
  return (ct_module_opts){.dtype = CT_F64, .device = ct_test_device()};
}

CT_TEST(multihead_attention_matches_torch) {
  if (!torch_data()) return;
  ct_module_opts o = f64_opts();
  ct_module *mha = ct_multihead_attention_new(16, 4, 0.0, true, false, &o);
  CHECK_OK(mha);
  if (!mha) return;
  CHECK(ct_module_num_parameters(mha, false) == 3 * 16 * 16 + 3 * 16 + 16 * 16 + 16);
  load_state(mha, "mha");
  ct_tensor *q = load("q"), *k = load("k"), *v = load("v");
  ct_tensor *am = ct_cast(load("am"), CT_BOOL), *kpm = ct_cast(load("kpm"), CT_BOOL);
  double tol = 1e-10;
  CHECK_LIKE_TORCH(dir, "plain", ct_multihead_attention_forward(mha, q, k, v, NULL), "mha_plain",
                   tol, tol);
  CHECK_LIKE_TORCH(
      dir, "masks",
      ct_multihead_attention_forward(mha, q, k, v, &(ct_attention_masks){am, kpm, false}),
      "mha_masks", tol, tol);
  CHECK_LIKE_TORCH(
      dir, "float mask",
      ct_multihead_attention_forward(mha, q, k, v, &(ct_attention_masks){.attn_mask = load("fm")}),
      "mha_float", tol, tol);
  ct_tensor *q0 = ct_contiguous(ct_select(q, 1, 0)), *k0 = ct_contiguous(ct_select(k, 1, 0));
  ct_tensor *v0 = ct_contiguous(ct_select(v, 1, 0));
  CHECK_LIKE_TORCH(dir, "unbatched", ct_multihead_attention_forward(mha, q0, k0, v0, NULL),
                   "mha_unbatched", tol, tol);
  CHECK_LIKE_TORCH(
      dir, "causal",
      ct_multihead_attention_forward(mha, q, q, q, &(ct_attention_masks){.is_causal = true}),
      "mha_causal", tol, tol);
  /* ct_module_forward is self-attention */
  ct_tensor *self = ct_module_forward(mha, q),
            *self2 = ct_multihead_attention_forward(mha, q, q, q, NULL);
  double *sv = self2 ? ct_test_values(self2) : NULL;
  if (sv) CHECK_CLOSE(self, sv, 0, 0);
  free(sv);
  ct_module_free(mha);
}

static void check_encoder(const char *name, bool norm_first, bool gelu, bool batch_first) {
  ct_module_opts o = f64_opts();
  ct_module *layer =
      ct_transformer_encoder_layer_new(&(ct_transformer_opts){.d_model = 16,
                                                              .nhead = 4,
                                                              .dim_feedforward = 32,
                                                              .dropout = 0.0,
                                                              .gelu = gelu,
                                                              .batch_first = batch_first,
                                                              .norm_first = norm_first},
                                       &o);
  CHECK_OK(layer);
  if (!layer) return;
  load_state(layer, name);
  char n[64];
  snprintf(n, sizeof n, "%s_x", name);
  ct_tensor *x = ct_requires_grad_(load(n), true);
  ct_tensor *src = batch_first ? x : ct_transpose(x, 0, 1);
  ct_tensor *y =
      ct_transformer_encoder_layer_forward(layer, src, &(ct_attention_masks){.is_causal = true});
  if (y && !batch_first) y = ct_transpose(y, 0, 1);
  snprintf(n, sizeof n, "%s_y", name);
  CHECK_LIKE_TORCH(dir, n, y, n, 1e-10, 1e-10);
  snprintf(n, sizeof n, "%s_go", name);
  CHECK_STATUS_OK(ct_backward(y, load(n), NULL));
  snprintf(n, sizeof n, "%s_gx", name);
  CHECK_LIKE_TORCH(dir, n, ct_grad(x), n, 1e-9, 1e-9);
  snprintf(n, sizeof n, "%s_gw1", name);
  CHECK_LIKE_TORCH(dir, n, ct_grad(ct_module_get(layer, "linear1.weight")), n, 1e-9, 1e-9);
  ct_module_free(layer);
}

CT_TEST(transformer_encoder_layer_matches_torch) {
  if (!torch_data()) return;
  check_encoder("post_relu", false, false, false);
  check_encoder("pre_gelu", true, true, true);
}

/* Dropout in training mode only: two training calls differ, evaluation is
 * deterministic and equals the layer without dropout. */
CT_TEST(transformer_dropout_follows_mode) {
  ct_module_opts o = {.dtype = CT_F32, .device = ct_test_device()};
  ct_manual_seed(3);
  ct_module *layer = ct_transformer_encoder_layer_new(
      &(ct_transformer_opts){
          .d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.5, .batch_first = true},
      &o);
  CHECK_OK(layer);
  if (!layer) return;
  ct_tensor *x = ct_randn(CT_SHAPE(2, 5, 8), &(ct_tensor_opts){.device = ct_test_device()});
  ct_module_train(layer, true);
  double *a = ct_test_values(ct_module_forward(layer, x)),
         *b = ct_test_values(ct_module_forward(layer, x));
  int64_t differ = 0;
  for (int i = 0; a && b && i < 80; i++) differ += a[i] != b[i];
  CHECK(a && b && differ > 0);
  ct_module_train(layer, false);
  double *c = ct_test_values(ct_module_forward(layer, x));
  if (c) CHECK_CLOSE(ct_module_forward(layer, x), c, 0, 0);
  free(a), free(b), free(c);
  ct_module_free(layer);
}

CT_TEST(transformer_bad_arguments) {
  ct_module_opts o = {.device = ct_test_device()};
  CHECK_ERR_MSG(ct_multihead_attention_new(10, 3, 0, true, false, &o), CT_ERR_ARG,
                "multiple of num_heads");
  CHECK_ERR_MSG(ct_multihead_attention_new(8, 2, 1.5, true, false, &o), CT_ERR_ARG, "dropout");
  CHECK_ERR(ct_transformer_encoder_layer_new(NULL, &o), CT_ERR_ARG);
  ct_module *mha = ct_multihead_attention_new(8, 2, 0, true, false, &o);
  ct_tensor_opts to = {.device = ct_test_device()};
  ct_tensor *q = ct_ones(CT_SHAPE(3, 2, 8), &to);
  CHECK_ERR_MSG(ct_multihead_attention_forward(mha, q, ct_ones(CT_SHAPE(4, 2, 7), &to), q, NULL),
                CT_ERR_SHAPE, "embed_dim 8");
  CHECK_ERR_MSG(ct_multihead_attention_forward(
                    mha, q, q, q, &(ct_attention_masks){.attn_mask = ct_ones(CT_SHAPE(3, 4), &to)}),
                CT_ERR_SHAPE, "attn_mask of shape (3, 3)");
  CHECK_ERR_MSG(
      ct_multihead_attention_forward(
          mha, q, q, q, &(ct_attention_masks){.key_padding_mask = ct_ones(CT_SHAPE(3, 3), &to)}),
      CT_ERR_SHAPE, "key_padding_mask of shape (2, 3)");
  ct_module *relu = ct_relu_new();
  CHECK_ERR_MSG(ct_multihead_attention_forward(relu, q, q, q, NULL), CT_ERR_ARG,
                "MultiheadAttention");
  CHECK_ERR_MSG(ct_transformer_encoder_layer_forward(mha, q, NULL), CT_ERR_ARG,
                "TransformerEncoderLayer");
  ct_module_free(relu);
  ct_module_free(mha);
}
