/* Elementwise binary ops, scalar forms, comparisons, logic, where, allclose,
 * equal and add_scaled: values against float64 references on every dtype and
 * layout, broadcasting, promotion, integer edge cases, in-place/out, errors;
 * gradients of every differentiable row by finite differences. The case list
 * below must have a row per arithmetic op of the op table (checked). */
#include <stdint.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_test.h"
#include "ops/op_table.h"

CT_TEST_DEVICE_GENERIC

/* ---- References ----------------------------------------------------------- */
static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_floordiv(double a, double b) { /* Python's a // b */
  if (b == 0) return a / b;
  double m = fmod(a, b), d = (a - m) / b;
  if (m != 0 && (b < 0) != (m < 0)) d -= 1;
  if (d == 0) return copysign(0, a / b);
  double f = floor(d);
  return d - f > 0.5 ? f + 1 : f;
}
static double r_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double r_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static double r_rem(double a, double b) { /* Python's a % b */
  double m = fmod(a, b);
  return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}
static double r_hypot(double a, double b) { /* in long double: no overflow for doubles */
  if (isinf(a) || isinf(b)) return INFINITY;
  long double x = a, y = b;
  return (double)sqrtl(x * x + y * y);
}
static double r_logaddexp(double a, double b) { /* in long double */
  if (isnan(a) || isnan(b)) return NAN;
  if (isinf(a) || isinf(b)) return a > b ? a : b; /* -inf with -inf is -inf */
  long double m = a > b ? a : b, d = fabsl((long double)a - (long double)b);
  return (double)(m + log1pl(expl(-d)));
}
static double r_copysign(double a, double b) { return signbit(b) ? -fabs(a) : fabs(a); }

typedef struct bin_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *);
  ct_tensor *(*fn_)(ct_tensor *, const ct_tensor *);
  ct_tensor *(*fn_out)(ct_tensor *, const ct_tensor *, const ct_tensor *);
  ct_tensor *(*fn_scalar)(const ct_tensor *, double);
  ct_tensor *(*fn_scalar_)(ct_tensor *, double);
  double (*ref)(double, double);
  double alo, ahi, blo, bhi; /* input ranges; b_signed: b's sign alternates */
  bool b_signed;
  bool int_exact; /* integer inputs keep their dtype (else f32) */
} bin_case;

#define BCASE(name, ref, alo, ahi, blo, bhi, bs, ie)                                               \
  {                                                                                                \
#name, ct_##name, ct_##name##_, ct_##name##_out, ct_##name##_scalar, ct_##name##_scalar_, ref, \
        alo, ahi, blo, bhi, bs, ie                                                                 \
  }
