/* The sort-scan family (ctensor/sort_scan.h) on every device: cumsum and
 * cumprod (every dtype, every dim, the kernels' decompositions: columns,
 * short lines, long lines in pieces), flip, roll (per dim and flattened),
 * slicing with negative steps; float64 references, finite-difference
 * gradients in f64, and PyTorch's values (cumprod's gradient at zeros). */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static bool on_cuda(void) { return ct_test_device().type == CT_DEVICE_CUDA; }
static double item(const ct_tensor *t) {
  double v = NAN;
  CHECK_STATUS_OK(ct_item(t, &v));
  return v;
}

/* ---- references ---------------------------------------------------------------- */

/* Geometry (outer, n, inner) of dim d of shape. */
static void geom(const int64_t *shape, int ndim, int d, int64_t *outer, int64_t *n,
                 int64_t *inner) {
  *outer = *inner = 1;
  *n = ndim ? shape[d] : 1;
  for (int i = 0; i < d; i++) *outer *= shape[i];
  for (int i = d + 1; i < ndim; i++) *inner *= shape[i];
}

/* Running sum / product of v along dim d, in double, or wrapping i64. */
static double *ref_scan(const double *v, const int64_t *shape, int ndim, int d, bool prod,
                        bool integer) {
  int64_t outer, n, inner;
  geom(shape, ndim, d, &outer, &n, &inner);
  double *r = malloc(sizeof(double) * (size_t)(outer * n * inner + 1));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      double acc = prod;
      int64_t iacc = prod;
      for (int64_t k = 0; k < n; k++) {
        int64_t e = (o * n + k) * inner + j;
        if (integer) {
          uint64_t u = prod ? (uint64_t)iacc * (uint64_t)(int64_t)v[e]
                            : (uint64_t)iacc + (uint64_t)(int64_t)v[e];
          iacc = (int64_t)u;
          r[e] = (double)iacc;
        } else {
          acc = prod ? acc * v[e] : acc + v[e];
          r[e] = acc;
        }
      }
    }
  return r;
}

/* ---- cumsum / cumprod ---------------------------------------------------------------- */

CT_TEST(cumsum_cumprod_dtypes_dims_layouts) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8,
                          CT_U8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
  int64_t shape[3] = {3, 4, 5};
  double *v = ct_test_random(60, -3, 3, 7);
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
    ct_dtype dt = dts[t];
    bool fl = ct_dtype_is_floating(dt);
    double vals[60];
    for (int i = 0; i < 60; i++) {
      vals[i] = fl ? v[i] * 0.5 + (i % 3 == 0 ? 0 : 0.75) : (double)((int)(v[i] * 2) % 4);
      if (dt == CT_BOOL) vals[i] = vals[i] != 0;
      if (dt == CT_U8 && vals[i] < 0) vals[i] = -vals[i];
    }
    ct_test_round_to(vals, 60, dt);
    for (int lay = 0; lay < CT_LAYOUT_COUNT; lay++) {
      ct_tensor *x = ct_test_make(vals, shape, 3, dt, (ct_test_layout)lay);
      for (int d = -3; d < 3; d++)
        for (int prod = 0; prod < 2; prod++) {
          ct_tensor *y = prod ? ct_cumprod(x, d) : ct_cumsum(x, d);
          double *e = ref_scan(vals, shape, 3, (d + 3) % 3, prod, !fl);
          WITH_CONTEXT(
              {
                CHECK_OK(y);
                if (y) CHECK(ct_dtype_of(y) == (fl ? dt : CT_I64));
                CHECK_CLOSE(y, e, fl ? ct_test_rtol(dt) * 4 : 0, fl ? ct_test_atol(dt) * 4 : 0);
              },
              "%s %s dim %d layout %s", prod ? "cumprod" : "cumsum", ct_dtype_name(dt), d,
              ct_test_layout_names[lay]);
          free(e);
        }
    }
  }
  free(v);
}

/* Sizes that take each decomposition: long lines (CPU pieces, CUDA three
 * passes, forward and reversed through the gradient), columns, strided lines. */
CT_TEST(cumsum_long_lines_and_columns) {
  int64_t n = on_cuda() ? 40000 : 270000;
  double *v = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 7919) % 13) - 6; /* exact in f64 and f32 */
  for (int f32 = 0; f32 < 2; f32++) {
    ct_tensor *x = ct_test_make(v, CT_SHAPE(n), f32 ? CT_F32 : CT_F64, CT_LAYOUT_CONTIG);
    double *e = ref_scan(v, (int64_t[]){n}, 1, 0, false, false);
    CHECK_CLOSE(ct_cumsum(x, 0), e, 0, 0);
    free(e);
    /* two long rows */
    ct_tensor *x2 = ct_reshape(ct_cat((ct_tensor *[]){x, x}, 2, 0), CT_SHAPE(2, n));
    double *v2 = malloc(sizeof(double) * (size_t)(2 * n));
    memcpy(v2, v, sizeof(double) * (size_t)n);
    memcpy(v2 + n, v, sizeof(double) * (size_t)n);
    e = ref_scan(v2, (int64_t[]){2, n}, 2, 1, false, false);
    CHECK_CLOSE(ct_cumsum(x2, 1), e, 0, 0);
    free(e);
    free(v2);
    /* the reversed scan: the gradient of cumsum for a ones upstream is n - k */
    ct_tensor *xg = ct_requires_grad_(ct_detach(x), true);
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_cumsum(xg, 0), NULL), NULL, NULL));
    double *gexp = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) gexp[i] = (double)(n - i);
    CHECK_CLOSE(ct_grad(xg), gexp, 0, 0);
    free(gexp);
  }
  free(v);
  /* columns: (3, 5, 2048) along dim 1, and narrow columns (50, 3) along dim 0 */
  int64_t sc[3] = {3, 5, 2048}, sn[2] = {50, 3};
  double *vc = ct_test_random(3 * 5 * 2048, -2, 2, 3);
  ct_tensor *xc = ct_test_make(vc, sc, 3, CT_F64, CT_LAYOUT_CONTIG);
  for (int prod = 0; prod < 2; prod++) {
    double *e = ref_scan(vc, sc, 3, 1, prod, false);
    CHECK_CLOSE(prod ? ct_cumprod(xc, 1) : ct_cumsum(xc, 1), e, 1e-12, 1e-12);
    free(e);
  }
  ct_tensor *xn = ct_test_make(vc, sn, 2, CT_F64, CT_LAYOUT_TRANSPOSED);
  double *e = ref_scan(vc, sn, 2, 0, false, false);
  CHECK_CLOSE(ct_cumsum(xn, 0), e, 1e-12, 1e-12);
  free(e);
  free(vc);
}

