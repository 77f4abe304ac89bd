/* The one-node LSTM/GRU layer (nn/rnn_layer.h), the modules' f32/f64 path:
 * finite-difference gradients of every input (x, h0, c0, both weights, both
 * biases) in f64, forward and reverse, a batch-first (strided) input, one
 * step and several, with and without biases; a bidirectional 2-layer module
 * against the per-step composition of ct_linear and the pointwise cells
 * (outputs, final states and every gradient within 1e-12 in f64); f32
 * (on the CPU through the packed recurrent GEMM) against f64; f32 records
 * the node; mixed dtypes keep the per-step composition. */
#include "ct_gradcheck.h"
#include "ct_test.h"
#include "nn/rnn_layer.h"

CT_TEST_DEVICE_GENERIC

typedef struct layer_case {
  bool lstm, reverse, batch_first, bias;
  int64_t L;
} layer_case;

/* in: x ((L, N, I), or (N, L, I) when batch_first), h0, c0 (LSTM), w_ih,
 * w_hh, then b_ih, b_hh when the case has biases. */
static ct_tensor *layer_fn(ct_tensor *const *in, void *ctx) {
  const layer_case *c = ctx;
  int k = 0;
  ct_rnn_layer_args a = {.kind = c->lstm ? CT_RNN_CELL_LSTM : CT_RNN_CELL_GRU,
                         .reverse = c->reverse};
  a.in = c->batch_first ? ct_transpose(in[k], 0, 1) : in[k];
  k++;
  a.h0 = in[k++];
  if (c->lstm) a.c0 = in[k++];
  a.w_ih = in[k++];
  a.w_hh = in[k++];
  if (c->bias) a.b_ih = in[k++], a.b_hh = in[k++];
  return ct__rnn_layer(&a);
}

CT_TEST(layer_gradients_match_finite_differences) {
  const layer_case cases[] = {
      {.lstm = true, .L = 3, .bias = true},
      {.lstm = true, .L = 3, .bias = true, .reverse = true, .batch_first = true},
      {.lstm = true, .L = 1, .reverse = true},
      {.lstm = false, .L = 3, .bias = true, .batch_first = true},
      {.lstm = false, .L = 3, .bias = true, .reverse = true},
      {.lstm = false, .L = 1, .bias = true},
  };
  const int64_t N = 2, I = 3, H = 2;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const layer_case *c = &cases[ci];
    int64_t G = (c->lstm ? 4 : 3) * H;
    ct_scope_begin();
    ct_tensor *in[7];
    int n = 0;
    unsigned seed = 40 + 10 * (unsigned)ci;
    in[n++] = c->batch_first ? ct_gradcheck_input(CT_SHAPE(N, c->L, I), -1, 1, seed)
                             : ct_gradcheck_input(CT_SHAPE(c->L, N, I), -1, 1, seed);
    in[n++] = ct_gradcheck_input(CT_SHAPE(N, H), -1, 1, seed + 1);
    if (c->lstm) in[n++] = ct_gradcheck_input(CT_SHAPE(N, H), -1, 1, seed + 2);
    in[n++] = ct_gradcheck_input(CT_SHAPE(G, I), -1, 1, seed + 3);
    in[n++] = ct_gradcheck_input(CT_SHAPE(G, H), -1, 1, seed + 4);
    if (c->bias) {
      in[n++] = ct_gradcheck_input(CT_SHAPE(G), -1, 1, seed + 5);
      in[n++] = ct_gradcheck_input(CT_SHAPE(G), -1, 1, seed + 6);
    }
    char name[64];
    snprintf(name, sizeof name, "%s layer L=%lld%s%s%s", c->lstm ? "lstm" : "gru", (long long)c->L,
             c->reverse ? " reverse" : "", c->batch_first ? " batch_first" : "",
             c->bias ? "" : " no bias");
    CHECK_GRADIENTS(name, layer_fn, (void *)c, in, n);
    ct_tensor *out = layer_fn(in, (void *)c);
    CHECK_OK(out);
    if (out)
      CHECK_MSG(
          strcmp(ct_grad_fn_name(out), c->lstm ? "LstmLayerBackward" : "GruLayerBackward") == 0,
          "%s: recorded as %s", name, ct_grad_fn_name(out));
    ct_scope_end();
  }
}

