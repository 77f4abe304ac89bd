/* The fused LSTM/GRU cells (ct_lstm_cell_pointwise, ct_gru_cell_pointwise):
 * values and gradients against the same formulas composed of sigmoid, tanh
 * and elementwise ops (f32, same device), against that composition in f64
 * (the f32 kernel's error), and by finite differences in f64; shape errors.
 * Dropout between layers: p = 0 and eval mode give the output without
 * dropout; in training the module equals its layers run one by one with
 * ct_dropout between them from the same seed, and the dropped fraction of
 * that mask is p. */
#include "ct_gradcheck.h"
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

#define N 5
#define H 7

static ct_tensor *gate(const ct_tensor *t, int j) { return ct_narrow(t, 1, j * H, H); }

/* torch's cell formulas as separate ops (the reference composition). */
static ct_tensor *lstm_composed(const ct_tensor *gi, const ct_tensor *gh, const ct_tensor *c,
                                ct_tensor **c_new) {
  ct_tensor *a = ct_add(gi, gh);
  ct_tensor *i = ct_sigmoid(gate(a, 0)), *f = ct_sigmoid(gate(a, 1));
  ct_tensor *g = ct_tanh(gate(a, 2)), *o = ct_sigmoid(gate(a, 3));
  *c_new = ct_add(ct_mul(f, c), ct_mul(i, g));
  return ct_mul(o, ct_tanh(*c_new));
}
static ct_tensor *gru_composed(const ct_tensor *gi, const ct_tensor *gh, const ct_tensor *h) {
  ct_tensor *r = ct_sigmoid(ct_add(gate(gi, 0), gate(gh, 0)));
  ct_tensor *z = ct_sigmoid(ct_add(gate(gi, 1), gate(gh, 1)));
  ct_tensor *n = ct_tanh(ct_add(gate(gi, 2), ct_mul(r, gate(gh, 2))));
  return ct_add(ct_mul(ct_sub(h, n), z), n);
}

/* One cell, fused or composed, as a weighted sum of its outputs (h', and c'
 * for the LSTM) so that one backward reaches every input. */
static ct_tensor *cell_loss(bool lstm, bool fused, ct_tensor *const *in, ct_tensor **h_out) {
  ct_tensor *c_new = NULL, *h;
  if (lstm)
    h = fused ? ct_lstm_cell_pointwise(in[0], in[1], in[2], &c_new)
              : lstm_composed(in[0], in[1], in[2], &c_new);
  else
    h = fused ? ct_gru_cell_pointwise(in[0], in[1], in[2]) : gru_composed(in[0], in[1], in[2]);
  *h_out = h;
  ct_tensor *w = ct_cos(ct_arange(
      0, N * H, 1, &(ct_tensor_opts){.dtype = ct_dtype_of(in[0]), .device = ct_test_device()}));
  ct_tensor *loss = ct_sum(ct_mul(ct_flatten(h, 0, -1), w), NULL);
  return lstm ? ct_add(loss, ct_sum(ct_mul(ct_flatten(c_new, 0, -1), ct_sin(w)), NULL)) : loss;
}

/* Leaves gi, gh (N, G*H) and the state (N, H) of dtype dt, values in
 * [-3, 3) (both saturated and linear ranges of the gates). */
static void make_inputs(bool lstm, ct_dtype dt, unsigned seed, ct_tensor **in) {
  int64_t G = (lstm ? 4 : 3) * H;
  const int64_t shapes[3][2] = {{N, G}, {N, G}, {N, H}};
  for (int k = 0; k < 3; k++) {
    int64_t n = shapes[k][0] * shapes[k][1];
    double *v = ct_test_random(n, -3, 3, seed + (unsigned)k);
    ct_test_round_to(v, n, CT_F32);
    ct_tensor *t = ct_from_data(v, shapes[k], 2, &(ct_tensor_opts){.dtype = CT_F64});
    free(v);
    in[k] = ct_requires_grad_(ct_detach(ct_to(ct_cast(t, dt), ct_test_device(), NULL)), true);
  }
}

