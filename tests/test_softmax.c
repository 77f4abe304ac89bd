/* softmax / log_softmax: float64 references on every floating dtype and
 * layout along every dim (the last-dim fast path, column blocks, strided
 * inputs), large values, -inf and nan rows, long rows, out= and in-place
 * forms, and the error cases. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* Reference softmax of vals (row-major, shape) along dim, in long double. */
static double *ref_softmax(const double *vals, const int64_t *shape, int nd, int dim, bool log_) {
  int64_t n = shape[dim], inner = 1, total = 1;
  for (int d = 0; d < nd; d++) total *= shape[d];
  for (int d = dim + 1; d < nd; d++) inner *= shape[d];
  double *out = malloc(sizeof(double) * (size_t)(total ? total : 1));
  for (int64_t o = 0; o < total / (n * inner); o++) {
    for (int64_t j = 0; j < inner; j++) {
      const double *x = vals + o * n * inner + j;
      double *y = out + o * n * inner + j;
      long double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; i++) m = isnan(x[i * inner]) || isnan((double)m) ? NAN : fmaxl(m, x[i * inner]);
      for (int64_t i = 0; i < n; i++) s += expl(x[i * inner] - m);
      for (int64_t i = 0; i < n; i++)
        y[i * inner] = (double)(log_ ? (x[i * inner] - m) - logl(s) : expl(x[i * inner] - m) / s);
    }
  }
  return out;
}

static void check_against_reference(const int64_t *shape, int nd, double lo, double hi, unsigned seed) {
  int64_t total = 1;
  for (int d = 0; d < nd; d++) total *= shape[d];
  for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
    ct_dtype dtype = (ct_dtype)dt;
    if (!ct_dtype_is_floating(dtype)) continue;
    double *v = ct_test_random(total, lo, hi, seed + (unsigned)dt);
    ct_test_round_to(v, total, dtype);
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *x = ct_test_make(v, shape, nd, dtype, (ct_test_layout)l);
      for (int dim = -1; dim < nd; dim++) {
        for (int lg = 0; lg < 2; lg++) {
          int d = dim < 0 ? nd - 1 : dim;
          double *exp = ref_softmax(v, shape, nd, d, lg);
          ct_test_round_to(exp, total, dtype);
          ct_tensor *y = lg ? ct_log_softmax(x, dim) : ct_softmax(x, dim);
          WITH_CONTEXT(CHECK_CLOSE(y, exp, 2 * ct_test_rtol(dtype), 2 * ct_test_atol(dtype)),
                       "%s dtype=%s layout=%s dim=%d", lg ? "log_softmax" : "softmax",
                       ct_dtype_name(dtype), ct_test_layout_names[l], dim);
          WITH_CONTEXT(CHECK(y && ct_dtype_of(y) == dtype), "dtype %s", ct_dtype_name(dtype));
          free(exp);
        }
      }
    }
    free(v);
  }
}

CT_TEST(softmax_small_all_dtypes_layouts_dims) {
  check_against_reference((int64_t[]){2, 3, 4}, 3, -4, 4, 1);
  check_against_reference((int64_t[]){3, 1, 5, 2}, 4, -4, 4, 2);
  check_against_reference((int64_t[]){7}, 1, -10, 10, 3);
}

/* Rows longer than the lane width and inner sizes past one column block. */
CT_TEST(softmax_larger_shapes) {
  check_against_reference((int64_t[]){3, 1000}, 2, -20, 20, 4);  /* long last-dim rows */
  check_against_reference((int64_t[]){5, 300, 2}, 3, -5, 5, 5);  /* inner 600 > one block */
}

