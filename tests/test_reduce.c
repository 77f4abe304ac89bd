/* Reductions: sum, mean, prod, max, min, logsumexp, all, any, var, std, norm,
 * argmax/argmin, max/min along a dim. Every op against float64 (or exact
 * int64) references computed here, on every dtype and ct_test_make layout,
 * several dim sets with and without keepdim; empty inputs, NaN/Inf, long
 * accurate sums, the multi-threaded paths, and the error cases. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

typedef enum { R_SUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_LSE, R_ALL, R_ANY, R_VAR, R_STD, R_NORM, R_COUNT } rop;
static const char *const rop_names[R_COUNT] = {"sum", "mean", "prod", "max", "min", "logsumexp",
                                                "all", "any", "var", "std", "norm"};

static ct_tensor *call_reduce(rop op, const ct_tensor *x, const ct_reduce_opts *r, double p) {
  switch (op) {
  case R_SUM: return ct_sum(x, r);
  case R_MEAN: return ct_mean(x, r);
  case R_PROD: return ct_prod(x, r);
  case R_MAX: return ct_max(x, r);
  case R_MIN: return ct_min(x, r);
  case R_LSE: return ct_logsumexp(x, r);
  case R_ALL: return ct_all(x, r);
  case R_ANY: return ct_any(x, r);
  case R_VAR: return ct_var(x, r, p);
  case R_STD: return ct_std(x, r, p);
  case R_NORM: return ct_norm(x, p, r);
  default: return NULL;
  }
}

static bool float_only(rop op) {
  return op == R_MEAN || op == R_VAR || op == R_STD || op == R_NORM;
}

static ct_dtype result_dtype(rop op, ct_dtype in) {
  bool fl = ct_dtype_is_floating(in);
  if (op == R_SUM || op == R_PROD) return fl ? in : CT_I64;
  if (op == R_ALL || op == R_ANY) return in == CT_U8 ? CT_U8 : CT_BOOL; /* as torch */
  if (op == R_LSE && !fl) return CT_F32; /* torch computes in its default float type */
  return in;
}

/* ---- float64 references ----------------------------------------------------- */

static double nanmax_d(double a, double b) { return isnan(a) || isnan(b) ? NAN : (b > a ? b : a); }
static double nanmin_d(double a, double b) { return isnan(a) || isnan(b) ? NAN : (b < a ? b : a); }

/* op over v[0..n) in long double (floating inputs). */
static double ref_float(rop op, const double *v, int64_t n, double p) {
  long double s = 0, m;
  switch (op) {
  case R_SUM:
    for (int64_t i = 0; i < n; i++) s += v[i];
    return (double)s;
  case R_MEAN:
    for (int64_t i = 0; i < n; i++) s += v[i];
    return (double)(s / n);
  case R_PROD:
    s = 1;
    for (int64_t i = 0; i < n; i++) s *= v[i];
    return (double)s;
  case R_MAX:
  case R_MIN: {
    double r = v[0];
    for (int64_t i = 1; i < n; i++) r = op == R_MAX ? nanmax_d(r, v[i]) : nanmin_d(r, v[i]);
    return r;
  }
  case R_LSE: {
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = nanmax_d(mx, v[i]);
    if (isinf(mx)) mx = 0;
    for (int64_t i = 0; i < n; i++) s += expl((long double)v[i] - mx);
    return (double)(logl(s) + mx);
  }
  case R_ALL:
    for (int64_t i = 0; i < n; i++)
      if (v[i] == 0) return 0;
    return 1;
  case R_ANY:
    for (int64_t i = 0; i < n; i++)
      if (v[i] != 0) return 1;
    return 0;
  case R_VAR:
  case R_STD: {
    for (int64_t i = 0; i < n; i++) s += v[i];
    m = s / n;
    long double m2 = 0;
    for (int64_t i = 0; i < n; i++) m2 += (v[i] - m) * (v[i] - m);
    double dof = (double)n - p;
    double var = (double)(m2 / (dof > 0 ? dof : 0));
    return op == R_STD ? sqrt(var) : var;
  }
  case R_NORM:
    if (p == 0) {
      for (int64_t i = 0; i < n; i++) s += v[i] != 0;
      return (double)s;
    }
    if (isinf(p)) {
      double r = fabs(v[0]);
      for (int64_t i = 1; i < n; i++) r = p > 0 ? nanmax_d(r, fabs(v[i])) : nanmin_d(r, fabs(v[i]));
      return r;
    }
    for (int64_t i = 0; i < n; i++) s += powl(fabsl((long double)v[i]), p);
    return (double)powl(s, 1.0L / p);
  default: return NAN;
  }
}

/* op over integer-valued v, exactly in int64 (sums and products wrap). */
static double ref_int(rop op, const double *v, int64_t n) {
  uint64_t acc = op == R_PROD ? 1 : 0;
  int64_t mm = (int64_t)v[0];
  for (int64_t i = 0; i < n; i++) {
    int64_t x = (int64_t)v[i];
    if (op == R_SUM) acc += (uint64_t)x;
    if (op == R_PROD) acc *= (uint64_t)x;
    if (op == R_MAX && x > mm) mm = x;
    if (op == R_MIN && x < mm) mm = x;
  }
  if (op == R_SUM || op == R_PROD) return (double)(int64_t)acc;
  if (op == R_MAX || op == R_MIN) return (double)mm;
  return ref_float(op, v, n, 0); /* all / any */
}

