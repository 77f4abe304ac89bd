/* LSTM and GRU against torch.nn.LSTM / torch.nn.GRU with the same weights
 * (skipped without python3 + torch): outputs, final states, and the
 * gradients of a weighted sum of them with respect to the input, the initial
 * states and every weight, in f64 (multi-layer, bidirectional, batch_first,
 * no bias, unbatched input, zero initial states, sequences longer than one
 * projection block); finite-difference gradients (bidirectional too);
 * torch's parameter names, shapes and initialization bounds; argument
 * errors. */
#include "ct_gradcheck.h"
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]\n"
    "torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().numpy())\n"
    "cases = [\n"
    "  ('lstm2bf', torch.nn.LSTM, dict(input_size=5, hidden_size=4, num_layers=2, "
    "batch_first=True), (3, 6, 5), True),\n"
    "  ('gru2', torch.nn.GRU, dict(input_size=5, hidden_size=4, num_layers=2), (6, 3, 5), True),\n"
    "  ('lstm_unbatched', torch.nn.LSTM, dict(input_size=3, hidden_size=4, bias=False), (5, 3), "
    "False),\n"
    "  ('gru3bf', torch.nn.GRU, dict(input_size=3, hidden_size=2, num_layers=3, bias=False, "
    "batch_first=True), (2, 4, 3), False),\n"
    "  ('lstm_bi2bf', torch.nn.LSTM, dict(input_size=5, hidden_size=4, num_layers=2, "
    "batch_first=True, bidirectional=True), (3, 10, 5), True),\n"
    "  ('gru_bi2', torch.nn.GRU, dict(input_size=5, hidden_size=3, num_layers=2, "
    "bidirectional=True), (11, 3, 5), True),\n"
    "  ('lstm_bi1', torch.nn.LSTM, dict(input_size=3, hidden_size=2, bidirectional=True), "
    "(4, 2, 3), False),\n"
    "]\n"
    "for name, cls, kw, xs, states in cases:\n"
    "  m = cls(**kw).double()\n"
    "  for pn, p in m.named_parameters(): save(f'{name}_{pn}', p)\n"
    "  x = torch.randn(*xs, dtype=torch.float64, requires_grad=True); save(f'{name}_x', x)\n"
    "  L = kw.get('num_layers', 1) * (2 if kw.get('bidirectional') else 1); H = kw['hidden_size']\n"
    "  sh = (L, H) if len(xs) == 2 else (L, xs[0] if kw.get('batch_first') else xs[1], H)\n"
    "  lstm = cls is torch.nn.LSTM\n"
    "  h0 = torch.randn(*sh, dtype=torch.float64, requires_grad=True) if states else None\n"
    "  c0 = torch.randn(*sh, dtype=torch.float64, requires_grad=True) if states and lstm else "
    "None\n"
    "  if h0 is not None: save(f'{name}_h0', h0)\n"
    "  if c0 is not None: save(f'{name}_c0', c0)\n"
    "  if lstm: y, (hn, cn) = m(x, (h0, c0)) if states else m(x)\n"
    "  else: y, hn = m(x, h0) if states else m(x)\n"
    "  wy = torch.randn_like(y); wh = torch.randn_like(hn); save(f'{name}_wy', wy); "
    "save(f'{name}_wh', wh)\n"
    "  loss = (y * wy).sum() + (hn * wh).sum()\n"
    "  if lstm: wc = torch.randn_like(cn); save(f'{name}_wc', wc); save(f'{name}_cn', cn); "
    "loss = loss + (cn * wc).sum()\n"
    "  save(f'{name}_y', y); save(f'{name}_hn', hn)\n"
    "  loss.backward()\n"
    "  save(f'{name}_grad_x', x.grad)\n"
    "  if h0 is not None: save(f'{name}_grad_h0', h0.grad)\n"
    "  if c0 is not None: save(f'{name}_grad_c0', c0.grad)\n"
    "  for pn, p in m.named_parameters(): save(f'{name}_grad_{pn}', p.grad)\n";

typedef struct rnn_case {
  const char *name;
  bool lstm;
  ct_rnn_opts o;
  bool states;
} rnn_case;

