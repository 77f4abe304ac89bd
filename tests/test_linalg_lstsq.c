/* Least squares (ct_linalg_lstsq) against torch.linalg.lstsq in float64
 * (values and gradients; tall: least squares, wide: minimum norm), the
 * normal equations checked here in f64, finite differences, and errors. */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(13)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "for name, (m, n) in [('tall', (6, 3)), ('wide', (3, 5))]:\n"
    "    a = torch.randn(2, m, n, dtype=torch.float64, requires_grad=True)\n"
    "    b = torch.randn(2, m, 2, dtype=torch.float64, requires_grad=True)\n"
    "    x = torch.linalg.lstsq(a, b, driver='gelsd').solution; w = torch.randn(x.shape, "
    "dtype=torch.float64)\n"
    "    (x * w).sum().backward()\n"
    "    for k, t in [('a', a), ('b', b), ('x', x), ('w', w), ('ga', a.grad), ('gb', b.grad)]: "
    "save(f'{name}_{k}', t)\n";

CT_TEST(linalg_lstsq_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("linalg_lstsq", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const char *names[2] = {"tall", "wide"};
  char nm[64];
  for (int c = 0; c < 2; c++) {
#define NAME(suffix) (snprintf(nm, sizeof nm, "%s_%s", names[c], suffix), nm)
    ct_tensor *a = ct_requires_grad_(ct_test_load_output(dir, NAME("a")), true);
    ct_tensor *b = ct_requires_grad_(ct_test_load_output(dir, NAME("b")), true);
    ct_tensor *x = ct_linalg_lstsq(a, b);
    CHECK_LIKE_TORCH(dir, NAME("x"), x, nm, 1e-10, 1e-12);
    ct_tensor *loss = x ? ct_sum(ct_mul(x, ct_test_load_output(dir, NAME("w"))), NULL) : NULL;
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    CHECK_LIKE_TORCH(dir, NAME("ga"), ct_grad(a), nm, 1e-9, 1e-11);
    CHECK_LIKE_TORCH(dir, NAME("gb"), ct_grad(b), nm, 1e-9, 1e-11);
#undef NAME
  }
}

/* the normal equations a^T (a x - b) = 0 in f64, for f32 and f64 */
CT_TEST(linalg_lstsq_normal_equations) {
  int64_t m = 7, n = 3, k = 2;
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double *av = ct_test_random(m * n, -1, 1, 121), *bv = ct_test_random(m * k, -1, 1, 122);
    ct_test_round_to(av, m * n, dt);
    ct_test_round_to(bv, m * k, dt);
    ct_tensor *x = ct_linalg_lstsq(ct_test_make(av, CT_SHAPE(m, n), dt, CT_LAYOUT_CONTIG),
                                   ct_test_make(bv, CT_SHAPE(m, k), dt, CT_LAYOUT_CONTIG));
    CHECK_OK(x);
    if (!x) continue;
    CHECK_SHAPE(x, n, k);
    double *xv = ct_test_values(x), worst = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t c = 0; c < k; c++) {
        double g = 0;
        for (int64_t i = 0; i < m; i++) {
          double res = -bv[i * k + c];
          for (int64_t p = 0; p < n; p++) res += av[i * n + p] * xv[p * k + c];
          g += av[i * n + j] * res;
        }
        worst = fmax(worst, fabs(g));
      }
    WITH_CONTEXT(CHECK(worst < (di ? 1e-12 : 1e-5)), "a^T (a x - b): %g (%s)", worst,
                 ct_dtype_name(dt));
    free(av), free(bv), free(xv);
  }
}

static ct_tensor *f_lstsq(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_linalg_lstsq(in[0], in[1]);
}

CT_TEST(linalg_lstsq_gradients_and_errors) {
  ct_tensor *a = ct_gradcheck_input(CT_SHAPE(5, 3), -1, 1, 131);
  ct_tensor *b = ct_gradcheck_input(CT_SHAPE(2, 5, 2), -1, 1, 132); /* broadcast a */
  ct_tensor *ab[2] = {a, b};
  CHECK_GRADIENTS("lstsq tall", f_lstsq, NULL, ab, 2);
  ct_tensor *w = ct_gradcheck_input(CT_SHAPE(2, 4), -1, 1, 133);
  ct_tensor *wb = ct_gradcheck_input(CT_SHAPE(2, 1), -1, 1, 134);
  ct_tensor *wab[2] = {w, wb};
  CHECK_GRADIENTS("lstsq wide", f_lstsq, NULL, wab, 2);
  ct_tensor_opts o = ct_test_opts(CT_F64), f = ct_test_opts(CT_F32);
  CHECK_ERR_MSG(ct_linalg_lstsq(ct_ones(CT_SHAPE(4, 2), &o), ct_ones(CT_SHAPE(3, 1), &o)),
                CT_ERR_SHAPE, "different rows");
  CHECK_ERR_MSG(ct_linalg_lstsq(ct_ones(CT_SHAPE(4, 2), &o), ct_ones(CT_SHAPE(4, 1), &f)),
                CT_ERR_DTYPE, "same dtype");
  /* rank deficient (a zero column): R is exactly singular */
  double zc[8] = {1, 0, 2, 0, 3, 0, 4, 0};
  CHECK_ERR_MSG(ct_linalg_lstsq(ct_test_make(zc, CT_SHAPE(4, 2), CT_F64, CT_LAYOUT_CONTIG),
                                ct_ones(CT_SHAPE(4, 1), &o)),
                CT_ERR_ARG, "singular");
}