CT_TEST(cumsum_edge_cases_and_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *s = ct_full(NULL, 0, 2.5, &o);
  ct_tensor *y = ct_cumsum(s, 0);
  CHECK_OK(y);
  if (y) CHECK(ct_ndim(y) == 0 && item(y) == 2.5);
  CHECK_OK(ct_cumprod(s, -1));
  ct_tensor *empty = ct_zeros(CT_SHAPE(3, 0), &o);
  CHECK_SHAPE(ct_cumsum(empty, 1), 3, 0);
  CHECK_SHAPE(ct_cumprod(empty, 0), 3, 0);
  /* i64 wraps as torch */
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  ct_tensor *big = ct_full(CT_SHAPE(2), 0x1p62, &oi);
  double wrap[2] = {0x1p62, -0x1p63};
  CHECK_CLOSE(ct_cumsum(big, 0), wrap, 0, 0);
  /* nan and inf propagate */
  double nv[4] = {1, NAN, 2, INFINITY}, ne[4] = {1, NAN, NAN, NAN};
  CHECK_CLOSE(ct_cumsum(ct_test_make(nv, CT_SHAPE(4), CT_F32, CT_LAYOUT_CONTIG), 0), ne, 0, 0);
  CHECK_ERR_MSG(ct_cumsum(ct_zeros(CT_SHAPE(2, 3), &o), 2), CT_ERR_ARG, "cumsum: dim 2");
  CHECK_ERR_MSG(ct_cumprod(ct_zeros(CT_SHAPE(2, 3), &o), -3), CT_ERR_ARG, "cumprod: dim -3");
  CHECK_ERR(ct_cumsum(s, 1), CT_ERR_ARG);
  CHECK(ct_cumsum(NULL, 0) == NULL);
}

static ct_tensor *gc_cumsum(ct_tensor *const *in, void *c) { return ct_cumsum(in[0], *(int *)c); }
static ct_tensor *gc_cumprod(ct_tensor *const *in, void *c) { return ct_cumprod(in[0], *(int *)c); }

CT_TEST(cumsum_cumprod_gradients) {
  for (int d = 0; d < 3; d++) {
    ct_tensor *x = ct_gradcheck_input(CT_SHAPE(3, 4, 5), -2, 2, 11 + (unsigned)d);
    CHECK_GRADIENTS("cumsum", gc_cumsum, &d, &x, 1);
    CHECK_GRADIENTS("cumprod", gc_cumprod, &d, &x, 1);
  }
  /* zeros: one, two, at the start and the end of a line (cumprod is a
   * polynomial, so finite differences hold there too) */
  double z[20] = {2, 0, 3, 4, 0, 1.5, 0, 2, 0, -1, 0.5, 2, 1, 3, 0, 0, 4, 0, 0, 2};
  ct_tensor *xz =
      ct_requires_grad_(ct_test_make(z, CT_SHAPE(4, 5), CT_F64, CT_LAYOUT_CONTIG), true);
  int d1 = 1, d0 = 0;
  CHECK_GRADIENTS("cumprod with zeros, dim 1", gc_cumprod, &d1, &xz, 1);
  CHECK_GRADIENTS("cumprod with zeros, dim 0", gc_cumprod, &d0, &xz, 1);
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.tensor([[2., 0., 3., 4., 0.], [0., 1.5, 0., 2., 1.], [-1., 0.5, 2., 1., 3.]],\n"
    "                 dtype=torch.float64, requires_grad=True)\n"
    "w = torch.arange(15, dtype=torch.float64).reshape(3, 5) / 7 - 1\n"
    "for dim in (0, 1):\n"
    "    x.grad = None; y = torch.cumprod(x, dim); (y * w).sum().backward()\n"
    "    save(f'cumprod{dim}', y); save(f'cumprod{dim}_g', x.grad)\n"
    "save('w', w)\n"
    "# torch's CPU cumsum lacks f16: its CUDA one accumulates in f32 and rounds each output\n"
    "save('cumsum_f16', torch.cumsum(torch.full((3000,), 0.1, dtype=torch.float16).float(), "
    "0).half())\n"
    "save('cumsum_bool', torch.cumsum(torch.tensor([True, False, True]), 0))\n"
    "r = torch.arange(24.).reshape(2, 3, 4)\n"
    "save('roll_flat', torch.roll(r, 5)); save('roll_dims', torch.roll(r, (1, -5), (2, 0)))\n"
    "save('roll_twice', torch.roll(r, (1, 2), (1, 1)))\n"
    "save('flip_02', torch.flip(r, (0, 2)))\n";

static const char *torch_dir;
static bool torch_data(void) {
  static bool tried;
  if (!tried) torch_dir = ct_test_torch_outputs("sortscan", TORCH_SCRIPT), tried = true;
  return torch_dir != NULL;
}

CT_TEST(cumprod_gradient_at_zeros_like_torch) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  double xv[15] = {2, 0, 3, 4, 0, 0, 1.5, 0, 2, 1, -1, 0.5, 2, 1, 3};
  ct_tensor *w = ct_test_load_output(torch_dir, "w");
  for (int dim = 0; dim < 2; dim++) {
    ct_tensor *x =
        ct_requires_grad_(ct_test_make(xv, CT_SHAPE(3, 5), CT_F64, CT_LAYOUT_CONTIG), true);
    ct_tensor *y = ct_cumprod(x, dim);
    char name[32], gname[32];
    snprintf(name, sizeof name, "cumprod%d", dim);
    snprintf(gname, sizeof gname, "cumprod%d_g", dim);
    CHECK_LIKE_TORCH(torch_dir, name, y, name, 1e-12, 1e-12);
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(y, w), NULL), NULL, NULL));
    CHECK_LIKE_TORCH(torch_dir, gname, ct_grad(x), gname, 1e-12, 1e-12);
  }
  ct_tensor_opts oh = ct_test_opts(CT_F16);
  CHECK_LIKE_TORCH(torch_dir, "cumsum f16", ct_cumsum(ct_full(CT_SHAPE(3000), 0.1, &oh), 0),
                   "cumsum_f16", 1e-3, 0);
  ct_tensor *b = ct_test_make((double[]){1, 0, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_CONTIG);
  CHECK_LIKE_TORCH(torch_dir, "cumsum bool", ct_cumsum(b, 0), "cumsum_bool", 0, 0);
}