static const rnn_case CASES[] = {
    {"lstm2bf",
     true,
     {.input_size = 5, .hidden_size = 4, .num_layers = 2, .batch_first = true},
     true},
    {"gru2", false, {.input_size = 5, .hidden_size = 4, .num_layers = 2}, true},
    {"lstm_unbatched", true, {.input_size = 3, .hidden_size = 4, .no_bias = true}, false},
    {"gru3bf",
     false,
     {.input_size = 3, .hidden_size = 2, .num_layers = 3, .no_bias = true, .batch_first = true},
     false},
    {"lstm_bi2bf",
     true,
     {.input_size = 5,
      .hidden_size = 4,
      .num_layers = 2,
      .batch_first = true,
      .bidirectional = true},
     true},
    {"gru_bi2",
     false,
     {.input_size = 5, .hidden_size = 3, .num_layers = 2, .bidirectional = true},
     true},
    {"lstm_bi1", true, {.input_size = 3, .hidden_size = 2, .bidirectional = true}, false},
};

static ct_tensor *load(const char *dir, const char *c, const char *what, bool grad) {
  char name[96];
  snprintf(name, sizeof name, "%s_%s", c, what);
  ct_tensor *t = ct_test_load_output(dir, name);
  return t && grad ? ct_requires_grad_(t, true) : t;
}

static ct_tensor *weighted(const ct_tensor *t, const ct_tensor *w) {
  return ct_sum(ct_mul(t, w), NULL);
}

/* got against torch's <case>_<what>.npy (f64: both sides sum the same terms
 * in different orders). */
static void compare(const char *dir, const char *c, const char *what, const ct_tensor *got) {
  char name[96], label[128];
  snprintf(name, sizeof name, "%s_%s", c, what);
  snprintf(label, sizeof label, "%s: %s", c, what);
  CHECK_LIKE_TORCH(dir, label, got, name, 1e-10, 1e-12);
}

CT_TEST(lstm_and_gru_match_torch_outputs_and_gradients) {
  const char *dir = ct_test_torch_outputs("rnn", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
    const rnn_case *c = &CASES[ci];
    ct_scope_begin();
    ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
    ct_module *m = c->lstm ? ct_lstm_new(&c->o, &mo) : ct_gru_new(&c->o, &mo);
    CHECK_OK(m);
    const char *pnames[16];
    ct_tensor *params[16];
    int np = m ? ct_module_parameters(m, params, pnames, 16) : 0;
    CHECK(np == (c->o.no_bias ? 2 : 4) * (c->o.num_layers ? c->o.num_layers : 1) *
                    (c->o.bidirectional ? 2 : 1));
    ct_no_grad_begin();
    for (int i = 0; i < np && i < 16; i++)
      CHECK_OK(ct_copy_(params[i], load(dir, c->name, pnames[i], false)));
    ct_no_grad_end();
    ct_tensor *x = load(dir, c->name, "x", true);
    ct_tensor *h0 = c->states ? load(dir, c->name, "h0", true) : NULL;
    ct_tensor *c0 = c->states && c->lstm ? load(dir, c->name, "c0", true) : NULL;
    ct_tensor *hn = NULL, *cn = NULL;
    ct_tensor *y =
        c->lstm ? ct_lstm_forward(m, x, h0, c0, &hn, &cn) : ct_gru_forward(m, x, h0, &hn);
    CHECK_OK(y);
    if (!y) {
      ct_module_free(m);
      ct_scope_end();
      continue;
    }
    ct_tensor *loss = ct_add(weighted(y, load(dir, c->name, "wy", false)),
                             weighted(hn, load(dir, c->name, "wh", false)));
    if (c->lstm) loss = ct_add(loss, weighted(cn, load(dir, c->name, "wc", false)));
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    compare(dir, c->name, "y", y);
    compare(dir, c->name, "hn", hn);
    if (c->lstm) compare(dir, c->name, "cn", cn);
    compare(dir, c->name, "grad_x", ct_grad(x));
    if (h0) compare(dir, c->name, "grad_h0", ct_grad(h0));
    if (c0) compare(dir, c->name, "grad_c0", ct_grad(c0));
    for (int i = 0; i < np && i < 16; i++) {
      char g[64];
      snprintf(g, sizeof g, "grad_%s", pnames[i]);
      compare(dir, c->name, g, ct_grad(params[i]));
    }
    ct_module_free(m);
    ct_scope_end();
  }
}

/* Finite differences: an LSTM's output and final cell state, and a GRU's
 * final state, as functions of the input and the initial states. */
