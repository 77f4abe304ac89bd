/* Pointwise losses (l1, smooth_l1, huber, kl_div, binary_cross_entropy) and
 * cross entropy with probability targets: values against float64 references
 * written here, gradients by finite differences, errors, and a comparison
 * with PyTorch (skipped without python3 + torch). */
#include <unistd.h>

#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static ct_tensor *make(const double *v, const int64_t *shape, int nd, ct_dtype dt) {
  return ct_test_make(v, shape, nd, dt, CT_LAYOUT_CONTIG);
}

enum { L1, SMOOTH, HUBER, KL, KL_LOG, BCE, NKIND };

/* The reference elementwise loss of kind at (x, y); k: beta or delta. */
static double ref_point(int kind, double x, double y, double k) {
  double z = fabs(x - y);
  switch (kind) {
    case L1:
      return z;
    case SMOOTH:
      return k == 0 ? z : z < k ? 0.5 * z * z / k : z - 0.5 * k;
    case HUBER:
      return z < k ? 0.5 * z * z : k * (z - 0.5 * k);
    case KL:
      return y == 0 ? -0.0 * x : y * (log(y) - x);
    case KL_LOG:
      return exp(y) * (y - x);
    default:
      return -(y * fmax(log(x), -100) + (1 - y) * fmax(log(1 - x), -100));
  }
}

static ct_tensor *run_kind(int kind, const ct_tensor *x, const ct_tensor *y, double k,
                           const ct_loss_opts *o) {
  switch (kind) {
    case L1:
      return ct_l1_loss(x, y, o);
    case SMOOTH:
      return ct_smooth_l1_loss(x, y, k, o);
    case HUBER:
      return ct_huber_loss(x, y, k, o);
    case KL:
      return ct_kl_div(x, y, false, o);
    case KL_LOG:
      return ct_kl_div(x, y, true, o);
    default:
      return ct_binary_cross_entropy(x, y, o);
  }
}

CT_TEST(pointwise_values) {
  enum { R = 3, C = 4, N = R * C };
  double *a = ct_test_random(N, -2, 2, 1), *b = ct_test_random(N, -2, 2, 2);
  double *p = ct_test_random(N, 0.02, 0.98, 3), *q = ct_test_random(N, 0, 1, 4);
  p[0] = 0, p[1] = 1, q[0] = 0.3, q[1] = 0.6; /* the clamped logs */
  q[2] = 0;                                   /* kl_div: xlogy(0, 0) = 0 */
  double w[N];
  for (int i = 0; i < N; i++) w[i] = 0.5 + 0.1 * i;
  const double ks[NKIND] = {0, 0.7, 1.3, 0, 0, 0};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double tol = di ? 1e-12 : 1e-5;
    for (int kind = 0; kind < NKIND; kind++)
      for (int red = 0; red <= CT_REDUCTION_BATCHMEAN; red++) {
        bool kl = kind == KL || kind == KL_LOG;
        if (red == CT_REDUCTION_BATCHMEAN && !kl) continue;
        const double *x = kind == BCE ? p : a, *y = kind == BCE ? q : kind == KL ? q : b;
        double per[N], sum = 0;
        for (int i = 0; i < N; i++) {
          per[i] = ref_point(kind, x[i], y[i], ks[kind]) * (kind == BCE ? w[i] : 1);
          sum += per[i];
        }
        double want = red == CT_REDUCTION_SUM ? sum : red == CT_REDUCTION_MEAN ? sum / N : sum / R;
        ct_loss_opts o = {.reduction = (ct_reduction)red,
                          .weight = kind == BCE ? make(w, CT_SHAPE(R, C), dt) : NULL};
        ct_tensor *l =
            run_kind(kind, make(x, CT_SHAPE(R, C), dt), make(y, CT_SHAPE(R, C), dt), ks[kind], &o);
        WITH_CONTEXT(CHECK_OK(l), "kind %d reduction %d", kind, red);
        if (!l) continue;
        WITH_CONTEXT(CHECK_CLOSE(l, red == CT_REDUCTION_NONE ? per : &want, tol, tol),
                     "kind %d reduction %d %s", kind, red, ct_dtype_name(dt));
      }
  }
  /* smooth_l1 with beta = 0 is l1; huber(delta) = delta * smooth_l1(beta = delta) */
  ct_tensor *x = make(a, CT_SHAPE(R, C), CT_F64), *y = make(b, CT_SHAPE(R, C), CT_F64);
  CHECK(ct_allclose(ct_smooth_l1_loss(x, y, 0, NULL), ct_l1_loss(x, y, NULL), 1e-14, 0));
  CHECK(ct_allclose(ct_huber_loss(x, y, 0.8, NULL),
                    ct_mul_scalar(ct_smooth_l1_loss(x, y, 0.8, NULL), 0.8), 1e-14, 0));
  /* broadcasting target, as torch (which warns) */
  ct_tensor *lb =
      ct_l1_loss(x, make(b, CT_SHAPE(C), CT_F64), &(ct_loss_opts){.reduction = CT_REDUCTION_NONE});
  CHECK_OK(lb);
  if (lb) CHECK_SHAPE(lb, R, C);
  free(a), free(b), free(p), free(q);
}