static const bin_case cases[] = {
    BCASE(add, r_add, -10, 10, -10, 10, false, true),
    BCASE(sub, r_sub, -10, 10, -10, 10, false, true),
    BCASE(mul, r_mul, -10, 10, -10, 10, false, true),
    BCASE(div, r_div, -10, 10, 0.5, 8, true, false),
    BCASE(floor_divide, r_floordiv, -20, 20, 0.5, 6, true, true),
    BCASE(pow, pow, 0.2, 3, -2, 3, false, true),
    BCASE(maximum, r_max, -10, 10, -10, 10, false, true),
    BCASE(minimum, r_min, -10, 10, -10, 10, false, true),
    BCASE(fmod, fmod, -20, 20, 0.5, 6, true, true),
    BCASE(remainder, r_rem, -20, 20, 0.5, 6, true, true),
    BCASE(atan2, atan2, -5, 5, -5, 5, false, false),
    BCASE(hypot, r_hypot, -10, 10, -10, 10, true, false),
    BCASE(logaddexp, r_logaddexp, -10, 10, -10, 10, true, false),
    BCASE(copysign, r_copysign, -10, 10, -10, 10, true, false),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The op table's arithmetic rows, with their derivative ("NONE": none). */
static const struct {
  const char *name, *grad;
} table_rows[] = {
#define X(E, n, r, grad, ...) {#n, #grad},
    CT_BINARY_OPS(X)
#undef X
};

static const bin_case *case_named(const char *name) {
  for (int i = 0; i < NCASES; i++)
    if (!strcmp(cases[i].name, name)) return &cases[i];
  return NULL;
}

CT_TEST(every_arithmetic_op_has_a_case) {
  int arith = 0;
#define X(E, n) \
  arith++;      \
  CHECK_MSG(case_named(#n) != NULL, "no test row for %s", #n);
  CT_BINARY_ARITH_OPS(X)
#undef X
  CHECK(arith == NCASES);
}

static const ct_dtype float_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
static const ct_dtype int_dtypes[] = {CT_I8, CT_U8, CT_I16, CT_I32, CT_I64};

static double *values(int64_t n, double lo, double hi, bool alternate, ct_dtype dt, unsigned seed) {
  double *v = ct_test_random(n, lo, hi, seed);
  if (alternate)
    for (int64_t i = 0; i < n; i += 2) v[i] = -v[i];
  ct_test_round_to(v, n, dt);
  return v;
}

/* f(a, b) with NumPy broadcasting of row-major a (sa) and b (sb). */
static double *ref_broadcast(double (*f)(double, double), const double *a, const int64_t *sa,
                             int na, const double *b, const int64_t *sb, int nb, int64_t *n_out) {
  int n = na > nb ? na : nb;
  int64_t so[8], total = 1;
  for (int d = 0; d < n; d++) {
    int64_t x = d - (n - na) >= 0 ? sa[d - (n - na)] : 1,
            y = d - (n - nb) >= 0 ? sb[d - (n - nb)] : 1;
    so[d] = x == 1 ? y : x;
    total *= so[d];
  }
  double *r = malloc(sizeof(double) * (size_t)(total ? total : 1));
  for (int64_t i = 0; i < total; i++) {
    int64_t rest = i, ia = 0, ib = 0, ma = 1, mb = 1;
    for (int d = n - 1; d >= 0; d--) {
      int64_t idx = rest % so[d];
      rest /= so[d];
      int da = d - (n - na), db = d - (n - nb);
      if (da >= 0) ia += (sa[da] == 1 ? 0 : idx) * ma, ma *= sa[da];
      if (db >= 0) ib += (sb[db] == 1 ? 0 : idx) * mb, mb *= sb[db];
    }
    r[i] = f(a[ia], b[ib]);
  }
  *n_out = total;
  return r;
}

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
    case CT_BOOL:
      return i != 0;
    default:
      return (double)i;
  }
}

static ct_tensor *dev_empty(const int64_t *shape, int ndim, ct_dtype dt) {
  return ct_empty(shape, ndim, &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
}

/* ---- Arithmetic values -------------------------------------------------------- */

CT_TEST(binary_float_values_every_layout) {
  const int64_t sh[2] = {3, 5};
  for (int ci = 0; ci < NCASES; ci++) {
    const bin_case *c = &cases[ci];
    for (size_t di = 0; di < 4; di++) {
      ct_dtype dt = float_dtypes[di];
      double rt = ct_test_rtol(dt), at = ct_test_atol(dt);
      double *a = values(15, c->alo, c->ahi, false, dt, 2 * (unsigned)ci);
      double *b = values(15, c->blo, c->bhi, c->b_signed, dt, 2 * (unsigned)ci + 1);
      int64_t n;
      double *e = ref_broadcast(c->ref, a, sh, 2, b, sh, 2, &n);
      ct_test_round_to(e, n, dt);
      for (int la = 0; la < CT_LAYOUT_COUNT; la++) {
        for (int lb = 0; lb < CT_LAYOUT_COUNT; lb += 3) {
          ct_tensor *ta = ct_test_make(a, sh, 2, dt, (ct_test_layout)la);
          ct_tensor *tb = ct_test_make(b, sh, 2, dt, (ct_test_layout)((la + lb) % CT_LAYOUT_COUNT));
          ct_tensor *r = c->fn(ta, tb);
          CHECK_MSG(r && ct_dtype_of(r) == dt, "%s on %s", c->name, ct_dtype_name(dt));
          CHECK_CLOSE(r, e, rt, at);
          uint32_t ver = ct_version(ta);
          CHECK(c->fn_(ta, tb) == ta);
          CHECK(ct_version(ta) != ver);
          CHECK_CLOSE(ta, e, rt, at);
          CHECK_CLOSE(tb, b, 0, 0);
        }
      }
      /* out: same dtype, and f64 */
      ct_tensor *ta = ct_test_make(a, sh, 2, dt, CT_LAYOUT_SLICED);
      ct_tensor *tb = ct_test_make(b, sh, 2, dt, CT_LAYOUT_TRANSPOSED);
      ct_tensor *o = dev_empty(sh, 2, dt), *o64 = dev_empty(sh, 2, CT_F64);
      CHECK(c->fn_out(o, ta, tb) == o);
      CHECK_CLOSE(o, e, rt, at);
      CHECK(c->fn_out(o64, ta, tb) == o64);
      CHECK_CLOSE(o64, e, rt, at);
      /* scalar second operand (not rounded to the dtype, as torch) */
      double s = b[3];
      double es[15];
      for (int i = 0; i < 15; i++) es[i] = c->ref(a[i], s);
      ct_test_round_to(es, 15, dt);
      ct_tensor *rs = c->fn_scalar(ta, s);
      CHECK_MSG(rs && ct_dtype_of(rs) == dt, "%s_scalar on %s", c->name, ct_dtype_name(dt));
      CHECK_CLOSE(rs, es, rt, at);
      CHECK(c->fn_scalar_(ta, s) == ta);
      CHECK_CLOSE(ta, es, rt, at);
      free(a);
      free(b);
      free(e);
    }
  }
}

CT_TEST(binary_integer_values) {
  const int64_t sh[2] = {4, 6};
  for (int ci = 0; ci < NCASES; ci++) {
    const bin_case *c = &cases[ci];
    for (size_t di = 0; di < 5; di++) {
      ct_dtype dt = int_dtypes[di];
      bool is_pow = c->ref == pow;
      double alo = dt == CT_U8 ? 0 : is_pow ? -3 : -20, ahi = is_pow ? 4 : 20;
      double *a = ct_test_random(24, alo, ahi, (unsigned)ci),
             *b = ct_test_random(24, 1, 7, 50 + (unsigned)ci);
      for (int i = 0; i < 24; i++) {
        a[i] = floor(a[i]);
        b[i] = floor(b[i]);
        if (c->b_signed && dt != CT_U8 && i % 2) b[i] = -b[i];
        if (is_pow) b[i] = (double)(i % 5);                    /* 0..4 */
        if (!c->b_signed && !is_pow && dt != CT_U8) b[i] -= 4; /* includes 0 and negatives */
      }
      int64_t n;
      double *e = ref_broadcast(c->ref, a, sh, 2, b, sh, 2, &n);
      ct_dtype rd = c->int_exact ? dt : CT_F32;
      for (int64_t i = 0; i < n; i++) e[i] = c->int_exact ? wrap_to(e[i], dt) : e[i];
      ct_test_round_to(e, n, rd);
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        ct_tensor *ta = ct_test_make(a, sh, 2, dt, (ct_test_layout)l);
        ct_tensor *tb = ct_test_make(b, sh, 2, dt, (ct_test_layout)((l + 1) % CT_LAYOUT_COUNT));
        ct_tensor *r = c->fn(ta, tb);
        CHECK_MSG(r && ct_dtype_of(r) == rd, "%s on %s gives %s", c->name, ct_dtype_name(dt),
                  ct_dtype_name(rd));
        CHECK_CLOSE(r, e, c->int_exact ? 0 : 2e-6, 0);
        if (c->int_exact) {
          CHECK(c->fn_(ta, tb) == ta);
          CHECK_CLOSE(ta, e, 0, 0);
        } else {
          CHECK_ERR_MSG(c->fn_(ta, tb), CT_ERR_DTYPE, "can't be cast");
        }
      }
      free(a);
      free(b);
      free(e);
    }
  }
}

CT_TEST(binary_broadcasting) {
  const int64_t sa[3] = {3, 1, 4}, sb[2] = {5, 1};
  double *a = ct_test_random(12, -5, 5, 1), *b = ct_test_random(5, -5, 5, 2);
  ct_test_round_to(a, 12, CT_I32);
  ct_test_round_to(b, 5, CT_I32);
  int64_t n;
  double *e = ref_broadcast(r_mul, a, sa, 3, b, sb, 2, &n);
  CHECK(n == 60);
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    for (int d = 0; d < 2; d++) {
      ct_dtype dt = d ? CT_I32 : CT_F32;
      ct_tensor *ta = ct_test_make(a, sa, 3, dt, (ct_test_layout)l);
      ct_tensor *tb = ct_test_make(b, sb, 2, dt, (ct_test_layout)(3 - l));
      ct_tensor *r = ct_mul(ta, tb);
      CHECK_SHAPE(r, 3, 5, 4);
      CHECK_CLOSE(r, e, 0, 0);
      ct_tensor *r2 = ct_mul(tb, ta);
      CHECK_SHAPE(r2, 3, 5, 4);
      CHECK_CLOSE(r2, e, 0, 0);
    }
  }
  ct_tensor_opts o = ct_test_opts(CT_F32);
  /* a 0-d tensor with a matrix; a size-1 tensor */
  ct_tensor *m = ct_view(ct_arange(0, 6, 1, &o), CT_SHAPE(2, 3));
  CHECK_CLOSE(ct_sub(m, ct_scalar(1, &o)), ((double[]){-1, 0, 1, 2, 3, 4}), 0, 0);
  CHECK_CLOSE(ct_sub(ct_scalar(1, &o), m), ((double[]){1, 0, -1, -2, -3, -4}), 0, 0);
  CHECK_CLOSE(ct_add(m, ct_full(CT_SHAPE(1), 10, &o)), ((double[]){10, 11, 12, 13, 14, 15}), 0, 0);
  ct_tensor *ss = ct_add(ct_scalar(2, &o), ct_scalar(3, &o));
  CHECK(ss && ct_ndim(ss) == 0);
  CHECK_CLOSE(ss, ((double[]){5}), 0, 0);
  /* expanded inputs, and in place with a broadcast second operand */
  ct_tensor *row = ct_expand(ct_view(ct_arange(0, 3, 1, &o), CT_SHAPE(1, 3)), CT_SHAPE(2, 3));
  CHECK_CLOSE(ct_add(row, m), ((double[]){0, 2, 4, 3, 5, 7}), 0, 0);
  CHECK(ct_add_(m, ct_arange(0, 3, 1, &o)) == m);
  CHECK_CLOSE(m, ((double[]){0, 2, 4, 3, 5, 7}), 0, 0);
  /* empty and size-1 shapes */
  ct_tensor *z = ct_add(ct_zeros(CT_SHAPE(0, 3), &o), ct_ones(CT_SHAPE(3), &o));
  CHECK_SHAPE(z, 0, 3);
  CHECK_SHAPE(ct_add(ct_zeros(CT_SHAPE(0, 1), &o), ct_ones(CT_SHAPE(1, 4), &o)), 0, 4);
  CHECK_SHAPE(ct_mul(ct_ones(CT_SHAPE(1, 1), &o), ct_ones(CT_SHAPE(1), &o)), 1, 1);
  CHECK_ERR_MSG(ct_add(ct_zeros(CT_SHAPE(3, 4), &o), ct_zeros(CT_SHAPE(5), &o)), CT_ERR_SHAPE,
                "add: shapes (3, 4) and (5,) cannot be broadcast");
  CHECK_ERR(ct_add(ct_zeros(CT_SHAPE(0), &o), ct_zeros(CT_SHAPE(2), &o)), CT_ERR_SHAPE);
  free(a);
  free(b);
  free(e);
}

