/* Accuracy of the f32 activations built on core/exp_math.h's vectorizable
 * exponential, tanh and erf (exp, sigmoid, silu, softplus, tanh, gelu_tanh,
 * erf, gelu and the derivatives that use them), through the backends' kernels on ~4M inputs: every
 * 1024th f32 in the exponential's range plus the special values, against the f64 functions. The
 * bounds are what the header states (2 ulp for exp) and, for the composed activations, the
 * exponential's error carried through their formulas. The shared-formula test
 * (tests/cuda_emu/lib/test_formulas.c) checks that the CPU and the GPU compute these same bits;
 * this one bounds how far those bits are from the true values. */
#include <float.h>

#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* |got - want| in units of the last place of want rounded to f32 (subnormal
 * and zero results: the smallest subnormal's ulp). */
static double ulps(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : INFINITY;
  if (isinf(want)) return (double)got == want ? 0 : INFINITY;
  float w = (float)want;
  if (isinf(w)) return isinf(got) && (got > 0) == (w > 0) ? 0 : INFINITY; /* f32 overflow */
  double ulp = (double)nextafterf(fabsf(w), INFINITY) - (double)fabsf(w);
  return fabs((double)got - want) / ulp;
}

/* The inputs: the special values, then every 1024th f32 bit pattern in [lo, hi]. */
static float *sweep(float lo, float hi, int64_t *n) {
  static const float special[] = {0.0f,   -0.0f,   INFINITY, -INFINITY, NAN,     FLT_MIN, -FLT_MIN,
                                  1e-30f, -1e-30f, 88.72f,   88.73f,    -87.33f, -103.9f, -104.5f,
                                  20.0f,  20.001f, -20.0f,   1.0f,      -1.0f};
  int64_t cap = (int64_t)(sizeof special / sizeof special[0]) + (1 << 22) + 16, k = 0;
  float *v = malloc((size_t)cap * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) v[k++] = special[i];
  for (int sign = 0; sign < 2; sign++) {
    float end = sign ? -lo : hi;
    if (end <= 0) continue;
    for (uint32_t b = 0; k < cap; b += 1024) {
      float x;
      memcpy(&x, &b, sizeof x);
      if (!(x <= end)) break;
      v[k++] = sign ? -x : x;
    }
  }
  *n = k;
  return v;
}

typedef struct act {
  const char *name;
  ct_tensor *(*op)(const ct_tensor *);
  double (*ref)(double);
  double max_ulp;
  float lo; /* inputs below are skipped: e^x's subnormal precision times x (silu) */
} act;

static double ref_exp(double x) { return exp(x); }
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_silu(double x) { return x / (1 + exp(-x)); }
static double ref_softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_erf(double x) { return erf(x); }
static double ref_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

/* Runs op on x (f32 on the device under test); the results on the host. */
static float *run(ct_tensor *(*op)(const ct_tensor *), const float *x, int64_t n) {
  ct_tensor *t = ct_to(ct_from_data(x, CT_SHAPE(n), NULL), ct_test_device(), NULL);
  ct_tensor *y = t ? op(t) : NULL;
  float *out = malloc((size_t)n * sizeof *out);
  if (!y || !out || ct_copy_to_host(y, out, (size_t)n * sizeof *out) != CT_OK) {
    free(out);
    return NULL;
  }
  return out;
}