/* Reference cross entropy with probability targets over rows (M, C). */
static double ref_ce_probs(const double *x, const double *t, int M, int C, const double *w,
                           double eps, double *per) {
  double sum = 0;
  for (int i = 0; i < M; i++) {
    double mx = -INFINITY, lse = 0, l = 0;
    for (int c = 0; c < C; c++) mx = fmax(mx, x[i * C + c]);
    for (int c = 0; c < C; c++) lse += exp(x[i * C + c] - mx);
    lse = mx + log(lse);
    for (int c = 0; c < C; c++)
      l -= (w ? w[c] : 1) * ((1 - eps) * t[i * C + c] + eps / C) * (x[i * C + c] - lse);
    if (per) per[i] = l;
    sum += l;
  }
  return sum;
}

CT_TEST(cross_entropy_probability_targets) {
  enum { M = 5, C = 3 };
  double *x = ct_test_random(M * C, -3, 3, 5), *t = ct_test_random(M * C, 0, 1, 6);
  double w[C] = {0.4, 1.0, 2.5};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double tol = di ? 1e-12 : 1e-5;
    for (int k = 0; k < 6; k++) {
      bool weight = k & 1;
      double eps = k >= 2 ? 0.2 : 0;
      ct_reduction red = k >= 4 ? CT_REDUCTION_NONE : k >= 2 ? CT_REDUCTION_SUM : CT_REDUCTION_MEAN;
      double per[M];
      double sum = ref_ce_probs(x, t, M, C, weight ? w : NULL, eps, per);
      double want = red == CT_REDUCTION_MEAN ? sum / M : sum;
      ct_loss_opts o = {.reduction = red,
                        .label_smoothing = eps,
                        .weight = weight ? make(w, CT_SHAPE(C), dt) : NULL};
      ct_tensor *l = ct_cross_entropy(make(x, CT_SHAPE(M, C), dt), make(t, CT_SHAPE(M, C), dt), &o);
      WITH_CONTEXT(CHECK_OK(l), "case %d", k);
      if (l)
        WITH_CONTEXT(CHECK_CLOSE(l, red == CT_REDUCTION_NONE ? per : &want, tol, tol), "case %d %s",
                     k, ct_dtype_name(dt));
    }
  }
  /* (N, C, d): class dim 1, mean over N * d samples */
  double rows_x[4 * C], rows_t[4 * C];
  for (int n = 0; n < 2; n++)
    for (int d = 0; d < 2; d++)
      for (int c = 0; c < C; c++) {
        rows_x[(n * 2 + d) * C + c] = x[(n * C + c) * 2 + d];
        rows_t[(n * 2 + d) * C + c] = t[(n * C + c) * 2 + d];
      }
  double want = ref_ce_probs(rows_x, rows_t, 4, C, NULL, 0, NULL) / 4;
  ct_tensor *l3 = ct_cross_entropy(make(x, CT_SHAPE(2, C, 2), CT_F64),
                                   make(t, CT_SHAPE(2, C, 2), CT_F64), NULL);
  CHECK_OK(l3);
  if (l3) CHECK_CLOSE(l3, &want, 1e-12, 1e-12);
  /* one-hot probabilities give the class-index loss */
  int64_t idx[M] = {0, 2, 1, 1, 0};
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  ct_tensor *ti = ct_from_data(idx, CT_SHAPE(M), &oi);
  ct_tensor *xs = make(x, CT_SHAPE(M, C), CT_F64);
  ct_tensor *oh = ct_cast(ct_one_hot(ti, C), CT_F64);
  ct_loss_opts sm = {.label_smoothing = 0.1};
  CHECK(ct_allclose(ct_cross_entropy(xs, oh, &sm), ct_cross_entropy(xs, ti, &sm), 1e-12, 1e-12));
  free(x), free(t);
}

