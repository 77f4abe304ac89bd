/* Matrix norms (ct_linalg_matrix_norm) against torch.linalg.matrix_norm in
 * float64 (values and gradients, every ord), f32 against f64, keepdim,
 * finite differences in f64, and errors. */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

static const char *const ORDS[] = {"fro", "nuc", "2", "-2", "1", "-1", "inf", "-inf"};
enum { NORDS = sizeof ORDS / sizeof *ORDS };

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(11)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "a0 = torch.randn(2, 3, 4, 5, dtype=torch.float64); save('a', a0)\n"
    "for i, o in enumerate(['fro', 'nuc', 2, -2, 1, -1, float('inf'), float('-inf')]):\n"
    "    a = a0.clone().requires_grad_(True)\n"
    "    r = torch.linalg.matrix_norm(a, ord=o); w = torch.randn(r.shape, dtype=torch.float64)\n"
    "    save(f'n{i}', r); save(f'w{i}', w)\n"
    "    (r * w).sum().backward(); save(f'g{i}', a.grad)\n";

CT_TEST(linalg_matrix_norm_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("linalg_norm", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  char nm[32];
  for (int i = 0; i < NORDS; i++) {
    ct_tensor *a = ct_requires_grad_(ct_test_load_output(dir, "a"), true);
    ct_tensor *r = ct_linalg_matrix_norm(a, ORDS[i], false);
    snprintf(nm, sizeof nm, "n%d", i);
    CHECK_LIKE_TORCH(dir, ORDS[i], r, nm, 1e-12, 1e-12);
    snprintf(nm, sizeof nm, "w%d", i);
    ct_tensor *loss = r ? ct_sum(ct_mul(r, ct_test_load_output(dir, nm)), NULL) : NULL;
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    snprintf(nm, sizeof nm, "g%d", i);
    CHECK_LIKE_TORCH(dir, ORDS[i], ct_grad(a), nm, 1e-9, 1e-11);
    /* f32 against f64 */
    ct_tensor *r32 = ct_linalg_matrix_norm(ct_cast(a, CT_F32), ORDS[i], true);
    CHECK_OK(r32);
    if (r32 && r) {
      CHECK_SHAPE(r32, 2, 3, 1, 1);
      double *want = ct_test_values(r);
      WITH_CONTEXT(CHECK_CLOSE(r32, want, 1e-5, 1e-5), "ord %s f32", ORDS[i]);
      free(want);
    }
  }
}

static ct_tensor *f_norm(ct_tensor *const *in, void *ctx) {
  return ct_linalg_matrix_norm(in[0], (const char *)ctx, false);
}

CT_TEST(linalg_matrix_norm_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 3, 4), -1, 1, 111);
  for (int i = 0; i < NORDS; i++) CHECK_GRADIENTS(ORDS[i], f_norm, (void *)ORDS[i], &x, 1);
}

CT_TEST(linalg_matrix_norm_errors) {
  ct_tensor_opts f = ct_test_opts(CT_F32), i = ct_test_opts(CT_I64);
  ct_tensor *m = ct_ones(CT_SHAPE(2, 2), &f);
  CHECK_ERR_MSG(ct_linalg_matrix_norm(m, "3", false), CT_ERR_ARG, "got \"3\"");
  CHECK_ERR_MSG(ct_linalg_matrix_norm(m, NULL, false), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_linalg_matrix_norm(ct_ones(CT_SHAPE(2), &f), "fro", false), CT_ERR_SHAPE,
                "shape (2,)");
  CHECK_ERR_MSG(ct_linalg_matrix_norm(ct_ones(CT_SHAPE(2, 2), &i), "fro", false), CT_ERR_DTYPE,
                "i64");
  ct_tensor *fro = ct_linalg_matrix_norm(m, "fro", false);
  CHECK_OK(fro);
  if (fro) CHECK_CLOSE(fro, ((double[]){2}), 1e-7, 0);
}