/* Reference of op over the dims in mask of vals (row-major, shape): one value
 * per output in row-major order of the kept dims. */
static double *ref_reduce(rop op, const double *vals, const int64_t *shape, int nd,
                          const bool *mask, bool integral, double p, int64_t *nout) {
  int64_t K = 1, R = 1;
  for (int d = 0; d < nd; d++) {
    if (mask[d]) R *= shape[d];
    else K *= shape[d];
  }
  double *out = malloc(sizeof(double) * (size_t)(K ? K : 1));
  double *buf = malloc(sizeof(double) * (size_t)(R ? R : 1));
  for (int64_t k = 0; k < K; k++) {
    for (int64_t r = 0; r < R; r++) {
      /* coordinates: kept ones from k, reduced ones from r (both row-major) */
      int64_t kk = k, rr = r, flat = 0, mul = 1;
      for (int d = nd - 1; d >= 0; d--) {
        int64_t c;
        if (mask[d]) c = rr % shape[d], rr /= shape[d];
        else c = kk % shape[d], kk /= shape[d];
        flat += c * mul;
        mul *= shape[d];
      }
      buf[r] = vals[flat];
    }
    out[k] = integral ? ref_int(op, buf, R) : ref_float(op, buf, R, p);
  }
  free(buf);
  *nout = K;
  return out;
}

/* Test values for dtype: floats in [-3, 3) rounded to dtype, integers in a
 * small range (u8: [0, 8]; bool: 0/1). */
static double *make_values(int64_t n, ct_dtype dt, unsigned seed) {
  double *v = ct_test_random(n, -3, 3, seed);
  for (int64_t i = 0; i < n; i++) {
    if (dt == CT_BOOL) v[i] = v[i] > -1.5 ? 1 : 0;
    else if (dt == CT_U8) v[i] = floor(fabs(v[i]) * 3);
    else if (!ct_dtype_is_floating(dt)) v[i] = floor(v[i] * 1.5);
  }
  ct_test_round_to(v, n, dt);
  return v;
}

typedef struct dimset {
  int n;
  int dims[4];
} dimset;

typedef struct shape_case {
  int nd;
  int64_t shape[4];
  int ndimsets;
  dimset sets[8];
} shape_case;

static const shape_case shape_cases[] = {
    {3, {2, 3, 4}, 7, {{0, {0}}, {1, {0}}, {1, {1}}, {1, {-1}}, {2, {0, 2}}, {2, {-1, -3}}, {3, {0, 1, 2}}}},
    {4, {3, 1, 4, 5}, 6, {{1, {1}}, {2, {0, 3}}, {1, {-2}}, {3, {1, 2, 3}}, {1, {2}}, {2, {2, 0}}}},
};

/* Every op x dtype x layout x dim set x keepdim against the reference. */
static void sweep(rop op, double p) {
  for (size_t sc = 0; sc < sizeof shape_cases / sizeof shape_cases[0]; sc++) {
    const shape_case *c = &shape_cases[sc];
    int64_t n = 1;
    for (int d = 0; d < c->nd; d++) n *= c->shape[d];
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
      ct_dtype dtype = (ct_dtype)dt;
      bool fl = ct_dtype_is_floating(dtype);
      double *vals = make_values(n, dtype, (unsigned)(dt * 31 + sc));
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        ct_tensor *x = ct_test_make(vals, c->shape, c->nd, dtype, (ct_test_layout)l);
        for (int s = 0; s < c->ndimsets; s++) {
          for (int keep = 0; keep < 2; keep++) {
            ct_reduce_opts r = {.ndims = c->sets[s].n, .keepdim = keep};
            memcpy(r.dims, c->sets[s].dims, sizeof(int) * 4);
            const char *ctx_fmt = "%s p=%g dtype=%s layout=%s shape-case=%zu dims#%d keepdim=%d";
#define CTX rop_names[op], p, ct_dtype_name(dtype), ct_test_layout_names[l], sc, s, keep
            if (float_only(op) && !fl) {
              WITH_CONTEXT(CHECK_ERR(call_reduce(op, x, &r, p), CT_ERR_DTYPE), ctx_fmt, CTX);
              continue;
            }
            ct_tensor *y = call_reduce(op, x, &r, p);
            WITH_CONTEXT(CHECK_OK(y), ctx_fmt, CTX);
            if (!y) continue;
            bool mask[4] = {false};
            int64_t R = 1;
            for (int i = 0; i < r.ndims; i++) mask[(r.dims[i] + c->nd) % c->nd] = true;
            if (r.ndims == 0)
              for (int d = 0; d < c->nd; d++) mask[d] = true;
            int64_t eshape[4];
            int end = 0;
            for (int d = 0; d < c->nd; d++) {
              if (mask[d]) R *= c->shape[d];
              if (!mask[d] || keep) eshape[end++] = mask[d] ? 1 : c->shape[d];
            }
            ct_dtype rdt = result_dtype(op, dtype);
            WITH_CONTEXT(CHECK(ct_dtype_of(y) == rdt), ctx_fmt, CTX);
            WITH_CONTEXT(ct_test_check_shape(__FILE__, __LINE__, "y", y, eshape, end), ctx_fmt, CTX);
            int64_t K;
            double *exp = ref_reduce(op, vals, c->shape, c->nd, mask, !fl, p, &K);
            ct_test_round_to(exp, K, rdt);
            double rtol = ct_test_rtol(rdt), atol = ct_test_atol(rdt) * 3 * (1 + sqrt((double)R));
            WITH_CONTEXT(CHECK_CLOSE(y, exp, rtol, atol), ctx_fmt, CTX);
#undef CTX
            free(exp);
          }
        }
      }
      free(vals);
    }
  }
}

