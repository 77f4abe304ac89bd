/* nonzero, bincount, searchsorted, unique: values against references written here
 * (linear scans), every layout and several dtypes, PyTorch as an oracle, and
 * errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static const ct_dtype DTS[] = {CT_F32, CT_F64, CT_F16, CT_I32, CT_I64, CT_U8, CT_BOOL};

CT_TEST(nonzero_values) {
  double xv[12] = {0, 1.5, 0, -2, 0, 0, 3, -0.0, NAN, 0, 0, 7};
  for (size_t di = 0; di < sizeof DTS / sizeof DTS[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_dtype dt = DTS[di];
      double v[12];
      memcpy(v, xv, sizeof v);
      if (!ct_dtype_is_floating(dt)) v[8] = 5;
      ct_test_round_to(v, 12, dt);
      ct_tensor *x = ct_test_make(v, CT_SHAPE(3, 4), dt, (ct_test_layout)l);
      double ref[24];
      int64_t n = 0;
      for (int i = 0; i < 12; i++)
        if (v[i] != 0) ref[2 * n] = i / 4, ref[2 * n + 1] = i % 4, n++;
      ct_tensor *r = ct_nonzero(x);
      WITH_CONTEXT(ct_test_check_shape(__FILE__, __LINE__, "nonzero", r, (int64_t[]){n, 2}, 2),
                   "%s layout %s", ct_dtype_name(dt), ct_test_layout_names[l]);
      WITH_CONTEXT(CHECK_CLOSE(r, ref, 0, 0), "%s layout %s", ct_dtype_name(dt),
                   ct_test_layout_names[l]);
      if (r) CHECK(ct_dtype_of(r) == CT_I64);
    }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  CHECK_SHAPE(ct_nonzero(ct_scalar(2, &o)), 1, 0);
  CHECK_SHAPE(ct_nonzero(ct_scalar(0, &o)), 0, 0);
  CHECK_SHAPE(ct_nonzero(ct_zeros(CT_SHAPE(2, 0, 3), &o)), 0, 3);
  /* 3-d, larger than one thread's share */
  ct_tensor *big = ct_remainder_scalar(ct_arange(0, 3000, 1, &o), 7);
  ct_tensor *r = ct_nonzero(ct_reshape(big, CT_SHAPE(10, 15, 20)));
  CHECK_SHAPE(r, 3000 - 429, 3);
  double *got = ct_test_values(r);
  int64_t k = 0;
  bool ok = got != NULL;
  for (int i = 0; i < 3000 && ok; i++)
    if (i % 7)
      ok = got[3 * k] == i / 300 && got[3 * k + 1] == (i / 20) % 15 && got[3 * k + 2] == i % 20,
      k++;
  CHECK_MSG(ok, "nonzero of a (10, 15, 20) tensor: wrong coordinates");
  free(got);
}

CT_TEST(bincount_values) {
  double xv[7] = {1, 3, 1, 0, 3, 3, 6}, wv[7] = {0.5, 1, 2, -1, 0.25, 4, 8};
  const ct_dtype its[] = {CT_I64, CT_I32, CT_U8, CT_I16};
  for (size_t i = 0; i < sizeof its / sizeof its[0]; i++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *x = ct_test_make(xv, CT_SHAPE(7), its[i], (ct_test_layout)l);
      ct_tensor *r = ct_bincount(x, NULL, 0);
      CHECK_CLOSE(r, ((double[]){1, 2, 0, 3, 0, 0, 1}), 0, 0);
      if (r) CHECK(ct_dtype_of(r) == CT_I64);
      CHECK_SHAPE(ct_bincount(x, NULL, 9), 9);
      ct_tensor *w = ct_test_make(wv, CT_SHAPE(7), CT_F32, (ct_test_layout)l);
      r = ct_bincount(x, w, 3);
      CHECK_CLOSE(r, ((double[]){-1, 2.5, 0, 5.25, 0, 0, 8}), 0, 0);
      if (r) CHECK(ct_dtype_of(r) == CT_F32);
      r = ct_bincount(x, ct_cast(w, CT_I32), 0);
      CHECK_CLOSE(r, ((double[]){-1, 2, 0, 5, 0, 0, 8}), 0, 0);
      if (r) CHECK(ct_dtype_of(r) == CT_F64);
    }
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  ct_tensor *e = ct_bincount(ct_empty(CT_SHAPE(0), &oi), NULL, 4);
  CHECK_CLOSE(e, ((double[]){0, 0, 0, 0}), 0, 0);
  CHECK_SHAPE(ct_bincount(ct_empty(CT_SHAPE(0), &oi), NULL, 0), 0);
  /* many repeats: exact counts (atomics on CUDA) */
  ct_tensor *many = ct_remainder_scalar(ct_arange(0, 10000, 1, &oi), 4);
  CHECK_CLOSE(ct_bincount(many, NULL, 0), ((double[]){2500, 2500, 2500, 2500}), 0, 0);
}