/* The reference: every direction of every layer step by step with
 * ct_linear and the pointwise cells (the modules' path for f16/bf16), from
 * the module's parameters in torch's order; x (L, N, I). */
static ct_tensor *per_step(bool lstm, ct_tensor *const *params, int layers, int dirs,
                           const ct_tensor *x, const ct_tensor *h0, const ct_tensor *c0,
                           ct_tensor **h_n, ct_tensor **c_n) {
  int64_t L = ct_shape(x)[0];
  ct_tensor *hs[16], *finals[16];
  const ct_tensor *in = x;
  for (int k = 0; k < layers; k++) {
    ct_tensor *outs[2];
    for (int d = 0; d < dirs; d++) {
      int si = k * dirs + d;
      ct_tensor *const *w = params + 4 * si;
      ct_tensor *h = ct_select(h0, 0, si), *c = lstm ? ct_select(c0, 0, si) : NULL;
      for (int64_t s = 0; s < L; s++) {
        int64_t t = d ? L - 1 - s : s;
        ct_tensor *gi = ct_linear(ct_select(in, 0, t), w[0], w[2]);
        ct_tensor *gh = ct_linear(h, w[1], w[3]);
        h = lstm ? ct_lstm_cell_pointwise(gi, gh, c, &c) : ct_gru_cell_pointwise(gi, gh, h);
        hs[t] = h;
      }
      outs[d] = ct_stack(hs, (int)L, 0);
      finals[si] = h, finals[layers * dirs + si] = c;
    }
    in = dirs == 2 ? ct_cat(outs, 2, 2) : outs[0];
  }
  *h_n = ct_stack(finals, layers * dirs, 0);
  if (lstm) *c_n = ct_stack(finals + layers * dirs, layers * dirs, 0);
  return (ct_tensor *)in;
}

/* sum(t * cos(0, 1, 2, ...)): a loss that weighs every element differently. */
static ct_tensor *weighted(const ct_tensor *t) {
  ct_tensor *f = ct_flatten(t, 0, -1);
  ct_tensor *w = ct_cos(ct_arange(0, (double)ct_numel(t), 1,
                                  &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()}));
  return ct_sum(ct_mul(f, w), NULL);
}

static double err(const ct_tensor *a, const ct_tensor *b) {
  double d = 1;
  ct_item(ct_max(ct_abs(ct_sub(a, b)), NULL), &d);
  return d;
}