CT_TEST(sum_all_dtypes_layouts_dims) { sweep(R_SUM, 0); }
CT_TEST(mean_all_dtypes_layouts_dims) { sweep(R_MEAN, 0); }
CT_TEST(prod_all_dtypes_layouts_dims) { sweep(R_PROD, 0); }
CT_TEST(max_min_all_dtypes_layouts_dims) {
  sweep(R_MAX, 0);
  sweep(R_MIN, 0);
}
CT_TEST(logsumexp_all_dtypes_layouts_dims) { sweep(R_LSE, 0); }
CT_TEST(all_any_all_dtypes_layouts_dims) {
  sweep(R_ALL, 0);
  sweep(R_ANY, 0);
}
CT_TEST(var_std_corrections) {
  for (int corr = 0; corr <= 2; corr++) {
    sweep(R_VAR, corr);
    sweep(R_STD, corr);
  }
}
CT_TEST(norm_orders) {
  const double orders[] = {2, 1, 0, INFINITY, -INFINITY, 3, 0.5, -1};
  for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) sweep(R_NORM, orders[i]);
}

/* ---- Special values and shapes ------------------------------------------------- */

static ct_tensor *make1(const double *v, int64_t n, ct_dtype dt) {
  return ct_test_make(v, (int64_t[]){n}, 1, dt, CT_LAYOUT_CONTIG);
}

CT_TEST(empty_reductions_give_identities) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *e = ct_zeros(CT_SHAPE(0, 3), &o);
  ct_tensor *s0 = ct_sum(e, CT_DIMS(0));
  CHECK_SHAPE(s0, 3);
  CHECK_CLOSE(s0, ((double[]){0, 0, 0}), 0, 0);
  CHECK_CLOSE(ct_sum(e, NULL), ((double[]){0}), 0, 0);
  CHECK_CLOSE(ct_prod(e, CT_DIMS(0)), ((double[]){1, 1, 1}), 0, 0);
  CHECK_CLOSE(ct_mean(e, NULL), ((double[]){NAN}), 0, 0);
  CHECK_CLOSE(ct_all(e, NULL), ((double[]){1}), 0, 0);
  CHECK_CLOSE(ct_any(e, CT_DIMS(0)), ((double[]){0, 0, 0}), 0, 0);
  CHECK_CLOSE(ct_logsumexp(e, CT_DIMS(0)), ((double[]){-INFINITY, -INFINITY, -INFINITY}), 0, 0);
  CHECK_CLOSE(ct_var(e, NULL, 1), ((double[]){NAN}), 0, 0);
  CHECK_CLOSE(ct_norm(e, 2, NULL), ((double[]){0}), 0, 0);
  CHECK_CLOSE(ct_norm(e, 0, NULL), ((double[]){0}), 0, 0);
  /* Reducing the non-empty dim leaves an empty result, which is fine for max. */
  ct_tensor *m1 = ct_max(e, CT_DIMS(1));
  CHECK_SHAPE(m1, 0);
  CHECK_SHAPE(ct_sum(e, CT_DIMS_KEEP(1)), 0, 1);
  ct_tensor *a1 = ct_argmax(e, 1, false);
  CHECK_SHAPE(a1, 0);
  /* No identity: errors. */
  CHECK_ERR_MSG(ct_max(e, NULL), CT_ERR_SHAPE, "max");
  CHECK_ERR_MSG(ct_min(e, CT_DIMS(0)), CT_ERR_SHAPE, "dim 0");
  CHECK_ERR(ct_norm(e, INFINITY, NULL), CT_ERR_SHAPE);
  CHECK_ERR(ct_argmax(e, CT_DIM_ALL, false), CT_ERR_SHAPE);
  CHECK_ERR(ct_argmin(e, 0, false), CT_ERR_SHAPE);
  CHECK_ERR(ct_max_dim(e, 0, false, NULL), CT_ERR_SHAPE);
  /* integer sum of nothing is an i64 zero */
  ct_tensor_opts oi = ct_test_opts(CT_I32);
  ct_tensor *ei = ct_zeros(CT_SHAPE(4, 0), &oi);
  ct_tensor *si = ct_sum(ei, CT_DIMS(1));
  CHECK(ct_dtype_of(si) == CT_I64);
  CHECK_CLOSE(si, ((double[]){0, 0, 0, 0}), 0, 0);
}

