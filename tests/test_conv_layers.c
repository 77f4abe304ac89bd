/* Conv1d and ConvTranspose2d: values against float64 reference loops written
 * here (f32, f64, bf16 and strided inputs), gradients by finite differences
 * (f64), the modules' parameters, error messages, and PyTorch as an oracle
 * (torch.nn modules with the same weights; skipped without python3 + torch). */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static double tol(ct_dtype dt) { return dt == CT_BF16 ? 5e-2 : dt == CT_F32 ? 1e-4 : 1e-11; }

/* ---- conv_transpose2d reference: every input element scatters w * x ------------- */

typedef struct ct_case {
  int64_t N, Ci, H, W, Co, kH, kW, s[2], p[2], op[2], d[2], G;
  bool bias;
} ct_case;

static void ct_out(const ct_case *c, int64_t *Ho, int64_t *Wo) {
  *Ho = (c->H - 1) * c->s[0] - 2 * c->p[0] + c->d[0] * (c->kH - 1) + c->op[0] + 1;
  *Wo = (c->W - 1) * c->s[1] - 2 * c->p[1] + c->d[1] * (c->kW - 1) + c->op[1] + 1;
}

static double *ref_ct(const ct_case *c, const double *x, const double *w, const double *b) {
  int64_t Ho, Wo;
  ct_out(c, &Ho, &Wo);
  double *y = calloc((size_t)(c->N * c->Co * Ho * Wo), sizeof(double));
  int64_t cig = c->Ci / c->G, cog = c->Co / c->G;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t ci = 0; ci < c->Ci; ci++)
      for (int64_t h = 0; h < c->H; h++)
        for (int64_t ww = 0; ww < c->W; ww++) {
          double xv = x[((n * c->Ci + ci) * c->H + h) * c->W + ww];
          int64_t g = ci / cig;
          for (int64_t j = 0; j < cog; j++)
            for (int64_t kh = 0; kh < c->kH; kh++)
              for (int64_t kw = 0; kw < c->kW; kw++) {
                int64_t oh = h * c->s[0] - c->p[0] + kh * c->d[0];
                int64_t ow = ww * c->s[1] - c->p[1] + kw * c->d[1];
                if (oh < 0 || oh >= Ho || ow < 0 || ow >= Wo) continue;
                int64_t co = g * cog + j;
                y[((n * c->Co + co) * Ho + oh) * Wo + ow] +=
                    xv * w[((ci * cog + j) * c->kH + kh) * c->kW + kw];
              }
        }
  if (b)
    for (int64_t i = 0; i < c->N * c->Co * Ho * Wo; i++) y[i] += b[i / (Ho * Wo) % c->Co];
  return y;
}

static const ct_case CASES[] = {
    {2, 3, 4, 5, 4, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},
    {1, 4, 3, 3, 6, 3, 2, {2, 3}, {1, 0}, {1, 2}, {1, 1}, 2, true},
    {2, 2, 5, 4, 2, 2, 3, {2, 1}, {1, 1}, {0, 0}, {2, 2}, 1, false},
    {1, 6, 2, 3, 3, 4, 4, {2, 2}, {1, 2}, {1, 0}, {1, 1}, 3, true},
    /* output_padding >= stride (< dilation): rows no input reaches */
    {2, 2, 3, 4, 4, 2, 3, {1, 2}, {1, 0}, {1, 2}, {2, 3}, 2, true},
    {1, 2, 1, 2, 2, 1, 2, {1, 1}, {1, 0}, {2, 0}, {3, 1}, 1, true},
};

