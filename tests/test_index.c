/* Indexing, joining, splitting: index_select, gather, scatter(_add),
 * masked_select, masked_fill, cat, stack, split, chunk, one_hot, tril/triu.
 * Expected values are written out by hand (several from torch's docs); every
 * op runs over all operand layouts and several dtypes, with its errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static ct_tensor *idx_make(const double *v, const int64_t *shape, int nd, ct_dtype dt) {
  return ct_test_make(v, shape, nd, dt, CT_LAYOUT_CONTIG);
}
/* Index/mask tensors from literal values: IDXn(dtype, sizes..., values...). */
#define IDX0(dt) idx_make((const double[]){0}, (const int64_t[]){0}, 1, dt)
#define IDX1(dt, n, ...) idx_make((const double[]){__VA_ARGS__}, (const int64_t[]){n}, 1, dt)
#define IDX2(dt, r, c, ...) idx_make((const double[]){__VA_ARGS__}, (const int64_t[]){r, c}, 2, dt)
#define IDX3(dt, a, b, c, ...) idx_make((const double[]){__VA_ARGS__}, (const int64_t[]){a, b, c}, 3, dt)
#define MAKE1(dt, lay, n, ...) ct_test_make((const double[]){__VA_ARGS__}, (const int64_t[]){n}, 1, dt, lay)
#define MAKE2(dt, lay, r, c, ...) ct_test_make((const double[]){__VA_ARGS__}, (const int64_t[]){r, c}, 2, dt, lay)

static const double iota12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const ct_dtype some_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8, CT_I64, CT_BOOL};

/* iota12 rounded for dtype (bool: nonzero -> 1). */
static void expected_in(ct_dtype dt, const double *src, int64_t n, double *out) {
  memcpy(out, src, sizeof(double) * (size_t)n);
  ct_test_round_to(out, n, dt);
}

/* ---- index_select -------------------------------------------------------------- */

CT_TEST(index_select_values) {
  for (size_t di = 0; di < sizeof some_dtypes / sizeof some_dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = some_dtypes[di];
      ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), dt, (ct_test_layout)l);
      double e[12];
      ct_tensor *r0 = ct_index_select(x, 0, IDX1(CT_I64, 3, 2, 0, 2));
      CHECK_SHAPE(r0, 3, 4);
      expected_in(dt, (double[]){8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}, 12, e);
      CHECK_CLOSE(r0, e, 0, 0);
      ct_tensor *r1 = ct_index_select(x, -1, IDX1(CT_I32, 2, 3, 0));
      CHECK_SHAPE(r1, 3, 2);
      expected_in(dt, (double[]){3, 0, 7, 4, 11, 8}, 6, e);
      CHECK_CLOSE(r1, e, 0, 0);
      /* index given as a non-contiguous view */
      ct_tensor *iv = ct_slice(IDX1(CT_I64, 4, 1, 9, 3, 9), 0, 0, 4, 2);
      expected_in(dt, (double[]){1, 3, 5, 7, 9, 11}, 6, e);
      CHECK_CLOSE(ct_index_select(x, 1, iv), e, 0, 0);
      CHECK_SHAPE(ct_index_select(x, 0, IDX0(CT_I64)), 0, 4);
    }
  /* 0-d input and 0-d index */
  ct_tensor *s = ct_scalar(5, &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *r = ct_index_select(s, 0, IDX1(CT_I64, 1, 0));
  CHECK(r && ct_ndim(r) == 0);
  CHECK_CLOSE(r, ((double[]){5}), 0, 0);
  ct_tensor *i0 = ct_select(IDX1(CT_I64, 1, 1), 0, 0);
  ct_tensor *r2 = ct_index_select(ct_test_make(iota12, CT_SHAPE(3, 4), CT_F32, CT_LAYOUT_CONTIG), 0, i0);
  CHECK_SHAPE(r2, 1, 4);
  CHECK_CLOSE(r2, ((double[]){4, 5, 6, 7}), 0, 0);
}