CT_TEST(scalars_and_size_one_dims) {
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *s = ct_scalar(2.5, &o);
  CHECK_CLOSE(ct_sum(s, NULL), ((double[]){2.5}), 0, 0);
  CHECK_CLOSE(ct_sum(s, CT_DIMS(0)), ((double[]){2.5}), 0, 0);
  CHECK_CLOSE(ct_max(s, CT_DIMS_KEEP(-1)), ((double[]){2.5}), 0, 0);
  CHECK(ct_ndim(ct_sum(s, CT_DIMS_KEEP(0))) == 0);
  CHECK_CLOSE(ct_argmax(s, 0, false), ((double[]){0}), 0, 0);
  CHECK_CLOSE(ct_argmax(s, CT_DIM_ALL, true), ((double[]){0}), 0, 0);
  CHECK_ERR(ct_sum(s, CT_DIMS(1)), CT_ERR_ARG);
  /* size-1 dims, all or none reduced */
  double v[5] = {1, 2, 3, 4, 5};
  ct_tensor *x = ct_test_make(v, CT_SHAPE(1, 5, 1), CT_F32, CT_LAYOUT_TRANSPOSED);
  ct_tensor *a = ct_sum(x, CT_DIMS(0, 2));
  CHECK_SHAPE(a, 5);
  CHECK_CLOSE(a, v, 0, 0);
  ct_tensor *b = ct_sum(x, CT_DIMS_KEEP(1));
  CHECK_SHAPE(b, 1, 1, 1);
  CHECK_CLOSE(b, ((double[]){15}), 0, 0);
  CHECK_CLOSE(ct_var(x, CT_DIMS(0), 1), ((double[]){NAN, NAN, NAN, NAN, NAN}), 0, 0);
  CHECK_CLOSE(ct_var(x, CT_DIMS(0), 0), ((double[]){0, 0, 0, 0, 0}), 0, 0);
}

CT_TEST(nan_and_inf) {
  for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
    ct_dtype d = (ct_dtype)dt;
    if (!ct_dtype_is_floating(d)) continue;
    double v[6] = {1, NAN, 3, -INFINITY, 2, INFINITY};
    ct_tensor *x = make1(v, 6, d);
    CHECK_CLOSE(ct_max(x, NULL), ((double[]){NAN}), 0, 0);
    CHECK_CLOSE(ct_min(x, NULL), ((double[]){NAN}), 0, 0);
    CHECK_CLOSE(ct_sum(x, NULL), ((double[]){NAN}), 0, 0);
    CHECK_CLOSE(ct_all(x, NULL), ((double[]){1}), 0, 0); /* nan and inf are nonzero */
    CHECK_CLOSE(ct_argmax(x, 0, false), ((double[]){1}), 0, 0);
    CHECK_CLOSE(ct_argmin(x, 0, false), ((double[]){1}), 0, 0);
    double w[4] = {-INFINITY, 1, INFINITY, 2};
    ct_tensor *y = make1(w, 4, d);
    CHECK_CLOSE(ct_max(y, NULL), ((double[]){INFINITY}), 0, 0);
    CHECK_CLOSE(ct_min(y, NULL), ((double[]){-INFINITY}), 0, 0);
    CHECK_CLOSE(ct_sum(y, NULL), ((double[]){NAN}), 0, 0);
    CHECK_CLOSE(ct_logsumexp(y, NULL), ((double[]){INFINITY}), 0, 0);
    CHECK_CLOSE(ct_norm(y, INFINITY, NULL), ((double[]){INFINITY}), 0, 0);
    CHECK_CLOSE(ct_norm(y, 2, NULL), ((double[]){INFINITY}), 0, 0);
    CHECK_CLOSE(ct_argmin(y, 0, false), ((double[]){0}), 0, 0);
    double ninf[3] = {-INFINITY, -INFINITY, -INFINITY};
    ct_tensor *z = make1(ninf, 3, d);
    CHECK_CLOSE(ct_logsumexp(z, NULL), ((double[]){-INFINITY}), 0, 0);
    CHECK_CLOSE(ct_max(z, NULL), ((double[]){-INFINITY}), 0, 0);
    CHECK_CLOSE(ct_argmax(z, 0, false), ((double[]){0}), 0, 0);
    /* logsumexp of large values doesn't overflow */
    double big[2] = {1000, 1000};
    CHECK_CLOSE(ct_logsumexp(make1(big, 2, d), NULL), ((double[]){1000 + log(2.0)}),
                ct_test_rtol(d), ct_test_atol(d));
  }
  /* nan inside a column reduction (COLUMN layout) and a row one */
  double m[6] = {1, 2, NAN, 4, 5, 6};
  ct_tensor *x = ct_test_make(m, CT_SHAPE(3, 2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_max(x, CT_DIMS(0)), ((double[]){NAN, 6}), 0, 0);
  CHECK_CLOSE(ct_min(x, CT_DIMS(1)), ((double[]){1, NAN, 5}), 0, 0);
  ct_tensor *idx = NULL;
  ct_tensor *vals = ct_max_dim(x, 0, false, &idx);
  CHECK_CLOSE(vals, ((double[]){NAN, 6}), 0, 0);
  CHECK_CLOSE(idx, ((double[]){1, 2}), 0, 0);
}