CT_TEST(conv_transpose2d_matches_reference) {
  ct_dtype dts[3] = {CT_F32, CT_F64, CT_BF16};
  for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
    const ct_case *c = &CASES[k];
    int64_t nx = c->N * c->Ci * c->H * c->W, nw = c->Ci * (c->Co / c->G) * c->kH * c->kW;
    for (int i = 0; i < 3; i++) {
      ct_dtype dt = dts[i];
      double *xv = ct_test_random(nx, -1, 1, 10 + (unsigned)k),
             *wv = ct_test_random(nw, -1, 1, 20 + (unsigned)k);
      double *bv = ct_test_random(c->Co, -1, 1, 30 + (unsigned)k);
      ct_test_round_to(xv, nx, dt), ct_test_round_to(wv, nw, dt), ct_test_round_to(bv, c->Co, dt);
      double *ref = ref_ct(c, xv, wv, c->bias ? bv : NULL);
      ct_test_layout l = i == 1 ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_CONTIG;
      ct_tensor *x = ct_test_make(xv, CT_SHAPE(c->N, c->Ci, c->H, c->W), dt, l);
      ct_tensor *w = ct_test_make(wv, CT_SHAPE(c->Ci, c->Co / c->G, c->kH, c->kW), dt, l);
      ct_tensor *b = c->bias ? ct_test_make(bv, CT_SHAPE(c->Co), dt, CT_LAYOUT_SLICED) : NULL;
      ct_conv_transpose2d_opts o = {.stride = {c->s[0], c->s[1]},
                                    .padding = {c->p[0], c->p[1]},
                                    .output_padding = {c->op[0], c->op[1]},
                                    .dilation = {c->d[0], c->d[1]},
                                    .groups = c->G};
      ct_tensor *y = ct_conv_transpose2d(x, w, b, &o);
      CHECK_OK(y);
      int64_t Ho, Wo;
      ct_out(c, &Ho, &Wo);
      if (y) {
        CHECK_SHAPE(y, c->N, c->Co, Ho, Wo);
        CHECK_CLOSE(y, ref, tol(dt), tol(dt));
      }
      if (k == 0 && i == 1) { /* unbatched */
        ct_tensor *y3 = ct_conv_transpose2d(ct_select(x, 0, 1), w, b, &o);
        CHECK_OK(y3);
        if (y3) {
          CHECK_SHAPE(y3, c->Co, Ho, Wo);
          CHECK_CLOSE(y3, ref + c->Co * Ho * Wo, tol(dt), tol(dt));
        }
      }
      free(xv), free(wv), free(bv), free(ref);
    }
  }
}

/* ---- conv1d reference ------------------------------------------------------------ */

CT_TEST(conv1d_matches_reference) {
  int64_t N = 2, Ci = 4, L = 9, Co = 6, K = 3, s = 2, p = 2, d = 2, G = 2;
  int64_t Lo = (L + 2 * p - d * (K - 1) - 1) / s + 1;
  double *xv = ct_test_random(N * Ci * L, -1, 1, 40),
         *wv = ct_test_random(Co * Ci / G * K, -1, 1, 41);
  double bv[6] = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6};
  double *ref = calloc((size_t)(N * Co * Lo), sizeof(double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t co = 0; co < Co; co++)
      for (int64_t o = 0; o < Lo; o++) {
        double acc = bv[co];
        for (int64_t j = 0; j < Ci / G; j++)
          for (int64_t k = 0; k < K; k++) {
            int64_t i = o * s - p + k * d, ci = co / (Co / G) * (Ci / G) + j;
            if (i >= 0 && i < L) acc += xv[(n * Ci + ci) * L + i] * wv[(co * (Ci / G) + j) * K + k];
          }
        ref[(n * Co + co) * Lo + o] = acc;
      }
  ct_dtype dts[2] = {CT_F32, CT_F64};
  ct_conv1d_opts o = {.stride = s, .padding = p, .dilation = d, .groups = G};
  for (int i = 0; i < 2; i++) {
    ct_test_layout l = i ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_CONTIG;
    ct_tensor *x = ct_test_make(xv, CT_SHAPE(N, Ci, L), dts[i], l);
    ct_tensor *w = ct_test_make(wv, CT_SHAPE(Co, Ci / G, K), dts[i], l);
    ct_tensor *y = ct_conv1d(x, w, ct_test_make(bv, CT_SHAPE(Co), dts[i], CT_LAYOUT_CONTIG), &o);
    CHECK_OK(y);
    if (y) {
      CHECK_SHAPE(y, N, Co, Lo);
      CHECK_CLOSE(y, ref, tol(dts[i]), tol(dts[i]));
    }
    ct_tensor *y2 = ct_conv1d(ct_select(x, 0, 1), w, NULL, &o);
    CHECK_OK(y2);
    if (y2) {
      double *r2 = malloc(sizeof(double) * (size_t)(Co * Lo));
      for (int64_t j = 0; j < Co * Lo; j++) r2[j] = ref[Co * Lo + j] - bv[j / Lo];
      CHECK_SHAPE(y2, Co, Lo);
      CHECK_CLOSE(y2, r2, tol(dts[i]), tol(dts[i]));
      free(r2);
    }
  }
  free(xv), free(wv), free(ref);
}