CT_TEST(index_select_large) {
  /* many small rows (parallel over indices) and few large rows (parallel copies) */
  int64_t rows = 1000, cols = 8, n = 5000;
  double *xv = ct_test_random(rows * cols, -10, 10, 1);
  double *iv = ct_test_random(n, 0, (double)rows, 2);
  for (int64_t i = 0; i < n; i++) iv[i] = floor(iv[i]);
  ct_tensor *x = ct_test_make(xv, CT_SHAPE(rows, cols), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *r = ct_index_select(x, 0, ct_test_make(iv, CT_SHAPE(n), CT_I64, CT_LAYOUT_CONTIG));
  double *e = malloc(sizeof(double) * (size_t)(n * cols));
  for (int64_t i = 0; i < n; i++) memcpy(e + i * cols, xv + (int64_t)iv[i] * cols, sizeof(double) * (size_t)cols);
  CHECK_CLOSE(r, e, 0, 0);
  free(e);
  int64_t wide = 40000;
  double *wv = ct_test_random(3 * wide, -1, 1, 3);
  ct_tensor *w = ct_test_make(wv, CT_SHAPE(3, wide), CT_F32, CT_LAYOUT_TRANSPOSED);
  ct_tensor *rw = ct_index_select(w, 0, IDX1(CT_I64, 2, 2, 1));
  double *ew = malloc(sizeof(double) * (size_t)(2 * wide));
  ct_test_round_to(wv, 3 * wide, CT_F32);
  memcpy(ew, wv + 2 * wide, sizeof(double) * (size_t)wide);
  memcpy(ew + wide, wv + wide, sizeof(double) * (size_t)wide);
  CHECK_CLOSE(rw, ew, 0, 0);
  free(ew);
  free(wv);
  free(xv);
  free(iv);
}

CT_TEST(index_select_errors) {
  ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_index_select(x, 0, IDX1(CT_I64, 2, 0, 3))), CT_ERR_ARG,
                "index 3 is out of bounds for dim 0 with size 3");
  CHECK_ERR_MSG(ct_test_synced(ct_index_select(x, 1, IDX1(CT_I64, 1, -1))), CT_ERR_ARG, "index -1");
  CHECK_ERR(ct_index_select(x, 0, IDX1(CT_F32, 1, 0)), CT_ERR_DTYPE);
  CHECK_ERR(ct_index_select(x, 0, IDX1(CT_I16, 1, 0)), CT_ERR_DTYPE);
  CHECK_ERR(ct_index_select(x, 0, IDX2(CT_I64, 1, 2, 0, 1)), CT_ERR_SHAPE);
  CHECK_ERR(ct_index_select(x, 2, IDX1(CT_I64, 1, 0)), CT_ERR_ARG);
  CHECK_ERR(ct_index_select(x, -3, IDX1(CT_I64, 1, 0)), CT_ERR_ARG);
}

/* ---- gather ------------------------------------------------------------------------- */

CT_TEST(gather_values) {
  for (size_t di = 0; di < sizeof some_dtypes / sizeof some_dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = some_dtypes[di];
      ct_test_layout lay = (ct_test_layout)l;
      ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), dt, lay);
      double e[12];
      /* out[i][j] = x[i][index[i][j]] */
      ct_tensor *i1 = MAKE2(CT_I64, lay, 3, 2, 3, 0, 1, 1, 2, 2);
      ct_tensor *g1 = ct_gather(x, 1, i1);
      CHECK_SHAPE(g1, 3, 2);
      expected_in(dt, (double[]){3, 0, 5, 5, 10, 10}, 6, e);
      CHECK_CLOSE(g1, e, 0, 0);
      /* out[i][j] = x[index[i][j]][j], index smaller than x in dim 1 */
      ct_tensor *i0 = MAKE2(CT_I32, lay, 2, 3, 2, 0, 1, 1, 0, 2);
      ct_tensor *g0 = ct_gather(x, -2, i0);
      CHECK_SHAPE(g0, 2, 3);
      expected_in(dt, (double[]){8, 1, 6, 4, 1, 10}, 6, e);
      CHECK_CLOSE(g0, e, 0, 0);
      CHECK_SHAPE(ct_gather(x, 1, ct_empty(CT_SHAPE(3, 0), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()})), 3, 0);
    }
  /* 3-d, middle dim */
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  ct_tensor *x3 = ct_test_make(v, CT_SHAPE(2, 3, 4), CT_F32, CT_LAYOUT_TRANSPOSED);
  ct_tensor *g = ct_gather(x3, 1, IDX3(CT_I64, 2, 1, 4, 2, 0, 1, 1, 0, 0, 2, 2));
  CHECK_CLOSE(g, ((double[]){8, 1, 6, 7, 12, 13, 22, 23}), 0, 0);
  /* 0-d */
  ct_tensor *s = ct_scalar(4, &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  ct_tensor *gi = ct_select(IDX1(CT_I64, 1, 0), 0, 0);
  ct_tensor *gs = ct_gather(s, 0, gi);
  CHECK(gs && ct_ndim(gs) == 0);
  CHECK_CLOSE(gs, ((double[]){4}), 0, 0);
}