/* ---- flip / roll ------------------------------------------------------------------- */

CT_TEST(flip_roll_like_torch) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *r = ct_reshape(ct_arange(0, 24, 1, &o), CT_SHAPE(2, 3, 4));
  CHECK_LIKE_TORCH(torch_dir, "roll flat", ct_roll(r, (int64_t[]){5}, NULL, 1), "roll_flat", 0, 0);
  CHECK_LIKE_TORCH(torch_dir, "roll dims", ct_roll(r, (int64_t[]){1, -5}, (int[]){2, 0}, 2),
                   "roll_dims", 0, 0);
  CHECK_LIKE_TORCH(torch_dir, "roll twice", ct_roll(r, (int64_t[]){1, 2}, (int[]){1, 1}, 2),
                   "roll_twice", 0, 0);
  CHECK_LIKE_TORCH(torch_dir, "flip", ct_flip(r, (int[]){0, -1}, 2), "flip_02", 0, 0);
}

/* Reference remap: flip mask and shifts per dim over a row-major shape. */
static double *ref_remap(const double *v, const int64_t *shape, int ndim, const bool *flip,
                         const int64_t *shift) {
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) numel *= shape[d];
  double *r = malloc(sizeof(double) * (size_t)(numel + 1));
  for (int64_t e = 0; e < numel; e++) {
    int64_t rest = e, src = 0, mul = 1;
    for (int d = ndim - 1; d >= 0; d--) {
      int64_t c = rest % shape[d], n = shape[d];
      rest /= shape[d];
      if (flip[d]) c = n - 1 - c;
      c = ((c - shift[d]) % n + n) % n;
      src += c * mul;
      mul *= n;
    }
    r[e] = v[src];
  }
  return r;
}

CT_TEST(flip_roll_dtypes_layouts) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8, CT_I16, CT_I32, CT_I64, CT_BOOL};
  int64_t shape[3] = {3, 4, 5};
  double vals[60];
  for (int i = 0; i < 60; i++) vals[i] = i % 2 ? i : 0;
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
    double vv[60];
    memcpy(vv, vals, sizeof vv);
    if (dts[t] == CT_BOOL)
      for (int i = 0; i < 60; i++) vv[i] = vv[i] != 0;
    if (dts[t] == CT_I8)
      for (int i = 0; i < 60; i++) vv[i] = (double)((int)vv[i] % 100);
    for (int lay = 0; lay < CT_LAYOUT_COUNT; lay++) {
      ct_tensor *x = ct_test_make(vv, shape, 3, dts[t], (ct_test_layout)lay);
      for (int mask = 0; mask < 8; mask++) {
        int dims[3], nd = 0;
        bool fl[3] = {0};
        for (int d = 0; d < 3; d++)
          if (mask >> d & 1) dims[nd++] = d, fl[d] = true;
        double *e = ref_remap(vv, shape, 3, fl, (int64_t[]){0, 0, 0});
        WITH_CONTEXT(CHECK_CLOSE(ct_flip(x, dims, nd), e, 0, 0), "flip %s mask %d layout %s",
                     ct_dtype_name(dts[t]), mask, ct_test_layout_names[lay]);
        free(e);
      }
      int64_t shifts[3] = {-4, 7, 2}, wrapped[3] = {2, 3, 2};
      bool none[3] = {0};
      double *e = ref_remap(vv, shape, 3, none, wrapped);
      WITH_CONTEXT(CHECK_CLOSE(ct_roll(x, shifts, (int[]){0, 1, -1}, 3), e, 0, 0),
                   "roll %s layout %s", ct_dtype_name(dts[t]), ct_test_layout_names[lay]);
      free(e);
    }
  }
}

CT_TEST(flip_roll_edge_cases_and_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 3), &o);
  CHECK_ERR_MSG(ct_flip(x, (int[]){0, -2}, 2), CT_ERR_ARG, "flip: dim 0 appears more than once");
  CHECK_ERR_MSG(ct_flip(x, (int[]){2}, 1), CT_ERR_ARG, "flip: dim 2 out of range");
  CHECK_ERR_MSG(ct_roll(x, (int64_t[]){1, 2}, NULL, 2), CT_ERR_ARG, "roll: without dims");
  CHECK_ERR_MSG(ct_roll(x, (int64_t[]){1}, (int[]){-3}, 1), CT_ERR_ARG, "roll: dim -3");
  CHECK_ERR(ct_roll(x, NULL, NULL, 1), CT_ERR_ARG);
  CHECK_SHAPE(ct_flip(ct_zeros(CT_SHAPE(0, 3), &o), (int[]){0, 1}, 2), 0, 3);
  CHECK_SHAPE(ct_roll(ct_zeros(CT_SHAPE(0, 3), &o), (int64_t[]){3}, (int[]){0}, 1), 0, 3);
  CHECK_SHAPE(ct_roll(ct_zeros(CT_SHAPE(0, 3), &o), (int64_t[]){3}, NULL, 1), 0, 3);
  ct_tensor *s = ct_full(NULL, 0, 4, &o);
  CHECK(item(ct_flip(s, (int[]){0}, 1)) == 4);
  CHECK(item(ct_roll(s, (int64_t[]){3}, NULL, 1)) == 4);
  /* a copy, not a view */
  ct_tensor *f = ct_flip(x, NULL, 0);
  ct_fill_(f, 1);
  CHECK(item(ct_sum(x, NULL)) == 0);
}

