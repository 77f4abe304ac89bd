/* Linear algebra: matmul in every shape combination (1-d, 2-d, batched,
 * broadcast batches, empty, k = 0), operand layouts (transposed, sliced,
 * offset, expanded, leading dimension larger than the matrix), dtypes, the out
 * variant, mm/bmm/dot, linear, and errors. Results are compared with a naive
 * double-precision reference computed here. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* ---- Reference ------------------------------------------------------------- */

/* torch.matmul of row-major doubles; result shape into rs/rn (malloc'd values). */
static double *ref_matmul(const double *a, const int64_t *as, int an, const double *b,
                          const int64_t *bs, int bn, int64_t *rs, int *rn) {
  int64_t ash[10], bsh[10];
  int a2 = an < 2 ? 2 : an, b2 = bn < 2 ? 2 : bn;
  if (an == 1) ash[0] = 1, ash[1] = as[0];
  else memcpy(ash, as, sizeof(int64_t) * (size_t)an);
  if (bn == 1) bsh[0] = bs[0], bsh[1] = 1;
  else memcpy(bsh, bs, sizeof(int64_t) * (size_t)bn);
  int64_t n = ash[a2 - 2], k = ash[a2 - 1], m = bsh[b2 - 1];
  int nba = a2 - 2, nbb = b2 - 2, nbd = nba > nbb ? nba : nbb;
  int64_t bat[10];
  for (int d = 0; d < nbd; d++) {
    int da = d - (nbd - nba), db = d - (nbd - nbb);
    int64_t sa = da >= 0 ? ash[da] : 1, sb = db >= 0 ? bsh[db] : 1;
    bat[d] = sa == 1 ? sb : sa;
  }
  int64_t B = 1;
  for (int d = 0; d < nbd; d++) B *= bat[d];
  *rn = 0;
  for (int d = 0; d < nbd; d++) rs[(*rn)++] = bat[d];
  if (an >= 2) rs[(*rn)++] = n;
  if (bn >= 2) rs[(*rn)++] = m;
  double *out = calloc((size_t)(B * n * m + 1), sizeof(double));
  for (int64_t bt = 0; bt < B; bt++) {
    /* batch offsets with broadcasting */
    int64_t rem = bt, oa = 0, ob = 0, mula = n * k, mulb = k * m;
    for (int d = nbd - 1; d >= 0; d--) {
      int64_t i = rem % bat[d];
      rem /= bat[d];
      int da = d - (nbd - nba), db = d - (nbd - nbb);
      if (da >= 0) {
        if (ash[da] != 1) oa += i * mula;
        mula *= ash[da];
      }
      if (db >= 0) {
        if (bsh[db] != 1) ob += i * mulb;
        mulb *= bsh[db];
      }
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) s += a[oa + i * k + p] * b[ob + p * m + j];
        out[bt * n * m + i * m + j] = s;
      }
  }
  return out;
}

static bool is_float(ct_dtype d) { return d == CT_F32 || d == CT_F64 || d == CT_F16 || d == CT_BF16; }

static int64_t numel_of(const int64_t *s, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; d++) p *= s[d];
  return p;
}

/* Random values fit for dtype (integers in [-4, 4] for integer dtypes). */
static double *rand_vals(int64_t n, ct_dtype dt, unsigned seed) {
  double *v = ct_test_random(n, -1, 1, seed);
  for (int64_t i = 0; i < n; i++)
    if (!is_float(dt)) v[i] = floor(v[i] * 4.5 + 0.5);
  ct_test_round_to(v, n, dt);
  return v;
}

/* Tolerances for a k-term product in dtype (inputs in [-1, 1]). */
static double mm_atol(ct_dtype dt, int64_t k) {
  switch (dt) {
  case CT_F64: return 1e-13 * (double)(k + 1);
  case CT_F32: return 2e-6 * (double)(k + 1);
  case CT_F16: return 2e-6 * (double)(k + 1) + 1e-3;
  case CT_BF16: return 2e-6 * (double)(k + 1) + 8e-3;
  default: return 0;
  }
}
static double mm_rtol(ct_dtype dt) {
  switch (dt) {
  case CT_F16: return 1e-3;
  case CT_BF16: return 8e-3;
  case CT_F32: return 1e-6;
  case CT_F64: return 1e-12;
  default: return 0;
  }
}