CT_TEST(gather_errors) {
  ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_gather(x, 1, IDX2(CT_I64, 1, 2, 0, 4))), CT_ERR_ARG,
                "index 4 is out of bounds for dim 1 with size 4");
  CHECK_ERR(ct_test_synced(ct_gather(x, 1, IDX2(CT_I64, 1, 1, -1))), CT_ERR_ARG);
  CHECK_ERR(ct_gather(x, 1, IDX1(CT_I64, 2, 0, 1)), CT_ERR_SHAPE);      /* ndim */
  CHECK_ERR(ct_gather(x, 1, IDX2(CT_I64, 4, 1, 0, 0, 0, 0)), CT_ERR_SHAPE); /* 4 > 3 in dim 0 */
  CHECK_ERR(ct_gather(x, 1, IDX2(CT_F64, 1, 1, 0)), CT_ERR_DTYPE);
  CHECK_ERR(ct_gather(x, 2, IDX2(CT_I64, 1, 1, 0)), CT_ERR_ARG);
}

/* ---- scatter / scatter_add ----------------------------------------------------------- */

CT_TEST(scatter_values) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_I32, CT_I64};
  for (size_t di = 0; di < 5; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = dts[di];
      ct_test_layout lay = (ct_test_layout)l;
      double zeros[15] = {0};
      double srcv[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
      /* torch docs: zeros(3, 5).scatter_(0, [[0, 1, 2, 0]], arange(1, 11).reshape(2, 5)) */
      ct_tensor *x = ct_test_make(zeros, CT_SHAPE(3, 5), dt, lay);
      ct_tensor *src = ct_test_make(srcv, CT_SHAPE(2, 5), dt, lay);
      ct_tensor *r = ct_scatter(x, 0, MAKE2(CT_I64, lay, 1, 4, 0, 1, 2, 0), src);
      CHECK_CLOSE(r, ((double[]){1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}), 0, 0);
      CHECK_CLOSE(x, zeros, 0, 0); /* out of place leaves x alone */
      /* torch docs: zeros(3, 5).scatter_(1, [[0, 1, 2], [0, 1, 4]], src) */
      uint32_t v0 = ct_version(x);
      CHECK(ct_scatter_(x, 1, MAKE2(CT_I32, lay, 2, 3, 0, 1, 2, 0, 1, 4), src) == x);
      CHECK(ct_version(x) != v0);
      CHECK_CLOSE(x, ((double[]){1, 2, 3, 0, 0, 6, 7, 0, 0, 8, 0, 0, 0, 0, 0}), 0, 0);
      /* torch docs: zeros(3, 5).scatter_add_(0, [[0,1,2,0,0],[0,1,2,2,2]], ones(2, 5)) */
      double ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
      ct_tensor *y = ct_test_make(zeros, CT_SHAPE(3, 5), dt, lay);
      ct_tensor *ix = MAKE2(CT_I64, lay, 2, 5, 0, 1, 2, 0, 0, 0, 1, 2, 2, 2);
      ct_tensor *sa = ct_scatter_add(y, 0, ix, ct_test_make(ones, CT_SHAPE(2, 5), dt, lay));
      CHECK_CLOSE(sa, ((double[]){2, 0, 0, 1, 1, 0, 2, 0, 0, 0, 0, 0, 2, 1, 1}), 0, 0);
      CHECK_CLOSE(y, zeros, 0, 0);
      /* duplicates accumulate along a 1-d tensor, in place */
      ct_tensor *z = ct_test_make(((double[]){10, 20, 30, 40, 50}), CT_SHAPE(5), dt, lay);
      CHECK_OK(ct_scatter_add_(z, 0, MAKE1(CT_I64, lay, 5, 0, 1, 0, 4, 0), ct_test_make(((double[]){1, 2, 3, 4, 5}), CT_SHAPE(5), dt, lay)));
      CHECK_CLOSE(z, ((double[]){19, 22, 30, 40, 54}), 0, 0);
      /* empty index: nothing changes */
      ct_tensor *e = ct_scatter(z, 0, IDX0(CT_I64), ct_test_make(ones, CT_SHAPE(0), dt, lay));
      CHECK_CLOSE(e, ((double[]){19, 22, 30, 40, 54}), 0, 0);
    }
  /* src of a castable dtype; bool scatter_add is logical or */
  ct_tensor *x = MAKE1(CT_F32, CT_LAYOUT_CONTIG, 3, 0, 0, 0);
  CHECK_CLOSE(ct_scatter(x, 0, IDX1(CT_I64, 1, 2), IDX1(CT_I32, 1, 7)), ((double[]){0, 0, 7}), 0, 0);
  ct_tensor *b = MAKE1(CT_BOOL, CT_LAYOUT_CONTIG, 3, 0, 1, 0);
  CHECK_CLOSE(ct_scatter_add(b, 0, IDX1(CT_I64, 3, 0, 0, 1), MAKE1(CT_BOOL, CT_LAYOUT_CONTIG, 3, 1, 0, 0)),
              ((double[]){1, 1, 0}), 0, 0);
  /* src aliasing the target */
  ct_tensor *w = MAKE1(CT_F64, CT_LAYOUT_CONTIG, 4, 1, 2, 3, 4);
  CHECK_OK(ct_scatter_(w, 0, IDX1(CT_I64, 4, 3, 2, 1, 0), w));
  CHECK_CLOSE(w, ((double[]){4, 3, 2, 1}), 0, 0);
}

