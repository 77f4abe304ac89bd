/* Elementwise unary ops, predicates, clamp and leaky_relu: values against
 * float64 references on every dtype and layout, dtype rules, nan/inf,
 * integer edge cases, in-place and out forms, errors. */
#include <string.h>

#include "ct_test.h"
#include "ops/op_table.h"

CT_TEST_DEVICE_GENERIC

/* integer inputs: same dtype, f32 result, a copy, or CT_ERR_DTYPE (torch's
 * float-only activation kernels) */
typedef enum { K_SAME, K_FLOAT, K_IDENT, K_FLOAT_ONLY } kind;

typedef struct unary_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *);
  ct_tensor *(*fn_)(ct_tensor *);
  ct_tensor *(*fn_out)(ct_tensor *, const ct_tensor *);
  double (*ref)(double);
  double lo, hi; /* range of random inputs */
  kind k;        /* dtype rule for integer inputs */
} unary_case;

static double r_neg(double x) { return -x; }
static double r_rsqrt(double x) { return 1 / sqrt(x); }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_relu(double x) { return x < 0 ? 0 : x; }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double r_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x; }
static double r_reciprocal(double x) { return 1 / x; }
static double r_square(double x) { return x * x; }

#define CASE(name, ref, lo, hi, k) \
  { #name, ct_##name, ct_##name##_, ct_##name##_out, ref, lo, hi, k }
static const unary_case cases[] = {
    CASE(neg, r_neg, -5, 5, K_SAME),
    CASE(abs, fabs, -5, 5, K_SAME),
    CASE(exp, exp, -8, 8, K_FLOAT),
    CASE(expm1, expm1, -3, 3, K_FLOAT),
    CASE(log, log, 0.05, 50, K_FLOAT),
    CASE(log1p, log1p, -0.9, 10, K_FLOAT),
    CASE(log2, log2, 0.05, 50, K_FLOAT),
    CASE(sqrt, sqrt, 0, 50, K_FLOAT),
    CASE(rsqrt, r_rsqrt, 0.05, 50, K_FLOAT),
    CASE(sin, sin, -4, 4, K_FLOAT),
    CASE(cos, cos, -4, 4, K_FLOAT),
    CASE(tan, tan, -1.3, 1.3, K_FLOAT),
    CASE(tanh, tanh, -5, 5, K_FLOAT),
    CASE(erf, erf, -3, 3, K_FLOAT),
    CASE(sigmoid, r_sigmoid, -30, 30, K_FLOAT),
    CASE(relu, r_relu, -5, 5, K_SAME),
    CASE(gelu, r_gelu, -5, 5, K_FLOAT_ONLY),
    CASE(gelu_tanh, r_gelu_tanh, -5, 5, K_FLOAT_ONLY),
    CASE(silu, r_silu, -10, 10, K_FLOAT_ONLY),
    CASE(softplus, r_softplus, -30, 30, K_FLOAT_ONLY),
    CASE(floor, floor, -5, 5, K_IDENT),
    CASE(ceil, ceil, -5, 5, K_IDENT),
    CASE(round, nearbyint, -5, 5, K_IDENT),
    CASE(trunc, trunc, -5, 5, K_IDENT),
    CASE(sign, r_sign, -5, 5, K_SAME),
    CASE(reciprocal, r_reciprocal, 0.2, 5, K_FLOAT),
    CASE(square, r_square, -5, 5, K_SAME),
    CASE(log10, log10, 0.05, 50, K_FLOAT),
    CASE(exp2, exp2, -12, 12, K_FLOAT),
    CASE(sinh, sinh, -5, 5, K_FLOAT),
    CASE(cosh, cosh, -5, 5, K_FLOAT),
    CASE(atanh, atanh, -0.99, 0.99, K_FLOAT),
    CASE(atan, atan, -5, 5, K_FLOAT),
    CASE(asinh, asinh, -5, 5, K_FLOAT),
    CASE(asin, asin, -1, 1, K_FLOAT),
    CASE(acosh, acosh, 1, 10, K_FLOAT),
    CASE(acos, acos, -1, 1, K_FLOAT),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static bool has_case(const char *name) {
  for (int i = 0; i < NCASES; i++)
    if (!strcmp(cases[i].name, name)) return true;
  return false;
}

/* The op table's rows whose public functions are generated and which have a
 * floating formula each have a row above (bitwise_not, integer only, is
 * tests/test_bitwise.c's; clamp and leaky_relu, with parameters, have their
 * own tests below). */
CT_TEST(every_unary_op_has_a_case) {
  bool generated[CT_UOP_COUNT] = {false};
#define X(E, n) generated[CT_UOP_##E] = true;
  CT_UNARY_GEN_OPS(X)
#undef X
  int n = 0;
#define X(E, name)                                                 \
  if (generated[CT_UOP_##E]) {                                     \
    n++;                                                           \
    CHECK_MSG(has_case(#name), "no row for %s in cases[]", #name); \
  }
  CT_UNARY_FLOAT_OPS(X)
#undef X
  CHECK(n == NCASES);
}

static const ct_dtype float_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
static const ct_dtype int_dtypes[] = {CT_I8, CT_U8, CT_I16, CT_I32, CT_I64};

/* Expected values: ref applied to the stored (rounded) inputs, rounded to the
 * result dtype. */
static double *expected(const unary_case *c, const double *in, int64_t n, ct_dtype out) {
  double *e = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) e[i] = c->ref(in[i]);
  ct_test_round_to(e, n, out);
  return e;
}

/* Values in [lo, hi); for the reciprocal a sign flip on every other one. */
static double *inputs(const unary_case *c, int64_t n, ct_dtype dt, unsigned seed) {
  double *v = ct_test_random(n, c->lo, c->hi, seed);
  if (c->ref == r_reciprocal)
    for (int64_t i = 0; i < n; i += 2) v[i] = -v[i];
  ct_test_round_to(v, n, dt);
  return v;
}

CT_TEST(unary_float_values_every_layout) {
  for (int ci = 0; ci < NCASES; ci++) {
    const unary_case *c = &cases[ci];
    for (size_t di = 0; di < 4; di++) {
      ct_dtype dt = float_dtypes[di];
      double *v = inputs(c, 15, dt, (unsigned)ci);
      double *e = expected(c, v, 15, dt);
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        ct_tensor *x = ct_test_make(v, CT_SHAPE(3, 5), dt, (ct_test_layout)l);
        ct_tensor *y = c->fn(x);
        CHECK_MSG(y && ct_dtype_of(y) == dt, "%s on %s", c->name, ct_dtype_name(dt));
        CHECK_SHAPE(y, 3, 5);
        CHECK_CLOSE(y, e, ct_test_rtol(dt), ct_test_atol(dt));
        /* the input is untouched */
        CHECK_CLOSE(x, v, 0, 0);
        /* in place: returns x itself, bumps its version */
        uint32_t ver = ct_version(x);
        CHECK(c->fn_(x) == x);
        CHECK(ct_version(x) != ver);
        CHECK_CLOSE(x, e, ct_test_rtol(dt), ct_test_atol(dt));
      }
      /* out of the same dtype, and a wider one (written through a temporary) */
      ct_tensor *x = ct_test_make(v, CT_SHAPE(3, 5), dt, CT_LAYOUT_TRANSPOSED);
      ct_tensor *o =
          ct_empty(CT_SHAPE(3, 5), &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
      CHECK(c->fn_out(o, x) == o);
      CHECK_CLOSE(o, e, ct_test_rtol(dt), ct_test_atol(dt));
      ct_tensor *o64 =
          ct_zeros(CT_SHAPE(3, 5), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
      CHECK(c->fn_out(o64, x) == o64);
      CHECK_CLOSE(o64, e, ct_test_rtol(dt), ct_test_atol(dt));
      free(v);
      free(e);
    }
  }
}

/* Wraps an exact integer into dtype's range (two's complement). */
static double wrap_to(double v, ct_dtype dt) {
  int64_t i = (int64_t)v;
  switch (dt) {
    case CT_I8:
      return (int8_t)(uint8_t)(uint64_t)i;
    case CT_U8:
      return (uint8_t)(uint64_t)i;
    case CT_I16:
      return (int16_t)(uint16_t)(uint64_t)i;
    case CT_I32:
      return (int32_t)(uint32_t)(uint64_t)i;
    default:
      return (double)i;
  }
}

CT_TEST(unary_integer_rules) {
  double v[8] = {-7, -1, 0, 1, 2, 5, 11, -3};
  for (size_t di = 0; di < 5; di++) {
    ct_dtype dt = int_dtypes[di];
    double in[8];
    memcpy(in, v, sizeof in);
    if (dt == CT_U8)
      for (int i = 0; i < 8; i++) in[i] = fabs(in[i]);
    for (int ci = 0; ci < NCASES; ci++) {
      const unary_case *c = &cases[ci];
      for (int l = 0; l < CT_LAYOUT_COUNT; l += 2) {
        ct_tensor *x = ct_test_make(in, CT_SHAPE(2, 4), dt, (ct_test_layout)l);
        ct_tensor *y = c->fn(x);
        double e[8];
        if (c->k == K_FLOAT_ONLY) {
          CHECK(y == NULL);
          CHECK_ERR_MSG(c->fn(x), CT_ERR_DTYPE, "floating");
          CHECK_ERR_MSG(c->fn_(x), CT_ERR_DTYPE, "floating");
        } else if (c->k == K_FLOAT) {
          /* math on integers computes in f32 */
          for (int i = 0; i < 8; i++) e[i] = c->ref(in[i]);
          ct_test_round_to(e, 8, CT_F32);
          CHECK_MSG(y && ct_dtype_of(y) == CT_F32, "%s on %s gives f32", c->name,
                    ct_dtype_name(dt));
          CHECK_CLOSE(y, e, ct_test_rtol(CT_F32), ct_test_atol(CT_F32));
          /* and can't be written back into the integer tensor */
          CHECK_ERR_MSG(c->fn_(x), CT_ERR_DTYPE, "can't be cast");
        } else {
          for (int i = 0; i < 8; i++) e[i] = c->k == K_IDENT ? in[i] : wrap_to(c->ref(in[i]), dt);
          if (dt == CT_U8 && c->ref == r_neg)
            for (int i = 0; i < 8; i++) e[i] = wrap_to(-in[i], dt);
          CHECK_MSG(y && ct_dtype_of(y) == dt, "%s on %s keeps the dtype", c->name,
                    ct_dtype_name(dt));
          CHECK_CLOSE(y, e, 0, 0);
          if (c->k == K_IDENT) CHECK(!ct_same_storage(x, y)); /* a copy, not a view */
          CHECK(c->fn_(x) == x);
          CHECK_CLOSE(x, e, 0, 0);
        }
      }
    }
  }
}

CT_TEST(unary_integer_wraparound) {
  ct_tensor *x = ct_to(ct_from_data(((int8_t[]){-128, 127, -1, 100}), CT_SHAPE(4),
                                    &(ct_tensor_opts){.dtype = CT_I8}),
                       ct_test_device(), NULL);
  CHECK_CLOSE(ct_neg(x), ((double[]){-128, -127, 1, -100}), 0, 0);
  CHECK_CLOSE(ct_abs(x), ((double[]){-128, 127, 1, 100}), 0, 0); /* as torch: abs(-128) wraps */
  CHECK_CLOSE(ct_square(x), ((double[]){0, 1, 1, 16}), 0, 0);
  CHECK_CLOSE(ct_sign(x), ((double[]){-1, 1, -1, 1}), 0, 0);
  int64_t big[3] = {INT64_MIN, INT64_MAX, -5};
  ct_tensor *y = ct_to(ct_from_data(big, CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_I64}),
                       ct_test_device(), NULL);
  ct_tensor *ny = ct_to(ct_neg(y), ct_cpu(), NULL);
  const int64_t *p = ct_data_ptr(ny);
  CHECK(p && p[0] == INT64_MIN && p[1] == -INT64_MAX && p[2] == 5);
  ct_tensor *u =
      ct_to(ct_from_data(((uint8_t[]){0, 1, 255}), CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_U8}),
            ct_test_device(), NULL);
  CHECK_CLOSE(ct_neg(u), ((double[]){0, 255, 1}), 0, 0);
  CHECK_CLOSE(ct_square(u), ((double[]){0, 1, 1}), 0, 0);
}

CT_TEST(unary_bool_inputs) {
  ct_tensor *b = ct_test_make((double[]){0, 1, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_CONTIG);
  /* as torch: neg, abs, relu, floor, ceil, round, trunc have no bool form */
  CHECK_ERR_MSG(ct_neg(b), CT_ERR_DTYPE, "bool");
  CHECK_ERR_MSG(ct_abs(b), CT_ERR_DTYPE, "bool");
  CHECK_ERR_MSG(ct_relu(b), CT_ERR_DTYPE, "bool");
  CHECK_ERR_MSG(ct_floor(b), CT_ERR_DTYPE, "bool");
  CHECK_ERR_MSG(ct_round_(b), CT_ERR_DTYPE, "bool");
  ct_tensor *sg = ct_sign(b); /* sign keeps bool */
  CHECK(sg && ct_dtype_of(sg) == CT_BOOL);
  CHECK_CLOSE(sg, ((double[]){0, 1, 1}), 0, 0);
  ct_tensor *sq = ct_square(b); /* pow(bool, 2) is i64 in torch */
  CHECK(sq && ct_dtype_of(sq) == CT_I64);
  CHECK_CLOSE(sq, ((double[]){0, 1, 1}), 0, 0);
  CHECK_ERR(ct_square_(b), CT_ERR_DTYPE); /* i64 can't be written back to bool */
  ct_tensor *e = ct_exp(b);
  CHECK(e && ct_dtype_of(e) == CT_F32);
  CHECK_CLOSE(e, ((double[]){1, exp(1), exp(1)}), 1e-6, 0);
  CHECK_CLOSE(ct_logical_not(b), ((double[]){1, 0, 0}), 0, 0);
  /* clamp's integral bounds promote bool to i64, fractional ones to f32 */
  ct_tensor *c = ct_clamp(b, 0, 0);
  CHECK(c && ct_dtype_of(c) == CT_I64);
  CHECK_CLOSE(c, ((double[]){0, 0, 0}), 0, 0);
  ct_tensor *cf = ct_clamp(b, 0.5, 2);
  CHECK(cf && ct_dtype_of(cf) == CT_F32);
  CHECK_CLOSE(cf, ((double[]){0.5, 1, 1}), 0, 0);
}

CT_TEST(unary_nan_inf_propagate) {
  double v[5] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  for (size_t di = 0; di < 4; di++) {
    ct_dtype dt = float_dtypes[di];
    ct_tensor *x = ct_test_make(v, CT_SHAPE(5), dt, CT_LAYOUT_CONTIG);
    for (int ci = 0; ci < NCASES; ci++) {
      const unary_case *c = &cases[ci];
      double e[5];
      for (int i = 0; i < 5; i++) e[i] = c->ref(v[i]);
      /* stable forms where the plain formula overflows to inf/inf */
      if (c->ref == r_silu) e[2] = NAN; /* -inf * sigmoid(-inf) = -inf * 0 */
      ct_tensor *y = c->fn(x);
      CHECK_MSG(y != NULL, "%s", c->name);
      double *got = ct_test_values(y);
      CHECK_MSG(isnan(got[0]), "%s(nan) on %s is %g", c->name, ct_dtype_name(dt), got[0]);
      ct_test_round_to(e, 5, dt);
      for (int i = 1; i < 5; i++)
        CHECK_MSG((isnan(e[i]) && isnan(got[i])) || got[i] == e[i] ||
                      (isfinite(e[i]) && fabs(got[i] - e[i]) <= ct_test_rtol(dt) * fabs(e[i])),
                  "%s(%g) on %s is %g, expected %g", c->name, v[i], ct_dtype_name(dt), got[i],
                  e[i]);
      free(got);
    }
    CHECK_CLOSE(ct_isnan(x), ((double[]){1, 0, 0, 0, 0}), 0, 0);
    CHECK_CLOSE(ct_isinf(x), ((double[]){0, 1, 1, 0, 0}), 0, 0);
    CHECK_CLOSE(ct_isfinite(x), ((double[]){0, 0, 0, 1, 1}), 0, 0);
    CHECK_CLOSE(ct_logical_not(x), ((double[]){0, 0, 0, 1, 1}), 0, 0);
    CHECK(ct_dtype_of(ct_isnan(x)) == CT_BOOL);
  }
  /* large |x| stays finite where a naive formula overflows */
  ct_tensor *big = ct_test_make((double[]){-80, 100}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_sigmoid(big), ((double[]){exp(-80), 1}), 1e-6, 0);
  CHECK_CLOSE(ct_softplus(big), ((double[]){exp(-80), 100}), 1e-6, 0);
  CHECK_CLOSE(ct_silu(big), ((double[]){-80 * exp(-80), 100}), 1e-6, 0);
}

/* Domain edges and special values (C99 Annex F, as torch and NumPy). */
typedef struct edge_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *);
  double x, want;
} edge_case;
static const edge_case edges[] = {
    {"acos", ct_acos, 1, 0},
    {"acos", ct_acos, -1, M_PI},
    {"acos", ct_acos, 1.5, NAN},
    {"acos", ct_acos, -INFINITY, NAN},
    {"acosh", ct_acosh, 1, 0},
    {"acosh", ct_acosh, 0.5, NAN},
    {"acosh", ct_acosh, INFINITY, INFINITY},
    {"asin", ct_asin, 1, M_PI / 2},
    {"asin", ct_asin, -1, -M_PI / 2},
    {"asin", ct_asin, 2, NAN},
    {"asinh", ct_asinh, -INFINITY, -INFINITY},
    {"asinh", ct_asinh, 0, 0},
    {"atan", ct_atan, INFINITY, M_PI / 2},
    {"atan", ct_atan, -INFINITY, -M_PI / 2},
    {"atanh", ct_atanh, 1, INFINITY},
    {"atanh", ct_atanh, -1, -INFINITY},
    {"atanh", ct_atanh, 2, NAN},
    {"cosh", ct_cosh, 0, 1},
    {"cosh", ct_cosh, -INFINITY, INFINITY},
    {"sinh", ct_sinh, -INFINITY, -INFINITY},
    {"sinh", ct_sinh, 0, 0},
    {"log10", ct_log10, 0, -INFINITY},
    {"log10", ct_log10, -1, NAN},
    {"log10", ct_log10, 1000, 3},
    {"log10", ct_log10, INFINITY, INFINITY},
    {"exp2", ct_exp2, -INFINITY, 0},
    {"exp2", ct_exp2, INFINITY, INFINITY},
    {"exp2", ct_exp2, 0, 1},
    {"exp2", ct_exp2, 10, 1024},
    {"exp2", ct_exp2, -1, 0.5},
    {"exp2", ct_exp2, NAN, NAN},
};

CT_TEST(unary_domain_edges) {
  for (size_t di = 0; di < 4; di++) {
    ct_dtype dt = float_dtypes[di];
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
      const edge_case *c = &edges[i];
      ct_tensor *y = c->fn(ct_test_make(&c->x, CT_SHAPE(1), dt, CT_LAYOUT_CONTIG));
      CHECK_MSG(y && ct_dtype_of(y) == dt, "%s on %s", c->name, ct_dtype_name(dt));
      if (!y) continue;
      double *got = ct_test_values(y), want = c->want;
      ct_test_round_to(&want, 1, dt);
      CHECK_MSG((isnan(want) && isnan(got[0])) || got[0] == want ||
                    (isfinite(want) && fabs(got[0] - want) <= ct_test_rtol(dt) * fabs(want)),
                "%s(%g) on %s is %g, expected %g", c->name, c->x, ct_dtype_name(dt), got[0], want);
      free(got);
    }
  }
}

CT_TEST(unary_predicates_on_integers) {
  for (size_t di = 0; di < 5; di++) {
    ct_tensor *x = ct_test_make((double[]){0, 3, 7}, CT_SHAPE(3), int_dtypes[di], CT_LAYOUT_SLICED);
    CHECK_CLOSE(ct_isnan(x), ((double[]){0, 0, 0}), 0, 0);
    CHECK_CLOSE(ct_isinf(x), ((double[]){0, 0, 0}), 0, 0);
    CHECK_CLOSE(ct_isfinite(x), ((double[]){1, 1, 1}), 0, 0);
    CHECK_CLOSE(ct_logical_not(x), ((double[]){1, 0, 0}), 0, 0);
  }
}

/* signbit reads the bit: -0.0 and -nan are negative, as torch and NumPy */
CT_TEST(signbit_values) {
  double v[8] = {-0.0, 0.0, -1.5, 2, -INFINITY, INFINITY, NAN, -NAN};
  double e[8] = {1, 0, 1, 0, 1, 0, signbit(NAN) ? 1 : 0, signbit(-NAN) ? 1 : 0};
  for (size_t di = 0; di < 4; di++) {
    ct_tensor *y =
        ct_signbit(ct_test_make(v, CT_SHAPE(2, 4), float_dtypes[di], CT_LAYOUT_TRANSPOSED));
    CHECK_MSG(y && ct_dtype_of(y) == CT_BOOL, "signbit on %s", ct_dtype_name(float_dtypes[di]));
    CHECK_CLOSE(y, e, 0, 0);
  }
  for (size_t di = 0; di < 5; di++) {
    ct_dtype dt = int_dtypes[di];
    ct_tensor *y = ct_signbit(
        ct_test_make((double[]){dt == CT_U8 ? 200 : -3, 0, 7}, CT_SHAPE(3), dt, CT_LAYOUT_SLICED));
    CHECK_MSG(y && ct_dtype_of(y) == CT_BOOL, "signbit on %s", ct_dtype_name(dt));
    CHECK_CLOSE(y, ((double[]){dt != CT_U8, 0, 0}), 0, 0);
  }
  CHECK_CLOSE(ct_signbit(ct_test_make((double[]){0, 1}, CT_SHAPE(2), CT_BOOL, CT_LAYOUT_CONTIG)),
              ((double[]){0, 0}), 0, 0);
}

CT_TEST(round_half_to_even) {
  double v[8] = {0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 2.4999, -1.5};
  double e[8] = {0, 2, 2, 0, -2, 4, 2, -2};
  for (size_t di = 0; di < 4; di++)
    CHECK_CLOSE(ct_round(ct_test_make(v, CT_SHAPE(8), float_dtypes[di], CT_LAYOUT_OFFSET)), e, 0,
                0);
}

CT_TEST(clamp_and_leaky_relu) {
  double v[6] = {-3, -0.5, 0, 0.5, 3, NAN};
  for (size_t di = 0; di < 4; di++) {
    ct_dtype dt = float_dtypes[di];
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *x = ct_test_make(v, CT_SHAPE(2, 3), dt, (ct_test_layout)l);
      CHECK_CLOSE(ct_clamp(x, -1, 1), ((double[]){-1, -0.5, 0, 0.5, 1, NAN}), 0, 0);
      CHECK_CLOSE(ct_clamp(x, -INFINITY, 0.25), ((double[]){-3, -0.5, 0, 0.25, 0.25, NAN}), 0, 0);
      CHECK_CLOSE(ct_clamp(x, 2, 1), ((double[]){1, 1, 1, 1, 1, NAN}), 0, 0); /* lo > hi: hi */
      CHECK_CLOSE(ct_leaky_relu(x, 0.125), ((double[]){-0.375, -0.0625, 0, 0.5, 3, NAN}), 0, 0);
      CHECK(ct_clamp_(x, 0, 1) == x);
      CHECK_CLOSE(x, ((double[]){0, 0, 0, 0.5, 1, NAN}), 0, 0);
      CHECK(ct_leaky_relu_(x, 0.5) == x);
    }
  }
  /* integers: integral bounds keep the dtype and must fit it (torch raises
   * for 1e9 in i8), infinite ones are no bound, others give f32 */
  ct_tensor *i =
      ct_test_make((double[]){-100, -5, 0, 5, 100}, CT_SHAPE(5), CT_I8, CT_LAYOUT_TRANSPOSED);
  ct_tensor *c = ct_clamp(i, -10, INFINITY);
  CHECK(c && ct_dtype_of(c) == CT_I8);
  CHECK_CLOSE(c, ((double[]){-10, -5, 0, 5, 100}), 0, 0);
  CHECK_ERR_MSG(ct_clamp(i, -10, 1e9), CT_ERR_ARG, "overflow");
  CHECK_ERR_MSG(ct_clamp(i, -129, 0), CT_ERR_ARG, "overflow");
  ct_tensor *cf = ct_clamp(i, -2.5, 2.5);
  CHECK(cf && ct_dtype_of(cf) == CT_F32);
  CHECK_CLOSE(cf, ((double[]){-2.5, -2.5, 0, 2.5, 2.5}), 0, 0);
  CHECK_ERR_MSG(ct_clamp_(i, -2.5, 2.5), CT_ERR_DTYPE, "can't be cast");
  CHECK_ERR(ct_leaky_relu(i, 0.5), CT_ERR_DTYPE); /* floating only, as torch */
  CHECK_ERR(ct_leaky_relu_(i, 0.5), CT_ERR_DTYPE);
  ct_tensor *o =
      ct_empty(CT_SHAPE(5), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
  CHECK(ct_clamp_out(o, i, 0, 50) == o);
  CHECK_CLOSE(o, ((double[]){0, 0, 0, 5, 50}), 0, 0);
  ct_tensor *i64 = ct_test_make((double[]){-1, 1}, CT_SHAPE(2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_clamp(i64, -INFINITY, INFINITY), ((double[]){-1, 1}), 0, 0);
}

CT_TEST(unary_shapes_empty_scalar_broadcast_views) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *e = ct_zeros(CT_SHAPE(0, 3), &o);
  ct_tensor *r = ct_exp(e);
  CHECK_SHAPE(r, 0, 3);
  CHECK(ct_exp_(e) == e);
  ct_tensor *s = ct_scalar(-2, &o);
  ct_tensor *a = ct_abs(s);
  CHECK(a && ct_ndim(a) == 0);
  CHECK_CLOSE(a, ((double[]){2}), 0, 0);
  ct_tensor *one = ct_full(CT_SHAPE(1, 1, 4), -1, &o);
  CHECK_CLOSE(ct_relu(one), ((double[]){0, 0, 0, 0}), 0, 0);
  /* an expanded input is fine; writing into one is not */
  ct_tensor *x = ct_expand(ct_full(CT_SHAPE(1, 3), 4, &o), CT_SHAPE(2, 3));
  CHECK_CLOSE(ct_sqrt(x), ((double[]){2, 2, 2, 2, 2, 2}), 0, 0);
  CHECK_ERR_MSG(ct_sqrt_(x), CT_ERR_ARG, "share memory");
}

CT_TEST(unary_out_errors_and_null) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_ones(CT_SHAPE(2, 3), &o);
  ct_tensor *bad = ct_empty(CT_SHAPE(3, 2), &o);
  CHECK_ERR_MSG(ct_exp_out(bad, x), CT_ERR_SHAPE, "(3, 2)");
  ct_tensor *iout =
      ct_empty(CT_SHAPE(2, 3), &(ct_tensor_opts){.dtype = CT_I32, .device = ct_test_device()});
  CHECK_ERR_MSG(ct_exp_out(iout, x), CT_ERR_DTYPE,
                "result type f32 can't be cast to the output type i32");
  CHECK_ERR(ct_exp_out(NULL, x), CT_ERR_ARG);
  /* NULL in, NULL out keeps the first error */
  ct_clear_error();
  ct_tensor *fail = ct_view(x, CT_SHAPE(7));
  CHECK(fail == NULL);
  CHECK(ct_exp(fail) == NULL && ct_sin_(fail) == NULL && ct_clamp(fail, 0, 1) == NULL);
  CHECK(ct_exp_out(x, fail) == NULL && ct_exp_out(fail, x) == NULL);
  CHECK(ct_last_error() == CT_ERR_SHAPE);
  ct_clear_error();
  /* writing into a partially overlapping view reads the old values */
  ct_tensor *a = ct_arange(0, 6, 1, &o);
  ct_tensor *dst = ct_slice(a, 0, 1, 6, 1), *src = ct_slice(a, 0, 0, 5, 1);
  CHECK(ct_neg_out(dst, src) == dst);
  CHECK_CLOSE(a, ((double[]){0, 0, -1, -2, -3, -4}), 0, 0);
}

CT_TEST(unary_large_parallel) {
  const int64_t n = 3 * 40009;
  double *v = ct_test_random(n, -4, 4, 7);
  for (size_t di = 0; di < 4; di++) {
    ct_dtype dt = float_dtypes[di];
    double *in = malloc(sizeof(double) * (size_t)n);
    memcpy(in, v, sizeof(double) * (size_t)n);
    ct_test_round_to(in, n, dt);
    double *e = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) e[i] = tanh(in[i]);
    ct_test_round_to(e, n, dt);
    for (int l = 0; l < CT_LAYOUT_COUNT; l += 1) {
      ct_tensor *x = ct_test_make(in, CT_SHAPE(3, 40009), dt, (ct_test_layout)l);
      CHECK_CLOSE(ct_tanh(x), e, ct_test_rtol(dt), ct_test_atol(dt));
    }
    free(in);
    free(e);
  }
  free(v);
}