/* ---- Gradients ------------------------------------------------------------------- */

static ct_tensor *ct_f(ct_tensor *const *in, void *ctx) {
  return ct_conv_transpose2d(in[0], in[1], in[2], ctx);
}
static ct_tensor *c1_f(ct_tensor *const *in, void *ctx) {
  return ct_conv1d(in[0], in[1], in[2], ctx);
}

CT_TEST(conv_layers_gradients) {
  ct_conv_transpose2d_opts o1 = {.stride = {2, 1}, .padding = {1, 0}, .output_padding = {1, 0}};
  ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(2, 3, 3, 4), -1, 1, 50),
                      ct_gradcheck_input(CT_SHAPE(3, 2, 3, 2), -1, 1, 51),
                      ct_gradcheck_input(CT_SHAPE(2), -1, 1, 52)};
  CHECK_GRADIENTS("conv_transpose2d", ct_f, &o1, in, 3);
  ct_conv_transpose2d_opts o2 = {.stride = {2, 2}, .dilation = {2, 1}, .groups = 2};
  ct_tensor *in2[3] = {ct_gradcheck_input(CT_SHAPE(4, 3, 2), -1, 1, 53),
                       ct_gradcheck_input(CT_SHAPE(4, 1, 2, 2), -1, 1, 54), NULL};
  CHECK_GRADIENTS("conv_transpose2d unbatched, groups, dilation", ct_f, &o2, in2, 3);
  ct_conv_transpose2d_opts o4 = {
      .stride = {1, 2}, .padding = {0, 1}, .output_padding = {1, 2}, .dilation = {2, 3}};
  ct_tensor *in4[3] = {ct_gradcheck_input(CT_SHAPE(2, 2, 3, 3), -1, 1, 57),
                       ct_gradcheck_input(CT_SHAPE(2, 3, 2, 2), -1, 1, 58),
                       ct_gradcheck_input(CT_SHAPE(3), -1, 1, 59)};
  CHECK_GRADIENTS("conv_transpose2d output_padding >= stride", ct_f, &o4, in4, 3);
  ct_conv1d_opts c1 = {.stride = 2, .padding = 1, .dilation = 1};
  ct_tensor *in3[3] = {ct_gradcheck_input(CT_SHAPE(2, 3, 7), -1, 1, 55),
                       ct_gradcheck_input(CT_SHAPE(4, 3, 3), -1, 1, 56),
                       ct_gradcheck_input(CT_SHAPE(4), -1, 1, 57)};
  CHECK_GRADIENTS("conv1d", c1_f, &c1, in3, 3);
}

/* ---- Modules and errors ---------------------------------------------------------- */

