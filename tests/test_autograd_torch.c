/* Gradients where the plain derivative is undefined or degenerate, against
 * PyTorch's values: prod at zeros, std/var at zero spread, norm at zero,
 * cross-entropy / nll when every target is ignored, linear with zero input
 * features; and which unary ops save only their output (their input may then
 * be modified in place before backward), op by op as torch. Finite
 * differences check prod at zeros too (it is a polynomial). */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "def grad(name, f, x):\n"
    "    x = torch.tensor(x, dtype=torch.float64, requires_grad=True); y = f(x)\n"
    "    y.backward(torch.ones_like(y)); save(name, y); save(name + '_g', x.grad)\n"
    "prod = lambda x: x.prod()\n"
    "grad('prod_one_zero', prod, [2., 0., 3., 4.])\n"
    "grad('prod_two_zeros', prod, [2., 0., 3., 0.])\n"
    "grad('prod_no_zero', prod, [2., 1.5, 3., 4.])\n"
    "grad('prod_dim', lambda x: x.prod(1), [[2., 0., 3.], [0., 0., 1.], [1., 2., 3.]])\n"
    "c = [[[1., 0.], [2., 3.], [0., 0.]], [[1., 2.], [0., 1.], [4., 5.]],\n"
    "     [[2., 2.], [1., 1.], [3., 0.]]]\n"
    "prod02 = lambda x: x.permute(1, 0, 2).reshape(3, 6).prod(1, keepdim=True).reshape(1, 3, 1)\n"
    "grad('prod_dims', prod02, c)\n"
    "flat = [2., 2., 2.]\n"
    "grad('std_flat', lambda x: x.std(), flat); grad('var_flat', lambda x: x.var(), flat)\n"
    "grad('std_rows', lambda x: x.std(1), [[2., 2.], [1., 3.]])\n"
    "grad('std_one', lambda x: x.std(0), [2.]); grad('var_one', lambda x: x.var(0), [2.])\n"
    "grad('std_one_c0', lambda x: x.std(0, unbiased=False), [2.])\n"
    "for p, n in ((2, '2'), (1, '1'), (3, '3'), (0.5, 'half'), (float('inf'), 'inf')):\n"
    "    grad('norm' + n + '_zero', lambda x: x.norm(p), [0., 0., 0.])\n"
    "    grad('norm' + n + '_mixed', lambda x: x.norm(p), [0., 1., -2.])\n"
    "x = torch.randn(3, 4, dtype=torch.float64); t = torch.tensor([1, 1, 1])\n"
    "wt = torch.rand(4, dtype=torch.float64) + 0.5\n"
    "save('ce_x', x); save('ce_t', t); save('ce_w', wt)\n"
    "for red in ('mean', 'sum', 'none'):\n"
    "    kw = dict(ignore_index=1, reduction=red)\n"
    "    for name, fn in (('ce', lambda x: F.cross_entropy(x, t, **kw)),\n"
    "                     ('nll', lambda x: F.nll_loss(x, t, **kw)),\n"
    "                     ('cew', lambda x: F.cross_entropy(x, t, weight=wt, **kw)),\n"
    "                     ('ces', lambda x: F.cross_entropy(x, t, label_smoothing=0.1, **kw))):\n"
    "        xx = x.clone().requires_grad_(); l = fn(xx); l.sum().backward()\n"
    "        save(f'{name}_{red}', l); save(f'{name}_{red}_g', xx.grad)\n"
    "lx = torch.zeros(3, 0, dtype=torch.float64, requires_grad=True)\n"
    "lw = torch.zeros(2, 0, dtype=torch.float64, requires_grad=True)\n"
    "lb = torch.randn(2, dtype=torch.float64); save('lin_b', lb); lb.requires_grad_()\n"
    "y = F.linear(lx, lw, lb); y.backward(torch.ones_like(y)); save('lin_y', y)\n"
    "save('lin_gb', lb.grad)\n"
    "ops = dict(neg=torch.neg, abs=torch.abs, exp=torch.exp, expm1=torch.expm1, log=torch.log,\n"
    "    log1p=torch.log1p, log2=torch.log2, sqrt=torch.sqrt, rsqrt=torch.rsqrt, sin=torch.sin,\n"
    "    cos=torch.cos, tan=torch.tan, tanh=torch.tanh, erf=torch.erf, sigmoid=torch.sigmoid,\n"
    "    relu=torch.relu, gelu=F.gelu, gelu_tanh=lambda v: F.gelu(v, approximate='tanh'),\n"
    "    silu=F.silu, softplus=F.softplus, floor=torch.floor, ceil=torch.ceil, round=torch.round,\n"
    "    trunc=torch.trunc, sign=torch.sign, reciprocal=torch.reciprocal, square=torch.square,\n"
    "    clamp=lambda v: torch.clamp(v, -0.5, 0.5), leaky_relu=lambda v: F.leaky_relu(v, 0.1))\n"
    "for n, f in ops.items():\n"
    "    xx = torch.tensor([0.3, 0.7, 1.3], dtype=torch.float64, requires_grad=True); h = xx * 1\n"
    "    y = f(h); h.add_(1)\n"
    "    try: y.sum().backward(); save('unary_' + n, xx.grad)\n"
    "    except RuntimeError: pass\n";