/* matmul of random a (as) and b (bs) in dtype and layouts, checked against the
 * reference; returns false if the call failed. */
static void check_case(const int64_t *as, int an, const int64_t *bs, int bn, ct_dtype dt,
                       ct_test_layout la, ct_test_layout lb, const char *what) {
  int64_t na = numel_of(as, an), nb = numel_of(bs, bn);
  double *av = rand_vals(na, dt, 11u + (unsigned)na), *bv = rand_vals(nb, dt, 29u + (unsigned)nb);
  ct_tensor *a = ct_test_make(av, as, an, dt, la), *b = ct_test_make(bv, bs, bn, dt, lb);
  ct_tensor *c = ct_matmul(a, b);
  int64_t rs[10];
  int rn;
  double *ref = ref_matmul(av, as, an, bv, bs, bn, rs, &rn);
  int64_t k = as[an - 1];
  if (!c) {
    CHECK_MSG(false, "%s (%s, layouts %s/%s): matmul failed: %s", what, ct_dtype_name(dt),
              ct_test_layout_names[la], ct_test_layout_names[lb], ct_last_error_message());
  } else {
    bool shape_ok = ct_ndim(c) == rn && ct_dtype_of(c) == dt;
    for (int d = 0; d < rn && shape_ok; d++) shape_ok = ct_shape(c)[d] == rs[d];
    CHECK_MSG(shape_ok, "%s: wrong result shape/dtype", what);
    if (shape_ok) {
      double *got = ct_test_values(c);
      double rtol = mm_rtol(dt), atol = mm_atol(dt, k);
      for (int64_t i = 0; i < ct_numel(c); i++)
        if (!(fabs(got[i] - ref[i]) <= atol + rtol * fabs(ref[i]))) {
          CHECK_MSG(false, "%s (%s, layouts %s/%s): element %lld is %.9g, expected %.9g", what,
                    ct_dtype_name(dt), ct_test_layout_names[la], ct_test_layout_names[lb],
                    (long long)i, got[i], ref[i]);
          break;
        }
      free(got);
    }
  }
  free(ref);
  free(av);
  free(bv);
}

typedef struct mm_shape {
  int64_t a[5];
  int an;
  int64_t b[5];
  int bn;
  const char *what;
} mm_shape;

static const mm_shape shapes[] = {
    {{7}, 1, {7}, 1, "1-d x 1-d"},
    {{3, 5}, 2, {5, 4}, 2, "2-d x 2-d"},
    {{1, 5}, 2, {5, 4}, 2, "row x matrix"},
    {{3, 5}, 2, {5, 1}, 2, "matrix x column"},
    {{5}, 1, {5, 4}, 2, "1-d x 2-d"},
    {{3, 5}, 2, {5}, 1, "2-d x 1-d"},
    {{2, 3, 5}, 3, {5, 4}, 2, "batched x 2-d (folded)"},
    {{2, 3, 5}, 3, {5}, 1, "batched x 1-d"},
    {{5}, 1, {2, 5, 4}, 3, "1-d x batched"},
    {{3, 5}, 2, {2, 5, 4}, 3, "2-d x batched"},
    {{2, 3, 5}, 3, {2, 5, 4}, 3, "batched x batched"},
    {{2, 1, 3, 5}, 4, {4, 5, 2}, 3, "broadcast batches"},
    {{1, 3, 5}, 3, {3, 5, 2}, 3, "size-1 batch"},
    {{0, 5}, 2, {5, 4}, 2, "(0, k) x (k, m)"},
    {{3, 0}, 2, {0, 4}, 2, "k = 0 gives zeros"},
    {{3, 5}, 2, {5, 0}, 2, "m = 0"},
    {{0, 3, 5}, 3, {5, 4}, 2, "empty batch"},
    {{2, 2, 0}, 3, {2, 0, 3}, 3, "batched k = 0"},
    {{0}, 1, {0}, 1, "empty dot"},
};

