/* clip_grad_norm_ and clip_grad_value_: totals and scaled gradients against
 * float64 references computed here and against torch.nn.utils (skipped
 * without python3 + torch); parameters without gradients, non-finite totals
 * and argument errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

enum { NP = 3 };
static const int64_t SIZES[NP] = {6, 4, 5};

/* NP leaves with gradients drawn from seed (values in grads[i]). */
static void make_params(ct_tensor **ps, double **grads, ct_dtype dt, unsigned seed) {
  for (int i = 0; i < NP; i++) {
    double *v = ct_test_random(SIZES[i], -1, 1, seed + 10 * (unsigned)i);
    grads[i] = ct_test_random(SIZES[i], -2, 2, seed + 10 * (unsigned)i + 1);
    ct_test_round_to(grads[i], SIZES[i], dt);
    ps[i] = ct_requires_grad_(ct_test_make(v, &SIZES[i], 1, dt, CT_LAYOUT_CONTIG), true);
    CHECK_STATUS_OK(ct_set_grad(ps[i], ct_test_make(grads[i], &SIZES[i], 1, dt, CT_LAYOUT_CONTIG)));
    free(v);
  }
}

static double ref_norm(const double *g, int64_t n, double p) {
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    s = isinf(p) ? fmax(s, fabs(g[i])) : p == 0 ? s + (g[i] != 0) : s + pow(fabs(g[i]), p);
  return isinf(p) || p == 0 ? s : pow(s, 1 / p);
}

CT_TEST(clip_grad_norm_values) {
  const double ps_[] = {2, 1, INFINITY, 3.5};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    double tol = di ? 1e-12 : 1e-5;
    for (size_t k = 0; k < sizeof ps_ / sizeof *ps_; k++)
      for (int clip = 0; clip < 2; clip++) {
        double p = ps_[k];
        ct_tensor *ps[NP];
        double *g[NP];
        make_params(ps, g, dt, 100 + 7 * (unsigned)k);
        double norms[NP];
        for (int i = 0; i < NP; i++) norms[i] = ref_norm(g[i], SIZES[i], p);
        double total = ref_norm(norms, NP, p);
        double max_norm = clip ? total / 3 : total * 2;
        double coef = fmin(max_norm / (total + 1e-6), 1.0);
        ct_tensor *t = ct_clip_grad_norm_(ps, NP, max_norm, p, true);
        WITH_CONTEXT(CHECK_OK(t), "p %g", p);
        if (!t) continue;
        CHECK(ct_ndim(t) == 0 && ct_dtype_of(t) == dt &&
              ct_device_equal(ct_device_of(t), ct_test_device()));
        WITH_CONTEXT(CHECK_CLOSE(t, &total, tol, tol), "p %g %s", p, ct_dtype_name(dt));
        for (int i = 0; i < NP; i++) {
          for (int64_t j = 0; j < SIZES[i]; j++) g[i][j] *= coef;
          WITH_CONTEXT(CHECK_CLOSE(ct_grad(ps[i]), g[i], tol, tol), "p %g clip %d param %d", p,
                       clip, i);
          free(g[i]);
        }
      }
  }
}

