/* Adaptive average and max pooling: values against float64 reference loops
 * (torch's window formula, f32, f64, bf16, strided and unbatched inputs),
 * indices, gradients by finite differences (f64), modules, errors, and
 * PyTorch as an oracle (skipped without python3 + torch). */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static double tol(ct_dtype dt) { return dt == CT_BF16 ? 3e-2 : dt == CT_F32 ? 1e-5 : 1e-12; }

/* out (P, OH, OW) and, for max, the argmax h * W + w of each window */
static double *ref_pool(bool is_max, const double *x, int64_t P, int64_t H, int64_t W, int64_t OH,
                        int64_t OW, double *idx) {
  double *y = malloc(sizeof(double) * (size_t)(P * OH * OW));
  for (int64_t p = 0; p < P; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
        double s = 0, best = -INFINITY;
        int64_t at = -1;
        for (int64_t h = h0; h < h1; h++)
          for (int64_t w = w0; w < w1; w++) {
            double v = x[(p * H + h) * W + w];
            s += v;
            if (v > best) best = v, at = h * W + w;
          }
        int64_t o = (p * OH + oh) * OW + ow;
        y[o] = is_max ? best : s / (double)((h1 - h0) * (w1 - w0));
        if (idx) idx[o] = (double)at;
      }
  return y;
}

CT_TEST(adaptive_pool_matches_reference) {
  const int64_t cases[][4] = {{7, 5, 3, 2}, {4, 6, 4, 3}, {3, 3, 5, 7}, {8, 9, 1, 1}, {5, 1, 3, 1}};
  ct_dtype dts[3] = {CT_F32, CT_F64, CT_BF16};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t N = 2, C = 3, H = cases[k][0], W = cases[k][1], OH = cases[k][2], OW = cases[k][3];
    int64_t n = N * C * H * W, no = N * C * OH * OW;
    for (int i = 0; i < 3; i++) {
      ct_dtype dt = dts[i];
      /* distinct values: the argmax is unique */
      double *xv = ct_test_random(n, -1, 1, 10 + (unsigned)k);
      for (int64_t j = 0; j < n; j++) xv[j] = dt == CT_BF16 ? (double)(j * 37 % n) / 8 : xv[j];
      ct_test_round_to(xv, n, dt);
      double *idx = malloc(sizeof(double) * (size_t)no);
      double *ra = ref_pool(false, xv, N * C, H, W, OH, OW, NULL);
      double *rm = ref_pool(true, xv, N * C, H, W, OH, OW, idx);
      ct_tensor *x = ct_test_make(xv, CT_SHAPE(N, C, H, W), dt,
                                  i == 1 ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_CONTIG);
      int64_t size[2] = {OH, OW};
      ct_tensor *a = ct_adaptive_avg_pool2d(x, size), *ix = NULL;
      ct_tensor *m = ct_adaptive_max_pool2d(x, size, &ix);
      CHECK_OK(a);
      CHECK_OK(m);
      if (a) {
        CHECK_SHAPE(a, N, C, OH, OW);
        CHECK_CLOSE(a, ra, tol(dt), tol(dt));
      }
      if (m) CHECK_CLOSE(m, rm, 0, 0);
      if (ix) {
        CHECK(ct_dtype_of(ix) == CT_I64);
        CHECK_CLOSE(ix, idx, 0, 0);
        ct_free(ix);
      }
      /* unbatched */
      ct_tensor *a3 = ct_adaptive_avg_pool2d(ct_select(x, 0, 1), size);
      CHECK_OK(a3);
      if (a3) {
        CHECK_SHAPE(a3, C, OH, OW);
        CHECK_CLOSE(a3, ra + C * OH * OW, tol(dt), tol(dt));
      }
      free(xv), free(idx), free(ra), free(rm);
    }
  }
  /* nan propagates through the maximum */
  ct_tensor *xn =
      ct_test_make((double[]){1, NAN, 3, 4}, CT_SHAPE(1, 1, 2, 2), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *mn = ct_adaptive_max_pool2d(xn, (int64_t[]){1, 1}, NULL);
  double *v = mn ? ct_test_values(mn) : NULL;
  CHECK(v && isnan(v[0]));
  free(v);
}

static ct_tensor *avg_f(ct_tensor *const *in, void *ctx) {
  return ct_adaptive_avg_pool2d(in[0], ctx);
}
static ct_tensor *max_f(ct_tensor *const *in, void *ctx) {
  return ct_adaptive_max_pool2d(in[0], ctx, NULL);
}

CT_TEST(adaptive_pool_gradients) {
  int64_t s1[2] = {3, 2}, s2[2] = {4, 5}, s3[2] = {1, 1};
  ct_tensor *in[1] = {ct_gradcheck_input(CT_SHAPE(2, 2, 5, 4), -1, 1, 20)};
  CHECK_GRADIENTS("adaptive_avg_pool2d down", avg_f, s1, in, 1);
  CHECK_GRADIENTS("adaptive_avg_pool2d up", avg_f, s2, in, 1);
  CHECK_GRADIENTS("adaptive_max_pool2d down", max_f, s1, in, 1);
  CHECK_GRADIENTS("adaptive_max_pool2d up (overlapping windows)", max_f, s2, in, 1);
  ct_tensor *in3[1] = {ct_gradcheck_input(CT_SHAPE(3, 4, 3), -1, 1, 21)};
  CHECK_GRADIENTS("adaptive_avg_pool2d global, unbatched", avg_f, s3, in3, 1);
  CHECK_GRADIENTS("adaptive_max_pool2d unbatched", max_f, s1, in3, 1);
}

