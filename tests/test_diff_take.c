/* diff and take_along_axis against float64 references computed here (loops
 * over the row-major values), on every operand layout and several dtypes,
 * their gradients by finite differences, and their errors. */
#include "ct_gradcheck.h"
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static const ct_dtype dtypes[] = {CT_F64, CT_F32, CT_I32, CT_I64, CT_BOOL};

/* Reference diff of a (r, c) row-major matrix along dim, n times (bool: !=). */
static int64_t ref_diff(double *v, int64_t r, int64_t c, int dim, int n, bool is_bool) {
  for (int k = 0; k < n; k++) {
    int64_t nr = dim == 0 ? (r > 0 ? r - 1 : 0) : r, nc = dim == 1 ? (c > 0 ? c - 1 : 0) : c;
    double tmp[64];
    for (int64_t i = 0; i < nr; i++)
      for (int64_t j = 0; j < nc; j++) {
        double hi = dim == 0 ? v[(i + 1) * c + j] : v[i * c + j + 1], lo = v[i * c + j];
        tmp[i * nc + j] = is_bool ? (double)(hi != lo) : hi - lo;
      }
    memcpy(v, tmp, sizeof(double) * (size_t)(nr * nc));
    r = nr;
    c = nc;
  }
  return r * c;
}

CT_TEST(diff_values) {
  double xv[12], e[64];
  for (int i = 0; i < 12; i++) xv[i] = (double)((i * i * 7) % 11) - 3; /* not monotone */
  for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = dtypes[di];
      double in[12];
      memcpy(in, xv, sizeof in);
      ct_test_round_to(in, 12, dt);
      ct_tensor *x = ct_test_make(in, CT_SHAPE(3, 4), dt, (ct_test_layout)l);
      for (int dim = 0; dim < 2; dim++)
        for (int n = 0; n <= 4; n++) {
          memcpy(e, in, sizeof in);
          ref_diff(e, 3, 4, dim, n, dt == CT_BOOL);
          ct_tensor *r = ct_diff(x, n, dim - 2, NULL, NULL); /* negative dim */
          int64_t rr = dim == 0 ? (n < 3 ? 3 - n : 0) : 3, rc = dim == 1 ? (n < 4 ? 4 - n : 0) : 4;
          WITH_CONTEXT(CHECK_SHAPE(r, rr, rc), "%s %s dim %d n %d", ct_dtype_name(dt),
                       ct_test_layout_names[l], dim, n);
          WITH_CONTEXT(CHECK_CLOSE(r, e, 0, 0), "%s %s dim %d n %d", ct_dtype_name(dt),
                       ct_test_layout_names[l], dim, n);
          CHECK(r && ct_dtype_of(r) == dt);
        }
      /* prepend (3, 1) and append (3, 2) along dim 1, n = 2 */
      double pv[3] = {1, -2, 5}, av[6] = {4, 0, -1, 2, 3, 3};
      ct_test_round_to(pv, 3, dt);
      ct_test_round_to(av, 6, dt);
      ct_tensor *p = ct_test_make(pv, CT_SHAPE(3, 1), dt, CT_LAYOUT_CONTIG);
      ct_tensor *a = ct_test_make(av, CT_SHAPE(3, 2), dt, (ct_test_layout)l);
      double joined[21];
      for (int i = 0; i < 3; i++) {
        joined[i * 7] = pv[i];
        for (int j = 0; j < 4; j++) joined[i * 7 + 1 + j] = in[i * 4 + j];
        for (int j = 0; j < 2; j++) joined[i * 7 + 5 + j] = av[i * 2 + j];
      }
      memcpy(e, joined, sizeof joined);
      ref_diff(e, 3, 7, 1, 2, dt == CT_BOOL);
      ct_tensor *r = ct_diff(x, 2, 1, p, a);
      CHECK_SHAPE(r, 3, 5);
      CHECK_CLOSE(r, e, 0, 0);
    }
}

static ct_tensor *diff_fn(ct_tensor *const *in, void *ctx) {
  int n = *(const int *)ctx;
  return ct_diff(in[0], n, 0, in[1], in[2]);
}

CT_TEST(diff_gradients) {
  ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(5, 3), -1, 1, 1),
                      ct_gradcheck_input(CT_SHAPE(2, 3), -1, 1, 2),
                      ct_gradcheck_input(CT_SHAPE(1, 3), -1, 1, 3)};
  for (int n = 1; n <= 3; n++) CHECK_GRADIENTS("diff", diff_fn, &n, in, 3);
}