static ct_tensor *gc_flip(ct_tensor *const *in, void *c) {
  return ct_flip(in[0], (int[]){0, 2}, 2);
}
static ct_tensor *gc_roll(ct_tensor *const *in, void *c) {
  return ct_roll(in[0], (int64_t[]){-1, 3}, (int[]){2, 1}, 2);
}
static ct_tensor *gc_roll_flat(ct_tensor *const *in, void *c) {
  return ct_roll(ct_transpose(in[0], 0, 2), (int64_t[]){7}, NULL, 1);
}
static ct_tensor *gc_slice_neg(ct_tensor *const *in, void *c) {
  return ct_slice_stepped(in[0], 1, -1, 0, -2);
}

CT_TEST(flip_roll_slice_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 4, 3), -1, 1, 5);
  CHECK_GRADIENTS("flip", gc_flip, NULL, &x, 1);
  CHECK_GRADIENTS("roll", gc_roll, NULL, &x, 1);
  CHECK_GRADIENTS("roll flattened", gc_roll_flat, NULL, &x, 1);
  CHECK_GRADIENTS("slice with a negative step", gc_slice_neg, NULL, &x, 1);
}

/* ---- slicing with any step ------------------------------------------------------------ */

/* Python's x[start:end:step] of 0..n-1 (CT_END: omitted). */
static int py_slice(int64_t n, int64_t start, int64_t end, int64_t step, double *out) {
  int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? n - 1 : n;
  if (start == CT_END)
    start = step < 0 ? hi : lo;
  else
    start = start < 0 ? (start + n < lo ? lo : start + n) : (start > hi ? hi : start);
  if (end == CT_END)
    end = step < 0 ? lo : hi;
  else
    end = end < 0 ? (end + n < lo ? lo : end + n) : (end > hi ? hi : end);
  int k = 0;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) out[k++] = (double)i;
  return k;
}

CT_TEST(slice_stepped_like_python) {
  ct_tensor_opts o = ct_test_opts(CT_F64);
  int64_t n = 7;
  ct_tensor *x = ct_arange(0, (double)n, 1, &o);
  const int64_t cases[][3] = {{CT_END, CT_END, -1}, {5, 1, -2},        {-1, -10, -3},
                              {CT_END, 2, -1},      {100, CT_END, -4}, {0, 5, -1},
                              {2, CT_END, 2},       {CT_END, -2, 3},   {-100, CT_END, 1},
                              {6, 6, -1},           {3, 3, 1},         {CT_END, CT_END, INT64_MIN}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double e[16];
    int k = py_slice(n, cases[i][0], cases[i][1], cases[i][2], e);
    ct_tensor *y = ct_slice_stepped(x, 0, cases[i][0], cases[i][1], cases[i][2]);
    WITH_CONTEXT(
        {
          CHECK_OK(y);
          CHECK_SHAPE(y, k);
          if (k) CHECK_CLOSE(y, e, 0, 0);
        },
        "case %zu", i);
  }
  /* along a middle dim */
  ct_tensor *m = ct_reshape(ct_arange(0, 24, 1, &o), CT_SHAPE(2, 3, 4));
  ct_tensor *r = ct_slice_stepped(m, -2, CT_END, CT_END, -1);
  CHECK_OK(r);
  double *rv = ct_test_values(ct_flip(m, (int[]){1}, 1));
  CHECK_CLOSE(r, rv, 0, 0);
  free(rv);
  CHECK_ERR_MSG(ct_slice_stepped(x, 0, 0, 1, 0), CT_ERR_ARG, "step must not be 0");
  CHECK_ERR(ct_slice_stepped(x, 1, 0, 1, -1), CT_ERR_ARG);
}

/* ---- sort, argsort, topk, kthvalue ------------------------------------------------------ */

typedef struct ref_item {
  double v;
  int64_t i;
  bool desc;
} ref_item;

/* torch's order: nan above everything, -0 == +0, ties by index (stable). */
static int cmp_item(const void *pa, const void *pb) {
  const ref_item *a = pa, *b = pb;
  bool na = isnan(a->v), nb = isnan(b->v);
  int c = na && nb ? 0 : na ? 1 : nb ? -1 : (a->v > b->v) - (a->v < b->v);
  if (a->desc) c = -c;
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Sorted values and indices of v along dim d of shape (row-major results). */
static void ref_sort(const double *v, const int64_t *shape, int ndim, int d, bool desc,
                     double *vals, double *idx) {
  int64_t outer, n, inner;
  geom(shape, ndim, d, &outer, &n, &inner);
  ref_item *it = malloc(sizeof(ref_item) * (size_t)(n + 1));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      for (int64_t k = 0; k < n; k++) it[k] = (ref_item){v[(o * n + k) * inner + j], k, desc};
      qsort(it, (size_t)n, sizeof *it, cmp_item);
      for (int64_t k = 0; k < n; k++) {
        vals[(o * n + k) * inner + j] = it[k].v;
        idx[(o * n + k) * inner + j] = (double)it[k].i;
      }
    }
  free(it);
}

CT_TEST(sort_dtypes_dims_layouts) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8,
                          CT_U8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
  int64_t shape[3] = {3, 5, 6};
  double *r = ct_test_random(90, -4, 4, 17);
  double e[90], ei[90];
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
    ct_dtype dt = dts[t];
    bool fl = ct_dtype_is_floating(dt);
    double v[90];
    for (int i = 0; i < 90; i++) {
      v[i] = fl ? (double)(int)r[i] * 0.5 : (double)(int)r[i]; /* many ties */
      if (dt == CT_U8 || dt == CT_BOOL) v[i] = fabs(v[i]);
      if (dt == CT_BOOL) v[i] = v[i] != 0;
      if (fl && i % 11 == 0) v[i] = NAN;
      if (fl && i % 13 == 0) v[i] = -0.0;
      if (fl && i % 17 == 0) v[i] = i % 2 ? INFINITY : -INFINITY;
    }
    for (int lay = 0; lay < CT_LAYOUT_COUNT; lay++) {
      ct_tensor *x = ct_test_make(v, shape, 3, dt, (ct_test_layout)lay);
      for (int d = -1; d < 3; d++)
        for (int desc = 0; desc < 2; desc++) {
          ct_tensor *idx = NULL, *y = ct_sort(x, d, desc, &idx);
          ref_sort(v, shape, 3, (d + 3) % 3, desc, e, ei);
          WITH_CONTEXT(
              {
                CHECK_OK(y);
                if (y) CHECK(ct_dtype_of(y) == dt && ct_dtype_of(idx) == CT_I64);
                CHECK_CLOSE(y, e, 0, 0);
                CHECK_CLOSE(idx, ei, 0, 0);
                CHECK_CLOSE(ct_argsort(x, d, desc), ei, 0, 0);
              },
              "sort %s dim %d %s layout %s", ct_dtype_name(dt), d, desc ? "desc" : "asc",
              ct_test_layout_names[lay]);
        }
    }
  }
  free(r);
}