/* Reference: the first i with s[i] >= v (left) or s[i] > v (right). */
static int64_t ref_search(const double *s, int64_t n, double v, bool right) {
  for (int64_t i = 0; i < n; i++)
    if (right ? s[i] > v : s[i] >= v) return i;
  return n;
}

CT_TEST(searchsorted_values) {
  double sv[10] = {-3, -1, -1, 0, 0.5, 2, 2, 2, 7, NAN};
  double vv[12] = {-5, -3, -1, -0.5, 0, 0.5, 2, 3, 7, 9, NAN, 2};
  const ct_dtype dts[] = {CT_F64, CT_F32, CT_F16, CT_I32, CT_I64};
  for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++)
      for (int right = 0; right < 2; right++) {
        ct_dtype dt = dts[di];
        int64_t ns = ct_dtype_is_floating(dt) ? 10 : 9; /* integers: no nan */
        double s[10], v[12], ref[12];
        memcpy(s, sv, sizeof s), memcpy(v, vv, sizeof v);
        if (!ct_dtype_is_floating(dt)) v[10] = 4;
        ct_test_round_to(s, ns, dt), ct_test_round_to(v, 12, dt);
        for (int i = 0; i < 12; i++) ref[i] = (double)ref_search(s, ns, v[i], right);
        ct_tensor *st = ct_test_make(s, (int64_t[]){ns}, 1, dt, (ct_test_layout)l);
        ct_tensor *vt = ct_test_make(v, CT_SHAPE(3, 4), dt, (ct_test_layout)l);
        ct_tensor *r = ct_searchsorted(st, vt, right);
        CHECK_SHAPE(r, 3, 4);
        WITH_CONTEXT(CHECK_CLOSE(r, ref, 0, 0), "%s layout %s right %d", ct_dtype_name(dt),
                     ct_test_layout_names[l], right);
      }
  /* one row per row: sorted (2, 5), values (2, 3), mixed dtypes */
  double s2[10] = {0, 1, 2, 3, 4, 10, 20, 30, 40, 50}, v2[6] = {2.5, -1, 4, 25, 50, 60};
  ct_tensor *st = ct_test_make(s2, CT_SHAPE(2, 5), CT_I32, CT_LAYOUT_TRANSPOSED);
  ct_tensor *vt = ct_test_make(v2, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_SLICED);
  CHECK_CLOSE(ct_searchsorted(st, vt, false), ((double[]){3, 0, 4, 2, 4, 5}), 0, 0);
  CHECK_CLOSE(ct_searchsorted(st, vt, true), ((double[]){3, 0, 5, 2, 5, 5}), 0, 0);
  ct_tensor_opts o = ct_test_opts(CT_F32);
  CHECK_CLOSE(ct_searchsorted(ct_empty(CT_SHAPE(0), &o), vt, false), ((double[]){0, 0, 0, 0, 0, 0}),
              0, 0);
  ct_tensor *r0 = ct_searchsorted(ct_test_make(s2, CT_SHAPE(5), CT_F32, CT_LAYOUT_CONTIG),
                                  ct_scalar(3, &o), true);
  CHECK(r0 && ct_ndim(r0) == 0);
  CHECK_CLOSE(r0, ((double[]){4}), 0, 0);
}

/* ---- unique ---- */

static int cmp_nan_last(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
  return x < y ? -1 : x > y;
}
static bool same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* unique of v[0, n) by sorting and scanning; returns the count. */
static int64_t ref_unique(const double *v, int64_t n, double *u, double *inv, double *cnt) {
  double *s = malloc(sizeof(double) * (size_t)(n + 1));
  memcpy(s, v, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), cmp_nan_last);
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (i == 0 || !same(s[i], s[i - 1])) u[k++] = s[i];
  for (int64_t j = 0; j < k; j++) cnt[j] = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < k; j++)
      if (same(v[i], u[j])) inv[i] = (double)j, cnt[j]++;
  free(s);
  return k;
}