static ct_module *gc_module;
static ct_tensor *lstm_fn(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  ct_tensor *hn, *cn;
  ct_tensor *y = ct_lstm_forward(gc_module, in[0], in[1], in[2], &hn, &cn);
  return y ? ct_cat((ct_tensor *[]){ct_flatten(y, 0, -1), ct_flatten(cn, 0, -1)}, 2, 0) : NULL;
}
static ct_tensor *gru_fn(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  ct_tensor *hn;
  return ct_gru_forward(gc_module, in[0], in[1], &hn) ? hn : NULL;
}

CT_TEST(lstm_and_gru_gradients_match_finite_differences) {
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  for (int v = 0; v < 4; v++) {
    int lstm = v % 2, dirs = v / 2 + 1;
    ct_rnn_opts o = {
        .input_size = 3, .hidden_size = 2, .num_layers = 2, .bidirectional = dirs == 2};
    ct_scope_begin();
    gc_module = lstm ? ct_lstm_new(&o, &mo) : ct_gru_new(&o, &mo);
    CHECK_OK(gc_module);
    ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(4, 2, 3), -1, 1, 11),
                        ct_gradcheck_input(CT_SHAPE(2 * dirs, 2, 2), -1, 1, 12),
                        ct_gradcheck_input(CT_SHAPE(2 * dirs, 2, 2), -1, 1, 13)};
    if (gc_module)
      CHECK_GRADIENTS(lstm ? "lstm" : "gru", lstm ? lstm_fn : gru_fn, NULL, in, lstm ? 3 : 2);
    ct_module_free(gc_module);
    ct_scope_end();
  }
}

CT_TEST(parameters_have_torch_names_shapes_and_bounds) {
  ct_module *m = ct_lstm_new(&(ct_rnn_opts){.input_size = 7, .hidden_size = 16, .num_layers = 2},
                             &(ct_module_opts){.device = ct_test_device()});
  CHECK_OK(m);
  const char *names[8];
  ct_tensor *p[8];
  CHECK(ct_module_parameters(m, p, names, 8) == 8);
  const char *want[8] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"};
  for (int i = 0; i < 8; i++)
    CHECK_MSG(!strcmp(names[i], want[i]), "parameter %d is %s", i, names[i]);
  CHECK_SHAPE(p[0], 64, 7);
  CHECK_SHAPE(p[1], 64, 16);
  CHECK_SHAPE(p[2], 64);
  CHECK_SHAPE(p[4], 64, 16);
  double mx = 0;
  ct_scope_begin();
  CHECK_STATUS_OK(ct_item(ct_max(ct_abs(p[1]), NULL), &mx));
  ct_scope_end();
  CHECK_MSG(mx <= 0.25 && mx > 0.2, "|weight_hh_l0| max %g, expected just under 1/sqrt(16)", mx);
  ct_module_free(m);
  ct_module *g = ct_gru_new(&(ct_rnn_opts){.input_size = 3, .hidden_size = 5}, NULL);
  CHECK_OK(g);
  CHECK(ct_module_parameters(g, p, names, 8) == 4);
  CHECK_SHAPE(p[0], 15, 3);
  CHECK(!strcmp(ct_module_type_name(g), "GRU"));
  ct_module_free(g);
  /* bidirectional: torch's _reverse names, the second layer's input 2*H wide */
  g = ct_gru_new(
      &(ct_rnn_opts){.input_size = 3, .hidden_size = 5, .num_layers = 2, .bidirectional = true},
      NULL);
  CHECK_OK(g);
  ct_tensor *w[16];
  const char *wn[16];
  CHECK(ct_module_parameters(g, w, wn, 16) == 16);
  const char *want_bi[9] = {"weight_ih_l0",       "weight_hh_l0",         "bias_ih_l0",
                            "bias_hh_l0",         "weight_ih_l0_reverse", "weight_hh_l0_reverse",
                            "bias_ih_l0_reverse", "bias_hh_l0_reverse",   "weight_ih_l1"};
  for (int i = 0; i < 9; i++) CHECK_MSG(!strcmp(wn[i], want_bi[i]), "parameter %d is %s", i, wn[i]);
  CHECK_SHAPE(w[4], 15, 3);
  CHECK_SHAPE(w[8], 15, 10);
  CHECK_SHAPE(w[12], 15, 10);
  ct_module_free(g);
}