/* Rows long enough for the long-row paths (CPU parts, CUDA global steps). */
CT_TEST(sort_long_rows) {
  int64_t n = on_cuda() ? 5000 : 70001;
  double *v = malloc(sizeof(double) * (size_t)(2 * n)),
         *e = malloc(sizeof(double) * (size_t)(2 * n)),
         *ei = malloc(sizeof(double) * (size_t)(2 * n));
  for (int64_t i = 0; i < 2 * n; i++)
    v[i] = (double)((i * 7919) % 1001) - 500 + (i % 7 == 0 ? 0.25 : 0);
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_I64};
  for (int t = 0; t < 3; t++) {
    double *vv = malloc(sizeof(double) * (size_t)(2 * n));
    memcpy(vv, v, sizeof(double) * (size_t)(2 * n));
    ct_test_round_to(vv, 2 * n, dts[t]);
    for (int rows = 1; rows <= 2; rows++) {
      int64_t shape[2] = {rows, n};
      ct_tensor *x = ct_test_make(vv, shape, 2, dts[t], CT_LAYOUT_CONTIG);
      for (int desc = 0; desc < 2; desc++) {
        ct_tensor *idx = NULL, *y = ct_sort(x, 1, desc, &idx);
        ref_sort(vv, shape, 2, 1, desc, e, ei);
        WITH_CONTEXT(
            {
              CHECK_CLOSE(y, e, 0, 0);
              CHECK_CLOSE(idx, ei, 0, 0);
            },
            "%s rows %d %s", ct_dtype_name(dts[t]), rows, desc ? "desc" : "asc");
      }
    }
    free(vv);
  }
  free(v);
  free(e);
  free(ei);
}

CT_TEST(topk_kthvalue_reference) {
  int64_t shape[2] = {4, 9};
  double v[36];
  for (int i = 0; i < 36; i++) v[i] = (double)((i * 5) % 7) - (i % 3 ? 0 : 0.5);
  v[3] = NAN;
  double e[36], ei[36];
  ct_tensor *x = ct_test_make(v, shape, 2, CT_F64, CT_LAYOUT_TRANSPOSED);
  for (int largest = 0; largest < 2; largest++) {
    ref_sort(v, shape, 2, 1, largest, e, ei);
    for (int64_t k = 0; k <= 9; k += 3) {
      ct_tensor *idx = NULL, *y = ct_topk(x, k, -1, largest, true, &idx);
      double ek[36], eik[36];
      for (int r = 0; r < 4; r++)
        for (int j = 0; j < k; j++) ek[r * k + j] = e[r * 9 + j], eik[r * k + j] = ei[r * 9 + j];
      WITH_CONTEXT(
          {
            CHECK_SHAPE(y, 4, k);
            if (k) CHECK_CLOSE(y, ek, 0, 0);
            if (k) CHECK_CLOSE(idx, eik, 0, 0);
          },
          "topk k %lld largest %d", (long long)k, largest);
    }
  }
  ref_sort(v, shape, 2, 0, false, e, ei);
  for (int64_t k = 1; k <= 4; k++) {
    ct_tensor *idx = NULL, *y = ct_kthvalue(x, k, 0, false, &idx);
    double ek[9], eik[9];
    for (int j = 0; j < 9; j++) ek[j] = e[(k - 1) * 9 + j], eik[j] = ei[(k - 1) * 9 + j];
    CHECK_SHAPE(y, 9);
    CHECK_SHAPE(idx, 9);
    CHECK_CLOSE(y, ek, 0, 0);
    CHECK_CLOSE(idx, eik, 0, 0);
    CHECK_SHAPE(ct_kthvalue(x, k, 0, true, NULL), 1, 9);
  }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *s = ct_full(NULL, 0, 3, &o);
  ct_tensor *si = NULL;
  CHECK(item(ct_sort(s, 0, false, &si)) == 3 && si && item(si) == 0);
  CHECK(item(ct_kthvalue(s, 1, -1, false, NULL)) == 3);
  CHECK_SHAPE(ct_sort(ct_zeros(CT_SHAPE(2, 0), &o), 1, false, NULL), 2, 0);
  CHECK_ERR_MSG(ct_topk(x, 10, 1, true, true, NULL), CT_ERR_ARG, "topk: k 10 out of range");
  CHECK_ERR_MSG(ct_topk(x, -1, 1, true, true, NULL), CT_ERR_ARG, "topk: k -1");
  CHECK_ERR_MSG(ct_kthvalue(x, 0, 1, false, NULL), CT_ERR_ARG, "kthvalue: k 0 out of range");
  CHECK_ERR_MSG(ct_sort(x, 2, false, NULL), CT_ERR_ARG, "sort: dim 2 out of range");
  CHECK_ERR_MSG(ct_argsort(x, -3, false), CT_ERR_ARG, "argsort: dim -3 out of range");
}

/* topk along a middle dim (rows of 37 with 15 columns between elements) and
 * along the last of short rows, k = 1, a few and n, ties (whole rows equal),
 * nan (taken first by largest, last by smallest), -0 beside +0 (equal: index
 * order), every key dtype and the halves: values and indices as the stable
 * sort's first k (on CUDA by its selection kernel, k <= 1024). */