CT_TEST(f32_activations_within_their_stated_ulp_bounds) {
  /* silu's product and sigmoid's division each round once more; softplus's
   * log1p halves a relative error in e^x where e^x is small */
  const act acts[] = {{"exp", ct_exp, ref_exp, 2.0, -INFINITY},
                      {"sigmoid", ct_sigmoid, ref_sigmoid, 3.0, -INFINITY},
                      {"silu", ct_silu, ref_silu, 4.0, -87.0f},
                      {"softplus", ct_softplus, ref_softplus, 3.0, -INFINITY},
                      {"tanh", ct_tanh, ref_tanh, 3.0, -INFINITY},
                      /* the formula's 1 + tanh cancels for negative x, multiplying tanh's
                       * error by 1 / (1 + tanh): bounded where that is at most ~3 */
                      {"gelu_tanh", ct_gelu_tanh, ref_gelu_tanh, 5.0, -0.5f},
                      {"erf", ct_erf, ref_erf, 4.0, -INFINITY},
                      {"gelu", ct_gelu, ref_gelu, 5.0, -0.5f}};
  int64_t n = 0;
  float *x = sweep(-104.0f, 89.0f, &n);
  CHECK(x != NULL);
  for (size_t a = 0; a < sizeof acts / sizeof acts[0] && x; a++) {
    ct_scope_begin();
    float *y = run(acts[a].op, x, n);
    CHECK_OK(y);
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; y && i < n; i++) {
      if (x[i] < acts[a].lo) continue;
      double e = ulps(y[i], acts[a].ref((double)x[i]));
      if (!(e <= worst)) worst = e, at = i;
    }
    if (y)
      CHECK_MSG(worst <= acts[a].max_ulp,
                "%s: %.2f ulp at x = %.9g (got %.9g, want %.17g); bound %.1f", acts[a].name, worst,
                (double)x[at], (double)y[at], acts[a].ref((double)x[at]), acts[a].max_ulp);
    printf("  %s f32: max %.2f ulp over %lld inputs\n", acts[a].name, worst, (long long)n);
    free(y);
    ct_scope_end();
  }
  free(x);
}

/* The derivatives that use the exponential, by autograd, against f64
 * formulas: error relative to |want| + 1/4 (the formulas add terms of order
 * 1, which cancel where a derivative crosses zero). */
static double dref_sigmoid(double x) {
  double s = 1 / (1 + exp(-x));
  return s * (1 - s);
}
static double dref_silu(double x) {
  double s = 1 / (1 + exp(-x));
  return s * (1 + x * (1 - s));
}
static double dref_gelu(double x) {
  return 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
}
static double dref_erf(double x) { return 2 / sqrt(M_PI) * exp(-x * x); }
static double dref_gelu_tanh(double x) {
  const double k = 0.79788456080286535588, c = 0.044715;
  double th = tanh(k * (x + c * x * x * x));
  return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * k * (1 + 3 * c * x * x);
}

CT_TEST(f32_derivatives_using_the_exponential_are_accurate) {
  const struct {
    const char *name;
    ct_tensor *(*op)(const ct_tensor *);
    double (*ref)(double);
    double lo; /* gelu_tanh: below, 1 + tanh cancels (the f32 formula, whatever tanh) */
  } ds[] = {{"sigmoid", ct_sigmoid, dref_sigmoid, -10},
            {"silu", ct_silu, dref_silu, -10},
            {"gelu", ct_gelu, dref_gelu, -10},
            {"erf", ct_erf, dref_erf, -10},
            {"gelu_tanh", ct_gelu_tanh, dref_gelu_tanh, -2}};
  enum { M = 20001 };
  static float xs[M];
  for (int i = 0; i < M; i++) xs[i] = (float)(-10.0 + 20.0 * i / (M - 1));
  for (size_t d = 0; d < sizeof ds / sizeof ds[0]; d++) {
    ct_scope_begin();
    ct_tensor *x = ct_to(ct_from_data(xs, CT_SHAPE(M), NULL), ct_test_device(), NULL);
    ct_requires_grad_(x, true);
    ct_tensor *y = ds[d].op(x);
    CHECK_STATUS_OK(ct_backward(ct_sum(y, NULL), NULL, NULL));
    float g[M];
    CHECK_STATUS_OK(ct_copy_to_host(ct_grad(x), g, sizeof g));
    double worst = 0;
    int at = 0;
    for (int i = 0; i < M; i++) {
      if (xs[i] < ds[d].lo) continue;
      double want = ds[d].ref((double)xs[i]);
      /* relative, and absolute where the formula's terms (~1) cancel */
      double e = fabs((double)g[i] - want) / (fabs(want) + 0.25);
      if (!(e <= worst)) worst = e, at = i;
    }
    CHECK_MSG(worst <= 8 * FLT_EPSILON,
              "d %s: relative error %.3g at x = %.9g (got %.9g, want %.9g)", ds[d].name, worst,
              (double)xs[at], (double)g[at], ds[d].ref((double)xs[at]));
    ct_scope_end();
  }
}