CT_TEST(scatter_errors) {
  double zeros[6] = {0};
  ct_tensor *x = ct_test_make(zeros, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *src = ct_test_make(iota12, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  /* The CPU checks the range before anything is written. A GPU kernel skips
   * the bad elements and reports at the next synchronization: the others are
   * written (the target is unspecified after the error). */
  bool cpu = ct_test_device().type == CT_DEVICE_CPU;
  CHECK_ERR_MSG(ct_test_synced(ct_scatter_(x, 1, IDX2(CT_I64, 2, 3, 0, 1, 3, 0, 0, 0), src)), CT_ERR_ARG,
                "index 3 is out of bounds for dim 1 with size 3");
  if (cpu) CHECK_CLOSE(x, zeros, 0, 0);
  CHECK_ERR(ct_test_synced(ct_scatter_add_(x, 0, IDX2(CT_I64, 1, 3, -1, 0, 0), src)), CT_ERR_ARG);
  if (cpu) CHECK_CLOSE(x, zeros, 0, 0);
  CHECK_ERR(ct_scatter(x, 0, IDX1(CT_I64, 1, 0), src), CT_ERR_SHAPE);            /* ndim */
  CHECK_ERR(ct_scatter(x, 0, IDX2(CT_I64, 1, 4, 0, 0, 0, 0), src), CT_ERR_SHAPE); /* > x and src */
  CHECK_ERR(ct_scatter(x, 0, IDX2(CT_I64, 1, 2, 0, 0), ct_select(src, 0, 0)), CT_ERR_SHAPE);
  CHECK_ERR(ct_scatter(x, 0, IDX2(CT_F32, 1, 1, 0), src), CT_ERR_DTYPE);
  ct_tensor *xi = MAKE2(CT_I32, CT_LAYOUT_CONTIG, 1, 2, 0, 0);
  CHECK_ERR(ct_scatter_(xi, 0, IDX2(CT_I64, 1, 1, 0), src), CT_ERR_DTYPE); /* f32 into i32 */
  ct_tensor *ex = ct_expand(MAKE2(CT_F32, CT_LAYOUT_CONTIG, 1, 3, 0, 0, 0), CT_SHAPE(2, 3));
  CHECK_ERR(ct_scatter_(ex, 1, IDX2(CT_I64, 1, 1, 0), src), CT_ERR_ARG);
}

/* ---- masked_select / masked_fill ------------------------------------------------------ */

CT_TEST(masked_select_values) {
  for (size_t di = 0; di < sizeof some_dtypes / sizeof some_dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = some_dtypes[di];
      ct_test_layout lay = (ct_test_layout)l;
      ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), dt, lay);
      double e[12];
      ct_tensor *m = MAKE2(CT_BOOL, lay, 3, 4, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0);
      ct_tensor *r = ct_masked_select(x, m);
      CHECK_SHAPE(r, 4);
      expected_in(dt, (double[]){0, 3, 9, 10}, 4, e);
      CHECK_CLOSE(r, e, 0, 0);
      /* mask (4,) broadcast over rows */
      ct_tensor *r2 = ct_masked_select(x, MAKE1(CT_BOOL, lay, 4, 0, 1, 0, 1));
      expected_in(dt, (double[]){1, 3, 5, 7, 9, 11}, 6, e);
      CHECK_CLOSE(r2, e, 0, 0);
      /* x (4,) broadcast by a (2, 1) mask */
      ct_tensor *x1 = ct_test_make(iota12, CT_SHAPE(4), dt, lay);
      ct_tensor *r3 = ct_masked_select(x1, MAKE2(CT_BOOL, lay, 2, 1, 1, 0));
      expected_in(dt, (double[]){0, 1, 2, 3}, 4, e);
      CHECK_CLOSE(r3, e, 0, 0);
      ct_tensor *r4 = ct_masked_select(x, MAKE1(CT_BOOL, lay, 1, 0));
      CHECK_SHAPE(r4, 0);
    }
  ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_masked_select(x, IDX1(CT_U8, 1, 1)), CT_ERR_DTYPE, "bool");
  CHECK_ERR(ct_masked_select(x, MAKE1(CT_BOOL, CT_LAYOUT_CONTIG, 3, 1, 0, 1)), CT_ERR_SHAPE);
}