CT_TEST(norm_is_overflow_safe_in_f64) {
  double v[2] = {1e200, -1e200};
  ct_tensor *x = make1(v, 2, CT_F64);
  CHECK_CLOSE(ct_norm(x, 2, NULL), ((double[]){1e200 * sqrt(2.0)}), 1e-14, 0);
  CHECK_CLOSE(ct_norm(x, 3, NULL), ((double[]){1e200 * cbrt(2.0)}), 1e-14, 0);
  double t[2] = {1e-200, 1e-200};
  CHECK_CLOSE(ct_norm(make1(t, 2, CT_F64), 2, NULL), ((double[]){1e-200 * sqrt(2.0)}), 1e-14, 0);
  /* f32 squares go through f64, so they can't overflow either */
  double f[2] = {3e30, 4e30};
  CHECK_CLOSE(ct_norm(make1(f, 2, CT_F32), 2, NULL), ((double[]){5e30}), 2e-6, 0);
  CHECK_ERR(ct_norm(x, NAN, NULL), CT_ERR_ARG);
}

CT_TEST(var_degrees_of_freedom) {
  double v[2] = {1, 3};
  ct_tensor *x = make1(v, 2, CT_F32);
  CHECK_CLOSE(ct_var(x, NULL, 0), ((double[]){1}), 0, 0);
  CHECK_CLOSE(ct_var(x, NULL, 1), ((double[]){2}), 0, 0);
  CHECK_CLOSE(ct_var(x, NULL, 2), ((double[]){INFINITY}), 0, 0); /* 2 / max(0, 0) */
  CHECK_CLOSE(ct_var(x, NULL, 3), ((double[]){INFINITY}), 0, 0);
  CHECK_CLOSE(ct_std(x, NULL, 1), ((double[]){sqrt(2.0)}), 1e-6, 0);
  double c[2] = {5, 5};
  CHECK_CLOSE(ct_var(make1(c, 2, CT_F32), NULL, 3), ((double[]){NAN}), 0, 0); /* 0 / 0 */
  CHECK_CLOSE(ct_var(make1(c, 1, CT_F32), NULL, 1), ((double[]){NAN}), 0, 0);
  /* a large offset doesn't hurt the two-pass variance */
  double off[4] = {1e4 + 1, 1e4 + 2, 1e4 + 3, 1e4 + 4};
  CHECK_CLOSE(ct_var(make1(off, 4, CT_F32), NULL, 1), ((double[]){5.0 / 3.0}), 1e-6, 0);
}

CT_TEST(integer_sums_are_i64_and_exact) {
  int64_t big = INT64_C(1) << 53;
  double v[3] = {(double)big, 1, 1};
  ct_tensor *x = make1(v, 3, CT_I64);
  ct_tensor *s = ct_sum(x, NULL);
  CHECK(ct_dtype_of(s) == CT_I64);
  int64_t got = 0;
  if (s) ct_copy_to_host(ct_to(s, ct_cpu(), NULL), &got, sizeof got);
  CHECK(got == big + 2); /* not representable in f64 */
  double u[4] = {200, 200, 200, 200};
  ct_tensor *su = ct_sum(make1(u, 4, CT_U8), NULL);
  CHECK_CLOSE(su, ((double[]){800}), 0, 0); /* no u8 wrap-around */
  ct_tensor *sb = ct_sum(make1((double[]){1, 0, 1, 1}, 4, CT_BOOL), NULL);
  CHECK(ct_dtype_of(sb) == CT_I64);
  CHECK_CLOSE(sb, ((double[]){3}), 0, 0);
  CHECK_CLOSE(ct_max(make1((double[]){0, 1, 0}, 3, CT_BOOL), NULL), ((double[]){1}), 0, 0);
  CHECK(ct_dtype_of(ct_max(make1(u, 4, CT_U8), NULL)) == CT_U8);
}

/* ---- Long inputs: accuracy and the parallel paths ------------------------------- */

/* 10M f32 values of mixed magnitude (ones-ish plus every 7th near 1000): the
 * sum is about 1.4e9, where a float running sum has a spacing of 128, so a
 * naive float loop drifts far from the f64 reference; blocked pairwise
 * summation must stay within ~1e-6 (the f32 result rounding is 6e-8). */
CT_TEST(long_f32_sum_is_accurate) {
  const int64_t n = 10000000;
  ct_tensor *h = ct_empty(CT_SHAPE(n), NULL);
  float *p = ct_data_ptr(h);
  double ref = 0;
  float naive = 0;
  for (int64_t i = 0; i < n; i++) {
    p[i] = (float)(1.0 + (double)(i % 1000) * 1e-3 + (i % 7 == 0 ? 1000.0 + (double)(i % 13) : 0.0));
    ref += p[i];
    naive += p[i];
  }
  CHECK(fabs((double)naive - ref) / ref > 1e-4); /* the test can tell a naive loop apart */
  ct_tensor *x = ct_to(h, ct_test_device(), NULL);
  double got = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(x, NULL), &got));
  CHECK_MSG(fabs(got - ref) / ref < 1e-6, "sum %.9g vs f64 %.9g (rel %.2e)", got, ref, fabs(got - ref) / ref);
  CHECK_STATUS_OK(ct_item(ct_mean(x, NULL), &got));
  CHECK_MSG(fabs(got - ref / (double)n) / (ref / (double)n) < 1e-6, "mean %.9g", got);
  /* the same data as 2 long rows, and as columns (dim 0 of (n/4, 4)) */
  double rows[2] = {0, 0}, cols[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < n; i++) rows[i / (n / 2)] += p[i], cols[i % 4] += p[i];
  ct_tensor *r = ct_sum(ct_view(x, CT_SHAPE(2, n / 2)), CT_DIMS(1));
  CHECK_CLOSE(r, rows, 1e-6, 0);
  ct_tensor *c = ct_sum(ct_view(x, CT_SHAPE(n / 4, 4)), CT_DIMS(0));
  CHECK_CLOSE(c, cols, 1e-6, 0);
  /* strided: every other element */
  ct_tensor *sl = ct_slice(x, 0, 0, n, 2);
  double ev = 0;
  for (int64_t i = 0; i < n; i += 2) ev += p[i];
  CHECK_STATUS_OK(ct_item(ct_sum(sl, NULL), &got));
  CHECK_MSG(fabs(got - ev) / ev < 1e-6, "strided sum %.9g vs %.9g", got, ev);
  /* an offset view of a length that is no multiple of 64: every split and
   * block boundary falls off the cache lines, and the splits' tails count */
  ct_tensor *off = ct_slice(x, 0, 3, n - 5, 1);
  double mid = 0;
  for (int64_t i = 3; i < n - 5; i++) mid += p[i];
  CHECK_STATUS_OK(ct_item(ct_sum(off, NULL), &got));
  CHECK_MSG(fabs(got - mid) / mid < 1e-6, "offset sum %.9g vs %.9g", got, mid);
}