CT_TEST(binary_promotion) {
  static const struct {
    ct_dtype a, b, add, div, eq;
  } t[] = {
      {CT_I32, CT_F16, CT_F16, CT_F16, CT_BOOL},    {CT_U8, CT_I8, CT_I16, CT_F32, CT_BOOL},
      {CT_BOOL, CT_BOOL, CT_BOOL, CT_F32, CT_BOOL}, {CT_I64, CT_F32, CT_F32, CT_F32, CT_BOOL},
      {CT_F16, CT_BF16, CT_F32, CT_F32, CT_BOOL},   {CT_I32, CT_I32, CT_I32, CT_F32, CT_BOOL},
      {CT_BOOL, CT_U8, CT_U8, CT_F32, CT_BOOL},     {CT_F64, CT_I8, CT_F64, CT_F64, CT_BOOL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ct_tensor *a = ct_test_make((double[]){1, 0}, CT_SHAPE(2), t[i].a, CT_LAYOUT_CONTIG);
    ct_tensor *b = ct_test_make((double[]){1, 1}, CT_SHAPE(2), t[i].b, CT_LAYOUT_CONTIG);
    CHECK(ct_dtype_of(ct_add(a, b)) == t[i].add);
    CHECK(ct_dtype_of(ct_div(a, b)) == t[i].div);
    CHECK(ct_dtype_of(ct_atan2(a, b)) == t[i].div);
    CHECK(ct_dtype_of(ct_eq(a, b)) == t[i].eq);
  }
  /* bool arithmetic: add = or, mul = and; sub is refused as in torch */
  ct_tensor *p = ct_test_make((double[]){0, 0, 1, 1}, CT_SHAPE(4), CT_BOOL, CT_LAYOUT_CONTIG);
  ct_tensor *q = ct_test_make((double[]){0, 1, 0, 1}, CT_SHAPE(4), CT_BOOL, CT_LAYOUT_SLICED);
  CHECK_CLOSE(ct_add(p, q), ((double[]){0, 1, 1, 1}), 0, 0);
  CHECK_CLOSE(ct_mul(p, q), ((double[]){0, 0, 0, 1}), 0, 0);
  CHECK_CLOSE(ct_maximum(p, q), ((double[]){0, 1, 1, 1}), 0, 0);
  CHECK_ERR_MSG(ct_sub(p, q), CT_ERR_DTYPE, "bool");
  CHECK_ERR(ct_floor_divide(p, q), CT_ERR_DTYPE);
  /* a value computed in the promoted dtype: u8 200 + i8 100 in i16 */
  ct_tensor *u = ct_test_make((double[]){200}, CT_SHAPE(1), CT_U8, CT_LAYOUT_CONTIG);
  ct_tensor *s = ct_test_make((double[]){100}, CT_SHAPE(1), CT_I8, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_add(u, s), ((double[]){300}), 0, 0);
}

CT_TEST(binary_scalar_promotion) {
  ct_tensor *i = ct_test_make((double[]){1, 2, 3}, CT_SHAPE(3), CT_I32, CT_LAYOUT_TRANSPOSED);
  ct_tensor *r = ct_add_scalar(i, 2);
  CHECK(r && ct_dtype_of(r) == CT_I32);
  CHECK_CLOSE(r, ((double[]){3, 4, 5}), 0, 0);
  r = ct_mul_scalar(i, 1.5);
  CHECK(r && ct_dtype_of(r) == CT_F32);
  CHECK_CLOSE(r, ((double[]){1.5, 3, 4.5}), 0, 0);
  CHECK(ct_dtype_of(ct_add_scalar(i, INFINITY)) == CT_F32);
  CHECK_ERR_MSG(ct_mul_scalar_(i, 0.5), CT_ERR_DTYPE,
                "result type f32 can't be cast to the output type i32");
  CHECK(ct_mul_scalar_(i, 2) == i);
  CHECK_CLOSE(i, ((double[]){2, 4, 6}), 0, 0);
  ct_tensor *b = ct_test_make((double[]){1, 0}, CT_SHAPE(2), CT_BOOL, CT_LAYOUT_CONTIG);
  r = ct_add_scalar(b, 1); /* torch: tensor([True]) + 1 is int64 */
  CHECK(r && ct_dtype_of(r) == CT_I64);
  CHECK_CLOSE(r, ((double[]){2, 1}), 0, 0);
  CHECK(ct_dtype_of(ct_mul_scalar(b, 0.5)) == CT_F32);
  ct_tensor *h = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_F16, CT_LAYOUT_CONTIG);
  CHECK(ct_dtype_of(ct_mul_scalar(h, 0.1)) == CT_F16);
  CHECK(ct_dtype_of(ct_div_scalar(i, 2)) == CT_F32); /* true division */
  CHECK_CLOSE(ct_div_scalar(i, 4), ((double[]){0.5, 1, 1.5}), 0, 0);
  /* the scalar wraps into a small integer dtype like a C cast of int64 */
  ct_tensor *i8 = ct_test_make((double[]){1, -1}, CT_SHAPE(2), CT_I8, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_add_scalar(i8, 300), ((double[]){45, 43}), 0, 0);
  /* reversed forms */
  ct_tensor *f = ct_test_make((double[]){1, 2, 4}, CT_SHAPE(3), CT_F32, CT_LAYOUT_SLICED);
  CHECK_CLOSE(ct_rsub_scalar(f, 10), ((double[]){9, 8, 6}), 0, 0);
  CHECK_CLOSE(ct_rdiv_scalar(f, 1), ((double[]){1, 0.5, 0.25}), 0, 0);
  ct_tensor *rd = ct_rdiv_scalar(i, 12);
  CHECK(rd && ct_dtype_of(rd) == CT_F32);
  CHECK_CLOSE(rd, ((double[]){6, 3, 2}), 0, 0);
  /* 1 - bool raises in torch (use logical_not) */
  CHECK_ERR(
      ct_rsub_scalar(ct_test_make((double[]){1, 0}, CT_SHAPE(2), CT_BOOL, CT_LAYOUT_CONTIG), 1),
      CT_ERR_DTYPE);
}

