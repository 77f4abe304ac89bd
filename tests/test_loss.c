/* Losses: cross_entropy, nll_loss, mse_loss, binary_cross_entropy_with_logits.
 * Values against float64 references written here, gradients by finite
 * differences, errors, and a comparison with PyTorch (skipped without
 * python3 + torch). */
#include <unistd.h>

#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static ct_tensor *make(const double *v, const int64_t *shape, int nd, ct_dtype dt) {
  return ct_test_make(v, shape, nd, dt, CT_LAYOUT_CONTIG);
}
static ct_tensor *targets(const int64_t *v, const int64_t *shape, int nd) {
  ct_tensor_opts o = ct_test_opts(CT_I64);
  return ct_from_data(v, shape, nd, &o);
}

/* Reference cross entropy of rows x (M, C) (logits: log_softmax first). */
static double ref_ce(const double *x, const int64_t *t, int64_t M, int64_t C, const double *w,
                     bool has_ignore, int64_t ignore, double eps, ct_reduction red, bool logits,
                     double *per_row) {
  double sum = 0, den = 0;
  for (int64_t i = 0; i < M; i++) {
    double mx = -INFINITY, lse = 0;
    const double *r = x + i * C;
    if (logits) {
      for (int64_t c = 0; c < C; c++) mx = fmax(mx, r[c]);
      for (int64_t c = 0; c < C; c++) lse += exp(r[c] - mx);
      lse = mx + log(lse);
    }
    bool valid = !(has_ignore && t[i] == ignore);
    double l = 0;
    if (valid) {
      double wt = w ? w[t[i]] : 1;
      l = -(1 - eps) * wt * (r[t[i]] - lse);
      double sm = 0;
      for (int64_t c = 0; c < C; c++) sm += (w ? w[c] : 1) * (r[c] - lse);
      l -= eps / (double)C * sm;
      den += wt;
    }
    if (per_row) per_row[i] = l;
    sum += l;
  }
  return red == CT_REDUCTION_SUM ? sum : sum / den;
}