CT_TEST(adaptive_pool_modules_and_errors) {
  ct_module *a = ct_adaptive_avg_pool2d_new(1, 1), *m = ct_adaptive_max_pool2d_new(2, 3);
  CHECK(a && m);
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 3, 4, 6), -1, 1, 30);
  if (a && m) {
    CHECK(strcmp(ct_module_type_name(a), "AdaptiveAvgPool2d") == 0);
    CHECK(ct_module_parameters(m, NULL, NULL, 0) == 0);
    ct_tensor *ya = ct_module_forward(a, x), *ym = ct_module_forward(m, x);
    ct_tensor *ra = ct_mean(x, CT_DIMS_KEEP(2, 3));
    CHECK(ya && ra && ct_allclose(ya, ra, 1e-12, 1e-12));
    /* windows of 2 x 2 here: the same as max_pool2d */
    ct_tensor *rm = ct_max_pool2d(x, &(ct_pool2d_opts){.kernel = {2, 2}});
    CHECK(ym && rm && ct_allclose(ym, rm, 0, 0));
  }
  ct_module_free(a), ct_module_free(m);
  CHECK_ERR(ct_adaptive_avg_pool2d_new(0, 1), CT_ERR_ARG);
  CHECK_ERR_MSG(ct_adaptive_avg_pool2d(x, (int64_t[]){0, 2}), CT_ERR_ARG, "(0, 2)");
  CHECK_ERR(ct_adaptive_avg_pool2d(x, NULL), CT_ERR_ARG);
  ct_tensor *x2 = ct_select(ct_select(x, 0, 0), 0, 0);
  CHECK_ERR_MSG(ct_adaptive_max_pool2d(x2, (int64_t[]){1, 1}, NULL), CT_ERR_SHAPE, "(4, 6)");
  ct_tensor_opts oi = ct_test_opts(CT_I32), of = ct_test_opts(CT_F32);
  CHECK_ERR(ct_adaptive_avg_pool2d(ct_zeros(CT_SHAPE(1, 2, 3, 3), &oi), (int64_t[]){1, 1}),
            CT_ERR_DTYPE);
  CHECK_ERR_MSG(ct_adaptive_avg_pool2d(ct_zeros(CT_SHAPE(1, 2, 0, 3), &of), (int64_t[]){1, 1}),
                CT_ERR_SHAPE, "nonzero");
  ct_clear_error();
  ct_tensor *ix = x;
  CHECK(ct_adaptive_max_pool2d(NULL, (int64_t[]){1, 1}, &ix) == NULL && ix == NULL);
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.randn(2, 3, 7, 10, dtype=torch.float64, requires_grad=True); save('x', x)\n"
    "for tag, m in [('avg', torch.nn.AdaptiveAvgPool2d((3, 4))), ('max', "
    "torch.nn.AdaptiveMaxPool2d((5, 13)))]:\n"
    "    y = m(x); g = torch.randn_like(y); save(tag + '_y', y); save(tag + '_g', g)\n"
    "    save(tag + '_gx', torch.autograd.grad(y, x, g)[0])\n"
    "save('max_i', F.adaptive_max_pool2d(x, (5, 13), return_indices=True)[1])\n";

CT_TEST(adaptive_pool_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("poollayers", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x = ct_requires_grad_(ct_test_load_output(dir, "x"), true);
  ct_module *mods[2] = {ct_adaptive_avg_pool2d_new(3, 4), ct_adaptive_max_pool2d_new(5, 13)};
  const char *tags[2] = {"avg", "max"};
  for (int i = 0; i < 2; i++) {
    char name[32];
    ct_set_grad(x, NULL);
    ct_tensor *y = ct_module_forward(mods[i], x);
    snprintf(name, sizeof name, "%s_y", tags[i]);
    CHECK_LIKE_TORCH(dir, tags[i], y, name, 1e-12, 1e-12);
    snprintf(name, sizeof name, "%s_g", tags[i]);
    CHECK_STATUS_OK(ct_backward(y, ct_test_load_output(dir, name), NULL));
    snprintf(name, sizeof name, "%s_gx", tags[i]);
    CHECK_LIKE_TORCH(dir, tags[i], ct_grad(x), name, 1e-12, 1e-12);
    ct_module_free(mods[i]);
  }
  ct_tensor *ix = NULL;
  ct_tensor *m = ct_adaptive_max_pool2d(x, (int64_t[]){5, 13}, &ix);
  CHECK_OK(m);
  CHECK_LIKE_TORCH(dir, "adaptive_max_pool2d indices", ix, "max_i", 0, 0);
  ct_free(ix);
}