/* Big enough to run multi-threaded with split reductions, in every layout
 * class: rows, columns, a middle dim, everything; ops with one and two passes. */
CT_TEST(large_reductions_match_reference) {
  const int64_t A = 40, B = 300, C = 70; /* 840k elements */
  int64_t n = A * B * C;
  double *v = ct_test_random(n, -2, 2, 7);
  ct_test_round_to(v, n, CT_F32);
  v[123457] = 7.5; /* a clear maximum... */
  v[654321] = 7.5; /* ...tied later: argmax must report the first */
  ct_tensor *x = ct_test_make(v, CT_SHAPE(A, B, C), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *xt = ct_test_make(v, CT_SHAPE(A, B, C), CT_F32, CT_LAYOUT_TRANSPOSED);
  const dimset sets[] = {{0, {0}}, {1, {0}}, {1, {1}}, {1, {2}}, {2, {0, 2}}, {2, {0, 1}}};
  const rop ops[] = {R_SUM, R_MAX, R_VAR, R_LSE, R_NORM, R_ANY};
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      bool mask[3] = {false, false, false};
      for (int i = 0; i < sets[s].n; i++) mask[sets[s].dims[i]] = true;
      if (sets[s].n == 0) mask[0] = mask[1] = mask[2] = true;
      int64_t K;
      double *exp = ref_reduce(ops[o], v, (int64_t[]){A, B, C}, 3, mask, false, 2, &K);
      ct_reduce_opts r = {.ndims = sets[s].n};
      memcpy(r.dims, sets[s].dims, sizeof r.dims[0] * 2);
      WITH_CONTEXT(CHECK_CLOSE(call_reduce(ops[o], x, &r, 2), exp, 1e-5, 1e-5), "%s dims#%zu contig",
                   rop_names[ops[o]], s);
      WITH_CONTEXT(CHECK_CLOSE(call_reduce(ops[o], xt, &r, 2), exp, 1e-5, 1e-5),
                   "%s dims#%zu transposed", rop_names[ops[o]], s);
      free(exp);
    }
  }
  CHECK_CLOSE(ct_argmax(x, CT_DIM_ALL, false), ((double[]){123457}), 0, 0);
  CHECK_CLOSE(ct_argmax(xt, CT_DIM_ALL, false), ((double[]){123457}), 0, 0);
  free(v);
  /* argmax along a long dim split across tasks: ties keep the first, nan wins */
  const int64_t L = 1 << 20;
  double *w = ct_test_random(L, 0, 1, 3);
  w[700000] = 5;
  w[900000] = 5;
  ct_tensor *t = ct_test_make(w, (int64_t[]){L}, 1, CT_F32, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_argmax(t, 0, false), ((double[]){700000}), 0, 0);
  w[800000] = NAN;
  w[950000] = NAN;
  ct_tensor *tn = ct_test_make(w, (int64_t[]){L}, 1, CT_F32, CT_LAYOUT_SLICED);
  CHECK_CLOSE(ct_argmax(tn, 0, false), ((double[]){800000}), 0, 0);
  CHECK_CLOSE(ct_argmin(tn, 0, false), ((double[]){800000}), 0, 0);
  CHECK_CLOSE(ct_max(tn, NULL), ((double[]){NAN}), 0, 0);
  /* column-style argmin over dim 0 of (L/8, 8) */
  w[800000] = w[950000] = 0.5;
  w[8 * 1000 + 3] = -1;
  w[8 * 2000 + 3] = -1;
  ct_tensor *tc = ct_view(ct_test_make(w, (int64_t[]){L}, 1, CT_F32, CT_LAYOUT_CONTIG), CT_SHAPE(L / 8, 8));
  ct_tensor *ai = ct_argmin(tc, 0, false);
  double *got = ct_test_values(ai);
  if (got) CHECK(got[3] == 1000);
  free(got);
  free(w);
}

/* ---- Arg reductions ------------------------------------------------------------ */

