/* The QR decomposition (ct_linalg_qr): Q R = A, Q orthonormal, R upper
 * triangular, reduced and complete, tall and wide, against float64
 * references computed here; torch.linalg.qr as an oracle (values and
 * gradients); finite differences in f64; the non-differentiable case; errors. */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

CT_TEST(linalg_qr_values) {
  const int64_t dims[][2] = {{5, 3}, {3, 5}, {4, 4}, {1, 3}, {6, 1}};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double tol = di ? 1e-12 : 2e-5;
    for (size_t ci = 0; ci < sizeof dims / sizeof *dims; ci++)
      for (int complete = 0; complete < 2; complete++) {
        int64_t m = dims[ci][0], n = dims[ci][1], k = m < n ? m : n, count = 6;
        int64_t kq = complete ? m : k;
        double *av = ct_test_random(count * m * n, -1, 1, 91 + (unsigned)ci);
        ct_test_round_to(av, count * m * n, dt);
        ct_tensor *a = ct_test_make(av, CT_SHAPE(3, 2, m, n), dt, CT_LAYOUT_SLICED);
        ct_tensor *r = NULL, *q = ct_linalg_qr(a, complete, &r);
        WITH_CONTEXT(CHECK_OK(q), "qr %lldx%lld complete %d %s", (long long)m, (long long)n,
                     complete, ct_dtype_name(dt));
        if (!q || !r) continue;
        CHECK_SHAPE(q, 3, 2, m, kq);
        CHECK_SHAPE(r, 3, 2, kq, n);
        double *qv = ct_test_values(q), *rv = ct_test_values(r);
        double recon = 0, orth = 0;
        bool upper = true;
        for (int64_t t = 0; t < count; t++) {
          const double *A = av + t * m * n, *Q = qv + t * m * kq, *R = rv + t * kq * n;
          for (int64_t i = 0; i < kq; i++)
            for (int64_t j = 0; j < n; j++) upper = upper && (j >= i || R[i * n + j] == 0);
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
              double x = 0;
              for (int64_t p = 0; p < kq; p++) x += Q[i * kq + p] * R[p * n + j];
              recon = fmax(recon, fabs(x - A[i * n + j]));
            }
          for (int64_t i = 0; i < kq; i++)
            for (int64_t j = 0; j < kq; j++) {
              double x = 0;
              for (int64_t p = 0; p < m; p++) x += Q[p * kq + i] * Q[p * kq + j];
              orth = fmax(orth, fabs(x - (i == j)));
            }
        }
        WITH_CONTEXT(CHECK(upper), "qr %lldx%lld: R not upper triangular", (long long)m,
                     (long long)n);
        WITH_CONTEXT(CHECK(recon < tol * 10), "Q R - A: %g (%lldx%lld complete %d %s)", recon,
                     (long long)m, (long long)n, complete, ct_dtype_name(dt));
        WITH_CONTEXT(CHECK(orth < tol * 10), "Q^T Q - I: %g (%lldx%lld complete %d %s)", orth,
                     (long long)m, (long long)n, complete, ct_dtype_name(dt));
        free(av), free(qv), free(rv);
      }
  }
}

CT_TEST(linalg_qr_errors_and_edge_cases) {
  ct_tensor_opts f = ct_test_opts(CT_F32), i = ct_test_opts(CT_I32);
  ct_tensor *r = (ct_tensor *)1;
  CHECK_ERR_MSG(ct_linalg_qr(ct_zeros(CT_SHAPE(3), &f), false, &r), CT_ERR_SHAPE, "linalg_qr");
  CHECK(r == NULL);
  CHECK_ERR_MSG(ct_linalg_qr(ct_zeros(CT_SHAPE(3, 3), &i), false, NULL), CT_ERR_DTYPE, "i32");
  /* no columns: Q is the identity in complete mode */
  ct_tensor *q = ct_linalg_qr(ct_zeros(CT_SHAPE(2, 0), &f), true, &r);
  CHECK_OK(q);
  if (q && r) {
    CHECK_CLOSE(q, ((double[]){1, 0, 0, 1}), 0, 0);
    CHECK_SHAPE(r, 2, 0);
  }
  /* complete with more rows than columns: values, but no gradient (torch) */
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(4, 2), -1, 1, 3);
  q = ct_linalg_qr(x, true, &r);
  CHECK_OK(q);
  if (q)
    CHECK_ERR_MSG(ct_backward(ct_sum(q, NULL), NULL, NULL) == CT_OK, CT_ERR_ARG,
                  "not differentiable");
}

/* Q and R joined (flattened): qr's outputs are unique (R's diagonal keeps
 * LAPACK's signs, which are smooth away from zero) */
static ct_tensor *f_qr(ct_tensor *const *in, void *ctx) {
  ct_tensor *r = NULL, *q = ct_linalg_qr(in[0], ctx != NULL, &r);
  if (!q || !r) return NULL;
  ct_tensor *parts[2] = {ct_flatten(q, 0, -1), ct_flatten(r, 0, -1)};
  return ct_cat(parts, 2, 0);
}

CT_TEST(linalg_qr_gradients) {
  const int64_t dims[][2] = {{4, 3}, {3, 5}, {3, 3}};
  for (size_t ci = 0; ci < sizeof dims / sizeof *dims; ci++) {
    ct_tensor *x =
        ct_gradcheck_input(CT_SHAPE(2, dims[ci][0], dims[ci][1]), -1, 1, 101 + (unsigned)ci);
    CHECK_GRADIENTS("qr reduced", f_qr, NULL, &x, 1);
    if (dims[ci][0] <= dims[ci][1]) CHECK_GRADIENTS("qr complete", f_qr, (void *)1, &x, 1);
  }
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(9)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "for name, shape in [('tall', (2, 5, 3)), ('wide', (2, 3, 5))]:\n"
    "    a = torch.randn(shape, dtype=torch.float64, requires_grad=True)\n"
    "    q, r = torch.linalg.qr(a)\n"
    "    wq, wr = torch.randn(q.shape, dtype=torch.float64), torch.randn(r.shape, "
    "dtype=torch.float64)\n"
    "    for n, t in [('a', a), ('q', q), ('r', r), ('wq', wq), ('wr', wr)]: save(f'{name}_{n}', "
    "t)\n"
    "    ((q * wq).sum() + (r * wr).sum()).backward()\n"
    "    save(f'{name}_ga', a.grad)\n";

CT_TEST(linalg_qr_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("linalg_qr", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const char *names[2] = {"tall", "wide"};
  char nm[64];
  for (int c = 0; c < 2; c++) {
#define NAME(suffix) (snprintf(nm, sizeof nm, "%s_%s", names[c], suffix), nm)
    ct_tensor *a = ct_requires_grad_(ct_test_load_output(dir, NAME("a")), true);
    ct_tensor *r = NULL, *q = ct_linalg_qr(a, false, &r);
    CHECK_LIKE_TORCH(dir, NAME("q"), q, nm, 1e-12, 1e-12);
    CHECK_LIKE_TORCH(dir, NAME("r"), r, nm, 1e-12, 1e-12);
    ct_tensor *wq = ct_test_load_output(dir, NAME("wq")),
              *wr = ct_test_load_output(dir, NAME("wr"));
    ct_tensor *loss = ct_add(ct_sum(ct_mul(q, wq), NULL), ct_sum(ct_mul(r, wr), NULL));
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    CHECK_LIKE_TORCH(dir, NAME("ga"), ct_grad(a), nm, 1e-9, 1e-11);
#undef NAME
  }
}