CT_TEST(conv_layer_modules) {
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  ct_module *c1 = ct_conv1d_new(4, 6, 3, &(ct_conv1d_opts){.groups = 2}, true, &mo);
  CHECK_OK(c1);
  if (c1) {
    CHECK(strcmp(ct_module_type_name(c1), "Conv1d") == 0);
    ct_tensor *w = ct_module_get(c1, "weight");
    CHECK(w && ct_ndim(w) == 3 && ct_shape(w)[0] == 6 && ct_shape(w)[1] == 2 &&
          ct_shape(w)[2] == 3);
    ct_tensor *y = ct_module_forward(c1, ct_gradcheck_input(CT_SHAPE(2, 4, 8), -1, 1, 60));
    CHECK_OK(y);
    if (y) CHECK_SHAPE(y, 2, 6, 6);
  }
  ct_module_free(c1);
  ct_module *up = ct_conv_transpose2d_new(
      4, 6, 4, &(ct_conv_transpose2d_opts){.stride = {2, 2}, .padding = {1, 1}, .groups = 2}, true,
      &mo);
  CHECK_OK(up);
  if (up) {
    CHECK(strcmp(ct_module_type_name(up), "ConvTranspose2d") == 0);
    ct_tensor *w = ct_module_get(up, "weight"), *b = ct_module_get(up, "bias");
    CHECK(w && ct_shape(w)[0] == 4 && ct_shape(w)[1] == 3 && b && ct_shape(b)[0] == 6);
    /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = out / groups * k * k = 48 */
    ct_tensor *mx = w ? ct_max(ct_abs(w), NULL) : NULL;
    double v = 1;
    CHECK(mx && ct_item(mx, &v) == CT_OK && v <= 1 / sqrt(48.0) && v > 0.5 / sqrt(48.0));
    ct_tensor *y = ct_module_forward(up, ct_gradcheck_input(CT_SHAPE(1, 4, 5, 5), -1, 1, 61));
    CHECK_OK(y);
    if (y) CHECK_SHAPE(y, 1, 6, 10, 10);
  }
  ct_module_free(up);
  CHECK_ERR(ct_conv1d_new(3, 6, 3, &(ct_conv1d_opts){.groups = 2}, true, &mo), CT_ERR_ARG);
  CHECK_ERR(ct_conv_transpose2d_new(4, 6, 0, NULL, true, &mo), CT_ERR_ARG);
}

CT_TEST(conv_layer_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_zeros(CT_SHAPE(1, 4, 3, 3), &o), *w = ct_zeros(CT_SHAPE(4, 2, 3, 3), &o);
  CHECK_ERR_MSG(ct_conv_transpose2d(x, ct_zeros(CT_SHAPE(3, 2, 3, 3), &o), NULL, NULL),
                CT_ERR_SHAPE, "3 channels");
  CHECK_ERR_MSG(
      ct_conv_transpose2d(x, w, NULL, &(ct_conv_transpose2d_opts){.output_padding = {1, 0}}),
      CT_ERR_ARG, "output_padding (1, 0)");
  CHECK_ERR_MSG(ct_conv_transpose2d(x, w, ct_zeros(CT_SHAPE(4), &o), NULL), CT_ERR_SHAPE, "(2,)");
  CHECK_ERR(ct_conv_transpose2d(x, w, NULL, &(ct_conv_transpose2d_opts){.padding = {3, 3}}),
            CT_ERR_SHAPE);
  CHECK_ERR(ct_conv_transpose2d(x, w, NULL, &(ct_conv_transpose2d_opts){.groups = 3}),
            CT_ERR_SHAPE);
  CHECK_ERR(ct_conv_transpose2d(ct_zeros(CT_SHAPE(4, 3), &o), w, NULL, NULL), CT_ERR_SHAPE);
  CHECK_ERR(ct_conv_transpose2d(x, w, NULL, &(ct_conv_transpose2d_opts){.stride = {-1, 1}}),
            CT_ERR_ARG);
  ct_tensor_opts od = ct_test_opts(CT_F64);
  CHECK_ERR(ct_conv_transpose2d(x, ct_zeros(CT_SHAPE(4, 2, 3, 3), &od), NULL, NULL), CT_ERR_DTYPE);
  CHECK_ERR_MSG(
      ct_conv1d(ct_zeros(CT_SHAPE(1, 4, 3, 3), &o), ct_zeros(CT_SHAPE(2, 4, 3), &o), NULL, NULL),
      CT_ERR_SHAPE, "conv1d");
  CHECK_ERR_MSG(
      ct_conv1d(ct_zeros(CT_SHAPE(1, 4, 2), &o), ct_zeros(CT_SHAPE(2, 4, 3), &o), NULL, NULL),
      CT_ERR_SHAPE, "conv1d");
  CHECK_ERR_MSG(
      ct_conv1d(ct_zeros(CT_SHAPE(1, 3, 5), &o), ct_zeros(CT_SHAPE(2, 4, 3), &o), NULL, NULL),
      CT_ERR_SHAPE, "conv1d");
  ct_clear_error();
  CHECK(ct_conv_transpose2d(NULL, w, NULL, NULL) == NULL);
  CHECK(ct_conv1d(NULL, w, NULL, NULL) == NULL);
}