static void check_unique(const double *vals, const int64_t *shape, int nd, ct_dtype dt,
                         ct_test_layout lay, const char *what) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc(sizeof(double) * (size_t)(n + 1)),
         *u = malloc(sizeof(double) * (size_t)(n + 1));
  double *inv = malloc(sizeof(double) * (size_t)(n + 1)),
         *cnt = malloc(sizeof(double) * (size_t)(n + 1));
  memcpy(v, vals, sizeof(double) * (size_t)n);
  ct_test_round_to(v, n, dt);
  int64_t k = ref_unique(v, n, u, inv, cnt);
  ct_tensor *x = ct_test_make(v, shape, nd, dt, lay);
  ct_tensor *ri = NULL, *rc = NULL;
  ct_tensor *r = ct_unique(x, true, &ri, &rc);
  WITH_CONTEXT(CHECK_SHAPE(r, k), "%s %s", what, ct_dtype_name(dt));
  WITH_CONTEXT(CHECK_CLOSE(r, u, 0, 0), "%s %s values", what, ct_dtype_name(dt));
  WITH_CONTEXT(ct_test_check_shape(__FILE__, __LINE__, "inverse", ri, shape, nd), "%s", what);
  WITH_CONTEXT(CHECK_CLOSE(ri, inv, 0, 0), "%s %s inverse", what, ct_dtype_name(dt));
  WITH_CONTEXT(CHECK_CLOSE(rc, cnt, 0, 0), "%s %s counts", what, ct_dtype_name(dt));
  if (r) WITH_CONTEXT(CHECK(ct_dtype_of(r) == dt && ct_dtype_of(ri) == CT_I64), "%s dtypes", what);
  ct_free(ri), ct_free(rc);
  free(v), free(u), free(inv), free(cnt);
}

CT_TEST(unique_values) {
  double xv[12] = {3, -1, 0, 3, NAN, -0.0, 2.5, -1, NAN, 7, 3, 0};
  for (size_t di = 0; di < sizeof DTS / sizeof DTS[0]; di++)
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      double v[12];
      memcpy(v, xv, sizeof v);
      if (!ct_dtype_is_floating(DTS[di])) v[4] = 4, v[8] = 4;
      check_unique(v, CT_SHAPE(3, 4), DTS[di], (ct_test_layout)l, "(3, 4)");
    }
  /* many merge passes, a size that is no power of two */
  double *big = ct_test_random(1000, 0, 50, 3);
  for (int i = 0; i < 1000; i++) big[i] = floor(big[i]);
  check_unique(big, CT_SHAPE(10, 100), CT_I32, CT_LAYOUT_TRANSPOSED, "(10, 100)");
  for (int i = 0; i < 1000; i++) big[i] = big[i] / 8 + (i % 3 == 0 ? NAN : 0);
  check_unique(big, CT_SHAPE(1000), CT_F32, CT_LAYOUT_CONTIG, "(1000,)");
  free(big);
  check_unique((double[]){5}, NULL, 0, CT_F64, CT_LAYOUT_CONTIG, "0-d");
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *ri = NULL, *rc = NULL;
  ct_tensor *e = ct_unique(ct_empty(CT_SHAPE(2, 0), &o), true, &ri, &rc);
  CHECK_SHAPE(e, 0);
  CHECK_SHAPE(ri, 2, 0);
  CHECK_SHAPE(rc, 0);
  ct_free(ri), ct_free(rc);
  CHECK_SHAPE(
      ct_unique(ct_test_make(xv, CT_SHAPE(12), CT_F64, CT_LAYOUT_CONTIG), false, NULL, NULL), 6);
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = (torch.rand(4, 3, 5) < 0.4).double() * torch.randn(4, 3, 5, dtype=torch.float64)\n"
    "save('x', x); save('nz', torch.nonzero(x))\n"
    "b = torch.randint(0, 9, (50,)); w = torch.randn(50, dtype=torch.float64)\n"
    "save('b', b); save('w', w); save('bc', torch.bincount(b, w, minlength=12)); "
    "save('bc0', torch.bincount(b))\n"
    "s = torch.sort(torch.randint(0, 6, (3, 8)).double(), 1)[0]; v = torch.randint(-1, 7, (3, "
    "5)).double()\n"
    "s[1, -2:] = float('nan'); v[1, 0] = float('nan')\n"
    "save('s', s); save('v', v)\n"
    "save('ssl', torch.searchsorted(s, v)); save('ssr', torch.searchsorted(s, v, right=True))\n"
    "save('ss1', torch.searchsorted(s[0], v, right=True))\n"
    "q = torch.randint(-4, 9, (6, 7)).float() / 2; save('q', q)\n"
    "uq, ui, uc = torch.unique(q, return_inverse=True, return_counts=True)\n"
    "save('uq', uq); save('ui', ui); save('uc', uc)\n";

