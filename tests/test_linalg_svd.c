/* The singular value decomposition (ct_linalg_svd): U diag(S) Vh = A, U and
 * Vh orthonormal, S descending, reduced and full, tall and wide, against
 * float64 references computed here; torch.linalg.svd as an oracle (values,
 * and gradients of losses that do not depend on the vectors' signs); finite
 * differences in f64; errors. */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

/* max |(X^T X)_ij - I_ij| for the r x c row-major x, columns (cols) or rows */
static double orth_err(const double *x, int64_t r, int64_t c, bool cols) {
  double worst = 0;
  int64_t q = cols ? c : r, len = cols ? r : c;
  for (int64_t i = 0; i < q; i++)
    for (int64_t j = 0; j < q; j++) {
      double s = 0;
      for (int64_t p = 0; p < len; p++)
        s += cols ? x[p * c + i] * x[p * c + j] : x[i * c + p] * x[j * c + p];
      worst = fmax(worst, fabs(s - (i == j)));
    }
  return worst;
}

CT_TEST(linalg_svd_values) {
  /* 32 rows and columns: the largest of CUDA's batched (Jacobi) call; 33 above it */
  const int64_t dims[][2] = {{5, 3}, {3, 5}, {4, 4}, {1, 3}, {6, 1}, {32, 32}, {32, 7}, {33, 5}};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double tol = di ? 1e-11 : 5e-5;
    for (size_t ci = 0; ci < sizeof dims / sizeof *dims; ci++)
      for (int full = 0; full < 2; full++) {
        int64_t m = dims[ci][0], n = dims[ci][1], k = m < n ? m : n, count = 4;
        double *av = ct_test_random(count * m * n, -1, 1, 71 + (unsigned)ci);
        ct_test_round_to(av, count * m * n, dt);
        ct_tensor *a = ct_test_make(av, CT_SHAPE(2, 2, m, n), dt, CT_LAYOUT_TRANSPOSED);
        ct_tensor *u = NULL, *vh = NULL;
        ct_tensor *s = ct_linalg_svd(a, full, &u, &vh);
        WITH_CONTEXT(CHECK_OK(s), "svd %lldx%lld full %d %s", (long long)m, (long long)n, full,
                     ct_dtype_name(dt));
        if (!s || !u || !vh) continue;
        int64_t uc = full ? m : k, vr = full ? n : k;
        CHECK_SHAPE(s, 2, 2, k);
        CHECK_SHAPE(u, 2, 2, m, uc);
        CHECK_SHAPE(vh, 2, 2, vr, n);
        double *sv = ct_test_values(s), *uv = ct_test_values(u), *vv = ct_test_values(vh);
        double recon = 0, orth = 0;
        bool sorted = true;
        for (int64_t t = 0; t < count; t++) {
          const double *A = av + t * m * n, *U = uv + t * m * uc, *S = sv + t * k,
                       *V = vv + t * vr * n;
          for (int64_t i = 0; i + 1 < k; i++) sorted = sorted && S[i] >= S[i + 1] && S[i + 1] >= 0;
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
              double x = 0;
              for (int64_t p = 0; p < k; p++) x += U[i * uc + p] * S[p] * V[p * n + j];
              recon = fmax(recon, fabs(x - A[i * n + j]));
            }
          orth = fmax(orth, orth_err(U, m, uc, true));
          orth = fmax(orth, orth_err(V, vr, n, false));
        }
        WITH_CONTEXT(CHECK(sorted), "svd %lldx%lld", (long long)m, (long long)n);
        WITH_CONTEXT(CHECK(recon < tol * 10), "U S Vh - A: %g (%lldx%lld full %d %s)", recon,
                     (long long)m, (long long)n, full, ct_dtype_name(dt));
        WITH_CONTEXT(CHECK(orth < tol * 10), "orthonormality: %g (%lldx%lld full %d %s)", orth,
                     (long long)m, (long long)n, full, ct_dtype_name(dt));
        /* the values alone */
        ct_tensor *s2 = ct_linalg_svd(a, full, NULL, NULL);
        CHECK_OK(s2);
        if (s2) CHECK_CLOSE(s2, sv, tol, tol);
        free(av), free(sv), free(uv), free(vv);
      }
  }
}