/* ---- Gradients ------------------------------------------------------------------- */

typedef struct gc {
  int kind; /* NKIND: cross entropy with probabilities */
  double k;
  ct_loss_opts o;
} gc;
static ct_tensor *loss_f(ct_tensor *const *in, void *ctx) {
  gc *c = ctx;
  if (c->kind == NKIND) return ct_cross_entropy(in[0], in[1], &c->o);
  return run_kind(c->kind, in[0], in[1], c->k, &c->o);
}

CT_TEST(pointwise_gradients) {
  ct_tensor_opts od = ct_test_opts(CT_F64);
  ct_tensor *w = ct_from_data(((double[]){0.3, 1.2, 2.0, 0.7}), CT_SHAPE(4), &od);
  struct {
    gc c;
    double lo0, hi0, lo1, hi1;
    const char *name;
  } cases[] = {
      {{L1, 0, {0}}, -2, 2, -2, 2, "l1_loss"},
      {{SMOOTH, 0.8, {.reduction = CT_REDUCTION_SUM}}, -2, 2, -2, 2, "smooth_l1_loss"},
      {{HUBER, 0.6, {.reduction = CT_REDUCTION_NONE}}, -2, 2, -2, 2, "huber_loss"},
      {{KL, 0, {.reduction = CT_REDUCTION_BATCHMEAN}}, -3, 0, 0.05, 1, "kl_div"},
      {{KL_LOG, 0, {0}}, -3, 0, -3, 0, "kl_div log_target"},
      {{BCE, 0, {.weight = w}}, 0.05, 0.95, 0, 1, "binary_cross_entropy"},
      {{NKIND, 0, {.weight = w, .label_smoothing = 0.15}},
       -2,
       2,
       0,
       1,
       "cross_entropy probabilities"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    ct_tensor *in[2] = {
        ct_gradcheck_input(CT_SHAPE(3, 4), cases[k].lo0, cases[k].hi0, 40 + 2 * (unsigned)k),
        ct_gradcheck_input(CT_SHAPE(3, 4), cases[k].lo1, cases[k].hi1, 41 + 2 * (unsigned)k)};
    CHECK_GRADIENTS(cases[k].name, loss_f, &cases[k].c, in, 2);
  }
}

/* binary_cross_entropy at p exactly 0 and 1: finite gradients, those of the
 * clamped logs (the clamped term gives 0), weighted, for p and the target. */
CT_TEST(bce_gradient_at_the_clamp) {
  double p[4] = {0, 1, 0, 1}, y[4] = {0, 0.3, 1, 0.6}, w[4] = {0.5, 2, 1.5, 3};
  double gp[4], gy[4];
  for (int i = 0; i < 4; i++) {
    gp[i] = w[i] * (p[i] == 0 ? 1 - y[i] : -y[i]);   /* d/dp: (1-y)/(1-p) or -y/p */
    gy[i] = w[i] * (p[i] == 0 ? 0 + 100 : -100 - 0); /* log(1-p) - log(p), clamped */
  }
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    ct_tensor *x = ct_requires_grad_(make(p, CT_SHAPE(4), dt), true);
    ct_tensor *t = ct_requires_grad_(make(y, CT_SHAPE(4), dt), true);
    ct_tensor *l = ct_binary_cross_entropy(
        x, t, &(ct_loss_opts){.reduction = CT_REDUCTION_SUM, .weight = make(w, CT_SHAPE(4), dt)});
    CHECK_OK(l);
    if (!l) continue;
    CHECK_STATUS_OK(ct_backward(l, NULL, NULL));
    WITH_CONTEXT(CHECK_CLOSE(ct_grad(x), gp, 1e-6, 0), "%s", ct_dtype_name(dt));
    WITH_CONTEXT(CHECK_CLOSE(ct_grad(t), gy, 1e-6, 0), "%s", ct_dtype_name(dt));
  }
}