CT_TEST(argmax_argmin_all_dtypes_layouts) {
  const int64_t shape[3] = {3, 4, 5};
  const int64_t n = 60;
  for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
    ct_dtype dtype = (ct_dtype)dt;
    double *v = make_values(n, dtype, (unsigned)dt + 100);
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *x = ct_test_make(v, shape, 3, dtype, (ct_test_layout)l);
      for (int dim = -1; dim < 3; dim++) {
        for (int is_max = 0; is_max < 2; is_max++) {
          int d = dim < 0 ? 2 : dim;
          bool mask[3] = {d == 0, d == 1, d == 2};
          int64_t K;
          double *ev = ref_reduce(is_max ? R_MAX : R_MIN, v, shape, 3, mask, false, 0, &K);
          /* first index of the extreme along d */
          double *ei = malloc(sizeof(double) * (size_t)K);
          /* row-major strides (20, 5, 1); k runs over the two kept dims */
          int64_t st = d == 0 ? 20 : d == 1 ? 5 : 1;
          for (int64_t k = 0; k < K; k++) {
            int64_t base = d == 0 ? k : d == 1 ? (k / 5) * 20 + k % 5 : k * 5;
            ei[k] = -1;
            for (int64_t i = 0; i < shape[d]; i++)
              if (v[base + i * st] == ev[k]) {
                ei[k] = (double)i;
                break;
              }
          }
          ct_tensor *idx = NULL;
          ct_tensor *vals = is_max ? ct_max_dim(x, dim, l % 2 == 1, &idx) : ct_min_dim(x, dim, l % 2 == 1, &idx);
          ct_tensor *a = is_max ? ct_argmax(x, dim, false) : ct_argmin(x, dim, false);
          const char *f = "%s dtype=%s layout=%s dim=%d";
#define ACTX is_max ? "argmax" : "argmin", ct_dtype_name(dtype), ct_test_layout_names[l], dim
          WITH_CONTEXT(CHECK_CLOSE(vals, ev, 0, 0), f, ACTX);
          WITH_CONTEXT(CHECK_CLOSE(idx, ei, 0, 0), f, ACTX);
          WITH_CONTEXT(CHECK_CLOSE(a, ei, 0, 0), f, ACTX);
          WITH_CONTEXT(CHECK(a && ct_dtype_of(a) == CT_I64 && ct_ndim(a) == 2), f, ACTX);
          WITH_CONTEXT(CHECK(vals && ct_dtype_of(vals) == dtype && ct_ndim(vals) == (l % 2 == 1 ? 3 : 2)), f, ACTX);
#undef ACTX
          free(ev);
          free(ei);
        }
      }
      /* flattened index */
      int64_t best = 0;
      for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
      ct_tensor *af = ct_argmax(x, CT_DIM_ALL, false);
      WITH_CONTEXT(CHECK_CLOSE(af, ((double[]){(double)best}), 0, 0), "flat argmax %s %s", ct_dtype_name(dtype), ct_test_layout_names[l]);
      CHECK(af && ct_ndim(af) == 0);
      ct_tensor *ak = ct_argmax(x, CT_DIM_ALL, true);
      CHECK_SHAPE(ak, 1, 1, 1);
    }
    free(v);
  }
}

CT_TEST(argmax_ties_take_the_first_index) {
  double v[8] = {1, 5, 2, 5, 5, 0, 0, -1};
  ct_tensor *x = make1(v, 8, CT_F32);
  CHECK_CLOSE(ct_argmax(x, 0, false), ((double[]){1}), 0, 0);
  CHECK_CLOSE(ct_argmin(x, 0, false), ((double[]){7}), 0, 0);
  ct_tensor *m = ct_test_make(v, CT_SHAPE(2, 4), CT_I32, CT_LAYOUT_TRANSPOSED);
  CHECK_CLOSE(ct_argmax(m, 1, false), ((double[]){1, 0}), 0, 0);
  CHECK_CLOSE(ct_argmin(m, 1, true), ((double[]){0, 3}), 0, 0);
  CHECK_CLOSE(ct_argmax(m, 0, false), ((double[]){1, 0, 0, 0}), 0, 0);
  CHECK_CLOSE(ct_argmin(m, 0, false), ((double[]){0, 1, 1, 1}), 0, 0);
  /* ties down a column (COLUMN kernel) */
  double t[6] = {3, 1, 2, 3, 1, 2};
  ct_tensor *tt = ct_test_make(t, CT_SHAPE(2, 3), CT_F64, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_argmax(tt, 0, false), ((double[]){0, 0, 0}), 0, 0);
  CHECK_CLOSE(ct_argmin(tt, 0, false), ((double[]){0, 0, 0}), 0, 0);
  CHECK_CLOSE(ct_argmax(tt, CT_DIM_ALL, false), ((double[]){0}), 0, 0);
  CHECK_CLOSE(ct_argmin(tt, CT_DIM_ALL, false), ((double[]){1}), 0, 0);
}

/* ---- Errors and out= ------------------------------------------------------------- */