CT_TEST(linalg_svd_errors_and_empty) {
  ct_tensor_opts f = ct_test_opts(CT_F32), i = ct_test_opts(CT_I64);
  ct_tensor *u = (ct_tensor *)1, *vh = (ct_tensor *)1;
  CHECK_ERR_MSG(ct_linalg_svd(ct_zeros(CT_SHAPE(4), &f), false, &u, &vh), CT_ERR_SHAPE,
                "linalg_svd");
  CHECK(u == NULL && vh == NULL);
  CHECK_ERR_MSG(ct_linalg_svd(ct_zeros(CT_SHAPE(2, 2), &i), false, NULL, NULL), CT_ERR_DTYPE,
                "i64");
  ct_tensor *s = ct_linalg_svd(ct_zeros(CT_SHAPE(0, 3, 2), &f), false, &u, &vh);
  CHECK_OK(s);
  if (s) CHECK_SHAPE(s, 0, 2);
  if (u) CHECK_SHAPE(u, 0, 3, 2);
  if (vh) CHECK_SHAPE(vh, 0, 2, 2);
  /* k = 0: full matrices are identities */
  s = ct_linalg_svd(ct_zeros(CT_SHAPE(2, 0), &f), true, &u, &vh);
  CHECK_OK(s);
  if (s && u && vh) {
    CHECK_SHAPE(s, 0);
    CHECK_CLOSE(u, ((double[]){1, 0, 0, 1}), 0, 0);
    CHECK_SHAPE(vh, 0, 0);
  }
}

/* S, U*U and Vh*Vh (invariant to the vectors' signs), flattened and joined */
static ct_tensor *f_svd(ct_tensor *const *in, void *ctx) {
  ct_tensor *u = NULL, *vh = NULL;
  ct_tensor *s = ct_linalg_svd(in[0], false, ctx ? &u : NULL, ctx ? &vh : NULL);
  if (!ctx || !s) return s;
  ct_tensor *parts[3] = {ct_flatten(s, 0, -1), ct_flatten(ct_mul(u, u), 0, -1),
                         ct_flatten(ct_mul(vh, vh), 0, -1)};
  return ct_cat(parts, 3, 0);
}

CT_TEST(linalg_svd_gradients) {
  const int64_t dims[][2] = {{4, 3}, {3, 4}, {3, 3}};
  for (size_t ci = 0; ci < sizeof dims / sizeof *dims; ci++) {
    ct_tensor *x =
        ct_gradcheck_input(CT_SHAPE(2, dims[ci][0], dims[ci][1]), -1, 1, 81 + (unsigned)ci);
    CHECK_GRADIENTS("svd values", f_svd, NULL, &x, 1);
    CHECK_GRADIENTS("svd values and vectors", f_svd, (void *)1, &x, 1);
  }
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(7)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "for name, shape in [('tall', (2, 5, 3)), ('wide', (2, 3, 5))]:\n"
    "    a = torch.randn(shape, dtype=torch.float64, requires_grad=True)\n"
    "    u, s, vh = torch.linalg.svd(a, full_matrices=False)\n"
    "    ws, wu, wv = (torch.randn(t.shape, dtype=torch.float64) for t in (s, u, vh))\n"
    "    for n, t in [('a', a), ('s', s), ('usq', u * u), ('vsq', vh * vh), ('ws', ws), ('wu', "
    "wu), "
    "('wv', wv)]: save(f'{name}_{n}', t)\n"
    "    ((s * ws).sum() + (u * u * wu).sum() + (vh * vh * wv).sum()).backward()\n"
    "    save(f'{name}_ga', a.grad)\n";

CT_TEST(linalg_svd_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("linalg_svd", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const char *names[2] = {"tall", "wide"};
  char nm[64], nm2[64];
#define LOAD(suffix) \
  (snprintf(nm, sizeof nm, "%s_%s", names[c], suffix), ct_test_load_output(dir, nm))
  for (int c = 0; c < 2; c++) {
    ct_tensor *a = ct_requires_grad_(LOAD("a"), true);
    ct_tensor *u = NULL, *vh = NULL, *s = ct_linalg_svd(a, false, &u, &vh);
    ct_tensor *usq = u ? ct_mul(u, u) : NULL, *vsq = vh ? ct_mul(vh, vh) : NULL;
    snprintf(nm2, sizeof nm2, "%s_s", names[c]);
    CHECK_LIKE_TORCH(dir, nm2, s, nm2, 1e-12, 1e-12);
    snprintf(nm2, sizeof nm2, "%s_usq", names[c]);
    CHECK_LIKE_TORCH(dir, nm2, usq, nm2, 1e-10, 1e-12);
    snprintf(nm2, sizeof nm2, "%s_vsq", names[c]);
    CHECK_LIKE_TORCH(dir, nm2, vsq, nm2, 1e-10, 1e-12);
    ct_tensor *loss =
        ct_add(ct_add(ct_sum(ct_mul(s, LOAD("ws")), NULL), ct_sum(ct_mul(usq, LOAD("wu")), NULL)),
               ct_sum(ct_mul(vsq, LOAD("wv")), NULL));
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    snprintf(nm2, sizeof nm2, "%s_ga", names[c]);
    CHECK_LIKE_TORCH(dir, nm2, ct_grad(a), nm2, 1e-9, 1e-11);
  }
#undef LOAD
}