CT_TEST(diff_errors) {
  ct_tensor *x =
      ct_test_make((double[]){1, 2, 3, 4, 5, 6}, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_diff(x, -1, 0, NULL, NULL), CT_ERR_ARG, "n must be >= 0, got -1");
  CHECK_ERR_MSG(ct_diff(x, 1, 2, NULL, NULL), CT_ERR_ARG, "dim 2 out of range");
  ct_tensor *s = ct_scalar(1, &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  CHECK_ERR_MSG(ct_diff(s, 1, 0, NULL, NULL), CT_ERR_SHAPE, "0-d");
  ct_tensor *p = ct_test_make((double[]){1, 2}, CT_SHAPE(1, 2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_diff(x, 1, 0, p, NULL), CT_ERR_SHAPE, "prepend of shape (1, 2)");
  CHECK_ERR_MSG(ct_diff(x, 1, 1, NULL, ct_reshape(p, CT_SHAPE(2))), CT_ERR_SHAPE, "append");
  CHECK(ct_diff(NULL, 1, 0, NULL, NULL) == NULL);
}

/* ---- take_along_axis ------------------------------------------------------------ */

/* Reference for x (xr, xc) and indices (ir, ic) along dim with broadcasting of
 * the other dim; returns the number of values. */
static int64_t ref_take(const double *x, int64_t xr, int64_t xc, const double *ix, int64_t ir,
                        int64_t ic, int dim, double *out, int64_t *orr, int64_t *oc) {
  int64_t r = dim == 0 ? ir : (xr == 1 ? ir : xr), c = dim == 1 ? ic : (xc == 1 ? ic : xc);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      int64_t k = (int64_t)ix[(ir == 1 ? 0 : i) * ic + (ic == 1 ? 0 : j)];
      int64_t size = dim == 0 ? xr : xc;
      if (k < 0) k += size;
      int64_t xi = dim == 0 ? k : (xr == 1 ? 0 : i), xj = dim == 1 ? k : (xc == 1 ? 0 : j);
      out[i * c + j] = x[xi * xc + xj];
    }
  *orr = r;
  *oc = c;
  return r * c;
}

typedef struct take_case {
  int64_t xr, xc, ir, ic;
  int dim;
  double idx[8];
} take_case;

static const take_case cases[] = {
    {3, 4, 3, 2, 1, {3, 0, -1, 1, -4, 2}},       /* same non-axis size, negatives */
    {3, 4, 2, 4, 0, {2, -3, 0, 1, -1, 1, 2, 0}}, /* along dim 0 */
    {3, 4, 1, 3, 1, {1, -1, 1}},                 /* indices broadcast over rows */
    {1, 4, 3, 2, 1, {0, 3, 2, 2, -2, 1}},        /* x broadcast over rows */
    {3, 4, 3, 0, 1, {0}},                        /* empty indices */
};

CT_TEST(take_along_axis_values) {
  double xv[12], e[64];
  for (int i = 0; i < 12; i++) xv[i] = (double)((i * 5) % 12) - 4;
  for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++)
      for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const take_case *k = &cases[ci];
        ct_dtype dt = dtypes[di];
        double in[12];
        memcpy(in, xv, sizeof in);
        ct_test_round_to(in, 12, dt);
        ct_tensor *x = ct_test_make(in, (int64_t[]){k->xr, k->xc}, 2, dt, (ct_test_layout)l);
        ct_dtype it = ci % 2 ? CT_I32 : CT_I64;
        ct_tensor *ix = ct_test_make(k->idx, (int64_t[]){k->ir, k->ic}, 2, it,
                                     (ct_test_layout)((l + 1) % CT_LAYOUT_COUNT));
        int64_t r, c;
        ref_take(in, k->xr, k->xc, k->idx, k->ir, k->ic, k->dim, e, &r, &c);
        ct_tensor *out = ct_take_along_axis(x, ix, k->dim - 2);
        WITH_CONTEXT(CHECK_SHAPE(out, r, c), "%s %s case %zu", ct_dtype_name(dt),
                     ct_test_layout_names[l], ci);
        WITH_CONTEXT(CHECK_CLOSE(out, e, 0, 0), "%s %s case %zu", ct_dtype_name(dt),
                     ct_test_layout_names[l], ci);
        CHECK(out && ct_dtype_of(out) == dt);
      }
}