CT_TEST(matmul_shapes_layouts_dtypes) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I32, CT_I64, CT_I8};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
      for (int la = 0; la < CT_LAYOUT_COUNT; la++)
        for (int lb = 0; lb < CT_LAYOUT_COUNT; lb++) {
          ct_scope_begin();
          check_case(shapes[s].a, shapes[s].an, shapes[s].b, shapes[s].bn, dts[d],
                     (ct_test_layout)la, (ct_test_layout)lb, shapes[s].what);
          ct_scope_end();
        }
}

CT_TEST(matmul_zero_k_is_zero) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_empty(CT_SHAPE(3, 0), &o), *b = ct_empty(CT_SHAPE(0, 2), &o);
  ct_tensor *c = ct_matmul(a, b);
  CHECK_SHAPE(c, 3, 2);
  CHECK_CLOSE(c, ((double[]){0, 0, 0, 0, 0, 0}), 0, 0);
  /* into an out full of NaN: still zeros */
  ct_tensor *out = ct_full(CT_SHAPE(3, 2), NAN, &o);
  CHECK_OK(ct_matmul_out(out, a, b));
  CHECK_CLOSE(out, ((double[]){0, 0, 0, 0, 0, 0}), 0, 0);
}

/* A (rows, cols) matrix with values vals inside a larger buffer so that its
 * leading dimension exceeds the matrix: row-major (ld > cols) or column-major
 * (a transposed slice: strides (1, ld) with ld > rows). */
static ct_tensor *padded(const double *vals, int64_t rows, int64_t cols, bool col_major,
                         ct_dtype dt) {
  int64_t pad = 3;
  ct_tensor_opts o = ct_test_opts(dt);
  if (!col_major) {
    ct_tensor *big = ct_full(CT_SHAPE(rows, cols + pad), -555, &o);
    ct_tensor *v = ct_slice(big, 1, 1, 1 + cols, 1);
    ct_tensor *src = ct_test_make(vals, CT_SHAPE(rows, cols), dt, CT_LAYOUT_CONTIG);
    ct_copy_(v, src);
    return v;
  }
  ct_tensor *big = ct_full(CT_SHAPE(cols, rows + pad), -555, &o);
  ct_tensor *v = ct_transpose(ct_slice(big, 1, 2, 2 + rows, 1), 0, 1); /* (rows, cols) */
  ct_tensor *src = ct_test_make(vals, CT_SHAPE(rows, cols), dt, CT_LAYOUT_CONTIG);
  ct_copy_(v, src);
  return v;
}

CT_TEST(matmul_leading_dimension_views) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16};
  int64_t n = 6, k = 5, m = 4;
  for (size_t d = 0; d < 3; d++) {
    ct_dtype dt = dts[d];
    double *av = rand_vals(n * k, dt, 1), *bv = rand_vals(k * m, dt, 2);
    int64_t rs[4];
    int rn;
    double *ref = ref_matmul(av, CT_SHAPE(n, k), bv, CT_SHAPE(k, m), rs, &rn);
    for (int ca = 0; ca < 2; ca++)
      for (int cb = 0; cb < 2; cb++) {
        ct_tensor *a = padded(av, n, k, ca, dt), *b = padded(bv, k, m, cb, dt);
        CHECK(ct_stride(a, ca ? 1 : 0) == (ca ? n + 3 : k + 3));
        ct_tensor *c = ct_matmul(a, b);
        CHECK_CLOSE(c, ref, mm_rtol(dt), mm_atol(dt, k));
        /* matrix-vector products through the same views */
        ct_tensor *col = ct_select(b, 1, 2);
        double gv[6];
        for (int64_t i = 0; i < n; i++) gv[i] = ref[i * m + 2];
        CHECK_CLOSE(ct_matmul(a, col), gv, mm_rtol(dt), mm_atol(dt, k));
        ct_tensor *row = ct_select(a, 0, 1);
        CHECK_CLOSE(ct_matmul(row, b), ref + m, mm_rtol(dt), mm_atol(dt, k));
      }
    free(av);
    free(bv);
    free(ref);
  }
}