/* max |a - b| / max(|b|, 1) over the elements. */
static double err(const ct_tensor *a, const ct_tensor *b) {
  double d = 1, m = 1;
  ct_tensor *a64 = ct_cast(a, CT_F64), *b64 = ct_cast(b, CT_F64);
  ct_item(ct_max(ct_abs(ct_sub(a64, b64)), NULL), &d);
  ct_item(ct_max(ct_abs(b64), NULL), &m);
  return d / (m > 1 ? m : 1);
}

CT_TEST(fused_cells_match_the_composition_and_f64) {
  for (int lstm = 0; lstm < 2; lstm++) {
    ct_scope_begin();
    const char *name = lstm ? "lstm" : "gru";
    ct_tensor *f32[3], *c32[3], *r64[3], *hf, *hc, *h64;
    make_inputs(lstm, CT_F32, 21, f32);
    make_inputs(lstm, CT_F32, 21, c32);
    make_inputs(lstm, CT_F64, 21, r64);
    ct_tensor *lf = cell_loss(lstm, true, f32, &hf), *lc = cell_loss(lstm, false, c32, &hc);
    ct_tensor *l64 = cell_loss(lstm, false, r64, &h64);
    CHECK_OK(lf);
    CHECK_OK(lc);
    CHECK_OK(l64);
    if (lf && lc && l64) {
      CHECK_STATUS_OK(ct_backward(lf, NULL, NULL));
      CHECK_STATUS_OK(ct_backward(lc, NULL, NULL));
      CHECK_STATUS_OK(ct_backward(l64, NULL, NULL));
      double e = err(hf, hc);
      CHECK_MSG(e <= 1e-6, "%s: fused h' differs from the composition by %g", name, e);
      CHECK_MSG((e = err(hf, h64)) <= 2e-6, "%s: fused f32 h' off the f64 one by %g", name, e);
      for (int k = 0; k < 3; k++) {
        e = err(ct_grad(f32[k]), ct_grad(c32[k]));
        CHECK_MSG(e <= 1e-6, "%s: gradient of input %d differs from the composition's by %g", name,
                  k, e);
        e = err(ct_grad(f32[k]), ct_grad(r64[k]));
        CHECK_MSG(e <= 1e-5, "%s: f32 gradient of input %d off the f64 one by %g", name, k, e);
      }
    }
    ct_scope_end();
  }
}

static ct_tensor *lstm_fn(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  ct_tensor *c_new;
  ct_tensor *h = ct_lstm_cell_pointwise(in[0], in[1], in[2], &c_new);
  return h ? ct_cat((ct_tensor *[]){h, c_new}, 2, 1) : NULL;
}
static ct_tensor *gru_fn(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_gru_cell_pointwise(in[0], in[1], in[2]);
}

CT_TEST(fused_cell_gradients_match_finite_differences) {
  for (int lstm = 0; lstm < 2; lstm++) {
    ct_scope_begin();
    int64_t G = (lstm ? 4 : 3) * 3;
    ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(2, G), -2, 2, 31),
                        ct_gradcheck_input(CT_SHAPE(2, G), -2, 2, 32),
                        ct_gradcheck_input(CT_SHAPE(2, 3), -2, 2, 33)};
    CHECK_GRADIENTS(lstm ? "lstm_cell_pointwise" : "gru_cell_pointwise", lstm ? lstm_fn : gru_fn,
                    NULL, in, 3);
    ct_scope_end();
  }
}

CT_TEST(fused_cell_shape_errors) {
  ct_scope_begin();
  ct_tensor_opts o = {.device = ct_test_device()};
  ct_tensor *g = ct_zeros(CT_SHAPE(2, 12), &o), *s = ct_zeros(CT_SHAPE(2, 3), &o), *c;
  CHECK_OK(ct_gru_cell_pointwise(ct_zeros(CT_SHAPE(2, 9), &o), ct_zeros(CT_SHAPE(2, 9), &o), s));
  CHECK_ERR_MSG(ct_gru_cell_pointwise(g, g, s), CT_ERR_SHAPE, "(2, 12)");
  CHECK_ERR_MSG(ct_lstm_cell_pointwise(g, g, ct_zeros(CT_SHAPE(3, 3), &o), &c), CT_ERR_SHAPE,
                "state (3, 3)");
  CHECK_ERR_MSG(ct_lstm_cell_pointwise(g, ct_cast(g, CT_F64), s, &c), CT_ERR_DTYPE, "f64");
  CHECK_ERR(ct_lstm_cell_pointwise(g, g, s, NULL), CT_ERR_ARG);
  ct_scope_end();
}

