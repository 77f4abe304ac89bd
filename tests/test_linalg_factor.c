/* Linear algebra through factorizations (ctensor/linalg.h): solve, inv, det,
 * slogdet and cholesky, batched, f32 and f64, against float64 references
 * computed here (Gaussian elimination; residuals A X - B, A A^-1 - I,
 * L L^T - A), against torch.linalg (values and gradients), finite-difference
 * gradient checks in f64, and the errors (shapes, dtypes, singular and
 * non-positive-definite matrices naming the batch element). */
#include <math.h>

#include "ct_gradcheck.h"
#include "ctensor/linalg.h"

CT_TEST_DEVICE_GENERIC

/* ---- References --------------------------------------------------------------- */

/* det of the row-major n x n matrix a, by elimination with partial pivoting. */
static double ref_det(const double *a, int64_t n) {
  double *m = malloc(sizeof(double) * (size_t)(n * n + 1));
  memcpy(m, a, sizeof(double) * (size_t)(n * n));
  double det = 1;
  for (int64_t c = 0; c < n; c++) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; r++)
      if (fabs(m[r * n + c]) > fabs(m[p * n + c])) p = r;
    if (m[p * n + c] == 0) {
      det = 0;
      break;
    }
    if (p != c) {
      for (int64_t j = 0; j < n; j++) {
        double t = m[c * n + j];
        m[c * n + j] = m[p * n + j], m[p * n + j] = t;
      }
      det = -det;
    }
    det *= m[c * n + c];
    for (int64_t r = c + 1; r < n; r++) {
      double f = m[r * n + c] / m[c * n + c];
      for (int64_t j = c; j < n; j++) m[r * n + j] -= f * m[c * n + j];
    }
  }
  free(m);
  return det;
}

/* count matrices (n x n) with entries in [-1, 1) plus `diag` on the diagonal
 * (well conditioned), rounded to dtype. */
static double *make_matrices(int64_t count, int64_t n, double diag, ct_dtype dt, unsigned seed) {
  double *v = ct_test_random(count * n * n + 1, -1, 1, seed);
  for (int64_t b = 0; b < count; b++)
    for (int64_t i = 0; i < n; i++) v[b * n * n + i * n + i] += diag;
  ct_test_round_to(v, count * n * n, dt);
  return v;
}

/* max |a @ x - b| over the batch (a: count x n x n, x and b: count x n x k) */
static double residual(const double *a, const double *x, const double *b, int64_t count, int64_t n,
                       int64_t k) {
  double worst = 0;
  for (int64_t t = 0; t < count; t++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < k; j++) {
        double s = 0;
        for (int64_t p = 0; p < n; p++) s += a[t * n * n + i * n + p] * x[t * n * k + p * k + j];
        worst = fmax(worst, fabs(s - b[t * n * k + i * k + j]));
      }
  return worst;
}

static double tol_of(ct_dtype dt) { return dt == CT_F64 ? 1e-11 : 2e-4; }

/* ---- Values ----------------------------------------------------------------------- */