CT_TEST(masked_fill_values) {
  for (size_t di = 0; di < sizeof some_dtypes / sizeof some_dtypes[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = some_dtypes[di];
      ct_test_layout lay = (ct_test_layout)l;
      ct_tensor *x = ct_test_make(iota12, CT_SHAPE(3, 4), dt, lay);
      double e[12], fill = dt == CT_BOOL ? 0 : -2;
      ct_tensor *m = MAKE1(CT_BOOL, lay, 4, 1, 0, 0, 1);
      ct_tensor *r = ct_masked_fill(x, m, fill);
      expected_in(dt, (double[]){fill, 1, 2, fill, fill, 5, 6, fill, fill, 9, 10, fill}, 12, e);
      CHECK_CLOSE(r, e, 0, 0);
      expected_in(dt, iota12, 12, e);
      CHECK_CLOSE(x, e, 0, 0);
      uint32_t v0 = ct_version(x);
      CHECK(ct_masked_fill_(x, MAKE2(CT_BOOL, lay, 3, 1, 0, 1, 0), fill) == x);
      CHECK(ct_version(x) != v0);
      expected_in(dt, (double[]){0, 1, 2, 3, fill, fill, fill, fill, 8, 9, 10, 11}, 12, e);
      CHECK_CLOSE(x, e, 0, 0);
    }
  /* out of place broadcasts x too; integer tensors take the value cast */
  ct_tensor *x = MAKE1(CT_I32, CT_LAYOUT_CONTIG, 2, 1, 2);
  ct_tensor *r = ct_masked_fill(x, MAKE2(CT_BOOL, CT_LAYOUT_CONTIG, 2, 2, 1, 0, 0, 1), 7.9);
  CHECK_SHAPE(r, 2, 2);
  CHECK_CLOSE(r, ((double[]){7, 2, 1, 7}), 0, 0);
  CHECK_ERR(ct_masked_fill_(x, MAKE2(CT_BOOL, CT_LAYOUT_CONTIG, 2, 2, 1, 0, 0, 1), 0), CT_ERR_SHAPE);
  CHECK_ERR_MSG(ct_masked_fill(x, MAKE1(CT_I64, CT_LAYOUT_CONTIG, 2, 1, 0), 0), CT_ERR_DTYPE, "bool");
  CHECK_ERR(ct_masked_fill(x, MAKE1(CT_BOOL, CT_LAYOUT_CONTIG, 3, 1, 0, 1), 0), CT_ERR_SHAPE);
  ct_tensor *ex = ct_expand(MAKE2(CT_F32, CT_LAYOUT_CONTIG, 1, 2, 0, 0), CT_SHAPE(2, 2));
  CHECK_ERR(ct_masked_fill_(ex, MAKE1(CT_BOOL, CT_LAYOUT_CONTIG, 2, 1, 0), 0), CT_ERR_ARG);
}

/* ---- cat / stack ------------------------------------------------------------------------- */

CT_TEST(cat_values) {
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    ct_test_layout lay = (ct_test_layout)l;
    ct_tensor *a = ct_test_make(iota12, CT_SHAPE(2, 3), CT_F32, lay);
    ct_tensor *b = ct_test_make(iota12 + 6, CT_SHAPE(1, 3), CT_I32, lay);
    ct_tensor *c0 = ct_cat((ct_tensor *[]){a, b}, 2, 0);
    CHECK_SHAPE(c0, 3, 3);
    CHECK(c0 && ct_dtype_of(c0) == CT_F32);
    CHECK_CLOSE(c0, iota12, 0, 0);
    ct_tensor *d = ct_test_make(iota12, CT_SHAPE(2, 2), CT_F64, lay);
    ct_tensor *c1 = ct_cat((ct_tensor *[]){a, d, a}, 3, -1);
    CHECK_SHAPE(c1, 2, 8);
    CHECK(c1 && ct_dtype_of(c1) == CT_F64);
    CHECK_CLOSE(c1, ((double[]){0, 1, 2, 0, 1, 0, 1, 2, 3, 4, 5, 2, 3, 3, 4, 5}), 0, 0);
    /* legacy: 1-d empty tensors are skipped; an empty slab along dim is fine */
    ct_tensor *empty1 = ct_empty(CT_SHAPE(0), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
    ct_tensor *empty2 = ct_empty(CT_SHAPE(2, 0), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
    ct_tensor *c2 = ct_cat((ct_tensor *[]){empty1, a, empty2, empty1}, 4, 1);
    CHECK_SHAPE(c2, 2, 3);
    CHECK_CLOSE(c2, iota12, 0, 0);
    ct_tensor *c3 = ct_cat((ct_tensor *[]){a}, 1, 0);
    CHECK_CLOSE(c3, iota12, 0, 0);
    CHECK(!ct_same_storage(c3, a));
  }
  ct_tensor_opts ob = ct_test_opts(CT_BOOL);
  ct_tensor *t = ct_cat((ct_tensor *[]){ct_ones(CT_SHAPE(2), &ob), ct_zeros(CT_SHAPE(1), &ob)}, 2, 0);
  CHECK(t && ct_dtype_of(t) == CT_BOOL);
  CHECK_CLOSE(t, ((double[]){1, 1, 0}), 0, 0);
}

CT_TEST(cat_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_zeros(CT_SHAPE(3, 2), &o), *b = ct_zeros(CT_SHAPE(4, 3), &o);
  CHECK_ERR_MSG(ct_cat((ct_tensor *[]){a, b}, 2, 1), CT_ERR_SHAPE,
                "sizes of tensors must match except in dim 1; got 3 and 4 in dim 0");
  CHECK_ERR(ct_cat((ct_tensor *[]){a, ct_zeros(CT_SHAPE(3), &o)}, 2, 0), CT_ERR_SHAPE);
  CHECK_ERR(ct_cat((ct_tensor *[]){a, ct_scalar(1, &o)}, 2, 0), CT_ERR_SHAPE);
  CHECK_ERR(ct_cat((ct_tensor *[]){a}, 0, 0), CT_ERR_ARG);
  CHECK_ERR(ct_cat(NULL, 1, 0), CT_ERR_ARG);
  CHECK_ERR(ct_cat((ct_tensor *[]){a, a}, 2, 2), CT_ERR_ARG);
  CHECK_ERR(ct_cat((ct_tensor *[]){a, NULL}, 2, 0), CT_ERR_ARG);
  if (ct_cuda_is_available()) {
    ct_device other = ct_test_device().type == CT_DEVICE_CPU ? ct_cuda(0) : ct_cpu();
    ct_tensor *c = ct_zeros(CT_SHAPE(3, 2), &(ct_tensor_opts){.dtype = CT_F32, .device = other});
    CHECK_ERR(ct_cat((ct_tensor *[]){a, c}, 2, 0), CT_ERR_DEVICE);
    CHECK_ERR(ct_stack((ct_tensor *[]){a, c}, 2, 0), CT_ERR_DEVICE);
    ct_tensor *ic = ct_zeros(CT_SHAPE(1), &(ct_tensor_opts){.dtype = CT_I64, .device = other});
    CHECK_ERR(ct_index_select(a, 0, ic), CT_ERR_DEVICE);
    CHECK_ERR(ct_gather(a, 0, ct_view(ic, CT_SHAPE(1, 1))), CT_ERR_DEVICE);
    CHECK_ERR(ct_scatter(a, 0, ct_view(ic, CT_SHAPE(1, 1)), a), CT_ERR_DEVICE);
    ct_tensor *mc = ct_zeros(CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_BOOL, .device = other});
    CHECK_ERR(ct_masked_select(a, mc), CT_ERR_DEVICE);
    CHECK_ERR(ct_masked_fill(a, mc, 1), CT_ERR_DEVICE);
  }
}

CT_TEST(stack_values_and_errors) {
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    ct_test_layout lay = (ct_test_layout)l;
    ct_tensor *a = ct_test_make(iota12, CT_SHAPE(2, 3), CT_F32, lay);
    ct_tensor *b = ct_test_make(iota12 + 6, CT_SHAPE(2, 3), CT_F64, lay);
    ct_tensor *s0 = ct_stack((ct_tensor *[]){a, b}, 2, 0);
    CHECK_SHAPE(s0, 2, 2, 3);
    CHECK(s0 && ct_dtype_of(s0) == CT_F64);
    CHECK_CLOSE(s0, iota12, 0, 0);
    ct_tensor *s1 = ct_stack((ct_tensor *[]){a, b}, 2, 1);
    CHECK_SHAPE(s1, 2, 2, 3);
    CHECK_CLOSE(s1, ((double[]){0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11}), 0, 0);
    ct_tensor *s2 = ct_stack((ct_tensor *[]){a, b}, 2, -1);
    CHECK_SHAPE(s2, 2, 3, 2);
    CHECK_CLOSE(s2, ((double[]){0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}), 0, 0);
  }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *s = ct_stack((ct_tensor *[]){ct_scalar(1, &o), ct_scalar(2, &o)}, 2, 0);
  CHECK_SHAPE(s, 2);
  CHECK_CLOSE(s, ((double[]){1, 2}), 0, 0);
  CHECK_ERR_MSG(ct_stack((ct_tensor *[]){ct_zeros(CT_SHAPE(2, 3), &o), ct_zeros(CT_SHAPE(3, 2), &o)}, 2, 0),
                CT_ERR_SHAPE, "(3, 2) at entry 1");
  CHECK_ERR(ct_stack((ct_tensor *[]){ct_zeros(CT_SHAPE(2), &o)}, 1, 2), CT_ERR_ARG);
  CHECK_ERR(ct_stack((ct_tensor *[]){ct_zeros(CT_SHAPE(2), &o)}, 1, -3), CT_ERR_ARG);
  CHECK_ERR(ct_stack(NULL, 0, 0), CT_ERR_ARG);
}