/* ---- Dropout between layers ---------------------------------------------- */

static void copy_params(ct_module *dst, ct_tensor *const *src) {
  ct_tensor *p[4];
  int n = ct_module_parameters(dst, p, NULL, 4);
  ct_no_grad_begin();
  for (int i = 0; i < n; i++) CHECK_OK(ct_copy_(p[i], src[i]));
  ct_no_grad_end();
}

CT_TEST(dropout_between_layers) {
  ct_scope_begin();
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  const double p = 0.5;
  ct_rnn_opts o = {.input_size = 6, .hidden_size = 32, .num_layers = 2, .dropout = p};
  ct_manual_seed(3);
  ct_module *m = ct_lstm_new(&o, &mo);
  o.dropout = 0;
  ct_module *plain = ct_lstm_new(&o, &mo);
  ct_rnn_opts o1 = {.input_size = 6, .hidden_size = 32};
  ct_module *l0 = ct_lstm_new(&o1, &mo);
  o1.input_size = 32;
  ct_module *l1 = ct_lstm_new(&o1, &mo);
  CHECK_OK(m);
  CHECK_OK(plain);
  ct_tensor *w[8];
  if (!m || !plain || !l0 || !l1 || ct_module_parameters(m, w, NULL, 8) != 8) goto done;
  ct_tensor *pw[8];
  ct_module_parameters(plain, pw, NULL, 8);
  ct_no_grad_begin();
  for (int i = 0; i < 8; i++) ct_copy_(pw[i], w[i]);
  ct_no_grad_end();
  copy_params(l0, w);
  copy_params(l1, w + 4);
  ct_tensor *x = ct_to(ct_randn(CT_SHAPE(16, 8, 6), &(ct_tensor_opts){.dtype = CT_F64}),
                       ct_test_device(), NULL);
  ct_tensor *want = ct_module_forward(plain, x);
  /* p = 0 in training, and p > 0 in eval mode: no dropout */
  CHECK(ct_module_is_training(plain));
  ct_module_train(m, false);
  double e = err(ct_module_forward(m, x), want);
  CHECK_MSG(e == 0, "eval mode: differs from the module without dropout by %g", e);
  /* training: the layers one by one with ct_dropout between them, same seed */
  ct_module_train(m, true);
  ct_manual_seed(11);
  ct_tensor *y = ct_module_forward(m, x);
  ct_manual_seed(11);
  ct_tensor *y0 = ct_module_forward(l0, x);
  ct_tensor *d = ct_dropout(y0, p, true, NULL);
  ct_tensor *y1 = ct_module_forward(l1, d);
  CHECK_OK(y);
  CHECK_OK(y1);
  CHECK_MSG((e = err(y, y1)) <= 1e-12, "training: differs from layers + dropout by %g", e);
  CHECK_MSG(err(y, want) > 1e-3, "training with dropout %g gives the output without it", p);
  /* that mask drops p of the elements and scales the others by 1 / (1 - p) */
  double dropped = 0, scale_err = 1;
  ct_tensor *zero = ct_eq_scalar(d, 0.0);
  ct_item(ct_mean(ct_cast(zero, CT_F64), NULL), &dropped);
  ct_item(ct_max(ct_abs(ct_sub(ct_where(zero, ct_mul_scalar(y0, 1 / (1 - p)), d),
                               ct_mul_scalar(y0, 1 / (1 - p)))),
                 NULL),
          &scale_err);
  CHECK_MSG(fabs(dropped - p) < 0.04, "dropped fraction %g, expected %g (4096 elements)", dropped,
            p);
  CHECK_MSG(scale_err < 1e-12, "kept elements not scaled by 1 / (1 - p): error %g", scale_err);
done:
  ct_module_free(m), ct_module_free(plain), ct_module_free(l0), ct_module_free(l1);
  ct_scope_end();
}