CT_TEST(module_layers_match_the_per_step_composition) {
  const int64_t L = 5, N = 3, I = 4, H = 3;
  for (int v = 0; v < 2; v++) {
    bool lstm = v == 0;
    ct_scope_begin();
    ct_rnn_opts o = {.input_size = I,
                     .hidden_size = H,
                     .num_layers = 2,
                     .bidirectional = true,
                     .batch_first = true};
    ct_module *m =
        lstm ? ct_lstm_new(&o, &(ct_module_opts){.dtype = CT_F64, .device = ct_test_device()})
             : ct_gru_new(&o, &(ct_module_opts){.dtype = CT_F64, .device = ct_test_device()});
    CHECK_OK(m);
    ct_tensor *p[16], *x = ct_gradcheck_input(CT_SHAPE(N, L, I), -2, 2, 71);
    ct_tensor *h0 = ct_gradcheck_input(CT_SHAPE(4, N, H), -1, 1, 72);
    ct_tensor *c0 = ct_gradcheck_input(CT_SHAPE(4, N, H), -1, 1, 73);
    int np = m ? ct_module_parameters(m, p, NULL, 16) : 0;
    CHECK(np == 16);
    ct_tensor *leaves[19] = {x, h0, c0};
    for (int i = 0; i < np; i++) leaves[3 + i] = p[i];
    int nl = 3 + np;
    /* the module: every direction one node */
    ct_tensor *hn = NULL, *cn = NULL;
    ct_tensor *y = lstm ? ct_lstm_forward(m, x, h0, c0, &hn, &cn) : ct_gru_forward(m, x, h0, &hn);
    CHECK_OK(y);
    ct_tensor *loss = ct_add(weighted(y), weighted(hn));
    if (lstm) loss = ct_add(loss, weighted(cn));
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    ct_tensor *grads[19];
    for (int i = 0; i < nl; i++) {
      grads[i] = ct_clone(ct_grad(leaves[i]));
      CHECK_STATUS_OK(ct_set_grad(leaves[i], NULL));
    }
    /* the reference */
    ct_tensor *rhn = NULL, *rcn = NULL;
    ct_tensor *ry = ct_transpose(
        per_step(lstm, p, 2, 2, ct_transpose(x, 0, 1), h0, c0, &rhn, lstm ? &rcn : NULL), 0, 1);
    CHECK_OK(ry);
    ct_tensor *rloss = ct_add(weighted(ry), weighted(rhn));
    if (lstm) rloss = ct_add(rloss, weighted(rcn));
    CHECK_STATUS_OK(ct_backward(rloss, NULL, NULL));
    const char *name = lstm ? "lstm" : "gru";
    double e;
    CHECK_MSG((e = err(y, ry)) <= 1e-12, "%s: output off by %g", name, e);
    CHECK_MSG((e = err(hn, rhn)) <= 1e-12, "%s: h_n off by %g", name, e);
    if (lstm) CHECK_MSG((e = err(cn, rcn)) <= 1e-12, "%s: c_n off by %g", name, e);
    for (int i = 0; i < nl; i++)
      if (lstm || i != 2)
        CHECK_MSG((e = err(grads[i], ct_grad(leaves[i]))) <= 1e-12,
                  "%s: gradient of leaf %d off by %g", name, i, e);
    ct_module_free(m);
    ct_scope_end();
  }
}

/* f32 (on the CPU: the recurrent GEMM on the packed W_hh, rnn_gemm.c) against
 * the same module in f64: 13 rows (a block of 8 and one of 5) and H = 20
 * (panels of 32 cut at 16 and past 16 columns, forward and backward). */
CT_TEST(f32_layers_match_f64) {
  const int64_t L = 4, N = 13, I = 3, H = 20;
  for (int v = 0; v < 2; v++) {
    bool lstm = v == 0;
    ct_scope_begin();
    ct_rnn_opts o = {.input_size = I, .hidden_size = H, .bidirectional = true};
    ct_module *m[2];
    ct_tensor *p[2][8], *x[2], *hn[2] = {NULL, NULL}, *cn[2] = {NULL, NULL}, *y[2];
    const ct_dtype dts[2] = {CT_F32, CT_F64};
    ct_tensor *x64 = ct_gradcheck_input(CT_SHAPE(L, N, I), -2, 2, 91);
    for (int k = 0; k < 2; k++) {
      ct_module_opts mo = {.dtype = dts[k], .device = ct_test_device()};
      m[k] = lstm ? ct_lstm_new(&o, &mo) : ct_gru_new(&o, &mo);
      CHECK_OK(m[k]);
      CHECK(m[k] && ct_module_parameters(m[k], p[k], NULL, 8) == 8);
    }
    ct_no_grad_begin();
    for (int i = 0; i < 8 && m[0] && m[1]; i++) CHECK_OK(ct_copy_(p[1][i], p[0][i]));
    ct_no_grad_end();
    for (int k = 0; k < 2 && m[0] && m[1]; k++) {
      x[k] = ct_requires_grad_(ct_detach(ct_cast(x64, dts[k])), true);
      y[k] = lstm ? ct_lstm_forward(m[k], x[k], NULL, NULL, &hn[k], &cn[k])
                  : ct_gru_forward(m[k], x[k], NULL, &hn[k]);
      CHECK_OK(y[k]);
      ct_tensor *loss = ct_add(weighted(ct_cast(y[k], CT_F64)), weighted(ct_cast(hn[k], CT_F64)));
      if (lstm) loss = ct_add(loss, weighted(ct_cast(cn[k], CT_F64)));
      CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    }
    const char *name = lstm ? "lstm" : "gru";
    double e;
    if (m[0] && m[1] && y[0] && y[1]) {
      CHECK_MSG((e = err(ct_cast(y[0], CT_F64), y[1])) <= 1e-5, "%s: f32 output off by %g", name,
                e);
      CHECK_MSG((e = err(ct_cast(hn[0], CT_F64), hn[1])) <= 1e-5, "%s: f32 h_n off by %g", name, e);
      CHECK_MSG((e = err(ct_cast(ct_grad(x[0]), CT_F64), ct_grad(x[1]))) <= 1e-4,
                "%s: f32 input gradient off by %g", name, e);
      for (int i = 0; i < 8; i++)
        CHECK_MSG((e = err(ct_cast(ct_grad(p[0][i]), CT_F64), ct_grad(p[1][i]))) <= 1e-4,
                  "%s: f32 gradient of parameter %d off by %g", name, i, e);
    }
    ct_module_free(m[0]);
    ct_module_free(m[1]);
    ct_scope_end();
  }
}