CT_TEST(matmul_expanded_and_unmergeable_batches) {
  ct_dtype dt = CT_F64;
  /* b (3, 4) expanded to (5, 3, 4): batch stride 0 */
  double *av = rand_vals(5 * 2 * 3, dt, 3), *bv = rand_vals(12, dt, 4);
  ct_tensor *a = ct_test_make(av, CT_SHAPE(5, 2, 3), dt, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_expand(ct_test_make(bv, CT_SHAPE(1, 3, 4), dt, CT_LAYOUT_CONTIG), CT_SHAPE(5, 3, 4));
  int64_t rs[4];
  int rn;
  double *ref = ref_matmul(av, CT_SHAPE(5, 2, 3), bv, CT_SHAPE(1, 3, 4), rs, &rn);
  CHECK_CLOSE(ct_matmul(a, b), ref, 1e-12, 1e-13);
  CHECK_CLOSE(ct_bmm(a, b), ref, 1e-12, 1e-13);
  free(ref);
  /* a matrix whose rows are a broadcast row (row stride 0): packed */
  ct_tensor *r = ct_expand(ct_test_make(av, CT_SHAPE(1, 3), dt, CT_LAYOUT_CONTIG), CT_SHAPE(4, 3));
  double rv[12];
  for (int i = 0; i < 4; i++) memcpy(rv + 3 * i, av, 3 * sizeof(double));
  ref = ref_matmul(rv, CT_SHAPE(4, 3), bv, CT_SHAPE(3, 4), rs, &rn);
  CHECK_CLOSE(ct_matmul(r, ct_test_make(bv, CT_SHAPE(3, 4), dt, CT_LAYOUT_TRANSPOSED)), ref, 1e-12, 1e-13);
  free(ref);
  /* batch dims permuted so they can't merge into one stride */
  double *pv = rand_vals(3 * 2 * 2 * 3, dt, 5);
  ct_tensor *p = ct_test_make(pv, CT_SHAPE(3, 2, 2, 3), dt, CT_LAYOUT_CONTIG);
  ct_tensor *pp = ct_permute(p, (int[]){1, 0, 2, 3}, 4); /* (2, 3, 2, 3) */
  double pref_in[36];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) memcpy(pref_in + (i * 3 + j) * 6, pv + (j * 2 + i) * 6, 6 * sizeof(double));
  ref = ref_matmul(pref_in, CT_SHAPE(2, 3, 2, 3), bv, CT_SHAPE(3, 4), rs, &rn);
  CHECK_CLOSE(ct_matmul(pp, ct_test_make(bv, CT_SHAPE(3, 4), dt, CT_LAYOUT_CONTIG)), ref, 1e-12, 1e-13);
  free(ref);
  /* same with a batched right operand (no folding) */
  double *qv = rand_vals(3 * 3 * 4, dt, 6);
  ref = ref_matmul(pref_in, CT_SHAPE(2, 3, 2, 3), qv, CT_SHAPE(3, 3, 4), rs, &rn);
  CHECK_CLOSE(ct_matmul(pp, ct_test_make(qv, CT_SHAPE(3, 3, 4), dt, CT_LAYOUT_TRANSPOSED)), ref, 1e-12, 1e-13);
  free(ref);
  free(qv);
  free(pv);
  free(av);
  free(bv);
}