CT_TEST(topk_k_ties_nan_dims) {
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_I64, CT_F16, CT_BF16, CT_I32};
  int64_t sh3[3] = {37, 5, 3}, sh2[2] = {6, 40};
  double v[555], e[555], ei[555];
  for (int i = 0; i < 555; i++) v[i] = (double)((i * 7919) % 13) - 6; /* many ties */
  for (int i = 0; i < 40; i++) v[i] = 2.5;                            /* sh2's row 0: all equal */
  for (int i = 40; i < 80; i++) v[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? -0.0 : 0.0;
  for (int t = 0; t < 6; t++) {
    ct_dtype dt = dts[t];
    double vv[555];
    memcpy(vv, v, sizeof vv);
    if (!ct_dtype_is_floating(dt))
      for (int i = 0; i < 555; i++) vv[i] = isnan(vv[i]) ? 9 : vv[i];
    ct_test_round_to(vv, 555, dt); /* the references see the stored values */
    for (int case_ = 0; case_ < 2; case_++) {
      const int64_t *sh = case_ ? sh2 : sh3;
      int nd = case_ ? 2 : 3, d = case_ ? 1 : 0;
      int64_t n = sh[d], other = case_ ? 6 : 15;
      ct_tensor *x = ct_test_make(vv, sh, nd, dt, case_ ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_CONTIG);
      for (int largest = 0; largest < 2; largest++) {
        ref_sort(vv, sh, nd, d, largest, e, ei);
        int64_t ks[3] = {1, 4, n};
        for (int j = 0; j < 3; j++) {
          int64_t k = ks[j];
          ct_tensor *idx = NULL, *y = ct_topk(x, k, d, largest, true, &idx);
          /* the first k along d of the sorted reference */
          double ek[555], eik[555];
          for (int64_t q = 0; q < k * other; q++) {
            int64_t src = case_ ? (q / k) * n + q % k : q;
            ek[q] = e[src], eik[q] = ei[src];
          }
          WITH_CONTEXT(
              {
                CHECK(y && ct_size(y, d) == k && idx && ct_size(idx, d) == k);
                CHECK_CLOSE(y, ek, 0, 0);
                CHECK_CLOSE(idx, eik, 0, 0);
              },
              "%s dim %d of %s k %lld largest %d", ct_dtype_name(dt), d,
              case_ ? "(6, 40)" : "(37, 5, 3)", (long long)k, largest);
        }
      }
    }
  }
}

/* k past CUDA's selection (1024): the sort's first k, as for small k. */
CT_TEST(topk_k_beyond_selection) {
  int64_t shape[2] = {2, 1500}, k = 1100;
  double *v = ct_test_random(3000, -50, 50, 41), *e = malloc(sizeof(double) * 3000),
         *ei = malloc(sizeof(double) * 3000), ek[2200], eik[2200];
  for (int i = 0; i < 3000; i += 7) v[i] = 3; /* ties */
  ct_test_round_to(v, 3000, CT_F32);
  ct_tensor *x = ct_test_make(v, shape, 2, CT_F32, CT_LAYOUT_CONTIG);
  for (int largest = 0; largest < 2; largest++) {
    ref_sort(v, shape, 2, 1, largest, e, ei);
    for (int64_t q = 0; q < 2 * k; q++)
      ek[q] = e[(q / k) * 1500 + q % k], eik[q] = ei[(q / k) * 1500 + q % k];
    ct_tensor *idx = NULL, *y = ct_topk(x, k, 1, largest, true, &idx);
    WITH_CONTEXT(
        {
          CHECK_CLOSE(y, ek, 0, 0);
          CHECK_CLOSE(idx, eik, 0, 0);
        },
        "k %lld largest %d", (long long)k, largest);
  }
  free(v), free(e), free(ei);
}

static ct_tensor *gc_sort(ct_tensor *const *in, void *c) { return ct_sort(in[0], 1, true, NULL); }
static ct_tensor *gc_topk(ct_tensor *const *in, void *c) {
  return ct_topk(in[0], 2, 0, false, true, NULL);
}
static ct_tensor *gc_kth(ct_tensor *const *in, void *c) {
  return ct_kthvalue(in[0], 2, -1, false, NULL);
}

CT_TEST(sort_topk_kthvalue_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(3, 5), -1, 1, 21); /* distinct values */
  CHECK_GRADIENTS("sort", gc_sort, NULL, &x, 1);
  CHECK_GRADIENTS("topk", gc_topk, NULL, &x, 1);
  CHECK_GRADIENTS("kthvalue", gc_kth, NULL, &x, 1);
}

static const char *TORCH_SORT_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.tensor([[3., float('nan'), -0., 0., 1., 3., -2.], [1., 1., 1., -5., 2., 2., 0.]])\n"
    "for desc in (0, 1):\n"
    "    v, i = torch.sort(x, stable=True, dim=1, descending=bool(desc))\n"
    "    save(f'sort{desc}', v); save(f'sort{desc}_i', i)\n"
    "v, i = torch.topk(x, 3, 1); save('topk', v)\n"
    "v, i = torch.topk(x, 2, 1, largest=False); save('topk_small', v)\n"
    "v, i = torch.kthvalue(x, 4, 1); save('kth', v)\n"
    "# no ties where the gradient goes: torch's topk orders ties as it likes\n"
    "x2 = torch.tensor([[3., float('nan'), -1., 0., 1., 2.5, -2.], [1., 1.5, 1.25, -5., 2., 2.5, "
    "0.]])\n"
    "y = x2.clone().requires_grad_(); v, i = torch.topk(y, 3, 1); (v * "
    "torch.arange(3.)).sum().backward()\n"
    "save('topk_g', y.grad)\n";

