/* The symmetric eigendecomposition (ct_linalg_eigh): A V = V diag(w), V
 * orthonormal, w ascending, against float64 references computed here;
 * torch.linalg.eigh as an oracle (eigenvalues, and gradients of losses that do
 * not depend on the eigenvectors' signs); finite-difference gradient checks
 * in f64; UPLO; errors. */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

/* count symmetric n x n matrices from seed (the upper triangle mirrors the
 * lower one), rounded to dt */
static double *symmetric(int64_t count, int64_t n, ct_dtype dt, unsigned seed) {
  double *v = ct_test_random(count * n * n + 1, -1, 1, seed);
  for (int64_t t = 0; t < count; t++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) v[t * n * n + i * n + j] = v[t * n * n + j * n + i];
  ct_test_round_to(v, count * n * n, dt);
  return v;
}

CT_TEST(linalg_eigh_values) {
  /* 32: the largest order of CUDA's batched (Jacobi) call, 33 above it */
  const int64_t sizes[] = {1, 4, 9, 32, 33};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double tol = di ? 1e-11 : 2e-5;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
      for (int upper = 0; upper < 2; upper++) {
        int64_t n = sizes[si], count = 6;
        double *av = symmetric(count, n, dt, 3 + (unsigned)si);
        /* garbage in the triangle that is not read */
        double *in = malloc(sizeof(double) * (size_t)(count * n * n));
        memcpy(in, av, sizeof(double) * (size_t)(count * n * n));
        for (int64_t t = 0; t < count; t++)
          for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
              if (upper ? j < i : j > i) in[t * n * n + i * n + j] = 1e3;
        ct_tensor *a = ct_test_make(in, CT_SHAPE(3, 2, n, n), dt, CT_LAYOUT_TRANSPOSED);
        ct_tensor *vec = NULL;
        ct_tensor *w = ct_linalg_eigh(a, upper, &vec);
        WITH_CONTEXT(CHECK_OK(w), "eigh n %lld %s", (long long)n, ct_dtype_name(dt));
        if (!w || !vec) continue;
        CHECK_SHAPE(w, 3, 2, n);
        CHECK_SHAPE(vec, 3, 2, n, n);
        double *wv = ct_test_values(w), *vv = ct_test_values(vec);
        double worst = 0, orth = 0;
        bool ascending = true;
        for (int64_t t = 0; t < count; t++) {
          const double *A = av + t * n * n, *V = vv + t * n * n, *L = wv + t * n;
          for (int64_t i = 0; i + 1 < n; i++) ascending = ascending && L[i] <= L[i + 1];
          for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
              double av_ij = 0, vtv = 0; /* (A V)_ij vs V_ij L_j; (V^T V)_ij vs I */
              for (int64_t p = 0; p < n; p++) {
                av_ij += A[i * n + p] * V[p * n + j];
                vtv += V[p * n + i] * V[p * n + j];
              }
              worst = fmax(worst, fabs(av_ij - V[i * n + j] * L[j]));
              orth = fmax(orth, fabs(vtv - (i == j)));
            }
        }
        WITH_CONTEXT(CHECK(ascending), "eigh n %lld", (long long)n);
        WITH_CONTEXT(CHECK(worst < tol * 10 * (double)n), "A V - V L: %g (n %lld, %s, upper %d)",
                     worst, (long long)n, ct_dtype_name(dt), upper);
        WITH_CONTEXT(CHECK(orth < tol * 10 * (double)n), "V^T V - I: %g (n %lld, %s)", orth,
                     (long long)n, ct_dtype_name(dt));
        /* without eigenvectors: the same eigenvalues */
        ct_tensor *w2 = ct_linalg_eigh(a, upper, NULL);
        CHECK_OK(w2);
        if (w2) CHECK_CLOSE(w2, wv, 0, 0);
        free(av), free(in), free(wv), free(vv);
      }
  }
}

CT_TEST(linalg_eigh_errors_and_empty) {
  ct_tensor_opts f = ct_test_opts(CT_F32), i = ct_test_opts(CT_I32);
  ct_tensor *vec = (ct_tensor *)1;
  CHECK_ERR_MSG(ct_linalg_eigh(ct_zeros(CT_SHAPE(3, 4), &f), false, &vec), CT_ERR_SHAPE,
                "linalg_eigh");
  CHECK(vec == NULL);
  CHECK_ERR_MSG(ct_linalg_eigh(ct_zeros(CT_SHAPE(3, 3), &i), false, NULL), CT_ERR_DTYPE, "i32");
  ct_tensor *e = ct_zeros(CT_SHAPE(0, 2, 2), &f);
  ct_tensor *w = ct_linalg_eigh(e, false, &vec);
  CHECK_OK(w);
  if (w) CHECK_SHAPE(w, 0, 2);
  if (vec) CHECK_SHAPE(vec, 0, 2, 2);
}

/* eigenvalues, and the sign-invariant V * V, of sym(x) = (x + x^T) / 2 */
static ct_tensor *f_eigh(ct_tensor *const *in, void *ctx) {
  ct_tensor *sym = ct_mul_scalar(ct_add(in[0], ct_transpose(in[0], -2, -1)), 0.5);
  ct_tensor *vec = NULL, *w = ct_linalg_eigh(sym, false, ctx ? &vec : NULL);
  if (!ctx || !w) return w;
  /* w (2, n) and V*V (2, n, n) in one output: cat along the rows */
  ct_tensor *parts[2] = {ct_unsqueeze(w, 1), ct_mul(vec, vec)};
  return ct_cat(parts, 2, 1);
}

CT_TEST(linalg_eigh_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 4, 4), -1, 1, 61);
  CHECK_GRADIENTS("eigh values", f_eigh, NULL, &x, 1);
  CHECK_GRADIENTS("eigh values and vectors", f_eigh, (void *)1, &x, 1);
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(5)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.randn(3, 5, 5, dtype=torch.float64); a = (x + x.mT) / 2\n"
    "save('a', a)\n"
    "a.requires_grad_(True)\n"
    "w, v = torch.linalg.eigh(a)\n"
    "ww = torch.randn(w.shape, dtype=torch.float64); wv = torch.randn(v.shape, "
    "dtype=torch.float64)\n"
    "save('w', w); save('ww', ww); save('wv', wv); save('vsq', v * v)\n"
    "((w * ww).sum() + (v * v * wv).sum()).backward()\n"
    "save('ga', a.grad)\n";

CT_TEST(linalg_eigh_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("linalg_eigh", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *a = ct_requires_grad_(ct_test_load_output(dir, "a"), true);
  ct_tensor *vec = NULL, *w = ct_linalg_eigh(a, false, &vec);
  CHECK_LIKE_TORCH(dir, "eigenvalues", w, "w", 1e-12, 1e-12);
  ct_tensor *vsq = vec ? ct_mul(vec, vec) : NULL;
  CHECK_LIKE_TORCH(dir, "eigenvectors squared", vsq, "vsq", 1e-10, 1e-12);
  ct_tensor *loss = ct_add(ct_sum(ct_mul(w, ct_test_load_output(dir, "ww")), NULL),
                           ct_sum(ct_mul(vsq, ct_test_load_output(dir, "wv")), NULL));
  CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
  CHECK_LIKE_TORCH(dir, "gradient", ct_grad(a), "ga", 1e-9, 1e-11);
}