static const char *torch_dir;
static bool torch_data(void) {
  static bool tried;
  if (!tried) torch_dir = ct_test_torch_outputs("agtorch", TORCH_SCRIPT), tried = true;
  return torch_dir != NULL;
}
static ct_tensor *tload(const char *name) { return ct_test_load_output(torch_dir, name); }

#define check_like(what, got, name) CHECK_LIKE_TORCH(torch_dir, what, got, name, 1e-10, 1e-12)

static ct_tensor *leaf(const double *v, const int64_t *shape, int ndim) {
  return ct_requires_grad_(ct_test_make(v, shape, ndim, CT_F64, CT_LAYOUT_CONTIG), true);
}

/* y = f(x) and its gradient for ones upstream, compared with torch's `name`. */
typedef ct_tensor *(*unary_fn)(const ct_tensor *x, const void *ctx);
static void check_grad(const char *name, unary_fn f, const void *ctx, ct_tensor *x) {
  char gname[96];
  ct_set_grad(x, NULL);
  ct_tensor *y = f(x, ctx);
  check_like(name, y, name);
  if (!y) return;
  WITH_CONTEXT(CHECK_STATUS_OK(ct_backward(y, ct_ones_like(y, NULL), NULL)), "%s", name);
  snprintf(gname, sizeof gname, "%s_g", name);
  check_like(gname, ct_grad(x), gname);
}

static ct_tensor *prod_all(const ct_tensor *x, const void *c) { return ct_prod(x, NULL); }
static ct_tensor *prod_dim1(const ct_tensor *x, const void *c) { return ct_prod(x, CT_DIMS(1)); }
static ct_tensor *prod_dims02(const ct_tensor *x, const void *c) {
  return ct_prod(x, CT_DIMS_KEEP(0, 2));
}
static ct_tensor *gc_prod_dims02(ct_tensor *const *in, void *c) { return prod_dims02(in[0], c); }
static ct_tensor *gc_prod_dim1(ct_tensor *const *in, void *c) { return prod_dim1(in[0], c); }

CT_TEST(prod_gradients_at_zeros) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  double m[9] = {2, 0, 3, 0, 0, 1, 1, 2, 3};
  double c[18] = {1, 0, 2, 3, 0, 0, 1, 2, 0, 1, 4, 5, 2, 2, 1, 1, 3, 0};
  check_grad("prod_one_zero", prod_all, NULL, leaf((double[]){2, 0, 3, 4}, CT_SHAPE(4)));
  check_grad("prod_two_zeros", prod_all, NULL, leaf((double[]){2, 0, 3, 0}, CT_SHAPE(4)));
  check_grad("prod_no_zero", prod_all, NULL, leaf((double[]){2, 1.5, 3, 4}, CT_SHAPE(4)));
  check_grad("prod_dim", prod_dim1, NULL, leaf(m, CT_SHAPE(3, 3)));
  check_grad("prod_dims", prod_dims02, NULL, leaf(c, CT_SHAPE(3, 3, 2)));
  /* prod is a polynomial: finite differences hold at zeros too */
  ct_tensor *xz = leaf(c, CT_SHAPE(3, 3, 2));
  CHECK_GRADIENTS("prod (0, 2) with zeros", gc_prod_dims02, NULL, &xz, 1);
  CHECK_GRADIENTS("prod with zeros", gc_prod_dim1, NULL, &xz, 1);
}