/* ---- PyTorch comparison ----------------------------------------------------------- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "def run(tag, m, x):\n"
    "    x = x.clone().requires_grad_(True); save(tag + '_x', x)\n"
    "    save(tag + '_w', m.weight); save(tag + '_b', m.bias)\n"
    "    y = m(x); g = torch.randn_like(y); save(tag + '_y', y); save(tag + '_g', g)\n"
    "    for i, t in enumerate(torch.autograd.grad(y, (x, m.weight, m.bias), g)): "
    "save(f'{tag}_g{i}', t)\n"
    "run('ct', torch.nn.ConvTranspose2d(4, 6, 3, stride=(2, 3), padding=(1, 2), "
    "output_padding=(1, 0),\n"
    "    dilation=(1, 2), groups=2).double(), torch.randn(2, 4, 5, 4, dtype=torch.float64))\n"
    "run('c1', torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2).double(),\n"
    "    torch.randn(3, 4, 11, dtype=torch.float64))\n";

static const char *torch_dir;
static ct_tensor *tload(const char *name) { return ct_test_load_output(torch_dir, name); }

static void check_module(const char *tag, ct_module *m) {
  char name[64], what[64];
  snprintf(name, sizeof name, "%s_w", tag);
  ct_tensor *w = ct_module_get(m, "weight"), *b = ct_module_get(m, "bias");
  ct_no_grad_begin();
  CHECK(ct_copy_(w, tload(name)));
  snprintf(name, sizeof name, "%s_b", tag);
  CHECK(ct_copy_(b, tload(name)));
  ct_no_grad_end();
  snprintf(name, sizeof name, "%s_x", tag);
  ct_tensor *x = ct_requires_grad_(tload(name), true);
  ct_tensor *y = ct_module_forward(m, x);
  snprintf(name, sizeof name, "%s_y", tag);
  CHECK_LIKE_TORCH(torch_dir, tag, y, name, 1e-10, 1e-10);
  snprintf(name, sizeof name, "%s_g", tag);
  CHECK_STATUS_OK(ct_backward(y, tload(name), NULL));
  ct_tensor *ins[3] = {x, w, b};
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "%s_g%d", tag, i);
    snprintf(what, sizeof what, "%s grad %d", tag, i);
    CHECK_LIKE_TORCH(torch_dir, what, ct_grad(ins[i]), name, 1e-9, 1e-9);
  }
}

CT_TEST(conv_layers_match_pytorch) {
  if (!(torch_dir = ct_test_torch_outputs("convlayers", TORCH_SCRIPT))) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  ct_module *up = ct_conv_transpose2d_new(4, 6, 3,
                                          &(ct_conv_transpose2d_opts){.stride = {2, 3},
                                                                      .padding = {1, 2},
                                                                      .output_padding = {1, 0},
                                                                      .dilation = {1, 2},
                                                                      .groups = 2},
                                          true, &mo);
  check_module("ct", up);
  ct_module_free(up);
  ct_module *c1 = ct_conv1d_new(
      4, 6, 3, &(ct_conv1d_opts){.stride = 2, .padding = 1, .dilation = 2, .groups = 2}, true, &mo);
  check_module("c1", c1);
  ct_module_free(c1);
}