CT_TEST(pointwise_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32), oi = ct_test_opts(CT_I64);
  ct_tensor *x = ct_full(CT_SHAPE(3, 4), 0.5, &o);
  CHECK_ERR_MSG(ct_smooth_l1_loss(x, x, -1, NULL), CT_ERR_ARG, "beta");
  CHECK_ERR_MSG(ct_huber_loss(x, x, 0, NULL), CT_ERR_ARG, "delta");
  CHECK_ERR_MSG(ct_l1_loss(x, x, &(ct_loss_opts){.reduction = CT_REDUCTION_BATCHMEAN}), CT_ERR_ARG,
                "batchmean");
  CHECK_ERR_MSG(ct_mse_loss(x, x, &(ct_loss_opts){.reduction = CT_REDUCTION_BATCHMEAN}), CT_ERR_ARG,
                "batchmean");
  CHECK_ERR(ct_kl_div(x, x, false, &(ct_loss_opts){.reduction = (ct_reduction)9}), CT_ERR_ARG);
  CHECK_ERR(ct_l1_loss(x, ct_zeros(CT_SHAPE(5), &o), NULL), CT_ERR_SHAPE);
  CHECK_ERR_MSG(ct_binary_cross_entropy(x, ct_zeros(CT_SHAPE(4), &o), NULL), CT_ERR_SHAPE,
                "target size");
  CHECK_ERR(ct_binary_cross_entropy(x, ct_zeros(CT_SHAPE(3, 4), &oi), NULL), CT_ERR_DTYPE);
  CHECK_ERR(ct_l1_loss(ct_zeros(CT_SHAPE(3, 4), &oi), x, NULL), CT_ERR_DTYPE);
  /* probability targets */
  /* a floating target of another shape is taken for class indices, as torch */
  CHECK_ERR_MSG(ct_cross_entropy(x, ct_zeros(CT_SHAPE(3, 5), &o), NULL), CT_ERR_DTYPE,
                "class probabilities");
  CHECK_ERR_MSG(ct_cross_entropy(x, x, &(ct_loss_opts){.has_ignore_index = true}), CT_ERR_ARG,
                "ignore_index");
  CHECK_ERR(ct_cross_entropy(x, x, &(ct_loss_opts){.label_smoothing = -0.5}), CT_ERR_ARG);
  CHECK_ERR(ct_cross_entropy(x, x, &(ct_loss_opts){.weight = ct_ones(CT_SHAPE(3), &o)}),
            CT_ERR_SHAPE);
  CHECK_ERR(ct_cross_entropy(ct_scalar(1, &o), ct_scalar(1, &o), NULL), CT_ERR_SHAPE);
  ct_clear_error();
  CHECK(ct_l1_loss(NULL, x, NULL) == NULL);
  CHECK(ct_kl_div(x, NULL, true, NULL) == NULL);
  CHECK(ct_binary_cross_entropy(NULL, NULL, NULL) == NULL);
}