/* ---- split / chunk ------------------------------------------------------------------------ */

CT_TEST(split_and_chunk) {
  double v[20];
  for (int i = 0; i < 20; i++) v[i] = i;
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    ct_tensor *x = ct_test_make(v, CT_SHAPE(5, 4), CT_F32, (ct_test_layout)l);
    ct_tensor *p[8] = {0};
    CHECK(ct_split(x, 2, 0, p, 8) == 3);
    CHECK_SHAPE(p[0], 2, 4);
    CHECK_SHAPE(p[2], 1, 4);
    CHECK(ct_same_storage(p[1], x));
    CHECK_CLOSE(p[1], v + 8, 0, 0);
    CHECK_CLOSE(p[2], v + 16, 0, 0);
    /* fewer slots than pieces: the count is still returned */
    ct_tensor *q[1] = {0};
    CHECK(ct_split(x, 2, 0, q, 1) == 3);
    CHECK_CLOSE(q[0], v, 0, 0);
    CHECK(ct_split(x, 2, 0, NULL, 0) == 3);
    CHECK(ct_split(x, 3, -1, p, 8) == 2);
    CHECK_SHAPE(p[1], 5, 1);
    CHECK_CLOSE(p[1], ((double[]){3, 7, 11, 15, 19}), 0, 0);
    CHECK(ct_split(x, 10, 0, p, 8) == 1);
    CHECK_SHAPE(p[0], 5, 4);
    /* chunk: 5 into 3 -> 2, 2, 1; 5 into 4 -> 2, 2, 1 (torch); 4 into 4 -> 1 each */
    CHECK(ct_chunk(x, 3, 0, p, 8) == 3);
    CHECK_SHAPE(p[2], 1, 4);
    CHECK(ct_chunk(x, 4, 0, p, 8) == 3);
    CHECK_SHAPE(p[0], 2, 4);
    CHECK(ct_chunk(x, 4, 1, p, 8) == 4);
    CHECK_SHAPE(p[3], 5, 1);
    CHECK_CLOSE(p[3], ((double[]){3, 7, 11, 15, 19}), 0, 0);
  }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *e = ct_empty(CT_SHAPE(0, 3), &o);
  ct_tensor *p[4];
  CHECK(ct_split(e, 2, 0, p, 4) == 1);
  CHECK_SHAPE(p[0], 0, 3);
  CHECK(ct_chunk(e, 3, 0, p, 4) == 3);
  CHECK_SHAPE(p[2], 0, 3);
  ct_tensor *x = ct_zeros(CT_SHAPE(4), &o);
  CHECK(ct_split(x, 0, 0, p, 4) == -1 && ct_last_error() == CT_ERR_ARG);
  CHECK_ERR(ct_split(x, 0, 0, p, 4) >= 0, CT_ERR_ARG);
  CHECK_ERR(ct_split(x, -1, 0, p, 4) >= 0, CT_ERR_ARG);
  CHECK_ERR(ct_split(x, 1, 1, p, 4) >= 0, CT_ERR_ARG);
  CHECK_ERR(ct_split(ct_scalar(1, &o), 1, 0, p, 4) >= 0, CT_ERR_ARG);
  CHECK_ERR(ct_split(x, 1, 0, NULL, 4) >= 0, CT_ERR_ARG);
  CHECK_ERR(ct_chunk(x, 0, 0, p, 4) >= 0, CT_ERR_ARG);
}