typedef struct spread_case {
  bool is_std;
  int dim; /* -1: all */
  int correction;
} spread_case;
static ct_tensor *spread(const ct_tensor *x, const void *ctx) {
  const spread_case *s = ctx;
  const ct_reduce_opts *r = s->dim < 0 ? NULL : CT_DIMS(s->dim);
  return s->is_std ? ct_std(x, r, s->correction) : ct_var(x, r, s->correction);
}

CT_TEST(std_var_gradients_at_zero_spread) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *flat = leaf((double[]){2, 2, 2}, CT_SHAPE(3)), *one = leaf((double[]){2}, CT_SHAPE(1));
  check_grad("std_flat", spread, &(spread_case){true, -1, 1}, flat);
  check_grad("var_flat", spread, &(spread_case){false, -1, 1}, flat);
  check_grad("std_rows", spread, &(spread_case){true, 1, 1},
             leaf((double[]){2, 2, 1, 3}, CT_SHAPE(2, 2)));
  check_grad("std_one", spread, &(spread_case){true, 0, 1}, one); /* no degrees of freedom: nan */
  check_grad("var_one", spread, &(spread_case){false, 0, 1}, one);
  check_grad("std_one_c0", spread, &(spread_case){true, 0, 0}, one);
}

static ct_tensor *norm_p(const ct_tensor *x, const void *ctx) {
  return ct_norm(x, *(const double *)ctx, NULL);
}

CT_TEST(norm_gradients_at_zero) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  static const struct {
    double p;
    const char *name;
  } ps[] = {{2, "2"}, {1, "1"}, {3, "3"}, {0.5, "half"}, {INFINITY, "inf"}};
  char name[64];
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    snprintf(name, sizeof name, "norm%s_zero", ps[i].name);
    check_grad(name, norm_p, &ps[i].p, leaf((double[]){0, 0, 0}, CT_SHAPE(3)));
    snprintf(name, sizeof name, "norm%s_mixed", ps[i].name);
    check_grad(name, norm_p, &ps[i].p, leaf((double[]){0, 1, -2}, CT_SHAPE(3)));
  }
}

CT_TEST(class_losses_with_every_target_ignored) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x = ct_requires_grad_(tload("ce_x"), true), *t = ct_cast(tload("ce_t"), CT_I64);
  ct_tensor *wt = tload("ce_w");
  static const char *const reds[] = {"mean", "sum", "none"};
  char name[64];
  for (int r = 0; r < 3; r++) {
    ct_loss_opts o = {.reduction = (ct_reduction)r, .has_ignore_index = true, .ignore_index = 1};
    ct_loss_opts ow = o, os = o;
    ow.weight = wt;
    os.label_smoothing = 0.1;
    const struct {
      const char *name;
      ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *, const ct_loss_opts *);
      const ct_loss_opts *o;
    } cases[] = {{"ce", ct_cross_entropy, &o},
                 {"nll", ct_nll_loss, &o},
                 {"cew", ct_cross_entropy, &ow},
                 {"ces", ct_cross_entropy, &os}};
    for (int k = 0; k < 4; k++) {
      ct_set_grad(x, NULL);
      ct_tensor *l = cases[k].fn(x, t, cases[k].o);
      snprintf(name, sizeof name, "%s_%s", cases[k].name, reds[r]);
      check_like(name, l, name); /* mean: nan (0 / 0), as torch */
      WITH_CONTEXT(CHECK_STATUS_OK(ct_backward(ct_sum(l, NULL), NULL, NULL)), "%s", name);
      snprintf(name, sizeof name, "%s_%s_g", cases[k].name, reds[r]);
      check_like(name, ct_grad(x), name); /* zeros, not nan */
    }
  }
}

static ct_tensor *f_linear(ct_tensor *const *in, void *ctx) {
  return ct_linear(in[0], in[1], in[2]);
}