CT_TEST(rnn_argument_errors) {
  ct_scope_begin();
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  CHECK_ERR_MSG(ct_lstm_new(&(ct_rnn_opts){.input_size = 0, .hidden_size = 3}, &mo), CT_ERR_ARG,
                "input_size");
  CHECK_ERR(ct_gru_new(NULL, &mo), CT_ERR_ARG);
  CHECK_ERR_MSG(ct_gru_new(&(ct_rnn_opts){.input_size = 2, .hidden_size = 3, .dropout = 1}, &mo),
                CT_ERR_ARG, "dropout");
  ct_module *m = ct_lstm_new(&(ct_rnn_opts){.input_size = 3, .hidden_size = 2}, &mo);
  CHECK_OK(m);
  ct_tensor *x =
      ct_zeros(CT_SHAPE(4, 2, 5), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  CHECK_ERR_MSG(ct_lstm_forward(m, x, NULL, NULL, NULL, NULL), CT_ERR_SHAPE, "(4, 2, 5)");
  ct_tensor *x3 =
      ct_zeros(CT_SHAPE(4, 2, 3), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  ct_tensor *h0 =
      ct_zeros(CT_SHAPE(1, 3, 2), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  CHECK_ERR_MSG(ct_lstm_forward(m, x3, h0, NULL, NULL, NULL), CT_ERR_SHAPE, "h0");
  CHECK_ERR_MSG(ct_gru_forward(m, x3, NULL, NULL), CT_ERR_ARG, "LSTM");
  /* a NULL input keeps the error of the op that made it */
  CHECK(ct_reshape(x3, CT_SHAPE(5, 5)) == NULL);
  ct_tensor *hn = NULL;
  CHECK(ct_lstm_forward(m, ct_reshape(x3, CT_SHAPE(5, 5)), NULL, NULL, &hn, NULL) == NULL);
  CHECK(hn == NULL && ct_last_error() == CT_ERR_SHAPE);
  CHECK(strstr(ct_last_error_message(), "reshape") != NULL);
  ct_module *g = ct_gru_new(&(ct_rnn_opts){.input_size = 3, .hidden_size = 2}, &mo);
  CHECK(ct_gru_forward(g, ct_reshape(x3, CT_SHAPE(5, 5)), NULL, NULL) == NULL);
  CHECK(strstr(ct_last_error_message(), "reshape") != NULL);
  CHECK_ERR_MSG(ct_gru_forward(NULL, x3, NULL, NULL), CT_ERR_ARG, "module is NULL");
  ct_module_free(g);
  /* ct_module_forward: the output from zero states */
  ct_tensor *y = ct_module_forward(m, x3);
  CHECK_OK(y);
  if (y) CHECK_SHAPE(y, 4, 2, 2);
  ct_module_free(m);
  ct_scope_end();
}

/* An empty sequence: an empty output of the bidirectional feature width, and
 * the initial states returned as the final ones (new tensors that carry the
 * gradient back to h0 and c0), as torch. */
CT_TEST(empty_sequence_returns_the_initial_states) {
  ct_scope_begin();
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  ct_tensor_opts to = {.dtype = CT_F64, .device = ct_test_device()};
  ct_module *m = ct_lstm_new(
      &(ct_rnn_opts){.input_size = 3, .hidden_size = 2, .num_layers = 2, .bidirectional = true},
      &mo);
  CHECK_OK(m);
  ct_tensor *x = ct_zeros(CT_SHAPE(0, 5, 3), &to);
  ct_tensor *h0 = ct_requires_grad_(ct_randn(CT_SHAPE(4, 5, 2), &to), true);
  ct_tensor *c0 = ct_requires_grad_(ct_randn(CT_SHAPE(4, 5, 2), &to), true);
  ct_tensor *hn = NULL, *cn = NULL;
  ct_tensor *y = ct_lstm_forward(m, x, h0, c0, &hn, &cn);
  CHECK_OK(y);
  if (y && hn && cn) {
    CHECK_SHAPE(y, 0, 5, 4);
    CHECK(ct_equal(hn, h0) && ct_equal(cn, c0));
    CHECK(hn != h0 && cn != c0);
    CHECK_OK(ct_backward(ct_add(ct_sum(hn, NULL), ct_mul_scalar(ct_sum(cn, NULL), 2.0)), NULL,
                         NULL) == CT_OK
                 ? h0
                 : NULL);
    double ones[40], twos[40];
    for (int i = 0; i < 40; i++) ones[i] = 1, twos[i] = 2;
    CHECK_CLOSE(ct_grad(h0), ones, 0, 0);
    CHECK_CLOSE(ct_grad(c0), twos, 0, 0);
  }
  ct_module_free(m);
  ct_scope_end();
}