CT_TEST(linalg_solve_inv_det_values) {
  const int64_t sizes[] = {1, 3, 6};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
      for (int layout = 0; layout < 2; layout++) {
        int64_t n = sizes[si], k = 2, count = 6;
        ct_test_layout lay = layout ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_CONTIG;
        double *av = make_matrices(count, n, 2.0, dt, 11 + (unsigned)si);
        double *bv = ct_test_random(count * n * k, -2, 2, 21 + (unsigned)si);
        ct_test_round_to(bv, count * n * k, dt);
        ct_tensor *a = ct_test_make(av, CT_SHAPE(2, 3, n, n), dt, lay);
        ct_tensor *b = ct_test_make(bv, CT_SHAPE(2, 3, n, k), dt, lay);
        /* solve */
        ct_tensor *x = ct_linalg_solve(a, b);
        WITH_CONTEXT(CHECK_OK(x), "solve n %lld %s", (long long)n, ct_dtype_name(dt));
        if (x) {
          CHECK_SHAPE(x, 2, 3, n, k);
          CHECK(ct_dtype_of(x) == dt);
          double *xv = ct_test_values(x);
          double r = residual(av, xv, bv, count, n, k);
          WITH_CONTEXT(CHECK(r < tol_of(dt) * 10), "solve residual %g n %lld %s", r, (long long)n,
                       ct_dtype_name(dt));
          free(xv);
        }
        /* inv: a @ inv(a) = I */
        ct_tensor *y = ct_linalg_inv(a);
        WITH_CONTEXT(CHECK_OK(y), "inv n %lld", (long long)n);
        if (y) {
          CHECK_SHAPE(y, 2, 3, n, n);
          double *yv = ct_test_values(y);
          double *eye = calloc((size_t)(count * n * n), sizeof(double));
          for (int64_t t = 0; t < count; t++)
            for (int64_t i = 0; i < n; i++) eye[t * n * n + i * n + i] = 1;
          double r = residual(av, yv, eye, count, n, n);
          WITH_CONTEXT(CHECK(r < tol_of(dt) * 10), "inv residual %g n %lld %s", r, (long long)n,
                       ct_dtype_name(dt));
          free(yv), free(eye);
        }
        /* det and slogdet */
        double want[6], want_sign[6], want_log[6];
        for (int64_t t = 0; t < count; t++) {
          want[t] = ref_det(av + t * n * n, n);
          want_sign[t] = want[t] > 0 ? 1 : want[t] < 0 ? -1 : 0;
          want_log[t] = log(fabs(want[t]));
        }
        ct_tensor *d = ct_linalg_det(a);
        WITH_CONTEXT(CHECK_OK(d), "det n %lld", (long long)n);
        if (d) {
          CHECK_SHAPE(d, 2, 3);
          WITH_CONTEXT(CHECK_CLOSE(d, want, tol_of(dt), tol_of(dt)), "det n %lld %s", (long long)n,
                       ct_dtype_name(dt));
        }
        ct_tensor *sign = NULL;
        ct_tensor *ld = ct_linalg_slogdet(a, &sign);
        WITH_CONTEXT(CHECK_OK(ld), "slogdet n %lld", (long long)n);
        if (ld && sign) {
          CHECK_CLOSE(sign, want_sign, 0, 0);
          WITH_CONTEXT(CHECK_CLOSE(ld, want_log, tol_of(dt), tol_of(dt)), "slogdet n %lld %s",
                       (long long)n, ct_dtype_name(dt));
        }
        free(av), free(bv);
        ct_free(a), ct_free(b), ct_free(x), ct_free(y), ct_free(d), ct_free(ld), ct_free(sign);
      }
  }
}

