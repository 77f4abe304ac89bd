/* Least squares (ct_linalg_lstsq, ct_linalg_lstsq_ex) against
 * torch.linalg.lstsq in float64, every output and driver (values and
 * gradients; tall: least squares, wide: minimum norm, low: rank 2), the
 * normal equations checked here in f64, finite differences, rank-deficient
 * matrices, and errors. */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(13)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "for name, (m, n) in [('tall', (6, 3)), ('wide', (3, 5)), ('low', (6, 3))]:\n"
    "    a = torch.randn(2, m, n, dtype=torch.float64)\n"
    "    if name == 'low': a[:, :, 2] = a[:, :, 0] - 2 * a[:, :, 1]  # rank 2\n"
    "    a.requires_grad_(True)\n"
    "    b = torch.randn(2, m, 2, dtype=torch.float64, requires_grad=True)\n"
    "    w = torch.randn(2, n, 2, dtype=torch.float64)\n"
    "    for k, t in [('a', a), ('b', b), ('w', w)]: save(f'{name}_{k}', t)\n"
    "    for drv in ('gelsy', 'gelsd', 'gelss', 'gels'):\n"
    "        if name == 'low' and drv == 'gels': continue\n"
    "        a.grad = None; b.grad = None\n"
    "        r = torch.linalg.lstsq(a, b, driver=drv)\n"
    "        p = f'{name}_{drv}_'\n"
    "        for k, t in [('x', r.solution), ('res', r.residuals), ('rank', r.rank),\n"
    "                     ('sv', r.singular_values)]: save(p + k, t)\n"
    "        if name != 'low':\n"
    "            (r.solution * w).sum().backward(); save(p + 'ga', a.grad); save(p + 'gb', "
    "b.grad)\n";

static const char *const DRIVERS[4] = {"gelsy", "gelsd", "gelss", "gels"};

/* Whether the device under test runs the driver (CUDA: gels only, as torch). */
static bool runs_here(int drv) { return drv == 3 || ct_test_device().type == CT_DEVICE_CPU; }