CT_TEST(matmul_large_and_many_small) {
  const ct_dtype dts[] = {CT_F32, CT_BF16, CT_F64};
  for (size_t d = 0; d < 3; d++) {
    ct_dtype dt = dts[d];
    /* one product large enough for threaded BLAS */
    int64_t n = 130, k = 257, m = 190;
    double *av = rand_vals(n * k, dt, 7), *bv = rand_vals(k * m, dt, 8);
    int64_t rs[4];
    int rn;
    double *ref = ref_matmul(av, CT_SHAPE(n, k), bv, CT_SHAPE(k, m), rs, &rn);
    CHECK_CLOSE(ct_matmul(ct_test_make(av, CT_SHAPE(n, k), dt, CT_LAYOUT_TRANSPOSED),
                          ct_test_make(bv, CT_SHAPE(k, m), dt, CT_LAYOUT_CONTIG)),
                ref, mm_rtol(dt), mm_atol(dt, k));
    free(ref);
    free(av);
    free(bv);
    /* many small products (batches split across threads), b broadcast */
    int64_t B = 300, s = 12;
    av = rand_vals(B * s * s, dt, 9);
    bv = rand_vals(s * s, dt, 10);
    ref = ref_matmul(av, CT_SHAPE(B, s, s), bv, CT_SHAPE(1, s, s), rs, &rn);
    ct_tensor *bb = ct_test_make(bv, CT_SHAPE(1, s, s), dt, CT_LAYOUT_SLICED);
    CHECK_CLOSE(ct_matmul(ct_test_make(av, CT_SHAPE(B, s, s), dt, CT_LAYOUT_CONTIG), bb), ref,
                mm_rtol(dt), mm_atol(dt, s));
    free(ref);
    /* many matrix-vector and vector-matrix products */
    double *cv = rand_vals(B * s, dt, 11);
    ref = ref_matmul(av, CT_SHAPE(B, s, s), cv, CT_SHAPE(B, s, 1), rs, &rn);
    CHECK_CLOSE(ct_matmul(ct_test_make(av, CT_SHAPE(B, s, s), dt, CT_LAYOUT_TRANSPOSED),
                          ct_test_make(cv, CT_SHAPE(B, s, 1), dt, CT_LAYOUT_OFFSET)),
                ref, mm_rtol(dt), mm_atol(dt, s));
    free(ref);
    ref = ref_matmul(cv, CT_SHAPE(B, 1, s), av, CT_SHAPE(B, s, s), rs, &rn);
    CHECK_CLOSE(ct_matmul(ct_test_make(cv, CT_SHAPE(B, 1, s), dt, CT_LAYOUT_SLICED),
                          ct_test_make(av, CT_SHAPE(B, s, s), dt, CT_LAYOUT_CONTIG)),
                ref, mm_rtol(dt), mm_atol(dt, s));
    free(ref);
    free(cv);
    free(av);
    free(bv);
  }
}