/* ---- one_hot ---------------------------------------------------------------------------------- */

CT_TEST(one_hot_values_and_errors) {
  ct_tensor *r = ct_one_hot(IDX1(CT_I64, 3, 0, 2, 1), 3);
  CHECK(r && ct_dtype_of(r) == CT_I64);
  CHECK_SHAPE(r, 3, 3);
  CHECK_CLOSE(r, ((double[]){1, 0, 0, 0, 0, 1, 0, 1, 0}), 0, 0);
  ct_tensor *r2 = ct_one_hot(ct_test_make((double[]){1, 3, 0, 1}, CT_SHAPE(2, 2), CT_I32, CT_LAYOUT_TRANSPOSED), -1);
  CHECK_SHAPE(r2, 2, 2, 4);
  /* transposed layout holds the same logical values [[1, 3], [0, 1]] */
  CHECK_CLOSE(r2, ((double[]){0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0}), 0, 0);
  CHECK_SHAPE(ct_one_hot(IDX0(CT_I64), 4), 0, 4);
  ct_tensor *s = ct_one_hot(ct_select(IDX1(CT_I64, 1, 2), 0, 0), 3);
  CHECK_SHAPE(s, 3);
  CHECK_CLOSE(s, ((double[]){0, 0, 1}), 0, 0);
  CHECK_ERR_MSG(ct_one_hot(IDX1(CT_I64, 2, 0, -1), 3), CT_ERR_ARG, "-1");
  CHECK_ERR_MSG(ct_one_hot(IDX1(CT_I64, 2, 0, 5), 3), CT_ERR_ARG, "class value 5");
  CHECK_ERR(ct_one_hot(IDX0(CT_I64), -1), CT_ERR_ARG);
  CHECK_ERR(ct_one_hot(IDX1(CT_F32, 1, 0), 2), CT_ERR_DTYPE);
}