CT_TEST(reduce_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 3), &o);
  CHECK_ERR_MSG(ct_sum(x, CT_DIMS(3)), CT_ERR_ARG, "sum: dim 3 out of range for a 2-d tensor");
  CHECK_ERR_MSG(ct_mean(x, CT_DIMS(-3)), CT_ERR_ARG, "mean: dim -3");
  CHECK_ERR_MSG(ct_max(x, CT_DIMS(1, -1)), CT_ERR_ARG, "more than once");
  CHECK_ERR(ct_sum(x, (&(ct_reduce_opts){.ndims = 9})), CT_ERR_ARG);
  CHECK_ERR(ct_argmax(x, 2, false), CT_ERR_ARG);
  CHECK_ERR(ct_max_dim(x, -3, false, NULL), CT_ERR_ARG);
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  ct_tensor *xi = ct_zeros(CT_SHAPE(2, 3), &oi);
  CHECK_ERR_MSG(ct_mean(xi, NULL), CT_ERR_DTYPE, "mean");
  CHECK_ERR(ct_var(xi, NULL, 1), CT_ERR_DTYPE);
  CHECK_ERR(ct_std(xi, NULL, 1), CT_ERR_DTYPE);
  CHECK_ERR(ct_norm(xi, 2, NULL), CT_ERR_DTYPE);
  ct_tensor *lse = ct_logsumexp(xi, NULL); /* torch: integers compute in f32 */
  CHECK(lse && ct_dtype_of(lse) == CT_F32);
  CHECK_CLOSE(lse, ((double[]){log(6.0)}), 1e-6, 0);
  /* NULL in, NULL out: the first error stays */
  ct_clear_error();
  ct_tensor *bad = ct_sum(x, CT_DIMS(5));
  CHECK(bad == NULL);
  CHECK(ct_sum(ct_mean(bad, NULL), NULL) == NULL);
  CHECK(ct_argmax(bad, 0, false) == NULL && ct_max_dim(bad, 0, false, NULL) == NULL);
  CHECK(ct_sum_out(bad, x, NULL) == NULL);
  CHECK(ct_last_error() == CT_ERR_ARG && strstr(ct_last_error_message(), "dim 5"));
  ct_clear_error();
}

CT_TEST(out_forms) {
  double v[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *x = ct_test_make(v, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_TRANSPOSED);
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *out = ct_full(CT_SHAPE(3), -1, &o);
  uint32_t ver = ct_version(out);
  CHECK(ct_sum_out(out, x, CT_DIMS(0)) == out);
  CHECK_CLOSE(out, ((double[]){5, 7, 9}), 0, 0);
  CHECK(ct_version(out) != ver);
  /* another dtype that can hold the result: converted */
  ct_tensor_opts od = ct_test_opts(CT_F64);
  ct_tensor *o64 = ct_zeros(CT_SHAPE(2, 1), &od);
  CHECK(ct_mean_out(o64, x, CT_DIMS_KEEP(1)) == o64);
  CHECK_CLOSE(o64, ((double[]){2, 5}), 0, 0);
  /* a non-contiguous out */
  ct_tensor *wide = ct_zeros(CT_SHAPE(2, 6), &o);
  ct_tensor *col = ct_slice(wide, 1, 0, 6, 3); /* (2, 2) view, strides (6, 3) */
  ct_tensor *col0 = ct_select(col, 1, 1);      /* (2,), stride 6 */
  CHECK(ct_max_out(col0, x, CT_DIMS(1)) == col0);
  CHECK_CLOSE(wide, ((double[]){0, 0, 0, 3, 0, 0, 0, 0, 0, 6, 0, 0}), 0, 0);
  CHECK(ct_prod_out(out, x, CT_DIMS(0)) == out);
  CHECK_CLOSE(out, ((double[]){4, 10, 18}), 0, 0);
  CHECK(ct_min_out(out, x, CT_DIMS(0)) == out);
  CHECK_CLOSE(out, ((double[]){1, 2, 3}), 0, 0);
  CHECK(ct_logsumexp_out(out, x, CT_DIMS(0)) == out);
  CHECK_CLOSE(out, ((double[]){4 + log1p(exp(-3.0)), 5 + log1p(exp(-3.0)), 6 + log1p(exp(-3.0))}), 2e-6, 1e-6);
  /* errors: shape, dtype that can't hold it, NULL out */
  CHECK_ERR_MSG(ct_sum_out(out, x, CT_DIMS(1)), CT_ERR_SHAPE, "sum");
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  ct_tensor *oint = ct_zeros(CT_SHAPE(3), &oi);
  CHECK_ERR(ct_sum_out(oint, x, CT_DIMS(0)), CT_ERR_DTYPE);
  ct_clear_error();
  CHECK_ERR(ct_sum_out(NULL, x, NULL), CT_ERR_ARG);
  /* integer sum into an f32 out: allowed (i64 -> f32 casts) */
  ct_tensor *xi = ct_test_make(v, CT_SHAPE(2, 3), CT_I32, CT_LAYOUT_CONTIG);
  CHECK(ct_sum_out(out, xi, CT_DIMS(0)) == out);
  CHECK_CLOSE(out, ((double[]){5, 7, 9}), 0, 0);
}

CT_TEST(device_mismatch) {
  if (!ct_cuda_is_available()) {
    ct_test_skip("no CUDA device: device-mismatch checks need two devices");
    return;
  }
  ct_device other = ct_test_device().type == CT_DEVICE_CPU ? ct_cuda(0) : ct_cpu();
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 3), &(ct_tensor_opts){.device = ct_test_device()});
  ct_tensor *out = ct_zeros(CT_SHAPE(3), &(ct_tensor_opts){.device = other});
  CHECK_ERR(ct_sum_out(out, x, CT_DIMS(0)), CT_ERR_DEVICE);
}