CT_TEST(f32_runs_the_layer_node_and_mixed_dtypes_compose) {
  ct_rnn_opts o = {.input_size = 3, .hidden_size = 4};
  ct_scope_begin();
  ct_module *m = ct_gru_new(&o, &(ct_module_opts){.dtype = CT_F32, .device = ct_test_device()});
  CHECK_OK(m);
  ct_tensor_opts f32 = {.dtype = CT_F32, .device = ct_test_device()};
  ct_tensor *x = ct_requires_grad_(ct_ones(CT_SHAPE(6, 2, 3), &f32), true);
  ct_tensor *y = m ? ct_module_forward(m, x) : NULL;
  CHECK_OK(y);
  if (y) CHECK(strcmp(ct_grad_fn_name(y), "GruLayerBackward") == 0);
  CHECK_SHAPE(y, 6, 2, 4);
  ct_tensor *x64 =
      ct_ones(CT_SHAPE(6, 2, 3), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  /* an f64 input to f32 weights: the per-step composition, which promotes */
  ct_tensor *y64 = m ? ct_module_forward(m, x64) : NULL;
  CHECK_OK(y64);
  if (y64) {
    CHECK(ct_dtype_of(y64) == CT_F64);
    CHECK(strcmp(ct_grad_fn_name(y64), "GruLayerBackward") != 0);
  }
  ct_module_free(m);
  ct_scope_end();
}

/* Without a gradient the steps share one workspace: the same outputs and
 * final states as with one, bit for bit. */
CT_TEST(no_grad_forward_matches_the_recorded_one) {
  const int64_t L = 5, N = 3, I = 4, H = 6;
  for (int v = 0; v < 2; v++) {
    bool lstm = v == 0;
    ct_scope_begin();
    ct_rnn_opts o = {.input_size = I, .hidden_size = H, .num_layers = 2, .bidirectional = true};
    ct_module_opts mo = {.dtype = CT_F32, .device = ct_test_device()};
    ct_module *m = lstm ? ct_lstm_new(&o, &mo) : ct_gru_new(&o, &mo);
    CHECK_OK(m);
    ct_tensor *x = ct_cast(ct_gradcheck_input(CT_SHAPE(L, N, I), -2, 2, 17), CT_F32);
    ct_tensor *y[2], *hn[2] = {NULL, NULL}, *cn[2] = {NULL, NULL};
    for (int k = 0; k < 2 && m; k++) {
      if (k == 1) ct_no_grad_begin();
      y[k] = lstm ? ct_lstm_forward(m, x, NULL, NULL, &hn[k], &cn[k])
                  : ct_gru_forward(m, x, NULL, &hn[k]);
      if (k == 1) ct_no_grad_end();
      CHECK_OK(y[k]);
    }
    if (m && y[0] && y[1]) {
      CHECK(ct_requires_grad(y[0]) && !ct_requires_grad(y[1]));
      CHECK(err(y[0], y[1]) == 0);
      CHECK(err(hn[0], hn[1]) == 0);
      if (lstm) CHECK(err(cn[0], cn[1]) == 0);
    }
    ct_module_free(m);
    ct_scope_end();
  }
}
