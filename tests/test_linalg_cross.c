/* linalg_cross against float64 references computed here, over operand
 * layouts, dtypes, broadcasting and a vector dim that is not the last; its
 * gradients by finite differences, and its errors. */
#include "ct_gradcheck.h"
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static const ct_dtype dtypes[] = {CT_F64, CT_F32, CT_I32, CT_I64};

/* r = a x b for 3-vectors whose components are `step` apart. */
static void ref_cross(const double *a, const double *b, double *r, int64_t step) {
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    r[i * step] = a[j * step] * b[k * step] - a[k * step] * b[j * step];
  }
}

CT_TEST(cross_last_dim_broadcast) {
  /* a (4, 3), b (2, 1, 3) -> (2, 4, 3) */
  double av[12], bv[6], e[24];
  for (int i = 0; i < 12; i++) av[i] = (double)((i * 5) % 7) - 3;
  for (int i = 0; i < 6; i++) bv[i] = (double)((i * 3) % 5) - 2;
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 4; q++) ref_cross(av + q * 3, bv + p * 3, e + (p * 4 + q) * 3, 1);
  for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = dtypes[di];
      ct_tensor *a = ct_test_make(av, CT_SHAPE(4, 3), dt, (ct_test_layout)l);
      ct_tensor *b = ct_test_make(bv, CT_SHAPE(2, 1, 3), dt, CT_LAYOUT_CONTIG);
      ct_tensor *r = ct_linalg_cross(a, b, -1);
      WITH_CONTEXT(CHECK_SHAPE(r, 2, 4, 3), "%s %s", ct_dtype_name(dt), ct_test_layout_names[l]);
      WITH_CONTEXT(CHECK_CLOSE(r, e, 0, 0), "%s %s", ct_dtype_name(dt), ct_test_layout_names[l]);
      CHECK(r && ct_dtype_of(r) == dt);
      /* the same dim counted from the front of the 3-d result */
      CHECK_CLOSE(ct_linalg_cross(a, b, 2), e, 0, 0);
    }
}

CT_TEST(cross_first_dim) {
  /* a, b (3, 5): vectors in dim 0, components 5 apart */
  double av[15], bv[15], e[15];
  for (int i = 0; i < 15; i++) {
    av[i] = (double)((i * 7) % 9) - 4;
    bv[i] = (double)((i * 4) % 11) - 5;
  }
  for (int c = 0; c < 5; c++) ref_cross(av + c, bv + c, e + c, 5);
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    ct_tensor *a = ct_test_make(av, CT_SHAPE(3, 5), CT_F32, (ct_test_layout)l);
    ct_tensor *b = ct_test_make(bv, CT_SHAPE(3, 5), CT_F64, (ct_test_layout)l);
    ct_tensor *r = ct_linalg_cross(a, b, 0); /* f32 with f64 promotes */
    WITH_CONTEXT(CHECK_SHAPE(r, 3, 5), "%s", ct_test_layout_names[l]);
    WITH_CONTEXT(CHECK_CLOSE(r, e, 0, 0), "%s", ct_test_layout_names[l]);
    CHECK(r && ct_dtype_of(r) == CT_F64);
  }
  /* no vectors: (0, 3) gives (0, 3) */
  ct_tensor *z = ct_zeros(CT_SHAPE(0, 3), &(ct_tensor_opts){.device = ct_test_device()});
  CHECK_SHAPE(ct_linalg_cross(z, z, -1), 0, 3);
}

static ct_tensor *cross_fn(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_linalg_cross(in[0], in[1], -1);
}

CT_TEST(cross_gradients) {
  ct_tensor *in[2] = {ct_gradcheck_input(CT_SHAPE(4, 3), -1, 1, 1),
                      ct_gradcheck_input(CT_SHAPE(2, 1, 3), -1, 1, 2)};
  CHECK_GRADIENTS("linalg_cross", cross_fn, NULL, in, 2);
}

CT_TEST(cross_errors) {
  ct_tensor_opts o = {.device = ct_test_device()};
  ct_tensor *a = ct_zeros(CT_SHAPE(2, 3), &o), *b4 = ct_zeros(CT_SHAPE(2, 4), &o);
  CHECK_ERR_MSG(ct_linalg_cross(a, b4, -1), CT_ERR_SHAPE, "has size 4 in dim 1, expected 3");
  CHECK_ERR_MSG(ct_linalg_cross(a, a, 0), CT_ERR_SHAPE, "has size 2 in dim 0, expected 3");
  CHECK_ERR_MSG(ct_linalg_cross(a, a, 2), CT_ERR_ARG, "dim 2 out of range for 2-d operands");
  ct_tensor *v = ct_zeros(CT_SHAPE(3), &o), *m = ct_zeros(CT_SHAPE(3, 2), &o);
  CHECK_ERR_MSG(ct_linalg_cross(m, v, 0), CT_ERR_SHAPE, "the second operand has 1 dims");
  ct_tensor *bb = ct_zeros(CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_BOOL, .device = o.device});
  CHECK_ERR_MSG(ct_linalg_cross(bb, v, -1), CT_ERR_DTYPE, "expected numeric tensors, got bool");
  CHECK(ct_linalg_cross(NULL, v, -1) == NULL);
}