static ct_tensor *take_fn(ct_tensor *const *in, void *ctx) {
  return ct_take_along_axis(in[0], (const ct_tensor *)ctx, 1);
}

CT_TEST(take_along_axis_gradients) {
  /* repeated and negative indices: their gradients add up; indices broadcast */
  ct_tensor *ix =
      ct_test_make((double[]){0, -1, 3, 0, 0, 2}, CT_SHAPE(1, 6), CT_I64, CT_LAYOUT_CONTIG);
  ct_tensor *in[1] = {ct_gradcheck_input(CT_SHAPE(3, 4), -1, 1, 7)};
  CHECK_GRADIENTS("take_along_axis", take_fn, ix, in, 1);
  ct_tensor *in1[1] = {ct_gradcheck_input(CT_SHAPE(1, 4), -1, 1, 8)}; /* x broadcast */
  ct_tensor *ix3 =
      ct_test_make((double[]){0, 1, 1, 3, 2, -4}, CT_SHAPE(3, 2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_GRADIENTS("take_along_axis broadcast", take_fn, ix3, in1, 1);
}

CT_TEST(take_along_axis_errors) {
  ct_tensor *x =
      ct_test_make((double[]){1, 2, 3, 4, 5, 6}, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *big = ct_test_make((double[]){0, 3}, CT_SHAPE(1, 2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_take_along_axis(x, big, 1)), CT_ERR_ARG,
                "index 3 is out of bounds");
  ct_tensor *neg = ct_test_make((double[]){-4, 0}, CT_SHAPE(1, 2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_take_along_axis(x, neg, 1)), CT_ERR_ARG,
                "index -4 is out of bounds");
  CHECK_ERR_MSG(ct_take_along_axis(x, ct_cast(big, CT_F32), 1), CT_ERR_DTYPE,
                "integer dtype, got f32");
  CHECK_ERR_MSG(ct_take_along_axis(x, ct_reshape(big, CT_SHAPE(2)), 1), CT_ERR_SHAPE,
                "as many dims");
  ct_tensor *i3 = ct_test_make((double[]){0, 0, 0}, CT_SHAPE(3, 1), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_take_along_axis(x, i3, 1), CT_ERR_SHAPE, "do not broadcast");
  CHECK_ERR_MSG(ct_take_along_axis(x, big, -3), CT_ERR_ARG, "dim -3 out of range");
  CHECK(ct_take_along_axis(NULL, big, 0) == NULL);
}

/* Many repeated indices: under ct_use_deterministic_algorithms the gradient
 * (a scatter-add of f32 values) is the same bit for bit on every run, and
 * matches the f64 sum. */
CT_TEST(take_along_axis_deterministic_gradient) {
  enum { R = 2, C = 4, K = 300 };
  double *iv = ct_test_random(R * K, -C, C, 11), *gv = ct_test_random(R * K, -1, 1, 12);
  for (int i = 0; i < R * K; i++) iv[i] = floor(iv[i]);
  ct_test_round_to(gv, R * K, CT_F32);
  double want[R * C] = {0};
  for (int i = 0; i < R; i++)
    for (int k = 0; k < K; k++) {
      int64_t j = (int64_t)iv[i * K + k];
      want[i * C + (j < 0 ? j + C : j)] += gv[i * K + k];
    }
  ct_tensor *ix = ct_test_make(iv, CT_SHAPE(R, K), CT_I64, CT_LAYOUT_CONTIG);
  ct_tensor *g = ct_test_make(gv, CT_SHAPE(R, K), CT_F32, CT_LAYOUT_CONTIG);
  bool was = ct_are_deterministic_algorithms_enabled();
  ct_use_deterministic_algorithms(true);
  double *first = NULL;
  for (int run = 0; run < 2; run++) {
    ct_tensor *x = ct_requires_grad_(
        ct_zeros(CT_SHAPE(R, C), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()}),
        true);
    CHECK_STATUS_OK(ct_backward(ct_take_along_axis(x, ix, 1), g, NULL));
    CHECK_CLOSE(ct_grad(x), want, 1e-5, 1e-5);
    double *got = ct_test_values(ct_grad(x));
    if (run == 0) {
      first = got;
    } else {
      CHECK(got && first && memcmp(got, first, sizeof(double) * R * C) == 0);
      free(got);
    }
  }
  free(first);
  ct_use_deterministic_algorithms(was);
  free(iv);
  free(gv);
}