CT_TEST(linalg_lstsq_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("linalg_lstsq", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const char *names[3] = {"tall", "wide", "low"};
  char nm[64];
  for (int c = 0; c < 3; c++)
    for (int drv = 0; drv < 4; drv++) {
      if ((c == 2 && drv == 3) || !runs_here(drv)) continue;
#define NAME(suffix) (snprintf(nm, sizeof nm, "%s_%s", names[c], suffix), nm)
#define OUT(suffix) (snprintf(nm, sizeof nm, "%s_%s_%s", names[c], DRIVERS[drv], suffix), nm)
        /* torch's gelsy leaves its pivot array uninitialized (pytorch#71222): on a
         * rank-deficient batch its rank and solution depend on memory left from
         * before. The minimum-norm solution and the rank are unique, so the low
         * case's gelsy is checked against torch's gelsd (the SVD). */
#define OUT_XR(suffix)                                                                        \
  (snprintf(nm, sizeof nm, "%s_%s_%s", names[c], c == 2 && drv == 0 ? "gelsd" : DRIVERS[drv], \
            suffix),                                                                          \
   nm)
      ct_tensor *a = ct_requires_grad_(ct_test_load_output(dir, NAME("a")), true);
      ct_tensor *b = ct_requires_grad_(ct_test_load_output(dir, NAME("b")), true);
      ct_lstsq_result r;
      CHECK_STATUS_OK(ct_linalg_lstsq_ex(a, b, &(ct_lstsq_opts){.driver = DRIVERS[drv]}, &r));
      WITH_CONTEXT(CHECK_LIKE_TORCH(dir, OUT_XR("x"), r.solution, nm, 1e-10, 1e-12), "%s",
                   DRIVERS[drv]);
      CHECK_LIKE_TORCH(dir, OUT("res"), r.residuals, nm, 1e-10, 1e-12);
      CHECK_LIKE_TORCH(dir, OUT_XR("rank"), r.rank, nm, 0, 0);
      CHECK_LIKE_TORCH(dir, OUT("sv"), r.singular_values, nm, 1e-12, 1e-12);
      CHECK(!r.rank || ct_dtype_of(r.rank) == CT_I64);
      if (c == 2 || !r.solution) continue;
      ct_tensor *loss = ct_sum(ct_mul(r.solution, ct_test_load_output(dir, NAME("w"))), NULL);
      CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
      CHECK_LIKE_TORCH(dir, OUT("ga"), ct_grad(a), nm, 1e-9, 1e-11);
      CHECK_LIKE_TORCH(dir, OUT("gb"), ct_grad(b), nm, 1e-9, 1e-11);
#undef NAME
#undef OUT
#undef OUT_XR
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
    ct_tensor *x = ct_linalg_lstsq(ct_test_make(av, CT_SHAPE(m, n), dt, CT_LAYOUT_TRANSPOSED),
                                   ct_test_make(bv, CT_SHAPE(m, k), dt, CT_LAYOUT_SLICED));
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
  ct_lstsq_result r;
  if (ct_linalg_lstsq_ex(in[0], in[1], &(ct_lstsq_opts){.driver = ctx}, &r) != CT_OK) return NULL;
  /* the residuals too (m > n), weighted in: both outputs are differentiable */
  if (ct_numel(r.residuals) == 0) return r.solution;
  return ct_add(r.solution, ct_unsqueeze(r.residuals, -2));
}

CT_TEST(linalg_lstsq_gradients) {
  for (int drv = 0; drv < 4; drv++) {
    if (!runs_here(drv)) continue;
    ct_tensor *a = ct_gradcheck_input(CT_SHAPE(5, 3), -1, 1, 131);
    ct_tensor *b = ct_gradcheck_input(CT_SHAPE(2, 5, 2), -1, 1, 132); /* broadcast a */
    ct_tensor *ab[2] = {a, b};
    WITH_CONTEXT(CHECK_GRADIENTS("lstsq tall", f_lstsq, (void *)DRIVERS[drv], ab, 2), "%s",
                 DRIVERS[drv]);
    ct_tensor *w = ct_gradcheck_input(CT_SHAPE(2, 4), -1, 1, 133);
    ct_tensor *wb = ct_gradcheck_input(CT_SHAPE(2, 1), -1, 1, 134);
    ct_tensor *wab[2] = {w, wb};
    WITH_CONTEXT(CHECK_GRADIENTS("lstsq wide", f_lstsq, (void *)DRIVERS[drv], wab, 2), "%s",
                 DRIVERS[drv]);
  }
}

/* A rank-deficient a: the rank drivers' minimum-norm solution and rank
 * (here against a zero column: x's second entry 0), gels' error. */
CT_TEST(linalg_lstsq_rank_deficient) {
  double zc[8] = {1, 0, 2, 0, 3, 0, 4, 0}, ones[4] = {1, 1, 1, 1};
  for (int drv = 0; drv < 4; drv++) {
    if (!runs_here(drv)) continue;
    ct_tensor *a = ct_test_make(zc, CT_SHAPE(4, 2), CT_F64, CT_LAYOUT_CONTIG);
    ct_tensor *b = ct_test_make(ones, CT_SHAPE(4, 1), CT_F64, CT_LAYOUT_CONTIG);
    ct_lstsq_result r;
    const ct_lstsq_opts o = {.driver = DRIVERS[drv]};
    if (drv == 3) { /* (the macro clears the error before it runs the call) */
      CHECK_ERR_MSG(ct_linalg_lstsq_ex(a, b, &o, &r) == CT_OK ? r.solution : NULL, CT_ERR_ARG,
                    "singular");
      continue;
    }
    CHECK_STATUS_OK(ct_linalg_lstsq_ex(a, b, &o, &r));
    WITH_CONTEXT(CHECK_CLOSE(r.solution, ((double[]){1.0 / 3, 0}), 1e-12, 1e-12), "%s",
                 DRIVERS[drv]);
    CHECK_CLOSE(r.rank, ((double[]){1}), 0, 0);
    CHECK(r.residuals && ct_numel(r.residuals) == 0); /* not of full rank: none */
    /* a negative rcond is the machine precision for every rank driver (LAPACK's
     * gelsy alone reads it as no threshold, dividing by the zero pivot) */
    for (int di = 0; di < 2; di++) {
      ct_dtype dt = di ? CT_F64 : CT_F32;
      ct_tensor *a2 = ct_test_make(zc, CT_SHAPE(4, 2), dt, CT_LAYOUT_CONTIG);
      ct_tensor *b2 = ct_test_make(ones, CT_SHAPE(4, 1), dt, CT_LAYOUT_CONTIG);
      const ct_lstsq_opts on = {.driver = DRIVERS[drv], .rcond = -1};
      CHECK_STATUS_OK(ct_linalg_lstsq_ex(a2, b2, &on, &r));
      WITH_CONTEXT(CHECK_CLOSE(r.solution, ((double[]){1.0 / 3, 0}), 1e-6, 1e-6),
                   "%s, rcond -1, %s", DRIVERS[drv], ct_dtype_name(dt));
      CHECK_CLOSE(r.rank, ((double[]){1}), 0, 0);
    }
  }
}

/* Empty matrices (no rows, no columns, no right-hand sides) with gradients:
 * a zero solution of shape (n, k) and zero gradients, as torch. */
CT_TEST(linalg_lstsq_empty_with_gradients) {
  const int64_t mnk[3][3] = {{0, 3, 2}, {4, 0, 2}, {4, 3, 0}};
  ct_tensor_opts o = ct_test_opts(CT_F64);
  for (int drv = 0; drv < 4; drv++) {
    if (!runs_here(drv)) continue;
    for (int c = 0; c < 3; c++) {
      int64_t m = mnk[c][0], n = mnk[c][1], k = mnk[c][2];
      double *av = ct_test_random(m * n, -1, 1, 140 + (unsigned)c);
      ct_tensor *a =
          ct_requires_grad_(ct_test_make(av, CT_SHAPE(m, n), CT_F64, CT_LAYOUT_CONTIG), true);
      free(av);
      ct_tensor *b = ct_requires_grad_(ct_ones(CT_SHAPE(m, k), &o), true);
      ct_lstsq_result r;
      ct_status st = ct_linalg_lstsq_ex(a, b, &(ct_lstsq_opts){.driver = DRIVERS[drv]}, &r);
      WITH_CONTEXT(CHECK_STATUS_OK(st), "%s, (%lld, %lld, %lld)", DRIVERS[drv], (long long)m,
                   (long long)n, (long long)k);
      if (st != CT_OK) continue;
      CHECK_SHAPE(r.solution, n, k);
      if (drv < 3) /* rank 0 without rows or columns (torch's); a's rank without columns of b */
        CHECK_CLOSE(r.rank, ((double[]){k == 0 ? 3 : 0}), 0, 0);
      CHECK(ct_allclose(r.solution, ct_zeros_like(r.solution, NULL), 0, 0));
      CHECK_STATUS_OK(ct_backward(ct_sum(r.solution, NULL), NULL, NULL));
      CHECK(ct_grad(a) && ct_numel(ct_grad(a)) == m * n);
      CHECK(ct_grad(b) && ct_numel(ct_grad(b)) == m * k);
      if (ct_grad(b)) CHECK(ct_allclose(ct_grad(b), ct_zeros_like(ct_grad(b), NULL), 0, 0));
    }
  }
}

CT_TEST(linalg_lstsq_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F64), f = ct_test_opts(CT_F32), i = ct_test_opts(CT_I64);
  CHECK_ERR_MSG(ct_linalg_lstsq(ct_ones(CT_SHAPE(4, 2), &o), ct_ones(CT_SHAPE(3, 1), &o)),
                CT_ERR_SHAPE, "different rows");
  CHECK_ERR_MSG(ct_linalg_lstsq(ct_ones(CT_SHAPE(4, 2), &o), ct_ones(CT_SHAPE(4, 1), &f)),
                CT_ERR_DTYPE, "same dtype");
  CHECK_ERR_MSG(ct_linalg_lstsq(ct_ones(CT_SHAPE(4, 2), &i), ct_ones(CT_SHAPE(4, 1), &i)),
                CT_ERR_DTYPE, "linalg_lstsq: expected f32 or f64 matrices, got i64");
  ct_lstsq_result r;
  CHECK(ct_linalg_lstsq_ex(ct_ones(CT_SHAPE(4, 2), &o), ct_ones(CT_SHAPE(4, 1), &o),
                           &(ct_lstsq_opts){.driver = "qr"}, &r) == CT_ERR_ARG);
  CHECK(
      strstr(ct_last_error_message(), "driver must be one of gelsy, gelsd, gelss, gels, got 'qr'"));
  CHECK(r.solution == NULL);
  if (ct_test_device().type == CT_DEVICE_CUDA) {
    CHECK(ct_linalg_lstsq_ex(ct_ones(CT_SHAPE(4, 2), &o), ct_ones(CT_SHAPE(4, 1), &o),
                             &(ct_lstsq_opts){.driver = "gelsd"}, &r) == CT_ERR_ARG);
    CHECK(strstr(ct_last_error_message(), "the driver 'gelsd' does not run on cuda:0"));
  }
}