CT_TEST(softmax_large_values_and_infinities) {
  for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
    ct_dtype d = (ct_dtype)dt;
    if (!ct_dtype_is_floating(d)) continue;
    double rt = 2 * ct_test_rtol(d), at = 2 * ct_test_atol(d);
    double big[2] = {1000, 1001};
    double e = 1 / (1 + exp(1.0));
    if (d == CT_BF16) big[1] = 1000; /* bf16 can't hold 1001 */
    ct_tensor *x = ct_test_make(big, CT_SHAPE(1, 2), d, CT_LAYOUT_CONTIG);
    if (d != CT_BF16) {
      CHECK_CLOSE(ct_softmax(x, 1), ((double[]){e, 1 - e}), rt, at);
      CHECK_CLOSE(ct_log_softmax(x, 1), ((double[]){-log1p(exp(1.0)), -log1p(exp(-1.0))}), rt, at);
    } else {
      CHECK_CLOSE(ct_softmax(x, 1), ((double[]){0.5, 0.5}), rt, at);
    }
    /* along dim 0 of a transposed layout too (the strided path) */
    double big2[4] = {1000, -1000, 1000, -1000};
    ct_tensor *xt = ct_test_make(big2, CT_SHAPE(2, 2), d, CT_LAYOUT_TRANSPOSED);
    CHECK_CLOSE(ct_softmax(xt, 0), ((double[]){0.5, 0.5, 0.5, 0.5}), rt, at);
    CHECK_CLOSE(ct_log_softmax(xt, 1), ((double[]){0, -2000, 0, -2000}), rt, at);
    /* -inf entries get 0 (log: -inf); an all -inf row is nan, as torch */
    double ni[6] = {-INFINITY, 0, 0, -INFINITY, -INFINITY, -INFINITY};
    ct_tensor *y = ct_test_make(ni, CT_SHAPE(2, 3), d, CT_LAYOUT_CONTIG);
    CHECK_CLOSE(ct_softmax(y, 1), ((double[]){0, 0.5, 0.5, NAN, NAN, NAN}), rt, at);
    CHECK_CLOSE(ct_log_softmax(y, 1), ((double[]){-INFINITY, -log(2.0), -log(2.0), NAN, NAN, NAN}), rt, at);
    /* column path: the same rows along dim 0 of the transpose */
    ct_tensor *yt = ct_contiguous(ct_transpose(y, 0, 1));
    CHECK_CLOSE(ct_softmax(yt, 0), ((double[]){0, NAN, 0.5, NAN, 0.5, NAN}), rt, at);
    /* nan poisons its row only; +inf gives nan (inf - inf) */
    double nn[6] = {1, NAN, 2, 1, INFINITY, 2};
    ct_tensor *z = ct_test_make(nn, CT_SHAPE(2, 3), d, CT_LAYOUT_SLICED);
    CHECK_CLOSE(ct_softmax(z, 1), ((double[]){NAN, NAN, NAN, NAN, NAN, NAN}), rt, at);
    double ok[3] = {1, 2, 3};
    ct_tensor *w = ct_test_make(ok, CT_SHAPE(3), d, CT_LAYOUT_CONTIG);
    double s = exp(1.0) + exp(2.0) + exp(3.0);
    CHECK_CLOSE(ct_softmax(w, 0), ((double[]){exp(1.0) / s, exp(2.0) / s, exp(3.0) / s}), rt, at);
  }
}

/* A long f32 row sums to 1 and matches the reference (exp flushes below
 * 1e-38 only). */