CT_TEST(set_ops_match_pytorch) {
  const char *dir = ct_test_torch_outputs("set_ops", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x = ct_test_load_output(dir, "x");
  CHECK_LIKE_TORCH(dir, "nonzero", ct_nonzero(x), "nz", 0, 0);
  ct_tensor *b = ct_cast(ct_test_load_output(dir, "b"), CT_I64), *w = ct_test_load_output(dir, "w");
  CHECK_LIKE_TORCH(dir, "bincount weights", ct_bincount(b, w, 12), "bc", 1e-14, 1e-14);
  CHECK_LIKE_TORCH(dir, "bincount", ct_bincount(b, NULL, 0), "bc0", 0, 0);
  ct_tensor *s = ct_test_load_output(dir, "s"), *v = ct_test_load_output(dir, "v");
  CHECK_LIKE_TORCH(dir, "searchsorted left", ct_searchsorted(s, v, false), "ssl", 0, 0);
  CHECK_LIKE_TORCH(dir, "searchsorted right", ct_searchsorted(s, v, true), "ssr", 0, 0);
  CHECK_LIKE_TORCH(dir, "searchsorted 1-d", ct_searchsorted(ct_select(s, 0, 0), v, true), "ss1", 0,
                   0);
  ct_tensor *q = ct_cast(ct_test_load_output(dir, "q"), CT_F32), *ui = NULL, *uc = NULL;
  CHECK_LIKE_TORCH(dir, "unique", ct_unique(q, true, &ui, &uc), "uq", 0, 0);
  CHECK_LIKE_TORCH(dir, "unique inverse", ui, "ui", 0, 0);
  CHECK_LIKE_TORCH(dir, "unique counts", uc, "uc", 0, 0);
  ct_free(ui), ct_free(uc);
}

CT_TEST(set_ops_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32), oi = ct_test_opts(CT_I64);
  ct_tensor *neg = ct_test_make((double[]){1, -3, 2}, CT_SHAPE(3), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_bincount(neg, NULL, 0), CT_ERR_ARG,
                "bincount: the input holds a negative value (-3)");
  CHECK_ERR_MSG(ct_bincount(ct_ones(CT_SHAPE(3), &o), NULL, 0), CT_ERR_ARG,
                "1-d tensor of integers");
  CHECK_ERR_MSG(ct_bincount(ct_ones(CT_SHAPE(3, 1), &oi), NULL, 0), CT_ERR_ARG, "shape (3, 1)");
  CHECK_ERR_MSG(ct_bincount(ct_ones(CT_SHAPE(3), &oi), ct_ones(CT_SHAPE(2), &o), 0), CT_ERR_SHAPE,
                "weights of shape (2,)");
  CHECK_ERR_MSG(ct_bincount(ct_ones(CT_SHAPE(3), &oi), NULL, -1), CT_ERR_ARG, "minlength");
  CHECK_ERR_MSG(ct_searchsorted(ct_ones(CT_SHAPE(2, 3), &o), ct_ones(CT_SHAPE(3, 3), &o), false),
                CT_ERR_SHAPE, "shapes (2, 3) and (3, 3)");
  CHECK_ERR_MSG(ct_searchsorted(ct_scalar(1, &o), ct_ones(CT_SHAPE(3), &o), false), CT_ERR_SHAPE,
                "0-d");
  ct_clear_error();
  CHECK(ct_nonzero(NULL) == NULL);
  CHECK(ct_bincount(NULL, NULL, 0) == NULL);
  CHECK(ct_searchsorted(NULL, NULL, false) == NULL);
  ct_tensor *ri = ct_ones(CT_SHAPE(1), &o);
  CHECK(ct_unique(NULL, true, &ri, NULL) == NULL && ri == NULL);
}