CT_TEST(clip_grad_edge_cases) {
  ct_tensor *ps[NP];
  double *g[NP];
  make_params(ps, g, CT_F64, 7);
  /* a parameter without a gradient is skipped */
  ct_set_grad(ps[1], NULL);
  double want = sqrt(pow(ref_norm(g[0], SIZES[0], 2), 2) + pow(ref_norm(g[2], SIZES[2], 2), 2));
  ct_tensor *t = ct_clip_grad_norm_(ps, NP, 1e9, 2, false);
  CHECK_OK(t);
  if (t) CHECK_CLOSE(t, &want, 1e-12, 1e-12);
  CHECK(ct_grad(ps[1]) == NULL);
  /* no gradients at all: a CPU zero */
  ct_tensor *none[1] = {ps[1]};
  ct_tensor *z = ct_clip_grad_norm_(none, 1, 1.0, 2, true);
  CHECK_OK(z);
  if (z)
    CHECK(ct_ndim(z) == 0 && ct_device_of(z).type == CT_DEVICE_CPU && ct_dtype_of(z) == CT_F32);
  if (z) CHECK_CLOSE(z, ((double[]){0}), 0, 0);
  CHECK_OK(ct_clip_grad_norm_(NULL, 0, 1.0, 2, false));
  /* a non-finite total: an error that leaves the gradients alone, or nan/0 as torch */
  g[0][2] = INFINITY;
  CHECK_STATUS_OK(ct_set_grad(ps[0], ct_test_make(g[0], &SIZES[0], 1, CT_F64, CT_LAYOUT_CONTIG)));
  CHECK_ERR_MSG(ct_clip_grad_norm_(ps, NP, 1.0, 2, true), CT_ERR_ARG, "inf");
  CHECK_CLOSE(ct_grad(ps[0]), g[0], 0, 0);
  t = ct_clip_grad_norm_(ps, NP, 1.0, 2, false);
  CHECK_OK(t);
  double inf = INFINITY;
  if (t) CHECK_CLOSE(t, &inf, 0, 0);
  for (int64_t j = 0; j < SIZES[0]; j++) g[0][j] = j == 2 ? NAN : 0;
  CHECK_CLOSE(ct_grad(ps[0]), g[0], 0, 0);
  for (int64_t j = 0; j < SIZES[2]; j++) g[2][j] *= 0.0; /* the infinite total scaled by 0 */
  CHECK_CLOSE(ct_grad(ps[2]), g[2], 0, 0);
  /* clip_grad_value_ */
  for (int64_t j = 0; j < SIZES[2]; j++) g[2][j] = j - 2.5;
  CHECK_STATUS_OK(ct_set_grad(ps[2], ct_test_make(g[2], &SIZES[2], 1, CT_F64, CT_LAYOUT_CONTIG)));
  CHECK_STATUS_OK(ct_clip_grad_value_(ps, NP, 0.5));
  for (int64_t j = 0; j < SIZES[2]; j++) g[2][j] = fmin(fmax(g[2][j], -0.5), 0.5);
  CHECK_CLOSE(ct_grad(ps[2]), g[2], 0, 0);
  /* errors */
  CHECK_ERR(ct_clip_grad_norm_(ps, NP, 1.0, -1, false), CT_ERR_ARG);
  CHECK_ERR(ct_clip_grad_norm_(ps, NP, NAN, 2, false), CT_ERR_ARG);
  CHECK_ERR(ct_clip_grad_norm_(NULL, 2, 1.0, 2, false), CT_ERR_ARG);
  CHECK_ERR(ct_clip_grad_norm_((ct_tensor *[]){ps[0], NULL}, 2, 1.0, 2, false), CT_ERR_ARG);
  CHECK_ERR(ct_clip_grad_value_(ps, NP, -1) == CT_OK, CT_ERR_ARG);
  for (int i = 0; i < NP; i++) free(g[i]);
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(1)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "shapes = [(3, 4), (4,), (2, 2, 3)]\n"
    "grads = [torch.randn(s, dtype=torch.float64) for s in shapes]\n"
    "for i, g in enumerate(grads): save(f'g{i}', g)\n"
    "for name, mx, p in [('l2', 0.7, 2.0), ('inf', 0.3, float('inf')), ('l1', 100.0, 1.0), ('p3', "
    "0.5, 3.0)]:\n"
    "    ps = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in shapes]\n"
    "    for p_, g in zip(ps, grads): p_.grad = g.clone()\n"
    "    save(name, torch.nn.utils.clip_grad_norm_(ps, mx, norm_type=p))\n"
    "    for i, p_ in enumerate(ps): save(f'{name}_g{i}', p_.grad)\n"
    "ps = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in shapes]\n"
    "for p_, g in zip(ps, grads): p_.grad = g.clone()\n"
    "torch.nn.utils.clip_grad_value_(ps, 0.4)\n"
    "for i, p_ in enumerate(ps): save(f'value_g{i}', p_.grad)\n";

CT_TEST(clip_grad_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("clip_grad", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const struct {
    const char *name;
    double max_norm, p;
  } cases[] = {
      {"l2", 0.7, 2}, {"inf", 0.3, INFINITY}, {"l1", 100, 1}, {"p3", 0.5, 3}, {"value", 0.4, -1}};
  char n[64];
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    ct_tensor *ps[3];
    for (int i = 0; i < 3; i++) {
      snprintf(n, sizeof n, "g%d", i);
      ct_tensor *g = ct_test_load_output(dir, n);
      ps[i] = ct_requires_grad_(ct_zeros_like(g, NULL), true);
      ct_set_grad(ps[i], ct_clone(g));
    }
    if (cases[k].p < 0) {
      CHECK_STATUS_OK(ct_clip_grad_value_(ps, 3, cases[k].max_norm));
    } else {
      ct_tensor *t = ct_clip_grad_norm_(ps, 3, cases[k].max_norm, cases[k].p, false);
      CHECK_LIKE_TORCH(dir, cases[k].name, t, cases[k].name, 1e-12, 1e-14);
    }
    for (int i = 0; i < 3; i++) {
      snprintf(n, sizeof n, "%s_g%d", cases[k].name, i);
      CHECK_LIKE_TORCH(dir, n, ct_grad(ps[i]), n, 1e-12, 1e-14);
    }
  }
}