CT_TEST(sort_topk_like_torch) {
  const char *dir = ct_test_torch_outputs("sorttorch", TORCH_SORT_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  double v[14] = {3, NAN, -0.0, 0, 1, 3, -2, 1, 1, 1, -5, 2, 2, 0};
  ct_tensor *x = ct_test_make(v, CT_SHAPE(2, 7), CT_F32, CT_LAYOUT_CONTIG);
  for (int desc = 0; desc < 2; desc++) {
    ct_tensor *i = NULL, *s = ct_sort(x, 1, desc, &i);
    CHECK_LIKE_TORCH(dir, "sort", s, desc ? "sort1" : "sort0", 0, 0);
    CHECK_LIKE_TORCH(dir, "sort indices", i, desc ? "sort1_i" : "sort0_i", 0, 0);
  }
  CHECK_LIKE_TORCH(dir, "topk", ct_topk(x, 3, 1, true, true, NULL), "topk", 0, 0);
  CHECK_LIKE_TORCH(dir, "topk smallest", ct_topk(x, 2, 1, false, true, NULL), "topk_small", 0, 0);
  CHECK_LIKE_TORCH(dir, "kthvalue", ct_kthvalue(x, 4, 1, false, NULL), "kth", 0, 0);
  double v2[14] = {3, NAN, -1, 0, 1, 2.5, -2, 1, 1.5, 1.25, -5, 2, 2.5, 0};
  ct_tensor *y =
      ct_requires_grad_(ct_test_make(v2, CT_SHAPE(2, 7), CT_F32, CT_LAYOUT_CONTIG), true);
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *w = ct_arange(0, 3, 1, &o);
  CHECK_STATUS_OK(
      ct_backward(ct_sum(ct_mul(ct_topk(y, 3, 1, true, true, NULL), w), NULL), NULL, NULL));
  CHECK_LIKE_TORCH(dir, "topk gradient", ct_grad(y), "topk_g", 0, 0);
}

/* Long rows and few elements: the CPU's selection (ties in index order, nan
 * the largest, values crowded in one exponent so the first pass leaves
 * many candidates); other devices sort. */
CT_TEST(topk_long_rows) {
  int64_t n = 20000, rows = 3;
  double *v = malloc(sizeof(double) * (size_t)(rows * n));
  double *e = malloc(sizeof(double) * (size_t)(rows * n)),
         *ei = malloc(sizeof(double) * (size_t)(rows * n));
  for (int64_t i = 0; i < rows * n; i++) {
    int64_t r = i / n;
    v[i] = r == 0   ? (double)((i * 7919) % 50)                       /* ties */
           : r == 1 ? 0.5 + (double)((i * 104729) % 65536) / 131072.0 /* [0.5, 1) */
                    : -(double)((i * 31) % 1000) / 8.0;               /* negatives */
    if (i % 4999 == 0) v[i] = NAN;
  }
  const ct_dtype dts[] = {CT_F32, CT_F64, CT_I64};
  for (int t = 0; t < 3; t++) {
    double *vv = malloc(sizeof(double) * (size_t)(rows * n));
    memcpy(vv, v, sizeof(double) * (size_t)(rows * n));
    if (dts[t] == CT_I64)
      for (int64_t i = 0; i < rows * n; i++) vv[i] = isnan(vv[i]) ? 7 : floor(vv[i] * 16);
    ct_test_round_to(vv, rows * n, dts[t]);
    ct_tensor *x = ct_test_make(vv, (int64_t[]){rows, n}, 2, dts[t], CT_LAYOUT_CONTIG);
    ct_tensor *xt = ct_transpose(ct_contiguous(ct_transpose(x, 0, 1)), 0, 1); /* dim 1 strided */
    for (int largest = 0; largest < 2; largest++) {
      ref_sort(vv, (int64_t[]){rows, n}, 2, 1, largest, e, ei);
      for (int64_t k = 1; k <= 1000; k *= 10) {
        double *ek = malloc(sizeof(double) * (size_t)(rows * k)),
               *eik = malloc(sizeof(double) * (size_t)(rows * k));
        for (int64_t r = 0; r < rows; r++)
          for (int64_t j = 0; j < k; j++)
            ek[r * k + j] = e[r * n + j], eik[r * k + j] = ei[r * n + j];
        for (int strided = 0; strided < 2; strided++) {
          ct_tensor *idx = NULL, *y = ct_topk(strided ? xt : x, k, 1, largest, true, &idx);
          WITH_CONTEXT(
              {
                CHECK_CLOSE(y, ek, 0, 0);
                CHECK_CLOSE(idx, eik, 0, 0);
              },
              "%s k %lld largest %d strided %d", ct_dtype_name(dts[t]), (long long)k, largest,
              strided);
        }
        free(ek);
        free(eik);
      }
    }
    free(vv);
  }
  free(v);
  free(e);
  free(ei);
}

/* ---- repeat, repeat_interleave, pad ------------------------------------------------------- */

static const char *TORCH_REPEAT_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "d = sys.argv[1]\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)\n"
    "w = torch.linspace(-1, 1, 1000, dtype=torch.float64)\n"
    "def both(name, f):\n"
    "    y = x.clone().requires_grad_(); r = f(y); save(name, r)\n"
    "    (r * w[:r.numel()].reshape(r.shape)).sum().backward(); save(name + '_g', y.grad)\n"
    "both('repeat', lambda t: t.repeat(2, 1, 3, 2))\n"
    "both('repeat_same', lambda t: t.repeat(1, 2, 1))\n"
    "both('interleave', lambda t: torch.repeat_interleave(t, 3, 1))\n"
    "both('interleave_flat', lambda t: torch.repeat_interleave(t, 2))\n"
    "both('interleave_t', lambda t: torch.repeat_interleave(t, torch.tensor([2, 0, 3]), 1))\n"
    "both('pad_const', lambda t: F.pad(t, (1, 2, 0, 3), value=-1.5))\n"
    "both('pad_reflect', lambda t: F.pad(t, (3, 2, 2, 1), mode='reflect'))\n"
    "both('pad_replicate', lambda t: F.pad(t, (4, 1, 0, 2), mode='replicate'))\n"
    "save('w', w)\n";

typedef ct_tensor *(*rp_fn)(const ct_tensor *x);
static ct_tensor *rp_repeat(const ct_tensor *x) { return ct_repeat(x, (int64_t[]){2, 1, 3, 2}, 4); }
static ct_tensor *rp_repeat_same(const ct_tensor *x) {
  return ct_repeat(x, (int64_t[]){1, 2, 1}, 3);
}
static ct_tensor *rp_interleave(const ct_tensor *x) { return ct_repeat_interleave(x, 3, 1); }
static ct_tensor *rp_interleave_flat(const ct_tensor *x) {
  return ct_repeat_interleave(x, 2, CT_DIM_ALL);
}
static ct_tensor *rp_interleave_t(const ct_tensor *x) {
  ct_tensor *r = ct_test_make((double[]){2, 0, 3}, CT_SHAPE(3), CT_I64, CT_LAYOUT_CONTIG);
  return ct_repeat_interleave_tensor(x, r, 1);
}
static ct_tensor *rp_pad_const(const ct_tensor *x) {
  return ct_pad(x, (int64_t[]){1, 2, 0, 3}, 4, CT_PAD_CONSTANT, -1.5);
}
static ct_tensor *rp_pad_reflect(const ct_tensor *x) {
  return ct_pad(x, (int64_t[]){3, 2, 2, 1}, 4, CT_PAD_REFLECT, 0);
}
static ct_tensor *rp_pad_replicate(const ct_tensor *x) {
  return ct_pad(x, (int64_t[]){4, 1, 0, 2}, 4, CT_PAD_REPLICATE, 0);
}

CT_TEST(repeat_pad_like_torch) {
  const char *dir = ct_test_torch_outputs("repeatpad", TORCH_REPEAT_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const struct {
    const char *name;
    rp_fn f;
  } cases[] = {{"repeat", rp_repeat},
               {"repeat_same", rp_repeat_same},
               {"interleave", rp_interleave},
               {"interleave_flat", rp_interleave_flat},
               {"interleave_t", rp_interleave_t},
               {"pad_const", rp_pad_const},
               {"pad_reflect", rp_pad_reflect},
               {"pad_replicate", rp_pad_replicate}};
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *w = ct_test_load_output(dir, "w");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int lay = 0; lay < CT_LAYOUT_COUNT; lay++) {
      double v[24];
      for (int j = 0; j < 24; j++) v[j] = j;
      ct_tensor *x =
          ct_requires_grad_(ct_test_make(v, CT_SHAPE(2, 3, 4), CT_F64, (ct_test_layout)lay), true);
      ct_tensor *y = cases[i].f(x);
      char gname[48];
      snprintf(gname, sizeof gname, "%s_g", cases[i].name);
      WITH_CONTEXT(
          {
            CHECK_LIKE_TORCH(dir, cases[i].name, y, cases[i].name, 0, 0);
            if (y) {
              ct_tensor *wy = ct_reshape(ct_narrow(w, 0, 0, ct_numel(y)), ct_shape(y), ct_ndim(y));
              CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(y, wy), NULL), NULL, NULL));
              CHECK_LIKE_TORCH(dir, gname, ct_grad(x), gname, 1e-12, 1e-12);
            }
          },
          "%s layout %s", cases[i].name, ct_test_layout_names[lay]);
    }
  }
  (void)o;
}