CT_TEST(linear_with_zero_in_features) {
  ct_tensor_opts o = ct_test_opts(CT_F64);
  o.requires_grad = true;
  ct_tensor *x = ct_zeros(CT_SHAPE(3, 0), &o), *w = ct_zeros(CT_SHAPE(2, 0), &o);
  ct_tensor *b = ct_gradcheck_input(CT_SHAPE(2), -1, 1, 7);
  ct_tensor *in[3] = {x, w, b};
  CHECK_GRADIENTS("linear, 0 in_features", f_linear, NULL, in, 3);
  for (int i = 0; i < 3; i++) ct_set_grad(in[i], NULL);
  ct_tensor *y = ct_linear(x, w, b);
  CHECK_OK(y);
  CHECK_STATUS_OK(ct_backward(y, ct_ones_like(y, NULL), NULL));
  CHECK_SHAPE(ct_grad(x), 3, 0);
  CHECK_SHAPE(ct_grad(w), 2, 0);
  CHECK_CLOSE(ct_grad(b), ((double[]){3, 3}), 0, 0);
  if (!torch_data()) return;
  ct_tensor *tb = ct_requires_grad_(tload("lin_b"), true);
  ct_tensor *ty = ct_linear(x, w, tb);
  check_like("linear, 0 in_features", ty, "lin_y");
  CHECK_STATUS_OK(ct_backward(ty, ct_ones_like(ty, NULL), NULL));
  check_like("linear, 0 in_features: grad of bias", ct_grad(tb), "lin_gb");
}

/* ---- Which unary ops save only their output ------------------------------------- */

static ct_tensor *u_clamp(const ct_tensor *x) { return ct_clamp(x, -0.5, 0.5); }
static ct_tensor *u_leaky(const ct_tensor *x) { return ct_leaky_relu(x, 0.1); }

CT_TEST(unary_ops_save_what_pytorch_saves) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  static const struct {
    const char *name;
    ct_tensor *(*fn)(const ct_tensor *);
  } ops[] = {{"neg", ct_neg},         {"abs", ct_abs},
             {"exp", ct_exp},         {"expm1", ct_expm1},
             {"log", ct_log},         {"log1p", ct_log1p},
             {"log2", ct_log2},       {"sqrt", ct_sqrt},
             {"rsqrt", ct_rsqrt},     {"sin", ct_sin},
             {"cos", ct_cos},         {"tan", ct_tan},
             {"tanh", ct_tanh},       {"erf", ct_erf},
             {"sigmoid", ct_sigmoid}, {"relu", ct_relu},
             {"gelu", ct_gelu},       {"gelu_tanh", ct_gelu_tanh},
             {"silu", ct_silu},       {"softplus", ct_softplus},
             {"floor", ct_floor},     {"ceil", ct_ceil},
             {"round", ct_round},     {"trunc", ct_trunc},
             {"sign", ct_sign},       {"reciprocal", ct_reciprocal},
             {"square", ct_square},   {"clamp", u_clamp},
             {"leaky_relu", u_leaky}};
  char path[512], name[64];
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    /* torch wrote unary_<op>.npy only when backward worked */
    snprintf(name, sizeof name, "unary_%s", ops[i].name);
    snprintf(path, sizeof path, "%s/%s.npy", torch_dir, name);
    FILE *f = fopen(path, "rb");
    bool torch_ok = f != NULL;
    if (f) fclose(f);
    ct_tensor *x = leaf((double[]){0.3, 0.7, 1.3}, CT_SHAPE(3));
    ct_tensor *h = ct_mul_scalar(x, 1);
    ct_tensor *y = ops[i].fn(h);
    CHECK_OK(ct_add_scalar_(h, 1));
    ct_clear_error();
    ct_status st = ct_backward(ct_sum(y, NULL), NULL, NULL);
    if (!torch_ok) {
      CHECK_MSG(st == CT_ERR_STATE && strstr(ct_last_error_message(), "modified by an inplace"),
                "%s saves its input in torch: expected a version error, got %s", ops[i].name,
                ct_status_name(st));
    } else {
      CHECK_MSG(st == CT_OK, "%s saves only its output in torch: backward failed: %s", ops[i].name,
                ct_last_error_message());
      if (st == CT_OK) check_like(name, ct_grad(x), name);
    }
    ct_clear_error();
  }
}