CT_TEST(cross_entropy_values) {
  int64_t M = 6, C = 4;
  double *x = ct_test_random(M * C, -3, 3, 1);
  int64_t t[6] = {0, 3, 2, 2, 1, 3};
  double w[4] = {0.5, 1.0, 2.0, 1.5};
  struct {
    bool weight, ignore;
    double eps;
    ct_reduction red;
  } cases[] = {
      {false, false, 0, CT_REDUCTION_MEAN}, {false, false, 0, CT_REDUCTION_SUM},
      {false, false, 0, CT_REDUCTION_NONE}, {true, false, 0, CT_REDUCTION_MEAN},
      {false, true, 0, CT_REDUCTION_MEAN},  {true, true, 0, CT_REDUCTION_NONE},
      {false, false, 0.1, CT_REDUCTION_MEAN}, {true, true, 0.2, CT_REDUCTION_MEAN},
      {true, false, 0.3, CT_REDUCTION_SUM},   {false, true, 0.1, CT_REDUCTION_NONE},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    for (int di = 0; di < 2; di++) {
      ct_dtype dt = di ? CT_F64 : CT_F32;
      ct_loss_opts o = {.reduction = cases[k].red, .weight = cases[k].weight ? make(w, CT_SHAPE(4), dt) : NULL,
                        .has_ignore_index = cases[k].ignore, .ignore_index = 2,
                        .label_smoothing = cases[k].eps};
      double rows[6];
      double ref = ref_ce(x, t, M, C, cases[k].weight ? w : NULL, cases[k].ignore, 2, cases[k].eps,
                          cases[k].red, true, rows);
      ct_tensor *l = ct_cross_entropy(make(x, CT_SHAPE(6, 4), dt), targets(t, CT_SHAPE(6)), &o);
      CHECK_OK(l);
      if (!l) continue;
      if (cases[k].red == CT_REDUCTION_NONE) {
        CHECK_SHAPE(l, 6);
        CHECK_CLOSE(l, rows, 1e-5, 1e-5);
      } else {
        CHECK(ct_ndim(l) == 0);
        CHECK_CLOSE(l, &ref, 1e-5, 1e-5);
      }
      if (!cases[k].eps) { /* nll_loss of log_softmax gives the same */
        ct_tensor *n = ct_nll_loss(ct_log_softmax(make(x, CT_SHAPE(6, 4), dt), 1), targets(t, CT_SHAPE(6)), &o);
        CHECK_OK(n);
        if (n) CHECK_CLOSE(n, cases[k].red == CT_REDUCTION_NONE ? rows : &ref, 1e-5, 1e-5);
      }
    }
  /* (N, C, d) input: class dim 1 */
  double *x3 = ct_test_random(2 * 3 * 4, -2, 2, 2);
  int64_t t3[8] = {0, 1, 2, 0, 2, 2, 1, 0};
  double rowsx[8 * 3];
  for (int n = 0; n < 2; n++)
    for (int d = 0; d < 4; d++)
      for (int c = 0; c < 3; c++) rowsx[(n * 4 + d) * 3 + c] = x3[(n * 3 + c) * 4 + d];
  double per[8];
  ref_ce(rowsx, t3, 8, 3, NULL, false, 0, 0, CT_REDUCTION_NONE, true, per);
  ct_tensor *l3 = ct_cross_entropy(make(x3, CT_SHAPE(2, 3, 4), CT_F64), targets(t3, CT_SHAPE(2, 4)),
                                   &(ct_loss_opts){.reduction = CT_REDUCTION_NONE});
  CHECK_OK(l3);
  if (l3) {
    CHECK_SHAPE(l3, 2, 4);
    CHECK_CLOSE(l3, per, 1e-12, 1e-12);
  }
  /* i32 targets and unbatched (C) logits */
  int32_t t32[6] = {0, 3, 2, 2, 1, 3};
  ct_tensor_opts o32 = ct_test_opts(CT_I32);
  double ref = ref_ce(x, t, M, C, NULL, false, 0, 0, CT_REDUCTION_MEAN, true, NULL);
  ct_tensor *l32 = ct_cross_entropy(make(x, CT_SHAPE(6, 4), CT_F64), ct_from_data(t32, CT_SHAPE(6), &o32), NULL);
  CHECK_OK(l32);
  if (l32) CHECK_CLOSE(l32, &ref, 1e-12, 1e-12);
  double r0;
  ref_ce(x, t, 1, C, NULL, false, 0, 0, CT_REDUCTION_NONE, true, &r0);
  ct_tensor *l1 = ct_cross_entropy(make(x, CT_SHAPE(4), CT_F64), targets(t, CT_SHAPE()), NULL);
  CHECK_OK(l1);
  if (l1) CHECK_CLOSE(l1, &r0, 1e-12, 1e-12);
  free(x), free(x3);
}

/* ---- Gradients ------------------------------------------------------------------- */

typedef struct ce_gc {
  ct_tensor *target;
  ct_loss_opts o;
  int which; /* 0 cross_entropy, 1 nll, 2 mse, 3 bce */
} ce_gc;
static ct_tensor *loss_f(ct_tensor *const *in, void *ctx) {
  ce_gc *c = ctx;
  switch (c->which) {
  case 0: return ct_cross_entropy(in[0], c->target, &c->o);
  case 1: return ct_nll_loss(in[0], c->target, &c->o);
  case 2: return ct_mse_loss(in[0], in[1], &c->o);
  default: return ct_binary_cross_entropy_with_logits(in[0], in[1], &c->o);
  }
}

CT_TEST(loss_gradients) {
  ct_tensor_opts od = ct_test_opts(CT_F64);
  int64_t t[5] = {1, 0, 2, 2, 1};
  ct_tensor *tg = targets(t, CT_SHAPE(5));
  ct_tensor *w = ct_from_data(((double[]){0.3, 1.2, 2.0}), CT_SHAPE(3), &od);
  ce_gc cases[] = {
      {tg, {0}, 0},
      {tg, {.reduction = CT_REDUCTION_SUM}, 0},
      {tg, {.reduction = CT_REDUCTION_NONE}, 0},
      {tg, {.weight = w}, 0},
      {tg, {.has_ignore_index = true, .ignore_index = 2}, 0},
      {tg, {.label_smoothing = 0.2}, 0},
      {tg, {.weight = w, .has_ignore_index = true, .ignore_index = 0, .label_smoothing = 0.1}, 0},
      {tg, {.weight = w, .has_ignore_index = true, .ignore_index = 1}, 1},
      {tg, {.reduction = CT_REDUCTION_NONE}, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    ct_tensor *in[1] = {ct_gradcheck_input(CT_SHAPE(5, 3), -2, 2, 10 + (unsigned)k)};
    CHECK_GRADIENTS(cases[k].which ? "nll_loss" : "cross_entropy", loss_f, &cases[k], in, 1);
  }
  int64_t t3[6] = {0, 1, 2, 1, 1, 0};
  ce_gc c3 = {targets(t3, CT_SHAPE(2, 3)), {0}, 0};
  ct_tensor *in3[1] = {ct_gradcheck_input(CT_SHAPE(2, 3, 3), -2, 2, 30)};
  CHECK_GRADIENTS("cross_entropy (N, C, d)", loss_f, &c3, in3, 1);
  ce_gc mse = {NULL, {0}, 2}, mse_none = {NULL, {.reduction = CT_REDUCTION_NONE}, 2};
  ct_tensor *mi[2] = {ct_gradcheck_input(CT_SHAPE(3, 4), -1, 1, 31), ct_gradcheck_input(CT_SHAPE(3, 4), -1, 1, 32)};
  CHECK_GRADIENTS("mse_loss", loss_f, &mse, mi, 2);
  CHECK_GRADIENTS("mse_loss none", loss_f, &mse_none, mi, 2);
  ce_gc bce = {NULL, {0}, 3};
  ce_gc bcep = {NULL, {.pos_weight = ct_from_data(((double[]){0.5, 2, 3, 1}), CT_SHAPE(4), &od)}, 3};
  ct_tensor *bi[2] = {ct_gradcheck_input(CT_SHAPE(3, 4), -3, 3, 33), ct_gradcheck_input(CT_SHAPE(3, 4), 0, 1, 34)};
  CHECK_GRADIENTS("bce_with_logits", loss_f, &bce, bi, 2);
  CHECK_GRADIENTS("bce_with_logits pos_weight", loss_f, &bcep, bi, 2);
}

CT_TEST(mse_and_bce_values) {
  double a[4] = {1, 2, -1, 0.5}, b[4] = {0.5, 2, 1, -1};
  ct_tensor *l = ct_mse_loss(make(a, CT_SHAPE(4), CT_F32), make(b, CT_SHAPE(4), CT_F32), NULL);
  CHECK_OK(l);
  if (l) CHECK_CLOSE(l, ((double[]){(0.25 + 0 + 4 + 2.25) / 4}), 1e-6, 1e-6);
  ct_tensor *lb = ct_mse_loss(make(a, CT_SHAPE(2, 2), CT_F64), make((double[]){1, 0}, CT_SHAPE(2), CT_F64),
                              &(ct_loss_opts){.reduction = CT_REDUCTION_NONE});
  CHECK_OK(lb); /* broadcasts, as torch (which warns) */
  if (lb) CHECK_CLOSE(lb, ((double[]){0, 4, 4, 0.25}), 1e-12, 1e-12);
  double y[4] = {1, 0, 1, 0.3}, ref[4], refp[4], pw = 2.5;
  for (int i = 0; i < 4; i++) {
    ref[i] = fmax(a[i], 0) - a[i] * y[i] + log1p(exp(-fabs(a[i])));
    refp[i] = (1 - y[i]) * a[i] + (1 + (pw - 1) * y[i]) * log1p(exp(-a[i]));
  }
  ct_tensor *bl = ct_binary_cross_entropy_with_logits(make(a, CT_SHAPE(4), CT_F64), make(y, CT_SHAPE(4), CT_F64),
                                                      &(ct_loss_opts){.reduction = CT_REDUCTION_NONE});
  CHECK_OK(bl);
  if (bl) CHECK_CLOSE(bl, ref, 1e-12, 1e-12);
  ct_tensor_opts od = ct_test_opts(CT_F64);
  ct_tensor *blp = ct_binary_cross_entropy_with_logits(
      make(a, CT_SHAPE(4), CT_F64), make(y, CT_SHAPE(4), CT_F64),
      &(ct_loss_opts){.reduction = CT_REDUCTION_NONE, .pos_weight = ct_full(CT_SHAPE(1), pw, &od)});
  CHECK_OK(blp);
  if (blp) CHECK_CLOSE(blp, refp, 1e-12, 1e-12);
  /* large logits stay finite */
  ct_tensor *big = ct_binary_cross_entropy_with_logits(make((double[]){200, -200}, CT_SHAPE(2), CT_F32),
                                                       make((double[]){0, 1}, CT_SHAPE(2), CT_F32), NULL);
  CHECK_OK(big);
  if (big) CHECK_CLOSE(big, ((double[]){200}), 1e-6, 1e-6);
}

CT_TEST(loss_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_zeros(CT_SHAPE(3, 5), &o);
  int64_t bad[3] = {0, 5, 1}, neg[3] = {0, -1, 1}, ok[3] = {0, 1, 2};
  /* named after the loss, not the gather inside it: on CUDA the kernel records it */
  CHECK_ERR_MSG(ct_test_synced(ct_cross_entropy(x, targets(bad, CT_SHAPE(3)), NULL)), CT_ERR_ARG,
                "cross_entropy: index 5 ");
  CHECK_ERR_MSG(ct_test_synced(ct_nll_loss(x, targets(neg, CT_SHAPE(3)), NULL)), CT_ERR_ARG,
                "nll_loss: index -1 ");
  /* label smoothing with ignore_index takes the composite path: named alike */
  CHECK_ERR_MSG(ct_test_synced(ct_cross_entropy(x, targets(bad, CT_SHAPE(3)),
                                                &(ct_loss_opts){.label_smoothing = 0.1, .has_ignore_index = true,
                                                                .ignore_index = -100})),
                CT_ERR_ARG, "cross_entropy: index 5 ");
  CHECK_ERR(ct_cross_entropy(x, targets(ok, CT_SHAPE(3, 1)), NULL), CT_ERR_SHAPE);
  CHECK_ERR(ct_cross_entropy(x, ct_zeros(CT_SHAPE(3), &o), NULL), CT_ERR_DTYPE);
  CHECK_ERR(ct_cross_entropy(x, targets(ok, CT_SHAPE(3)), &(ct_loss_opts){.weight = ct_ones(CT_SHAPE(4), &o)}),
            CT_ERR_SHAPE);
  CHECK_ERR(ct_cross_entropy(x, targets(ok, CT_SHAPE(3)), &(ct_loss_opts){.label_smoothing = 1.5}), CT_ERR_ARG);
  CHECK_ERR(ct_cross_entropy(x, targets(ok, CT_SHAPE(3)), &(ct_loss_opts){.reduction = (ct_reduction)7}), CT_ERR_ARG);
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  CHECK_ERR(ct_cross_entropy(ct_zeros(CT_SHAPE(3, 5), &oi), targets(ok, CT_SHAPE(3)), NULL), CT_ERR_DTYPE);
  CHECK_ERR(ct_binary_cross_entropy_with_logits(x, ct_zeros(CT_SHAPE(3, 4), &o), NULL), CT_ERR_SHAPE);
  CHECK_ERR(ct_mse_loss(x, ct_zeros(CT_SHAPE(4), &o), NULL), CT_ERR_SHAPE);
  /* ignore_index: an ignored -100 is fine, an unignored one is out of range */
  int64_t ig[3] = {0, -100, 1};
  CHECK_OK(ct_cross_entropy(x, targets(ig, CT_SHAPE(3)), &(ct_loss_opts){.has_ignore_index = true, .ignore_index = -100}));
  CHECK_ERR(ct_test_synced(ct_cross_entropy(x, targets(ig, CT_SHAPE(3)), NULL)), CT_ERR_ARG);
  ct_clear_error();
  CHECK(ct_cross_entropy(NULL, targets(ok, CT_SHAPE(3)), NULL) == NULL);
  CHECK(ct_nll_loss(x, NULL, NULL) == NULL);
  CHECK(ct_mse_loss(NULL, x, NULL) == NULL);
  CHECK(ct_binary_cross_entropy_with_logits(x, NULL, NULL) == NULL);
}

/* ---- PyTorch comparison ----------------------------------------------------------- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().numpy() if t.dtype == torch.int64 else t.detach().double().numpy())\n"
    "x = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)\n"
    "t = torch.tensor([0, 4, 2, 2, 1, 3, 4]); w = torch.rand(5, dtype=torch.float64) + 0.2\n"
    "save('x', x); save('t', t); save('w', w)\n"
    "cases = [('plain', {}), ('sum', dict(reduction='sum')), ('weight', dict(weight=w)),\n"
    "         ('ignore', dict(ignore_index=2)), ('smooth', dict(label_smoothing=0.15)),\n"
    "         ('all', dict(weight=w, ignore_index=4, label_smoothing=0.25))]\n"
    "for name, kw in cases:\n"
    "    x.grad = None; l = F.cross_entropy(x, t, **kw); l.backward(); save('ce_' + name, l); save('ce_' + name + '_g', x.grad)\n"
    "x.grad = None; l = F.nll_loss(F.log_softmax(x, 1), t, weight=w, reduction='none'); g = torch.randn(7, dtype=torch.float64)\n"
    "(l * g).sum().backward(); save('nll_none', l); save('nll_none_up', g); save('nll_none_g', x.grad)\n"
    "x3 = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True); t3 = torch.randint(0, 5, (2, 3))\n"
    "l = F.cross_entropy(x3, t3); l.backward(); save('x3', x3); save('t3', t3); save('ce3', l); save('ce3_g', x3.grad)\n"
    "y = torch.rand(7, 5, dtype=torch.float64); pw = torch.rand(5, dtype=torch.float64) + 0.5; save('y', y); save('pw', pw)\n"
    "x.grad = None; l = F.binary_cross_entropy_with_logits(x, y, pos_weight=pw); l.backward(); save('bce', l); save('bce_g', x.grad)\n"
    "x.grad = None; l = F.mse_loss(x, y); l.backward(); save('mse', l); save('mse_g', x.grad)\n";

/* The torch outputs' folder (once per process), or NULL without torch. */
static const char *torch_dir;
static bool torch_data(void) {
  static bool tried;
  if (!tried) torch_dir = ct_test_torch_outputs("loss", TORCH_SCRIPT), tried = true;
  return torch_dir != NULL;
}

/* A torch array moved to the device under test. */
static ct_tensor *tload(const char *name) { return ct_test_load_output(torch_dir, name); }

static void check_like(const char *what, const ct_tensor *got, const char *name) {
  ct_tensor *ref = tload(name);
  if (!got || !ref) {
    ct_test_fail(__FILE__, __LINE__, "%s: missing result (%s)", what, ct_last_error_message());
    return;
  }
  double *rv = ct_test_values(ref);
  ct_test_check_shape(__FILE__, __LINE__, what, got, ct_shape(ref), ct_ndim(ref));
  ct_test_check_close(__FILE__, __LINE__, what, got, rv, 1e-10, 1e-10);
  free(rv);
}

CT_TEST(losses_match_pytorch) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x = ct_requires_grad_(tload("x"), true), *t = tload("t"), *w = tload("w");
  struct {
    const char *name;
    ct_loss_opts o;
  } cases[] = {
      {"plain", {0}},
      {"sum", {.reduction = CT_REDUCTION_SUM}},
      {"weight", {.weight = w}},
      {"ignore", {.has_ignore_index = true, .ignore_index = 2}},
      {"smooth", {.label_smoothing = 0.15}},
      {"all", {.weight = w, .has_ignore_index = true, .ignore_index = 4, .label_smoothing = 0.25}},
  };
  char n1[64], n2[64];
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    ct_set_grad(x, NULL);
    ct_tensor *l = ct_cross_entropy(x, t, &cases[k].o);
    snprintf(n1, sizeof n1, "ce_%s", cases[k].name);
    snprintf(n2, sizeof n2, "ce_%s_g", cases[k].name);
    check_like(n1, l, n1);
    CHECK_STATUS_OK(ct_backward(l, NULL, NULL));
    check_like(n2, ct_grad(x), n2);
  }
  ct_set_grad(x, NULL);
  ct_tensor *nl = ct_nll_loss(ct_log_softmax(x, 1), t, &(ct_loss_opts){.weight = w, .reduction = CT_REDUCTION_NONE});
  check_like("nll_loss none", nl, "nll_none");
  CHECK_STATUS_OK(ct_backward(nl, tload("nll_none_up"), NULL));
  check_like("nll_loss none grad", ct_grad(x), "nll_none_g");

  ct_tensor *x3 = ct_requires_grad_(tload("x3"), true);
  ct_tensor *l3 = ct_cross_entropy(x3, tload("t3"), NULL);
  check_like("cross_entropy (N, C, d)", l3, "ce3");
  CHECK_STATUS_OK(ct_backward(l3, NULL, NULL));
  check_like("cross_entropy (N, C, d) grad", ct_grad(x3), "ce3_g");

  ct_set_grad(x, NULL);
  ct_tensor *b = ct_binary_cross_entropy_with_logits(x, tload("y"), &(ct_loss_opts){.pos_weight = tload("pw")});
  check_like("bce_with_logits", b, "bce");
  CHECK_STATUS_OK(ct_backward(b, NULL, NULL));
  check_like("bce_with_logits grad", ct_grad(x), "bce_g");

  ct_set_grad(x, NULL);
  ct_tensor *m = ct_mse_loss(x, tload("y"), NULL);
  check_like("mse_loss", m, "mse");
  CHECK_STATUS_OK(ct_backward(m, NULL, NULL));
  check_like("mse_loss grad", ct_grad(x), "mse_g");
}