CT_TEST(linalg_solve_broadcast_and_vectors) {
  int64_t n = 4;
  double *av = make_matrices(3, n, 3.0, CT_F64, 5);
  double *bv = ct_test_random(n * 2, -1, 1, 6);
  ct_tensor *a = ct_test_make(av, CT_SHAPE(3, n, n), CT_F64, CT_LAYOUT_CONTIG);
  /* one right-hand side matrix for three systems */
  ct_tensor *b = ct_test_make(bv, CT_SHAPE(n, 2), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *x = ct_linalg_solve(a, b);
  CHECK_OK(x);
  if (x) {
    CHECK_SHAPE(x, 3, n, 2);
    double *xv = ct_test_values(x), b3[3 * 8];
    for (int t = 0; t < 3; t++) memcpy(b3 + t * 8, bv, sizeof(double) * 8);
    CHECK(residual(av, xv, b3, 3, n, 2) < 1e-12);
    free(xv);
  }
  /* a vector b (n): x (3, n); and b of a's shape without its last dim */
  ct_tensor *v = ct_test_make(bv, CT_SHAPE(n), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *xv1 = ct_linalg_solve(a, v);
  CHECK_OK(xv1);
  if (xv1) CHECK_SHAPE(xv1, 3, n);
  double *bb = ct_test_random(3 * n, -1, 1, 7);
  ct_tensor *vb = ct_test_make(bb, CT_SHAPE(3, n), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *xv2 = ct_linalg_solve(a, vb);
  CHECK_OK(xv2);
  if (xv2) {
    CHECK_SHAPE(xv2, 3, n);
    double *xs = ct_test_values(xv2);
    CHECK(residual(av, xs, bb, 3, n, 1) < 1e-12);
    free(xs);
  }
  /* a single matrix against a batch of right-hand sides (one LU, folded) */
  double *bbat = ct_test_random(5 * n * 3, -1, 1, 8);
  ct_tensor *a1 = ct_test_make(av, CT_SHAPE(n, n), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *bm = ct_test_make(bbat, CT_SHAPE(5, n, 3), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *x5 = ct_linalg_solve(a1, bm);
  CHECK_OK(x5);
  if (x5) {
    CHECK_SHAPE(x5, 5, n, 3);
    double *xs = ct_test_values(x5), *a5 = malloc(sizeof(double) * (size_t)(5 * n * n));
    for (int t = 0; t < 5; t++) memcpy(a5 + t * n * n, av, sizeof(double) * (size_t)(n * n));
    CHECK(residual(a5, xs, bbat, 5, n, 3) < 1e-12);
    free(xs), free(a5);
  }
  free(av), free(bv), free(bb), free(bbat);
  ct_free(a), ct_free(b), ct_free(x), ct_free(v), ct_free(xv1), ct_free(vb), ct_free(xv2);
  ct_free(a1), ct_free(bm), ct_free(x5);
}

CT_TEST(linalg_cholesky_values) {
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di ? CT_F64 : CT_F32;
    int64_t n = 5, count = 4;
    /* s = m m^T + n I, symmetric positive-definite */
    double *m = ct_test_random(count * n * n, -1, 1, 31);
    double *s = malloc(sizeof(double) * (size_t)(count * n * n));
    for (int64_t t = 0; t < count; t++)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = i == j ? (double)n : 0;
          for (int64_t p = 0; p < n; p++)
            acc += m[t * n * n + i * n + p] * m[t * n * n + j * n + p];
          s[t * n * n + i * n + j] = acc;
        }
    ct_test_round_to(s, count * n * n, dt);
    ct_tensor *a = ct_test_make(s, CT_SHAPE(2, 2, n, n), dt, CT_LAYOUT_CONTIG);
    for (int upper = 0; upper < 2; upper++) {
      ct_tensor *f = ct_linalg_cholesky(a, upper);
      WITH_CONTEXT(CHECK_OK(f), "cholesky upper %d %s", upper, ct_dtype_name(dt));
      if (!f) continue;
      CHECK_SHAPE(f, 2, 2, n, n);
      double *fv = ct_test_values(f);
      double worst = 0;
      bool triangular = true;
      for (int64_t t = 0; t < count; t++) {
        const double *l = fv + t * n * n;
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < n; j++) {
            /* lower: L[i][j] = 0 for j > i; upper: U = L^T */
            double lij = upper ? l[j * n + i] : l[i * n + j];
            if (j > i && lij != 0) triangular = false;
            double acc = 0;
            for (int64_t p = 0; p < n; p++)
              acc += (upper ? l[p * n + i] : l[i * n + p]) * (upper ? l[p * n + j] : l[j * n + p]);
            worst = fmax(worst, fabs(acc - s[t * n * n + i * n + j]));
          }
        for (int64_t i = 0; i < n; i++) CHECK(l[i * n + i] > 0);
      }
      WITH_CONTEXT(CHECK(triangular), "cholesky upper %d", upper);
      WITH_CONTEXT(CHECK(worst < tol_of(dt) * 50), "cholesky residual %g %s", worst,
                   ct_dtype_name(dt));
      free(fv);
      ct_free(f);
    }
    free(m), free(s);
    ct_free(a);
  }
}

CT_TEST(linalg_singular_and_empty) {
  /* batch element 1 is singular (a zero row) */
  double v[2 * 9] = {2, 1, 0, 1, 3, 1, 0, 1, 4, /* */ 1, 2, 3, 0, 0, 0, 4, 5, 6};
  ct_tensor *a = ct_test_make(v, CT_SHAPE(2, 3, 3), CT_F64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_linalg_inv(a), CT_ERR_ARG, "batch element 1");
  CHECK_ERR_MSG(ct_linalg_solve(a, a), CT_ERR_ARG, "singular");
  ct_tensor *d = ct_linalg_det(a);
  CHECK_OK(d);
  if (d) CHECK_CLOSE(d, ((double[]){ref_det(v, 3), 0}), 1e-12, 1e-12);
  ct_tensor *sign = NULL, *ld = ct_linalg_slogdet(a, &sign);
  CHECK_OK(ld);
  if (ld && sign) {
    CHECK_CLOSE(sign, ((double[]){1, 0}), 0, 0);
    CHECK_CLOSE(ld, ((double[]){log(ref_det(v, 3)), -INFINITY}), 1e-12, 0);
  }
  /* not positive-definite: the leading minor of order 2 of element 1 */
  double s[2 * 4] = {4, 1, 1, 3, /* */ 1, 2, 2, 1};
  ct_tensor *sp = ct_test_make(s, CT_SHAPE(2, 2, 2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_linalg_cholesky(sp, false), CT_ERR_ARG, "batch element 1");
  CHECK_ERR_MSG(ct_linalg_cholesky(sp, false), CT_ERR_ARG, "order 2 is not positive-definite");
  /* empty batches and 0 x 0 matrices (det 1, as torch) */
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *e = ct_zeros(CT_SHAPE(0, 3, 3), &o);
  ct_tensor *ei = ct_linalg_inv(e), *ed = ct_linalg_det(e);
  CHECK_OK(ei);
  CHECK_OK(ed);
  if (ei) CHECK_SHAPE(ei, 0, 3, 3);
  if (ed) CHECK_SHAPE(ed, 0);
  ct_tensor *z = ct_zeros(CT_SHAPE(2, 0, 0), &o);
  ct_tensor *zd = ct_linalg_det(z);
  CHECK_OK(zd);
  if (zd) CHECK_CLOSE(zd, ((double[]){1, 1}), 0, 0);
  ct_free(a), ct_free(d), ct_free(sign), ct_free(ld), ct_free(sp);
  ct_free(e), ct_free(ei), ct_free(ed), ct_free(z), ct_free(zd);
}

CT_TEST(linalg_errors) {
  ct_tensor_opts f = ct_test_opts(CT_F32), i = ct_test_opts(CT_I64), h = ct_test_opts(CT_F64);
  ct_tensor *rect = ct_zeros(CT_SHAPE(2, 3, 4), &f);
  CHECK_ERR_MSG(ct_linalg_inv(rect), CT_ERR_SHAPE, "3 by 4");
  CHECK_ERR_MSG(ct_linalg_det(rect), CT_ERR_SHAPE, "linalg_det");
  CHECK_ERR(ct_linalg_cholesky(rect, false), CT_ERR_SHAPE);
  ct_tensor *vec = ct_zeros(CT_SHAPE(3), &f);
  CHECK_ERR_MSG(ct_linalg_slogdet(vec, NULL), CT_ERR_SHAPE, "shape (3,)");
  ct_tensor *ints = ct_zeros(CT_SHAPE(3, 3), &i);
  CHECK_ERR_MSG(ct_linalg_inv(ints), CT_ERR_DTYPE, "f32 or f64 tensor, got i64");
  ct_tensor *sq = ct_eye(3, 3, &f), *sq64 = ct_eye(3, 3, &h);
  CHECK_ERR_MSG(ct_linalg_solve(sq, sq64), CT_ERR_DTYPE, "got f32 and f64");
  ct_tensor *b = ct_zeros(CT_SHAPE(4, 2), &f);
  CHECK_ERR_MSG(ct_linalg_solve(sq, b), CT_ERR_SHAPE, "incompatible");
  ct_tensor *sign = (ct_tensor *)1;
  CHECK(ct_linalg_slogdet(NULL, &sign) == NULL && sign == NULL);
  ct_free(rect), ct_free(vec), ct_free(ints), ct_free(sq), ct_free(sq64), ct_free(b);
}

/* ---- Gradients: finite differences in f64 ---------------------------------------- */

static ct_tensor *f_solve(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_linalg_solve(in[0], in[1]);
}
static ct_tensor *f_inv(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_linalg_inv(in[0]);
}
static ct_tensor *f_det(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_linalg_det(in[0]);
}
static ct_tensor *f_slogdet(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_linalg_slogdet(in[0], NULL);
}
/* cholesky(m m^T + 3 I): the perturbations stay symmetric (as torch's tests) */
static ct_tensor *f_cholesky(ct_tensor *const *in, void *ctx) {
  ct_tensor *m = in[0];
  int64_t n = ct_shape(m)[ct_ndim(m) - 1];
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *mt = ct_transpose(m, -2, -1), *mm = ct_matmul(m, mt);
  ct_tensor *eye = ct_eye(n, n, &o), *spd = ct_add(mm, ct_mul_scalar(eye, 3.0));
  ct_tensor *l = ct_linalg_cholesky(spd, ctx != NULL);
  ct_free(mt), ct_free(mm), ct_free(eye), ct_free(spd);
  return l;
}

CT_TEST(linalg_gradients) {
  /* a with a strong diagonal, so that it stays invertible under eps */
  ct_tensor *a = ct_gradcheck_input(CT_SHAPE(2, 3, 3), -1, 1, 41);
  ct_no_grad_begin();
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *eye = ct_eye(3, 3, &o);
  CHECK_OK(ct_add_(a, ct_mul_scalar(eye, 2.5)));
  ct_no_grad_end();
  ct_tensor *b = ct_gradcheck_input(CT_SHAPE(3, 2), -1, 1, 42); /* broadcast over a's batch */
  ct_tensor *ab[2] = {a, b};
  CHECK_GRADIENTS("solve", f_solve, NULL, ab, 2);
  ct_tensor *v = ct_gradcheck_input(CT_SHAPE(2, 3), -1, 1, 43); /* vectors */
  ct_tensor *av[2] = {a, v};
  CHECK_GRADIENTS("solve vector", f_solve, NULL, av, 2);
  CHECK_GRADIENTS("inv", f_inv, NULL, &a, 1);
  CHECK_GRADIENTS("det", f_det, NULL, &a, 1);
  CHECK_GRADIENTS("slogdet", f_slogdet, NULL, &a, 1);
  ct_tensor *m = ct_gradcheck_input(CT_SHAPE(2, 4, 4), -1, 1, 44);
  CHECK_GRADIENTS("cholesky", f_cholesky, NULL, &m, 1);
  CHECK_GRADIENTS("cholesky upper", f_cholesky, (void *)1, &m, 1);
  ct_free(a), ct_free(eye), ct_free(b), ct_free(v), ct_free(m);
}

/* ---- torch.linalg as an oracle: values and gradients --------------------------------- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(3)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "a = torch.randn(2, 3, 4, 4, dtype=torch.float64) + 2 * torch.eye(4, dtype=torch.float64)\n"
    "b = torch.randn(3, 4, 2, dtype=torch.float64)\n"
    "m = torch.randn(3, 4, 4, dtype=torch.float64)\n"
    "s = m @ m.mT + torch.eye(4, dtype=torch.float64)\n"
    "save('a', a); save('b', b); save('s', s)\n"
    "def run(name, f, *xs):\n"
    "    xs = [x.clone().requires_grad_(True) for x in xs]\n"
    "    y = f(*xs); w = torch.randn(y.shape, dtype=torch.float64)\n"
    "    save(name, y); save(name + '_w', w)\n"
    "    (y * w).sum().backward()\n"
    "    for i, x in enumerate(xs): save(f'{name}_g{i}', x.grad)\n"
    "run('solve', torch.linalg.solve, a, b)\n"
    "run('inv', torch.linalg.inv, a)\n"
    "run('det', torch.linalg.det, a)\n"
    "run('logabsdet', lambda x: torch.linalg.slogdet(x)[1], a)\n"
    "save('sign', torch.linalg.slogdet(a)[0])\n"
    "run('cholesky', lambda x: torch.linalg.cholesky(x), s)\n"
    "run('cholesky_upper', lambda x: torch.linalg.cholesky(x, upper=True), s)\n";

typedef ct_tensor *(*oracle_fn)(const ct_tensor *a, const ct_tensor *b);
static ct_tensor *o_solve(const ct_tensor *a, const ct_tensor *b) { return ct_linalg_solve(a, b); }
static ct_tensor *o_inv(const ct_tensor *a, const ct_tensor *b) {
  (void)b;
  return ct_linalg_inv(a);
}
static ct_tensor *o_det(const ct_tensor *a, const ct_tensor *b) {
  (void)b;
  return ct_linalg_det(a);
}
static ct_tensor *o_logabsdet(const ct_tensor *a, const ct_tensor *b) {
  (void)b;
  return ct_linalg_slogdet(a, NULL);
}
static ct_tensor *o_chol(const ct_tensor *a, const ct_tensor *b) {
  (void)b;
  return ct_linalg_cholesky(a, false);
}
static ct_tensor *o_chol_upper(const ct_tensor *a, const ct_tensor *b) {
  (void)b;
  return ct_linalg_cholesky(a, true);
}

CT_TEST(linalg_matches_pytorch) {
  static const char *tried_dir;
  static bool tried;
  if (!tried) tried_dir = ct_test_torch_outputs("linalg_factor", TORCH_SCRIPT), tried = true;
  const char *dir = tried_dir;
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const struct {
    const char *name, *input;
    oracle_fn fn;
    int nin;
  } cases[] = {{"solve", "a", o_solve, 2},   {"inv", "a", o_inv, 1},
               {"det", "a", o_det, 1},       {"logabsdet", "a", o_logabsdet, 1},
               {"cholesky", "s", o_chol, 1}, {"cholesky_upper", "s", o_chol_upper, 1}};
  char nm[64];
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ct_tensor *x0 = ct_requires_grad_(ct_test_load_output(dir, cases[c].input), true);
    ct_tensor *x1 =
        cases[c].nin > 1 ? ct_requires_grad_(ct_test_load_output(dir, "b"), true) : NULL;
    ct_tensor *y = cases[c].fn(x0, x1);
    CHECK_LIKE_TORCH(dir, cases[c].name, y, cases[c].name, 1e-10, 1e-12);
    snprintf(nm, sizeof nm, "%s_w", cases[c].name);
    ct_tensor *w = ct_test_load_output(dir, nm);
    ct_tensor *loss = y && w ? ct_sum(ct_mul(y, w), NULL) : NULL;
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    for (int i = 0; i < cases[c].nin; i++) {
      snprintf(nm, sizeof nm, "%s_g%d", cases[c].name, i);
      CHECK_LIKE_TORCH(dir, nm, ct_grad(i ? x1 : x0), nm, 1e-9, 1e-11);
    }
  }
  ct_tensor *sign = NULL, *a = ct_test_load_output(dir, "a");
  ct_free(ct_linalg_slogdet(a, &sign));
  CHECK_LIKE_TORCH(dir, "slogdet sign", sign, "sign", 0, 0);
}

/* Batches at the order of CUDA's batched calls (32) and above it (33), and a
 * batch of one: solve, inv, det, lu and cholesky by residuals; a singular /
 * not positive-definite matrix in the batch is named (element 2 of 3). */
CT_TEST(linalg_batched_orders) {
  const int64_t orders[] = {32, 33}, counts[] = {3, 1};
  for (int di = 0; di < 2; di++)
    for (int oi = 0; oi < 2; oi++)
      for (int ci = 0; ci < 2; ci++) {
        ct_dtype dt = di ? CT_F64 : CT_F32;
        int64_t n = orders[oi], count = counts[ci], k = 3;
        double *av = make_matrices(count, n, 8.0, dt, 61 + (unsigned)n);
        double *bv = ct_test_random(count * n * k, -2, 2, 62);
        ct_test_round_to(bv, count * n * k, dt);
        ct_tensor *a = ct_test_make(av, CT_SHAPE(count, n, n), dt, CT_LAYOUT_CONTIG);
        ct_tensor *b = ct_test_make(bv, CT_SHAPE(count, n, k), dt, CT_LAYOUT_CONTIG);
        ct_tensor *x = ct_linalg_solve(a, b), *y = ct_linalg_inv(a), *d = ct_linalg_det(a);
        WITH_CONTEXT(
            {
              CHECK_OK(x);
              CHECK_OK(y);
              CHECK_OK(d);
            },
            "n %lld batch %lld %s", (long long)n, (long long)count, ct_dtype_name(dt));
        if (x && y && d) {
          double *xv = ct_test_values(x), *yv = ct_test_values(y);
          double *eye = calloc((size_t)(count * n * n), sizeof(double)), want[3];
          for (int64_t t = 0; t < count; t++) {
            for (int64_t i = 0; i < n; i++) eye[t * n * n + i * n + i] = 1;
            want[t] = ref_det(av + t * n * n, n);
          }
          double r1 = residual(av, xv, bv, count, n, k), r2 = residual(av, yv, eye, count, n, n);
          WITH_CONTEXT(CHECK(r1 < tol_of(dt) * 10 && r2 < tol_of(dt) * 10),
                       "solve %g inv %g: n %lld batch %lld %s", r1, r2, (long long)n,
                       (long long)count, ct_dtype_name(dt));
          double *dv = ct_test_values(d);
          bool ok = true;
          for (int64_t t = 0; t < count; t++)
            ok = ok && fabs(dv[t] - want[t]) <= tol_of(dt) * 10 * fabs(want[t]);
          WITH_CONTEXT(CHECK(ok), "det n %lld batch %lld %s", (long long)n, (long long)count,
                       ct_dtype_name(dt));
          free(xv), free(yv), free(eye), free(dv);
        }
        /* cholesky of a a^T + n I: L L^T */
        double *sv = malloc(sizeof(double) * (size_t)(count * n * n));
        for (int64_t t = 0; t < count; t++)
          for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
              double s = i == j ? (double)n : 0;
              for (int64_t p = 0; p < n; p++)
                s += av[t * n * n + i * n + p] * av[t * n * n + j * n + p];
              sv[t * n * n + i * n + j] = s;
            }
        ct_test_round_to(sv, count * n * n, dt);
        ct_tensor *sp = ct_test_make(sv, CT_SHAPE(count, n, n), dt, CT_LAYOUT_CONTIG);
        ct_tensor *l = ct_linalg_cholesky(sp, false);
        WITH_CONTEXT(CHECK_OK(l), "cholesky n %lld batch %lld %s", (long long)n, (long long)count,
                     ct_dtype_name(dt));
        if (l) {
          double *lv = ct_test_values(l), worst = 0;
          for (int64_t t = 0; t < count; t++)
            for (int64_t i = 0; i < n; i++)
              for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < n; p++)
                  s += lv[t * n * n + i * n + p] * lv[t * n * n + j * n + p];
                worst = fmax(worst, fabs(s - sv[t * n * n + i * n + j]) / (double)n);
              }
          WITH_CONTEXT(CHECK(worst < tol_of(dt) * 100), "L L^T - A: %g n %lld batch %lld %s", worst,
                       (long long)n, (long long)count, ct_dtype_name(dt));
          free(lv);
        }
        /* element 2 of 3 singular (a zero row), and not positive-definite */
        if (count == 3) {
          for (int64_t j = 0; j < n; j++) av[2 * n * n + 5 * n + j] = 0;
          sv[2 * n * n + 7 * n + 7] = -1;
          ct_tensor *as = ct_test_make(av, CT_SHAPE(count, n, n), dt, CT_LAYOUT_CONTIG);
          ct_tensor *ss = ct_test_make(sv, CT_SHAPE(count, n, n), dt, CT_LAYOUT_CONTIG);
          WITH_CONTEXT(
              {
                CHECK_ERR_MSG(ct_linalg_inv(as), CT_ERR_ARG, "(batch element 2)");
                CHECK_ERR_MSG(ct_linalg_solve(as, b), CT_ERR_ARG, "singular");
                CHECK_ERR_MSG(ct_linalg_cholesky(ss, false), CT_ERR_ARG, "(batch element 2)");
              },
              "n %lld %s", (long long)n, ct_dtype_name(dt));
          ct_free(as), ct_free(ss);
        }
        free(av), free(bv), free(sv);
        ct_free(a), ct_free(b), ct_free(x), ct_free(y), ct_free(d), ct_free(sp), ct_free(l);
      }
}

/* f32 against f64 on the device under test for a larger batch (the work is
 * split across threads on the CPU). */
CT_TEST(linalg_large_batch_f32) {
  int64_t n = 16, count = 64;
  double *av = make_matrices(count, n, 6.0, CT_F32, 51);
  ct_tensor *a32 = ct_test_make(av, CT_SHAPE(count, n, n), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *a64 = ct_test_make(av, CT_SHAPE(count, n, n), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *i32 = ct_linalg_inv(a32), *i64 = ct_linalg_inv(a64);
  CHECK_OK(i32);
  CHECK_OK(i64);
  if (i32 && i64) {
    double *want = ct_test_values(i64);
    CHECK_CLOSE(i32, want, 1e-4, 1e-5);
    free(want);
  }
  free(av);
  ct_free(a32), ct_free(a64), ct_free(i32), ct_free(i64);
}