/* ---- PyTorch comparison ----------------------------------------------------------- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)\n"
    "y = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)\n"
    "p = torch.rand(6, 5, dtype=torch.float64).clamp(0.02, 0.98).requires_grad_()\n"
    "q = torch.rand(6, 5, dtype=torch.float64); q[0, 0] = 0; q.requires_grad_()\n"
    "w = torch.rand(6, 5, dtype=torch.float64) + 0.2; cw = torch.rand(5, dtype=torch.float64) + "
    "0.2\n"
    "for n, t in [('x', x), ('y', y), ('p', p), ('q', q), ('w', w), ('cw', cw)]: save(n, t)\n"
    "cases = {'l1': lambda: F.l1_loss(x, y), 'smooth': lambda: F.smooth_l1_loss(x, y, beta=0.7, "
    "reduction='sum'),\n"
    "  'huber': lambda: F.huber_loss(x, y, delta=1.3), 'kl': lambda: F.kl_div(F.log_softmax(x, 1), "
    "q, reduction='batchmean'),\n"
    "  'kl_log': lambda: F.kl_div(F.log_softmax(x, 1), F.log_softmax(y, 1), reduction='sum', "
    "log_target=True),\n"
    "  'bce': lambda: F.binary_cross_entropy(p, q, weight=w),\n"
    "  'ce_prob': lambda: F.cross_entropy(x, q, weight=cw, label_smoothing=0.1)}\n"
    "for name, f in cases.items():\n"
    "    for t in (x, y, p, q): t.grad = None\n"
    "    l = f(); l.backward(); save(name, l)\n"
    "    if name == 'kl':  # xlogy(t, t) at t = 0: torch's target gradient is nan, ctensor's the "
    "limit 0\n"
    "        q.grad[0, 0] = -F.log_softmax(x, 1)[0, 0] / 6\n"
    "    for tn, t in (('x', x), ('y', y), ('p', p), ('q', q)):\n"
    "        if t.grad is not None: save(name + '_g' + tn, t.grad)\n";

CT_TEST(pointwise_losses_match_pytorch) {
  const char *dir = ct_test_torch_outputs("loss_pointwise", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *in[4];
  const char *in_names[4] = {"x", "y", "p", "q"};
  for (int i = 0; i < 4; i++)
    in[i] = ct_requires_grad_(ct_test_load_output(dir, in_names[i]), true);
  ct_tensor *x = in[0], *y = in[1], *p = in[2], *q = in[3];
  ct_tensor *w = ct_test_load_output(dir, "w"), *cw = ct_test_load_output(dir, "cw");
  for (int k = 0; k < 7; k++) {
    for (int i = 0; i < 4; i++) ct_set_grad(in[i], NULL);
    ct_tensor *lp = ct_log_softmax(x, 1), *l = NULL;
    const char *name = NULL;
    switch (k) {
      case 0:
        name = "l1", l = ct_l1_loss(x, y, NULL);
        break;
      case 1:
        name = "smooth",
        l = ct_smooth_l1_loss(x, y, 0.7, &(ct_loss_opts){.reduction = CT_REDUCTION_SUM});
        break;
      case 2:
        name = "huber", l = ct_huber_loss(x, y, 1.3, NULL);
        break;
      case 3:
        name = "kl",
        l = ct_kl_div(lp, q, false, &(ct_loss_opts){.reduction = CT_REDUCTION_BATCHMEAN});
        break;
      case 4:
        name = "kl_log", l = ct_kl_div(lp, ct_log_softmax(y, 1), true,
                                       &(ct_loss_opts){.reduction = CT_REDUCTION_SUM});
        break;
      case 5:
        name = "bce", l = ct_binary_cross_entropy(p, q, &(ct_loss_opts){.weight = w});
        break;
      default:
        name = "ce_prob",
        l = ct_cross_entropy(x, q, &(ct_loss_opts){.weight = cw, .label_smoothing = 0.1});
    }
    CHECK_LIKE_TORCH(dir, name, l, name, 1e-10, 1e-12);
    if (!l) continue;
    CHECK_STATUS_OK(ct_backward(l, NULL, NULL));
    char gname[64];
    for (int i = 0; i < 4; i++) {
      snprintf(gname, sizeof gname, "%s_g%s", name, in_names[i]);
      char path[512];
      snprintf(path, sizeof path, "%s/%s.npy", dir, gname);
      bool torch_has = access(path, R_OK) == 0;
      if (torch_has)
        CHECK_LIKE_TORCH(dir, gname, ct_grad(in[i]), gname, 1e-9, 1e-12);
      else
        WITH_CONTEXT(CHECK(ct_grad(in[i]) == NULL), "%s", gname);
    }
  }
}