static ct_tensor *gc_rp(ct_tensor *const *in, void *c) { return ((rp_fn)c)(in[0]); }

CT_TEST(repeat_pad_dtypes_gradients_errors) {
  /* every dtype moves by size: compare with the f64 result */
  const ct_dtype dts[] = {CT_F32, CT_F16, CT_BF16, CT_I8, CT_U8, CT_I32, CT_I64, CT_BOOL};
  double v[24];
  for (int j = 0; j < 24; j++) v[j] = j % 2;
  ct_tensor *x64 = ct_test_make(v, CT_SHAPE(2, 3, 4), CT_F64, CT_LAYOUT_CONTIG);
  const rp_fn fs[] = {rp_repeat, rp_interleave, rp_interleave_t, rp_pad_reflect, rp_pad_replicate};
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
    ct_tensor *x = ct_test_make(v, CT_SHAPE(2, 3, 4), dts[t], CT_LAYOUT_SLICED);
    for (size_t f = 0; f < sizeof fs / sizeof fs[0]; f++) {
      double *e = ct_test_values(fs[f](x64));
      WITH_CONTEXT(CHECK_CLOSE(fs[f](x), e, 0, 0), "%s case %zu", ct_dtype_name(dts[t]), f);
      free(e);
    }
  }
  ct_tensor *xg = ct_gradcheck_input(CT_SHAPE(2, 3, 4), -1, 1, 31);
  const rp_fn gs[] = {rp_repeat,       rp_repeat_same, rp_interleave,  rp_interleave_flat,
                      rp_interleave_t, rp_pad_const,   rp_pad_reflect, rp_pad_replicate};
  for (size_t f = 0; f < sizeof gs / sizeof gs[0]; f++)
    WITH_CONTEXT(CHECK_GRADIENTS("repeat/pad", gc_rp, (void *)gs[f], &xg, 1), "case %zu", f);
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 3), &o);
  CHECK_ERR_MSG(ct_repeat(x, (int64_t[]){2}, 1), CT_ERR_ARG, "repeat: expected between 2");
  CHECK_ERR_MSG(ct_repeat(x, (int64_t[]){2, -1}, 2), CT_ERR_ARG, "repeats must be >= 0");
  CHECK_ERR_MSG(ct_repeat_interleave(x, -2, 0), CT_ERR_ARG, "repeat_interleave: repeats");
  CHECK_ERR_MSG(ct_repeat_interleave(x, 2, 2), CT_ERR_ARG, "repeat_interleave: dim 2");
  ct_tensor *bad = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_repeat_interleave_tensor(x, bad, 1), CT_ERR_SHAPE, "expected 3 repeats");
  ct_tensor *neg = ct_test_make((double[]){1, -2, 0}, CT_SHAPE(3), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_repeat_interleave_tensor(x, neg, 1), CT_ERR_ARG, "repeats must be >= 0");
  CHECK_ERR_MSG(ct_pad(x, (int64_t[]){3, 0}, 2, CT_PAD_REFLECT, 0), CT_ERR_ARG,
                "reflect padding (3, 0) must be smaller than the size 3");
  CHECK_ERR_MSG(ct_pad(x, (int64_t[]){1}, 1, CT_PAD_CONSTANT, 0), CT_ERR_ARG, "even number");
  CHECK_ERR_MSG(ct_pad(x, (int64_t[]){-1, 0}, 2, CT_PAD_CONSTANT, 0), CT_ERR_ARG, "negative");
  CHECK_SHAPE(ct_repeat(x, (int64_t[]){0, 2}, 2), 0, 6);
  CHECK_SHAPE(ct_repeat_interleave(x, 0, 1), 2, 0);
  CHECK_SHAPE(ct_pad(ct_zeros(CT_SHAPE(0, 2), &o), (int64_t[]){1, 1}, 2, CT_PAD_CONSTANT, 0), 0, 4);
}