/* ---- Integer edge cases --------------------------------------------------------- */

static ct_tensor *i32s(const int32_t *v, int64_t n) {
  return ct_to(ct_from_data(v, &n, 1, &(ct_tensor_opts){.dtype = CT_I32}), ct_test_device(), NULL);
}
static ct_tensor *i64s(const int64_t *v, int64_t n) {
  return ct_to(ct_from_data(v, &n, 1, &(ct_tensor_opts){.dtype = CT_I64}), ct_test_device(), NULL);
}

CT_TEST(integer_edge_cases) {
  ct_tensor *a = i32s((int32_t[]){INT32_MIN, 7, -7, 7, -7}, 5);
  ct_tensor *b = i32s((int32_t[]){-1, 2, 2, -2, -2}, 5);
  CHECK_CLOSE(ct_floor_divide(a, b), ((double[]){INT32_MIN, 3, -4, -4, 3}), 0, 0);
  CHECK_CLOSE(ct_remainder(a, b), ((double[]){0, 1, 1, -1, -1}), 0, 0);
  CHECK_CLOSE(ct_fmod(a, b), ((double[]){0, 1, -1, 1, -1}), 0, 0);
  CHECK_CLOSE(ct_mul(a, b), ((double[]){INT32_MIN, 14, -14, -14, 14}), 0, 0);
  CHECK_CLOSE(ct_sub(a, ct_abs(b)), ((double[]){INT32_MAX, 5, -9, 5, -9}), 0, 0);
  ct_tensor *l = i64s((int64_t[]){INT64_MIN, INT64_MAX}, 2);
  ct_tensor *m1 = i64s((int64_t[]){-1, 1}, 2);
  ct_tensor *q = ct_to(ct_floor_divide(l, m1), ct_cpu(), NULL);
  ct_tensor *s = ct_to(ct_add(l, m1), ct_cpu(), NULL);
  ct_tensor *rm = ct_to(ct_remainder(l, m1), ct_cpu(), NULL);
  const int64_t *pq = ct_data_ptr(q), *ps = ct_data_ptr(s), *pr = ct_data_ptr(rm);
  CHECK(pq && pq[0] == INT64_MIN && pq[1] == INT64_MAX);
  CHECK(ps && ps[0] == INT64_MAX && ps[1] == INT64_MIN); /* wraps both ways */
  CHECK(pr && pr[0] == 0 && pr[1] == 0);
  /* division by zero is an error, not a crash */
  ct_tensor *z = i32s((int32_t[]){1, 0, 3, 4, 5}, 5);
  CHECK_ERR_MSG(ct_test_synced(ct_floor_divide(a, z)), CT_ERR_ARG,
                "floor_divide: integer division by zero");
  CHECK_ERR_MSG(ct_test_synced(ct_remainder(a, z)), CT_ERR_ARG, "remainder");
  CHECK_ERR_MSG(ct_test_synced(ct_fmod(a, z)), CT_ERR_ARG, "fmod");
  CHECK_ERR_MSG(ct_floor_divide_scalar(a, 0), CT_ERR_ARG, "division by zero");
  CHECK_ERR(ct_remainder_scalar(a, 0), CT_ERR_ARG);
  CHECK_ERR(ct_fmod_scalar_(a, 0), CT_ERR_ARG);
  CHECK_CLOSE(a, ((double[]){INT32_MIN, 7, -7, 7, -7}), 0, 0); /* untouched */
  for (size_t di = 0; di < 5; di++) {
    ct_tensor *x = ct_test_make((double[]){4, 9}, CT_SHAPE(2), int_dtypes[di], CT_LAYOUT_CONTIG);
    ct_tensor *y = ct_test_make((double[]){2, 0}, CT_SHAPE(2), int_dtypes[di], CT_LAYOUT_SLICED);
    CHECK_ERR(ct_test_synced(ct_floor_divide(x, y)), CT_ERR_ARG);
    /* true division by zero is IEEE in f32 */
    CHECK_CLOSE(ct_div(x, y), ((double[]){2, INFINITY}), 0, 0);
  }
  /* floats: no error, IEEE results */
  ct_tensor *f = ct_test_make((double[]){1, -1, 0}, CT_SHAPE(3), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *f0 = ct_test_make((double[]){0, 0, 0}, CT_SHAPE(3), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_floor_divide(f, f0), ((double[]){INFINITY, -INFINITY, NAN}), 0, 0);
  CHECK_CLOSE(ct_fmod(f, f0), ((double[]){NAN, NAN, NAN}), 0, 0);
  /* negative integer powers */
  ct_tensor *e = i32s((int32_t[]){2, -1, 0, 1, 3}, 5);
  CHECK_ERR_MSG(ct_test_synced(ct_pow(a, e)), CT_ERR_ARG, "negative integer powers");
  CHECK_ERR_MSG(ct_pow_scalar(a, -2), CT_ERR_ARG, "negative integer powers");
  CHECK_CLOSE(ct_pow_scalar(z, 3), ((double[]){1, 0, 27, 64, 125}), 0, 0);
  ct_tensor *pf = ct_pow_scalar(z, -1.0 / 2);
  CHECK(pf && ct_dtype_of(pf) == CT_F32);
  /* i8 / u8 wrap-around */
  ct_tensor *c8 = ct_test_make((double[]){127, -128, 100, 2}, CT_SHAPE(4), CT_I8, CT_LAYOUT_CONTIG);
  ct_tensor *d8 = ct_test_make((double[]){1, -1, 3, 7}, CT_SHAPE(4), CT_I8, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_add(c8, d8), ((double[]){-128, 127, 103, 9}), 0, 0);
  CHECK_CLOSE(ct_mul(c8, d8), ((double[]){127, -128, 44, 14}), 0, 0);
  CHECK_CLOSE(ct_pow(ct_abs(d8), ct_abs(d8)), ((double[]){1, 1, 27, -9}), 0, 0); /* 7^7 wraps */
  CHECK_CLOSE(
      ct_pow_scalar(ct_test_make((double[]){2, -2}, CT_SHAPE(2), CT_I8, CT_LAYOUT_CONTIG), 7),
      ((double[]){-128, -128}), 0, 0);
  CHECK_ERR(ct_test_synced(ct_pow(c8, d8)), CT_ERR_ARG); /* -1 exponent */
  ct_tensor *u = ct_test_make((double[]){0, 255, 16}, CT_SHAPE(3), CT_U8, CT_LAYOUT_CONTIG);
  ct_tensor *v = ct_test_make((double[]){1, 1, 16}, CT_SHAPE(3), CT_U8, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_sub(u, v), ((double[]){255, 254, 0}), 0, 0);
  CHECK_CLOSE(ct_add(u, v), ((double[]){1, 0, 32}), 0, 0);
  CHECK_CLOSE(ct_mul(u, v), ((double[]){0, 255, 0}), 0, 0);
  CHECK_CLOSE(ct_floor_divide(u, ct_add_scalar(v, 1)), ((double[]){0, 127, 0}), 0, 0);
}

CT_TEST(binary_nan_propagation) {
  for (size_t di = 0; di < 4; di++) {
    ct_dtype dt = float_dtypes[di];
    ct_tensor *a = ct_test_make((double[]){NAN, 1, NAN, INFINITY, -INFINITY}, CT_SHAPE(5), dt,
                                CT_LAYOUT_CONTIG);
    ct_tensor *b =
        ct_test_make((double[]){1, NAN, NAN, 1, INFINITY}, CT_SHAPE(5), dt, CT_LAYOUT_SLICED);
    CHECK_CLOSE(ct_maximum(a, b), ((double[]){NAN, NAN, NAN, INFINITY, INFINITY}), 0, 0);
    CHECK_CLOSE(ct_minimum(a, b), ((double[]){NAN, NAN, NAN, 1, -INFINITY}), 0, 0);
    CHECK_CLOSE(ct_add(a, b), ((double[]){NAN, NAN, NAN, INFINITY, NAN}), 0, 0);
    CHECK_CLOSE(ct_maximum_scalar(a, 0), ((double[]){NAN, 1, NAN, INFINITY, 0}), 0, 0);
    CHECK_CLOSE(ct_eq(a, a), ((double[]){0, 1, 0, 1, 1}), 0, 0);
    CHECK_CLOSE(ct_ne(a, b), ((double[]){1, 1, 1, 1, 1}), 0, 0);
    CHECK_CLOSE(ct_lt(a, b), ((double[]){0, 0, 0, 0, 1}), 0, 0);
    CHECK_CLOSE(ct_logical_and(a, b), ((double[]){1, 1, 1, 1, 1}), 0, 0); /* nan is truthy */
  }
}

/* ---- In-place and out semantics ----------------------------------------------------- */

CT_TEST(inplace_and_out_semantics) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_ones(CT_SHAPE(2, 3), &o);
  ct_tensor *row = ct_arange(0, 3, 1, &o);
  CHECK_ERR_MSG(ct_add_(row, a), CT_ERR_SHAPE, "(2, 3)"); /* result bigger than a */
  ct_tensor *ia =
      ct_zeros(CT_SHAPE(2, 3), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
  CHECK_ERR_MSG(ct_add_(ia, a), CT_ERR_DTYPE,
                "result type f32 can't be cast to the output type i64");
  CHECK_ERR(ct_add_(ct_expand(row, CT_SHAPE(2, 3)), a), CT_ERR_ARG);
  /* f32 += f64: computed in f64, written back as f32 */
  ct_tensor *d =
      ct_full(CT_SHAPE(3), 0.25, &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  CHECK(ct_add_(row, d) == row);
  CHECK(ct_dtype_of(row) == CT_F32);
  CHECK_CLOSE(row, ((double[]){0.25, 1.25, 2.25}), 0, 0);
  /* i64 += i32 and += bool are fine */
  CHECK(ct_add_(ia, ct_test_make((double[]){1, 2, 3}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG)) ==
        ia);
  CHECK(ct_add_(ia, ct_test_make((double[]){1, 0, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_CONTIG)) ==
        ia);
  CHECK_CLOSE(ia, ((double[]){2, 2, 4, 2, 2, 4}), 0, 0);
  /* aliasing: a += a, and out overlapping an input by a shift */
  CHECK(ct_add_(a, a) == a);
  CHECK_CLOSE(a, ((double[]){2, 2, 2, 2, 2, 2}), 0, 0);
  ct_tensor *s = ct_arange(0, 6, 1, &o);
  CHECK(ct_mul_out(ct_slice(s, 0, 1, 6, 1), ct_slice(s, 0, 0, 5, 1), ct_slice(s, 0, 0, 5, 1)));
  CHECK_CLOSE(s, ((double[]){0, 0, 1, 4, 9, 16}), 0, 0);
  ct_tensor *t = ct_view(ct_arange(0, 4, 1, &o), CT_SHAPE(2, 2));
  CHECK(ct_add_(t, ct_transpose(t, 0, 1)) == t); /* reads the transpose of the old values */
  CHECK_CLOSE(t, ((double[]){0, 3, 3, 6}), 0, 0);
  /* out: errors */
  ct_tensor *x = ct_ones(CT_SHAPE(2, 3), &o);
  CHECK_ERR(ct_add_out(NULL, x, x), CT_ERR_ARG);
  CHECK_ERR_MSG(ct_add_out(ct_empty(CT_SHAPE(3), &o), x, x), CT_ERR_SHAPE, "out has shape (3,)");
  ct_tensor *fo = ct_empty(CT_SHAPE(2, 3), &o); /* bool results may go into f32 */
  CHECK(ct_eq_out(fo, x, ct_sub(ct_add(x, x), x)) == fo);
  CHECK_CLOSE(fo, ((double[]){1, 1, 1, 1, 1, 1}), 0, 0);
  ct_tensor *bo = dev_empty(CT_SHAPE(2, 3), CT_BOOL);
  CHECK(ct_lt_out(bo, x, ct_add(x, x)) == bo);
  CHECK_CLOSE(bo, ((double[]){1, 1, 1, 1, 1, 1}), 0, 0);
  CHECK_ERR_MSG(ct_add_out(bo, x, x), CT_ERR_DTYPE, "can't be cast to the output type bool");
  /* NULL in, NULL out, keeping the first error */
  ct_clear_error();
  ct_tensor *bad = ct_view(x, CT_SHAPE(4));
  CHECK(ct_add(bad, x) == NULL && ct_add(x, bad) == NULL && ct_add_(bad, x) == NULL);
  CHECK(ct_mul_scalar(bad, 2) == NULL && ct_where(bad, x, x) == NULL && ct_eq(x, bad) == NULL);
  CHECK(ct_add_out(x, bad, x) == NULL && ct_add_out(bad, x, x) == NULL);
  CHECK(!ct_allclose(bad, x, 0, 0) && !ct_equal(x, bad));
  CHECK(ct_last_error() == CT_ERR_SHAPE);
  ct_clear_error();
}

/* ---- Comparisons, logic, where ------------------------------------------------------- */

static double r_eq(double a, double b) { return a == b; }
static double r_ne(double a, double b) { return a != b; }
static double r_lt(double a, double b) { return a < b; }
static double r_le(double a, double b) { return a <= b; }
static double r_gt(double a, double b) { return a > b; }
static double r_ge(double a, double b) { return a >= b; }
static double r_and(double a, double b) { return a != 0 && b != 0; }
static double r_or(double a, double b) { return a != 0 || b != 0; }
static double r_xor(double a, double b) { return (a != 0) != (b != 0); }

typedef struct cmp_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *);
  ct_tensor *(*fn_scalar)(const ct_tensor *, double);
  double (*ref)(double, double);
} cmp_case;
#define CCASE(name, ref) \
  { #name, ct_##name, ct_##name##_scalar, ref }
static const cmp_case cmps[] = {
    CCASE(eq, r_eq),           CCASE(ne, r_ne),         CCASE(lt, r_lt),
    CCASE(le, r_le),           CCASE(gt, r_gt),         CCASE(ge, r_ge),
    CCASE(logical_and, r_and), CCASE(logical_or, r_or), CCASE(logical_xor, r_xor),
};

CT_TEST(comparisons_and_logic_every_dtype) {
  const int64_t sa[2] = {4, 3}, sb[1] = {3};
  /* small integers with many ties and zeros */
  double *a = ct_test_random(12, -3, 4, 11), *b = ct_test_random(3, -3, 4, 12);
  for (int i = 0; i < 12; i++) a[i] = floor(a[i]);
  for (int i = 0; i < 3; i++) b[i] = floor(b[i]);
  for (size_t ci = 0; ci < sizeof cmps / sizeof cmps[0]; ci++) {
    const cmp_case *c = &cmps[ci];
    for (int d = 0; d < CT_DTYPE_COUNT; d++) {
      ct_dtype dt = (ct_dtype)d;
      double av[12], bv[3];
      for (int i = 0; i < 12; i++) av[i] = dt == CT_U8 ? fabs(a[i]) : a[i];
      for (int i = 0; i < 3; i++) bv[i] = dt == CT_U8 ? fabs(b[i]) : b[i];
      ct_test_round_to(av, 12, dt);
      ct_test_round_to(bv, 3, dt);
      int64_t n;
      double *e = ref_broadcast(c->ref, av, sa, 2, bv, sb, 1, &n);
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        ct_tensor *ta = ct_test_make(av, sa, 2, dt, (ct_test_layout)l);
        ct_tensor *tb = ct_test_make(bv, sb, 1, dt, (ct_test_layout)l);
        ct_tensor *r = c->fn(ta, tb);
        CHECK_MSG(r && ct_dtype_of(r) == CT_BOOL, "%s on %s", c->name, ct_dtype_name(dt));
        CHECK_SHAPE(r, 4, 3);
        CHECK_CLOSE(r, e, 0, 0);
      }
      /* against a scalar */
      double es[12];
      for (int i = 0; i < 12; i++) es[i] = c->ref(av[i], 1);
      CHECK_CLOSE(c->fn_scalar(ct_test_make(av, sa, 2, dt, CT_LAYOUT_TRANSPOSED), 1), es, 0, 0);
      free(e);
    }
  }
  free(a);
  free(b);
  /* mixed dtypes compare in the promoted dtype; an int against 2.5 in f32 */
  ct_tensor *i = ct_test_make((double[]){2, 3}, CT_SHAPE(2), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *f = ct_test_make((double[]){2.5, 3}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_lt(i, f), ((double[]){1, 0}), 0, 0);
  CHECK_CLOSE(ct_lt_scalar(i, 2.5), ((double[]){1, 0}), 0, 0);
  CHECK_CLOSE(ct_eq_scalar(i, 2.5), ((double[]){0, 0}), 0, 0);
  ct_tensor *b2 = ct_test_make((double[]){1, 0}, CT_SHAPE(2), CT_BOOL, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_eq_scalar(b2, 2), ((double[]){0, 0}), 0, 0); /* compared as i64, not as bool */
  ct_tensor *big =
      ct_test_make((double[]){16777217, 16777216}, CT_SHAPE(2), CT_I64, CT_LAYOUT_CONTIG);
  ct_tensor *big2 =
      ct_test_make((double[]){16777216, 16777216}, CT_SHAPE(2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_eq(big, big2), ((double[]){0, 1}), 0, 0); /* exact in i64 */
}

CT_TEST(where_and_where_scalar) {
  ct_tensor *c = ct_test_make((double[]){1, 0, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_SLICED);
  for (int d = 0; d < CT_DTYPE_COUNT; d++) {
    ct_dtype dt = (ct_dtype)d;
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *a =
          ct_test_make((double[]){1, 2, 3, 4, 5, 6}, CT_SHAPE(2, 3), dt, (ct_test_layout)l);
      ct_tensor *b = ct_test_make((double[]){0, 0}, CT_SHAPE(2, 1), dt, (ct_test_layout)l);
      ct_tensor *r = ct_where(c, a, b);
      CHECK_MSG(r && ct_dtype_of(r) == dt, "where on %s", ct_dtype_name(dt));
      double e[6] = {1, 0, 3, 4, 0, 6};
      ct_test_round_to(e, 6, dt);
      CHECK_CLOSE(r, e, 0, 0);
    }
  }
  /* three-way broadcast, promotion, a non-bool condition (nonzero = true) */
  ct_tensor *cf = ct_test_make((double[]){0.5, 0, NAN}, CT_SHAPE(3, 1), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *ai = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *bf = ct_test_make((double[]){-1.5}, NULL, 0, CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *r = ct_where(cf, ai, bf);
  CHECK(r && ct_dtype_of(r) == CT_F64);
  CHECK_SHAPE(r, 3, 2);
  CHECK_CLOSE(r, ((double[]){1, 2, -1.5, -1.5, 1, 2}), 0, 0);
  CHECK_ERR_MSG(ct_where(ct_test_make((double[]){1, 0}, CT_SHAPE(2), CT_BOOL, CT_LAYOUT_CONTIG), ai,
                         ct_test_make((double[]){1, 2, 3}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG)),
                CT_ERR_SHAPE, "where: shapes");
  /* where_scalar: the scalar rule decides the dtype */
  ct_tensor *ws = ct_where_scalar(
      c, ct_test_make((double[]){7, 8, 9}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG), -1);
  CHECK(ws && ct_dtype_of(ws) == CT_I32);
  CHECK_CLOSE(ws, ((double[]){7, -1, 9}), 0, 0);
  ws = ct_where_scalar(c, ct_test_make((double[]){7, 8, 9}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG),
                       0.5);
  CHECK(ws && ct_dtype_of(ws) == CT_F32);
  CHECK_CLOSE(ws, ((double[]){7, 0.5, 9}), 0, 0);
  ws = ct_where_scalar(c, ct_test_make((double[]){1, 2, 3}, CT_SHAPE(3), CT_F16, CT_LAYOUT_CONTIG),
                       INFINITY);
  CHECK(ws && ct_dtype_of(ws) == CT_F16);
  CHECK_CLOSE(ws, ((double[]){1, INFINITY, 3}), 0, 0);
}

CT_TEST(allclose_and_equal) {
  ct_tensor *a =
      ct_test_make((double[]){1, 2, INFINITY, -INFINITY}, CT_SHAPE(4), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_test_make((double[]){1, 2 + 1e-7, INFINITY, -INFINITY}, CT_SHAPE(4), CT_F64,
                              CT_LAYOUT_SLICED);
  ct_clear_error();
  CHECK(ct_allclose(a, b, 1e-5, 1e-8));
  CHECK(!ct_allclose(a, b, 0, 0));
  CHECK(!ct_equal(a, b));
  CHECK(ct_equal(a, a));
  CHECK(ct_last_error() == CT_OK);
  ct_tensor *inf1 = ct_test_make((double[]){INFINITY, 1}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *inf2 = ct_test_make((double[]){1, INFINITY}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK(!ct_allclose(inf1, inf2, 1, 1)); /* inf is only close to itself */
  ct_tensor *n = ct_test_make((double[]){NAN}, CT_SHAPE(1), CT_F32, CT_LAYOUT_CONTIG);
  CHECK(!ct_allclose(n, n, 1, 1));
  CHECK(!ct_equal(n, n));
  /* broadcasting, integers, mixed dtypes */
  ct_tensor *m = ct_test_make((double[]){3, 3, 3, 3}, CT_SHAPE(2, 2), CT_I64, CT_LAYOUT_TRANSPOSED);
  CHECK(ct_allclose(m, ct_test_make((double[]){3}, NULL, 0, CT_I8, CT_LAYOUT_CONTIG), 0, 0));
  CHECK(ct_allclose(m, ct_test_make((double[]){3.01}, CT_SHAPE(1), CT_F32, CT_LAYOUT_CONTIG), 0,
                    0.02));
  CHECK(!ct_allclose(m, ct_test_make((double[]){3.01}, CT_SHAPE(1), CT_F32, CT_LAYOUT_CONTIG), 0,
                     0.001));
  CHECK(
      ct_equal(m, ct_test_make((double[]){3, 3, 3, 3}, CT_SHAPE(2, 2), CT_F32, CT_LAYOUT_CONTIG)));
  ct_tensor_opts o = ct_test_opts(CT_F32);
  CHECK(ct_allclose(ct_zeros(CT_SHAPE(0, 2), &o), ct_ones(CT_SHAPE(0, 2), &o), 0, 0));
  CHECK(ct_equal(ct_zeros(CT_SHAPE(0, 2), &o), ct_ones(CT_SHAPE(0, 2), &o)));
  /* shape mismatch: false with an error */
  ct_clear_error();
  CHECK(!ct_allclose(a, m, 1, 1));
  CHECK(ct_last_error() == CT_ERR_SHAPE);
  ct_clear_error();
  CHECK(!ct_equal(a, ct_test_make((double[]){1, 2, 3}, CT_SHAPE(3), CT_F32, CT_LAYOUT_CONTIG)));
  CHECK(ct_last_error() == CT_ERR_SHAPE);
  ct_clear_error();
}

CT_TEST(add_scaled_axpy) {
  for (size_t di = 0; di < 4; di++) {
    ct_dtype dt = float_dtypes[di];
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *a =
          ct_test_make((double[]){1, 2, 3, 4, 5, 6}, CT_SHAPE(2, 3), dt, (ct_test_layout)l);
      ct_tensor *b = ct_test_make((double[]){1, -1, 2}, CT_SHAPE(3), dt, (ct_test_layout)l);
      CHECK_CLOSE(ct_add_scaled(a, b, -0.5), ((double[]){0.5, 2.5, 2, 3.5, 5.5, 5}), 0, 0);
      CHECK(ct_add_scaled_(a, b, 2) == a);
      CHECK_CLOSE(a, ((double[]){3, 0, 7, 6, 3, 10}), 0, 0);
    }
  }
  ct_tensor *i = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *j = ct_test_make((double[]){10, 20}, CT_SHAPE(2), CT_I16, CT_LAYOUT_CONTIG);
  ct_tensor *r = ct_add_scaled(i, j, -3);
  CHECK(r && ct_dtype_of(r) == CT_I32);
  CHECK_CLOSE(r, ((double[]){-29, -58}), 0, 0);
  CHECK_ERR_MSG(ct_add_scaled(i, j, 0.5), CT_ERR_ARG, "alpha");
  ct_tensor *f = ct_test_make((double[]){0.5, 0.25}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR(ct_add_scaled_(i, f, 1), CT_ERR_DTYPE);
  CHECK_ERR(
      ct_add_scaled(i, ct_test_make((double[]){1, 2, 3}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG), 1),
      CT_ERR_SHAPE);
  ct_tensor *i8 = ct_test_make((double[]){100, -100}, CT_SHAPE(2), CT_I8, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_add_scaled(i8, i8, 2), ((double[]){44, -44}), 0, 0); /* 300 wraps */
}

CT_TEST(device_mismatch) {
  if (!ct_cuda_is_available()) {
    ct_test_skip("needs a CUDA device");
    return;
  }
  ct_tensor *c = ct_ones(CT_SHAPE(3), NULL);
  ct_tensor *g = ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.device = ct_cuda(0)});
  CHECK_ERR_MSG(ct_add(g, c), CT_ERR_DEVICE,
                "add: expected all tensors on the same device, got cuda:0 and cpu");
  CHECK_ERR(ct_lt(c, g), CT_ERR_DEVICE);
  CHECK_ERR(ct_where(ct_gt_scalar(c, 0), c, g), CT_ERR_DEVICE);
  CHECK_ERR(ct_add_(c, g), CT_ERR_DEVICE);
  CHECK_ERR(ct_add_out(g, c, c), CT_ERR_DEVICE);
  CHECK_ERR(ct_exp_out(g, c), CT_ERR_DEVICE);
}

CT_TEST(binary_large_parallel) {
  const int64_t n = 2 * 50021;
  double *a = ct_test_random(n, -100, 100, 21), *b = ct_test_random(50021, -100, 100, 22);
  for (size_t di = 0; di < 3; di++) {
    ct_dtype dt = (ct_dtype[]){CT_F32, CT_I32, CT_BF16}[di];
    double *av = malloc(sizeof(double) * (size_t)n), *bv = malloc(sizeof(double) * 50021);
    memcpy(av, a, sizeof(double) * (size_t)n);
    memcpy(bv, b, sizeof(double) * 50021);
    ct_test_round_to(av, n, dt);
    ct_test_round_to(bv, 50021, dt);
    int64_t m;
    double *e = ref_broadcast(r_sub, av, (int64_t[]){2, 50021}, 2, bv, (int64_t[]){50021}, 1, &m);
    ct_test_round_to(e, m, dt);
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      ct_tensor *ta = ct_test_make(av, CT_SHAPE(2, 50021), dt, (ct_test_layout)l);
      ct_tensor *tb = ct_test_make(bv, CT_SHAPE(50021), dt, CT_LAYOUT_CONTIG);
      CHECK_CLOSE(ct_sub(ta, tb), e, ct_test_rtol(dt), ct_test_atol(dt));
    }
    /* contiguous same-shape (the flat path) and a scalar operand */
    ct_tensor *ta = ct_test_make(av, CT_SHAPE(2, 50021), dt, CT_LAYOUT_CONTIG);
    double *e2 = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) e2[i] = av[i] + av[i];
    ct_test_round_to(e2, n, dt);
    CHECK_CLOSE(ct_add(ta, ta), e2, ct_test_rtol(dt), ct_test_atol(dt));
    CHECK_CLOSE(ct_mul_scalar(ta, 2), e2, ct_test_rtol(dt), ct_test_atol(dt));
    free(e2);
    free(av);
    free(bv);
    free(e);
  }
  free(a);
  free(b);
}

/* ---- Gradients: every differentiable row, tensor and scalar forms ----------------- */

static ct_tensor *call_case(ct_tensor *const *in, void *ctx) {
  return ((const bin_case *)ctx)->fn(in[0], in[1]);
}
typedef struct scalar_call {
  const bin_case *c;
  double s;
} scalar_call;
static ct_tensor *call_scalar(ct_tensor *const *in, void *ctx) {
  const scalar_call *sc = ctx;
  return sc->c->fn_scalar(in[0], sc->s);
}

CT_TEST(binary_gradients_every_differentiable_op) {
  for (size_t i = 0; i < sizeof table_rows / sizeof table_rows[0]; i++) {
    const bin_case *c = case_named(table_rows[i].name);
    if (!c || !strcmp(table_rows[i].grad, "NONE")) continue;
    unsigned seed = 700 + 3 * (unsigned)i;
    ct_tensor *in[2] = {ct_gradcheck_input(CT_SHAPE(2, 3), c->alo, c->ahi, seed),
                        ct_gradcheck_input(CT_SHAPE(3), c->blo, c->bhi, seed + 1)};
    CHECK_GRADIENTS(c->name, call_case, (void *)c, in, 2);
    scalar_call sc = {c, 0.5 * (c->blo + c->bhi) + 0.125};
    CHECK_GRADIENTS(c->name, call_scalar, &sc, in, 1);
  }
}

/* ---- IEEE special values (f64): signed zeros, infinities, nan, huge and tiny --------- */

typedef struct special_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *);
  double (*ref)(double, double);
} special_case;
static const special_case special_cases[] = {
    {"hypot", ct_hypot, r_hypot},
    {"logaddexp", ct_logaddexp, r_logaddexp},
    {"copysign", ct_copysign, r_copysign},
    /* special-values rows end */
};

CT_TEST(binary_special_values) {
  static const double sv[] = {0.0,   -0.0,   1.0,   -2.5,   INFINITY, -INFINITY, NAN,
                              1e300, -1e300, 710.0, -710.0, 1e-310,   -3e-320};
  enum { N = (int)(sizeof sv / sizeof sv[0]) };
  double a[N * N], b[N * N];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) a[i * N + j] = sv[i], b[i * N + j] = sv[j];
  ct_tensor *ta = ct_test_make(a, CT_SHAPE(N * N), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *tb = ct_test_make(b, CT_SHAPE(N * N), CT_F64, CT_LAYOUT_CONTIG);
  for (size_t c = 0; c < sizeof special_cases / sizeof special_cases[0]; c++) {
    const special_case *sc = &special_cases[c];
    ct_tensor *r = sc->fn(ta, tb);
    CHECK_MSG(r != NULL, "%s", sc->name);
    if (!r) continue;
    double *v = ct_test_values(r);
    for (int k = 0; k < N * N; k++) {
      double want = sc->ref(a[k], b[k]), got = v[k];
      bool same = isnan(want) ? isnan(got)
                              : (got == want && signbit(got) == signbit(want)) ||
                                    fabs(got - want) <= 1e-15 * fabs(want);
      CHECK_MSG(same, "%s(%g, %g) = %.17g, expected %.17g", sc->name, a[k], b[k], got, want);
    }
    free(v);
  }
}