CT_TEST(softmax_long_row_sums_to_one) {
  const int64_t n = 1 << 20;
  double *v = ct_test_random(n, -30, 30, 9);
  ct_test_round_to(v, n, CT_F32);
  ct_tensor *x = ct_test_make(v, (int64_t[]){n}, 1, CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *y = ct_softmax(x, 0);
  double *got = ct_test_values(y);
  double *exp = ref_softmax(v, (int64_t[]){n}, 1, 0, false);
  double s = 0, maxrel = 0;
  for (int64_t i = 0; got && i < n; i++) {
    s += got[i];
    if (exp[i] > 1e-30) maxrel = fmax(maxrel, fabs(got[i] - exp[i]) / exp[i]);
  }
  CHECK_MSG(fabs(s - 1) < 1e-5, "sum of softmax is %.9g", s);
  CHECK_MSG(maxrel < 1e-5, "max relative error %.3g", maxrel);
  ct_tensor *ly = ct_log_softmax(x, 0);
  double *lg = ct_test_values(ly);
  double *lexp = ref_softmax(v, (int64_t[]){n}, 1, 0, true);
  double maxabs = 0;
  for (int64_t i = 0; lg && i < n; i++) maxabs = fmax(maxabs, fabs(lg[i] - lexp[i]));
  CHECK_MSG(maxabs < 1e-4, "log_softmax max abs error %.3g", maxabs); /* values up to ~60 */
  free(got);
  free(exp);
  free(lg);
  free(lexp);
  free(v);
}

CT_TEST(softmax_scalar_empty_and_out_forms) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *s = ct_scalar(3, &o);
  CHECK_CLOSE(ct_softmax(s, 0), ((double[]){1}), 0, 0);
  CHECK_CLOSE(ct_log_softmax(s, -1), ((double[]){0}), 0, 0);
  ct_tensor *e = ct_zeros(CT_SHAPE(0, 4), &o);
  CHECK_SHAPE(ct_softmax(e, 1), 0, 4);
  CHECK_SHAPE(ct_log_softmax(e, 0), 0, 4);
  /* out= with the same and with a wider dtype */
  double v[4] = {0, 1, 2, 3};
  ct_tensor *x = ct_test_make(v, CT_SHAPE(2, 2), CT_F32, CT_LAYOUT_CONTIG);
  double e1 = 1 / (1 + exp(1.0));
  ct_tensor *out = ct_zeros(CT_SHAPE(2, 2), &o);
  CHECK(ct_softmax_out(out, x, 1) == out);
  CHECK_CLOSE(out, ((double[]){e1, 1 - e1, e1, 1 - e1}), 2e-6, 1e-6);
  ct_tensor_opts od = ct_test_opts(CT_F64);
  ct_tensor *o64 = ct_zeros(CT_SHAPE(2, 2), &od);
  CHECK(ct_log_softmax_out(o64, x, 0) == o64);
  double l2 = -log1p(exp(-2.0)), l0 = -log1p(exp(2.0));
  CHECK_CLOSE(o64, ((double[]){l0, l0, l2, l2}), 2e-6, 1e-6);
  /* in place: out is x (contiguous and transposed) */
  CHECK(ct_softmax_out(x, x, 1) == x);
  CHECK_CLOSE(x, ((double[]){e1, 1 - e1, e1, 1 - e1}), 2e-6, 1e-6);
  ct_tensor *xt = ct_test_make(v, CT_SHAPE(2, 2), CT_F32, CT_LAYOUT_TRANSPOSED);
  CHECK(ct_log_softmax_out(xt, xt, 0) == xt);
  CHECK_CLOSE(xt, ((double[]){l0, l0, l2, l2}), 2e-6, 1e-6);
  /* a non-contiguous out */
  ct_tensor *wide = ct_zeros(CT_SHAPE(2, 4), &o);
  ct_tensor *half = ct_slice(wide, 1, 0, 4, 2);
  ct_tensor *x2 = ct_test_make(v, CT_SHAPE(2, 2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK(ct_softmax_out(half, x2, 1) == half);
  CHECK_CLOSE(wide, ((double[]){e1, 0, 1 - e1, 0, e1, 0, 1 - e1, 0}), 2e-6, 1e-6);
}

CT_TEST(softmax_errors) {
  ct_tensor_opts oi = ct_test_opts(CT_I32);
  ct_tensor *xi = ct_zeros(CT_SHAPE(2, 3), &oi);
  CHECK_ERR_MSG(ct_softmax(xi, 1), CT_ERR_DTYPE, "softmax");
  CHECK_ERR_MSG(ct_log_softmax(xi, 1), CT_ERR_DTYPE, "log_softmax");
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 3), &o);
  CHECK_ERR_MSG(ct_softmax(x, 2), CT_ERR_ARG, "softmax: dim 2 out of range for a 2-d tensor");
  CHECK_ERR(ct_log_softmax(x, -3), CT_ERR_ARG);
  ct_tensor *wrong = ct_zeros(CT_SHAPE(3, 2), &o);
  CHECK_ERR(ct_softmax_out(wrong, x, 1), CT_ERR_SHAPE);
  ct_tensor *wrong_dt = ct_zeros(CT_SHAPE(2, 3), &oi);
  CHECK_ERR(ct_softmax_out(wrong_dt, x, 1), CT_ERR_DTYPE);
  ct_clear_error();
  CHECK_ERR(ct_softmax_out(NULL, x, 1), CT_ERR_ARG);
  /* NULL in, NULL out, first error kept */
  ct_clear_error();
  ct_tensor *bad = ct_softmax(x, 7);
  CHECK(bad == NULL && ct_log_softmax(bad, 0) == NULL);
  CHECK(ct_last_error() == CT_ERR_ARG && strstr(ct_last_error_message(), "dim 7"));
  ct_clear_error();
  if (ct_cuda_is_available()) {
    ct_device other = ct_test_device().type == CT_DEVICE_CPU ? ct_cuda(0) : ct_cpu();
    ct_tensor *oo = ct_zeros(CT_SHAPE(2, 3), &(ct_tensor_opts){.device = other});
    CHECK_ERR(ct_softmax_out(oo, x, 1), CT_ERR_DEVICE);
  }
}