/* ---- tril / triu ---------------------------------------------------------------------------------- */

CT_TEST(tril_triu) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_I8, CT_I64, CT_BOOL};
  for (size_t di = 0; di < 6; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = dts[di];
      ct_test_layout lay = (ct_test_layout)l;
      double v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, e[24];
      ct_tensor *x = ct_test_make(v, CT_SHAPE(3, 4), dt, lay);
      expected_in(dt, (double[]){1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}, 12, e);
      CHECK_CLOSE(ct_tril(x, 0), e, 0, 0);
      expected_in(dt, (double[]){1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12}, 12, e);
      CHECK_CLOSE(ct_tril(x, 1), e, 0, 0);
      expected_in(dt, (double[]){0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}, 12, e);
      CHECK_CLOSE(ct_tril(x, -1), e, 0, 0);
      expected_in(dt, (double[]){1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}, 12, e);
      CHECK_CLOSE(ct_triu(x, 0), e, 0, 0);
      expected_in(dt, (double[]){0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}, 12, e);
      CHECK_CLOSE(ct_triu(x, 2), e, 0, 0);
      expected_in(dt, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}, 12, e);
      CHECK_CLOSE(ct_triu(x, -1), e, 0, 0);
      expected_in(dt, v, 12, e);
      CHECK_CLOSE(ct_tril(x, INT64_MAX), e, 0, 0);
      CHECK_CLOSE(ct_triu(x, INT64_MIN), e, 0, 0);
      double z[12] = {0};
      CHECK_CLOSE(ct_triu(x, INT64_MAX), z, 0, 0);
      CHECK_CLOSE(ct_tril(x, -3), z, 0, 0);
      CHECK_CLOSE(x, e, 0, 0); /* out of place leaves x */
      /* batched (2, 2, 3), in place */
      ct_tensor *b = ct_test_make(v, CT_SHAPE(2, 2, 3), dt, lay);
      uint32_t v0 = ct_version(b);
      CHECK(ct_triu_(b, 1) == b);
      CHECK(ct_version(b) != v0);
      expected_in(dt, (double[]){0, 2, 3, 0, 0, 6, 0, 8, 9, 0, 0, 12}, 12, e);
      CHECK_CLOSE(b, e, 0, 0);
      CHECK_OK(ct_tril_(b, 1));
      expected_in(dt, (double[]){0, 2, 0, 0, 0, 6, 0, 8, 0, 0, 0, 12}, 12, e);
      CHECK_CLOSE(b, e, 0, 0);
    }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  CHECK_ERR(ct_tril(ct_zeros(CT_SHAPE(3), &o), 0), CT_ERR_SHAPE);
  CHECK_ERR(ct_triu_(ct_expand(ct_zeros(CT_SHAPE(1, 3), &o), CT_SHAPE(3, 3)), 0), CT_ERR_ARG);
  CHECK_SHAPE(ct_tril(ct_zeros(CT_SHAPE(0, 3), &o), 0), 0, 3);
}