CT_TEST(matmul_promotion_and_integers) {
  ct_tensor *a = ct_test_make((double[]){1, 2, 3, 4}, CT_SHAPE(2, 2), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_test_make((double[]){0.5, 1, 1.5, 2}, CT_SHAPE(2, 2), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *c = ct_matmul(a, b);
  CHECK(c && ct_dtype_of(c) == CT_F32);
  CHECK_CLOSE(c, ((double[]){3.5, 5, 7.5, 11}), 0, 0);
  ct_tensor *d = ct_test_make((double[]){1, 2, 3, 4}, CT_SHAPE(2, 2), CT_F64, CT_LAYOUT_CONTIG);
  CHECK(ct_dtype_of(ct_matmul(b, d)) == CT_F64);
  ct_tensor *e = ct_test_make((double[]){1, -1, 2, 0}, CT_SHAPE(2, 2), CT_I8, CT_LAYOUT_CONTIG);
  ct_tensor *f = ct_matmul(a, e);
  CHECK(f && ct_dtype_of(f) == CT_I32);
  CHECK_CLOSE(f, ((double[]){5, -1, 11, -3}), 0, 0);
  /* integer matmul wraps around as torch's: 100*2 + 100*1 = 300 -> 44 in i8 */
  ct_tensor *g = ct_test_make((double[]){100, 100}, CT_SHAPE(1, 2), CT_I8, CT_LAYOUT_CONTIG);
  ct_tensor *h = ct_test_make((double[]){2, 1}, CT_SHAPE(2, 1), CT_I8, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_matmul(g, h), ((double[]){44}), 0, 0);
  /* i64 exact beyond f64's integer range */
  int64_t big[2] = {(int64_t)1 << 53, 1};
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  ct_tensor *x = ct_from_data(big, CT_SHAPE(2), &oi);
  ct_tensor *y = ct_from_data(((int64_t[]){3, 1}), CT_SHAPE(2), &oi);
  ct_tensor *dot = ct_dot(x, y);
  int64_t got = 0;
  CHECK(dot && ct_copy_to_host(dot, &got, sizeof got) == CT_OK);
  CHECK(got == 3 * ((int64_t)1 << 53) + 1);
}

CT_TEST(matmul_out_variant) {
  ct_dtype dt = CT_F32;
  ct_tensor_opts o = ct_test_opts(dt);
  double *av = rand_vals(12, dt, 12), *bv = rand_vals(20, dt, 13);
  int64_t rs[4];
  int rn;
  double *ref = ref_matmul(av, CT_SHAPE(3, 4), bv, CT_SHAPE(4, 5), rs, &rn);
  ct_tensor *a = ct_test_make(av, CT_SHAPE(3, 4), dt, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_test_make(bv, CT_SHAPE(4, 5), dt, CT_LAYOUT_CONTIG);
  /* NaN-filled out: the product overwrites it */
  ct_tensor *out = ct_full(CT_SHAPE(3, 5), NAN, &o);
  uint32_t v0 = ct_version(out);
  CHECK(ct_matmul_out(out, a, b) == out);
  CHECK_CLOSE(out, ref, 1e-6, 1e-5);
  CHECK(ct_version(out) != v0);
  /* matrix-vector into NaN */
  ct_tensor *vout = ct_full(CT_SHAPE(3), NAN, &o);
  ct_tensor *col = ct_select(b, 1, 0);
  double vref[3] = {ref[0], ref[5], ref[10]};
  CHECK_OK(ct_matmul_out(vout, a, col));
  CHECK_CLOSE(vout, vref, 1e-6, 1e-5);
  /* a wider out dtype, and a non-contiguous out */
  ct_tensor *o64 = ct_empty(CT_SHAPE(3, 5), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  CHECK_OK(ct_matmul_out(o64, a, b));
  CHECK_CLOSE(o64, ref, 1e-6, 1e-5);
  ct_tensor *ot = ct_transpose(ct_full(CT_SHAPE(5, 3), NAN, &o), 0, 1);
  CHECK_OK(ct_matmul_out(ot, a, b));
  CHECK_CLOSE(ot, ref, 1e-6, 1e-5);
  /* out aliasing an input: a = a @ s */
  double sv[16];
  for (int i = 0; i < 16; i++) sv[i] = (i % 5) - 1.5;
  ct_tensor *sq = ct_test_make(sv, CT_SHAPE(4, 4), dt, CT_LAYOUT_CONTIG);
  double *sref = ref_matmul(sv, CT_SHAPE(4, 4), sv, CT_SHAPE(4, 4), rs, &rn);
  CHECK_OK(ct_matmul_out(sq, sq, sq));
  CHECK_CLOSE(sq, sref, 1e-6, 1e-5);
  free(sref);
  /* errors */
  CHECK_ERR_MSG(ct_matmul_out(ct_empty(CT_SHAPE(3, 4), &o), a, b), CT_ERR_SHAPE, "(3, 4)");
  CHECK_ERR(ct_matmul_out(ct_empty(CT_SHAPE(3, 5), &(ct_tensor_opts){.dtype = CT_I32, .device = ct_test_device()}), a, b),
            CT_ERR_DTYPE);
  CHECK_ERR(ct_matmul_out(ct_expand(ct_empty(CT_SHAPE(1, 5), &o), CT_SHAPE(3, 5)), a, b), CT_ERR_ARG);
  CHECK_ERR(ct_matmul_out(NULL, a, b), CT_ERR_ARG);
  free(ref);
  free(av);
  free(bv);
}

CT_TEST(mm_bmm_dot) {
  ct_dtype dt = CT_F64;
  double av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {1, 0, -1, 2, 0.5, 1};
  ct_tensor *a = ct_test_make(av, CT_SHAPE(2, 3), dt, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_test_make(bv, CT_SHAPE(3, 2), dt, CT_LAYOUT_TRANSPOSED);
  CHECK_CLOSE(ct_mm(a, b), ((double[]){0.5, 7, 2, 16}), 0, 1e-14);
  ct_tensor *v = ct_test_make(av, CT_SHAPE(3), dt, CT_LAYOUT_SLICED);
  CHECK_ERR_MSG(ct_mm(a, v), CT_ERR_SHAPE, "mm: expected 2-d");
  ct_tensor *a3 = ct_test_make(av, CT_SHAPE(1, 2, 3), dt, CT_LAYOUT_CONTIG);
  ct_tensor *b3 = ct_test_make(bv, CT_SHAPE(1, 3, 2), dt, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_bmm(a3, b3), ((double[]){0.5, 7, 2, 16}), 0, 1e-14);
  CHECK_ERR(ct_bmm(a, b), CT_ERR_SHAPE);
  CHECK_ERR_MSG(ct_bmm(a3, ct_expand(b3, CT_SHAPE(2, 3, 2))), CT_ERR_SHAPE, "1 != 2");
  ct_tensor *d = ct_dot(v, ct_test_make(bv, CT_SHAPE(3), dt, CT_LAYOUT_OFFSET));
  CHECK(d && ct_ndim(d) == 0);
  CHECK_CLOSE(d, ((double[]){1 * 1 + 2 * 0 + 3 * -1}), 0, 1e-14);
  CHECK_ERR(ct_dot(a, a), CT_ERR_SHAPE);
  CHECK_ERR(ct_dot(v, ct_test_make(av, CT_SHAPE(2), dt, CT_LAYOUT_CONTIG)), CT_ERR_SHAPE);
  CHECK_ERR(ct_dot(v, ct_test_make(av, CT_SHAPE(3), CT_F32, CT_LAYOUT_CONTIG)), CT_ERR_DTYPE);
}

CT_TEST(matmul_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_zeros(CT_SHAPE(3, 4), &o), *b = ct_zeros(CT_SHAPE(5, 6), &o);
  CHECK_ERR_MSG(ct_matmul(a, b), CT_ERR_SHAPE, "matmul: shapes (3, 4) and (5, 6) cannot be multiplied (4 != 5)");
  CHECK_ERR(ct_matmul(ct_scalar(1, &o), a), CT_ERR_SHAPE);
  CHECK_ERR(ct_matmul(ct_zeros(CT_SHAPE(2, 3, 4), &o), ct_zeros(CT_SHAPE(3, 4, 5), &o)), CT_ERR_SHAPE);
  CHECK_ERR(ct_matmul(ct_zeros(CT_SHAPE(3), &o), ct_zeros(CT_SHAPE(4), &o)), CT_ERR_SHAPE);
  ct_tensor_opts ob = ct_test_opts(CT_BOOL);
  CHECK_ERR(ct_matmul(ct_zeros(CT_SHAPE(2, 2), &ob), ct_zeros(CT_SHAPE(2, 2), &ob)), CT_ERR_DTYPE);
  /* NULL in, NULL out, first error kept */
  ct_clear_error();
  ct_tensor *bad = ct_matmul(a, b);
  CHECK(ct_matmul(bad, a) == NULL && ct_last_error() == CT_ERR_SHAPE);
  ct_clear_error();
  if (ct_cuda_is_available()) {
    ct_device other = ct_test_device().type == CT_DEVICE_CPU ? ct_cuda(0) : ct_cpu();
    ct_tensor *c = ct_zeros(CT_SHAPE(4, 2), &(ct_tensor_opts){.dtype = CT_F32, .device = other});
    CHECK_ERR(ct_matmul(a, c), CT_ERR_DEVICE);
    CHECK_ERR(ct_linear(a, ct_zeros(CT_SHAPE(2, 4), &(ct_tensor_opts){.dtype = CT_F32, .device = other}), NULL),
              CT_ERR_DEVICE);
  }
}

/* linear reference: x (rows, in) @ w^T + bias */
static void ref_linear(const double *x, const double *w, const double *bias, int64_t rows,
                       int64_t in, int64_t out, double *r) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t o = 0; o < out; o++) {
      double s = bias ? bias[o] : 0;
      for (int64_t p = 0; p < in; p++) s += x[i * in + p] * w[o * in + p];
      r[i * out + o] = s;
    }
}

CT_TEST(linear) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
  for (size_t d = 0; d < 4; d++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = dts[d];
      ct_test_layout lay = (ct_test_layout)l;
      double *xv = rand_vals(2 * 3 * 4, dt, 20), *wv = rand_vals(5 * 4, dt, 21), *bv = rand_vals(5, dt, 22);
      double r[30], r0[30];
      ref_linear(xv, wv, bv, 6, 4, 5, r);
      ref_linear(xv, wv, NULL, 6, 4, 5, r0);
      ct_tensor *x = ct_test_make(xv, CT_SHAPE(2, 3, 4), dt, lay);
      ct_tensor *w = ct_test_make(wv, CT_SHAPE(5, 4), dt, lay);
      ct_tensor *b = ct_test_make(bv, CT_SHAPE(5), dt, lay);
      ct_tensor *y = ct_linear(x, w, b);
      CHECK_SHAPE(y, 2, 3, 5);
      CHECK_CLOSE(y, r, mm_rtol(dt), mm_atol(dt, 4));
      CHECK_CLOSE(ct_linear(x, w, NULL), r0, mm_rtol(dt), mm_atol(dt, 4));
      /* 1-d input; a (1, 5) bias broadcasting over rows */
      ct_tensor *x1 = ct_test_make(xv, CT_SHAPE(4), dt, lay);
      ct_tensor *y1 = ct_linear(x1, w, b);
      CHECK_SHAPE(y1, 5);
      CHECK_CLOSE(y1, r, mm_rtol(dt), mm_atol(dt, 4));
      ct_tensor *x2 = ct_test_make(xv, CT_SHAPE(6, 4), dt, lay);
      CHECK_CLOSE(ct_linear(x2, w, ct_test_make(bv, CT_SHAPE(1, 5), dt, lay)), r, mm_rtol(dt),
                  mm_atol(dt, 4));
      free(xv);
      free(wv);
      free(bv);
    }
}

CT_TEST(linear_mixed_and_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  /* f32 input, f64 weight, i32 bias -> f64 */
  ct_tensor *x = ct_test_make((double[]){1, 2, 3, 4}, CT_SHAPE(2, 2), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *w = ct_test_make((double[]){1, 0, 0, 1, 1, 1}, CT_SHAPE(3, 2), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_test_make((double[]){10, 20, 30}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *y = ct_linear(x, w, b);
  CHECK(y && ct_dtype_of(y) == CT_F64);
  CHECK_CLOSE(y, ((double[]){11, 22, 33, 13, 24, 37}), 0, 0);
  /* leading dims that can't be merged into rows: a transposed 3-d input */
  ct_tensor *x3 = ct_transpose(ct_test_make((double[]){1, 2, 3, 4, 5, 6, 7, 8}, CT_SHAPE(2, 2, 2), CT_F32, CT_LAYOUT_CONTIG), 0, 1);
  ct_tensor *y3 = ct_linear(x3, w, NULL);
  /* x3[i][j] = orig[j][i] */
  CHECK_CLOSE(y3, ((double[]){1, 2, 3, 5, 6, 11, 3, 4, 7, 7, 8, 15}), 0, 0);
  CHECK_ERR_MSG(ct_linear(ct_zeros(CT_SHAPE(2, 3), &o), ct_zeros(CT_SHAPE(4, 5), &o), NULL), CT_ERR_SHAPE,
                "(2, 3)");
  CHECK_ERR(ct_linear(ct_zeros(CT_SHAPE(2, 3), &o), ct_zeros(CT_SHAPE(3), &o), NULL), CT_ERR_SHAPE);
  CHECK_ERR(ct_linear(ct_scalar(1, &o), ct_zeros(CT_SHAPE(1, 1), &o), NULL), CT_ERR_SHAPE);
  CHECK_ERR_MSG(ct_linear(ct_zeros(CT_SHAPE(2, 3), &o), ct_zeros(CT_SHAPE(4, 3), &o), ct_zeros(CT_SHAPE(3), &o)),
                CT_ERR_SHAPE, "bias");
  ct_tensor_opts ob = ct_test_opts(CT_BOOL);
  CHECK_ERR(ct_linear(ct_zeros(CT_SHAPE(2, 3), &ob), ct_zeros(CT_SHAPE(4, 3), &ob), NULL), CT_ERR_DTYPE);
}
