/* The bitwise ops (ct_bitwise_and/or/xor/left_shift/right_shift): values on
 * every integer dtype and bool against exact references written from the
 * definitions (arithmetic, not the library's bit formulas), including shift
 * counts at and past the bit width, negative counts and negative values;
 * promotion, the scalar, in-place and _out forms, and the dtype errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

typedef struct {
  ct_dtype dt;
  int bits;
  bool is_unsigned;
} int_type;
static const int_type types[] = {{CT_I8, 8, false},
                                 {CT_U8, 8, true},
                                 {CT_I16, 16, false},
                                 {CT_I32, 32, false},
                                 {CT_I64, 64, false}};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

/* v reduced to the type's range (two's complement wrap). */
static int64_t wrap(const int_type *t, uint64_t v) {
  if (t->bits == 64) return (int64_t)v;
  uint64_t m = v & ((UINT64_C(1) << t->bits) - 1);
  if (!t->is_unsigned && (m >> (t->bits - 1))) return (int64_t)(m - (UINT64_C(1) << t->bits));
  return (int64_t)m;
}

/* x << y as multiplication by 2^y modulo 2^bits; a count outside [0, bits)
 * gives 0. */
static int64_t ref_lshift(const int_type *t, int64_t x, int64_t y) {
  if (y < 0 || y >= t->bits) return 0;
  uint64_t v = (uint64_t)x;
  for (int64_t i = 0; i < y; i++) v *= 2;
  return wrap(t, v);
}
/* x >> y as floor(x / 2^y); a count outside [0, bits) gives 0 or -1. */
static int64_t ref_rshift(const int_type *t, int64_t x, int64_t y) {
  if (y < 0 || y >= t->bits) return x < 0 ? -1 : 0;
  int64_t v = x;
  for (int64_t i = 0; i < y; i++) v = v >= 0 ? v / 2 : -((-(v + 1)) / 2) - 1;
  return v;
}
/* and/or/xor bit by bit on the two's complement digits of the type. */
static int64_t ref_logic(const int_type *t, int64_t x, int64_t y, int op) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y, r = 0;
  for (int b = 0; b < 64; b++) {
    int p = (int)((ux >> b) & 1), q = (int)((uy >> b) & 1);
    int bit = op == 0 ? (p && q) : op == 1 ? (p || q) : (p != q);
    r |= (uint64_t)bit << b;
  }
  return wrap(t, r);
}

/* Edge values of the type: 0, +-1, +-5, the extremes, bit patterns; with the
 * count vector, every count in range that matters for the width. */
static int values_of(const int_type *t, int64_t *v) {
  int n = 0;
  int64_t lo = t->is_unsigned ? 0 : (t->bits == 64 ? INT64_MIN : -(INT64_C(1) << (t->bits - 1)));
  /* i64's maximum is not a double: its nearest exact neighbour */
  int64_t hi = t->is_unsigned  ? 255
               : t->bits == 64 ? INT64_C(0x7ffffffffffffc00)
                               : (INT64_C(1) << (t->bits - 1)) - 1;
  /* i64's neighbours of the extremes 1024 apart: doubles hold them exactly */
  int64_t step = t->bits == 64 ? 1024 : 1;
  int64_t cand[] = {0, 1, -1, 5, -5, 85, -86, 100, -100, lo, hi, lo + step, hi - step, 0x55, 0x2a};
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
    if (cand[i] >= lo && cand[i] <= hi) v[n++] = cand[i];
  return n;
}
static int counts_of(const int_type *t, int64_t *c) {
  int n = 0;
  int64_t lo = t->is_unsigned ? 0 : -128, hi = t->is_unsigned ? 255 : 127;
  int64_t cand[] = {0,  1,  2,  3,   7,   8,   9,   15, 16, 17, 31,  32,  33,
                    63, 64, 65, 100, 127, 200, 255, -1, -2, -8, -64, -128};
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
    if (cand[i] >= lo && cand[i] <= hi) c[n++] = cand[i];
  return n;
}

static ct_tensor *make(const int64_t *v, int64_t n, const int64_t *shape, int ndim, ct_dtype dt,
                       ct_test_layout layout) {
  double *d = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
  ct_tensor *t = ct_test_make(d, shape, ndim, dt, layout);
  free(d);
  return t;
}

typedef ct_tensor *(*bin_fn)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*scal_fn)(const ct_tensor *, double);
static const struct {
  const char *name;
  bin_fn f;
  scal_fn fs;
  int op; /* 0 and, 1 or, 2 xor, 3 left shift, 4 right shift */
} ops[] = {
    {"bitwise_and", ct_bitwise_and, ct_bitwise_and_scalar, 0},
    {"bitwise_or", ct_bitwise_or, ct_bitwise_or_scalar, 1},
    {"bitwise_xor", ct_bitwise_xor, ct_bitwise_xor_scalar, 2},
    {"bitwise_left_shift", ct_bitwise_left_shift, ct_bitwise_left_shift_scalar, 3},
    {"bitwise_right_shift", ct_bitwise_right_shift, ct_bitwise_right_shift_scalar, 4},
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

static int64_t ref(int op, const int_type *t, int64_t x, int64_t y) {
  if (op < 3) return ref_logic(t, x, y, op);
  return op == 3 ? ref_lshift(t, x, y) : ref_rshift(t, x, y);
}

/* Every value against every count (an [n, 1] by [m] broadcast), in each
 * layout of the counts, for each op and integer dtype. */
CT_TEST(values_on_every_integer_dtype) {
  for (int ti = 0; ti < NTYPES; ti++) {
    const int_type *t = &types[ti];
    int64_t v[32], c[32];
    int n = values_of(t, v), m = counts_of(t, c);
    for (int oi = 0; oi < NOPS; oi++) {
      /* and/or/xor: values against values; shifts: values against counts */
      const int64_t *rhs = ops[oi].op < 3 ? v : c;
      int nr = ops[oi].op < 3 ? n : m;
      double *want = malloc(sizeof(double) * (size_t)(n * nr));
      for (int i = 0; i < n; i++)
        for (int j = 0; j < nr; j++) want[i * nr + j] = (double)ref(ops[oi].op, t, v[i], rhs[j]);
      for (int layout = 0; layout < CT_LAYOUT_COUNT; layout++) {
        ct_tensor *a = make(v, n, (int64_t[]){n, 1}, 2, t->dt, CT_LAYOUT_CONTIG);
        ct_tensor *b = make(rhs, nr, (int64_t[]){nr}, 1, t->dt, (ct_test_layout)layout);
        ct_tensor *r = ct_test_synced(ops[oi].f(a, b));
        CHECK_OK(r);
        if (!r) continue;
        CHECK(ct_dtype_of(r) == t->dt);
        WITH_CONTEXT(CHECK_CLOSE(r, want, 0, 0), "%s on %s, counts %s", ops[oi].name,
                     ct_dtype_name(t->dt), ct_test_layout_names[layout]);
      }
      /* the scalar form, each right-hand value as the number */
      ct_tensor *a = make(v, n, (int64_t[]){n}, 1, t->dt, CT_LAYOUT_SLICED);
      for (int j = 0; j < nr; j++) {
        double w[32];
        for (int i = 0; i < n; i++) w[i] = want[i * nr + j];
        ct_tensor *r = ct_test_synced(ops[oi].fs(a, (double)rhs[j]));
        CHECK_OK(r);
        if (r)
          WITH_CONTEXT(CHECK_CLOSE(r, w, 0, 0), "%s_scalar on %s, s = %lld", ops[oi].name,
                       ct_dtype_name(t->dt), (long long)rhs[j]);
      }
      free(want);
    }
  }
}

/* s << a and s >> a: the tensor is the count. */
CT_TEST(reversed_shifts) {
  for (int ti = 0; ti < NTYPES; ti++) {
    const int_type *t = &types[ti];
    int64_t c[32];
    int m = counts_of(t, c);
    ct_tensor *a = make(c, m, (int64_t[]){m}, 1, t->dt, CT_LAYOUT_OFFSET);
    double wl[32], wr[32];
    int64_t s = t->is_unsigned ? 200 : -100;
    for (int j = 0; j < m; j++) {
      wl[j] = (double)ref_lshift(t, s, c[j]);
      wr[j] = (double)ref_rshift(t, s, c[j]);
    }
    WITH_CONTEXT(CHECK_CLOSE(ct_bitwise_left_shift_rscalar(a, (double)s), wl, 0, 0), "%s",
                 ct_dtype_name(t->dt));
    WITH_CONTEXT(CHECK_CLOSE(ct_bitwise_right_shift_rscalar(a, (double)s), wr, 0, 0), "%s",
                 ct_dtype_name(t->dt));
  }
}

CT_TEST(bool_operands) {
  ct_tensor *p = ct_test_make((double[]){0, 0, 1, 1}, CT_SHAPE(4), CT_BOOL, CT_LAYOUT_CONTIG);
  ct_tensor *q = ct_test_make((double[]){0, 1, 0, 1}, CT_SHAPE(4), CT_BOOL, CT_LAYOUT_SLICED);
  ct_tensor *r = ct_bitwise_and(p, q);
  CHECK_OK(r);
  CHECK(r && ct_dtype_of(r) == CT_BOOL);
  CHECK_CLOSE(r, ((double[]){0, 0, 0, 1}), 0, 0);
  CHECK_CLOSE(ct_bitwise_or(p, q), ((double[]){0, 1, 1, 1}), 0, 0);
  CHECK_CLOSE(ct_bitwise_xor(p, q), ((double[]){0, 1, 1, 0}), 0, 0);
  /* bool with an integer: the integer's dtype, as torch */
  ct_tensor *i = ct_test_make((double[]){6, 7, -2, 3}, CT_SHAPE(4), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *ri = ct_bitwise_or(p, i);
  CHECK(ri && ct_dtype_of(ri) == CT_I32);
  CHECK_CLOSE(ri, ((double[]){6, 7, -1, 3}), 0, 0);
  /* shifts are not defined on bool, as torch */
  CHECK_ERR_MSG(ct_bitwise_left_shift(p, q), CT_ERR_DTYPE, "bitwise_left_shift");
  CHECK_ERR_MSG(ct_bitwise_right_shift(p, q), CT_ERR_DTYPE, "bool");
}

CT_TEST(promotion_and_forms) {
  ct_tensor *a = ct_test_make((double[]){-1, 100, -128}, CT_SHAPE(3), CT_I8, CT_LAYOUT_CONTIG);
  ct_tensor *b = ct_test_make((double[]){255, 3, 1}, CT_SHAPE(3), CT_U8, CT_LAYOUT_CONTIG);
  ct_tensor *r = ct_bitwise_and(a, b); /* i8 with u8: i16 */
  CHECK(r && ct_dtype_of(r) == CT_I16);
  CHECK_CLOSE(r, ((double[]){255, 0, 0}), 0, 0);
  ct_tensor *s = ct_bitwise_left_shift(a, b);
  CHECK(s && ct_dtype_of(s) == CT_I16);
  CHECK_CLOSE(s, ((double[]){0, 800, -256}), 0, 0);
  /* in place, out, in-place scalar */
  ct_tensor *x = ct_test_make((double[]){12, -12, 7}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG);
  ct_tensor *y = ct_test_make((double[]){10, 10, 1}, CT_SHAPE(3), CT_I32, CT_LAYOUT_CONTIG);
  CHECK_OK(ct_bitwise_xor_(x, y));
  CHECK_CLOSE(x, ((double[]){6, -2, 6}), 0, 0);
  CHECK_OK(ct_bitwise_right_shift_scalar_(x, 1));
  CHECK_CLOSE(x, ((double[]){3, -1, 3}), 0, 0);
  ct_tensor_opts o32 = ct_test_opts(CT_I32);
  ct_tensor *o = ct_empty(CT_SHAPE(3), &o32);
  CHECK_OK(ct_bitwise_or_out(o, x, y));
  CHECK_CLOSE(o, ((double[]){11, -1, 3}), 0, 0);
}

CT_TEST(floating_operands_are_dtype_errors) {
  ct_tensor *f = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *i = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_I32, CT_LAYOUT_CONTIG);
  for (int oi = 0; oi < NOPS; oi++) {
    CHECK_ERR_MSG(ops[oi].f(f, i), CT_ERR_DTYPE, ops[oi].name);
    CHECK_ERR_MSG(ops[oi].f(i, f), CT_ERR_DTYPE, "f32");
    CHECK_ERR_MSG(ops[oi].fs(f, 1), CT_ERR_DTYPE, "f32");
    CHECK_ERR_MSG(ops[oi].fs(i, 0.5), CT_ERR_DTYPE, "0.5");
  }
  ct_tensor *h = ct_test_make((double[]){1, 2}, CT_SHAPE(2), CT_F64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_bitwise_and_(h, h), CT_ERR_DTYPE, "f64");
}

CT_TEST(bitwise_not) {
  for (int ti = 0; ti < NTYPES; ti++) {
    const int_type *t = &types[ti];
    int64_t v[32];
    int n = values_of(t, v);
    double want[32];
    for (int i = 0; i < n; i++) want[i] = (double)(t->is_unsigned ? 255 - v[i] : -v[i] - 1);
    ct_tensor *a = make(v, n, (int64_t[]){n}, 1, t->dt, CT_LAYOUT_SLICED);
    ct_tensor *r = ct_bitwise_not(a);
    CHECK(r && ct_dtype_of(r) == t->dt);
    WITH_CONTEXT(CHECK_CLOSE(r, want, 0, 0), "%s", ct_dtype_name(t->dt));
    CHECK_OK(ct_bitwise_not_(a));
    WITH_CONTEXT(CHECK_CLOSE(a, want, 0, 0), "in place, %s", ct_dtype_name(t->dt));
  }
  ct_tensor *p = ct_test_make((double[]){0, 1, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_CONTIG);
  ct_tensor *q = ct_bitwise_not(p);
  CHECK(q && ct_dtype_of(q) == CT_BOOL);
  CHECK_CLOSE(q, ((double[]){1, 0, 0}), 0, 0);
  CHECK_OK(ct_bitwise_not_(p));
  CHECK_CLOSE(p, ((double[]){1, 0, 0}), 0, 0);
  ct_tensor *o = ct_test_make((double[]){1, 1, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_CONTIG);
  CHECK(ct_bitwise_not_out(o, q) == o);
  CHECK_CLOSE(o, ((double[]){0, 1, 1}), 0, 0);
  ct_tensor *f = ct_test_make((double[]){1}, CT_SHAPE(1), CT_F16, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_bitwise_not(f), CT_ERR_DTYPE, "bitwise_not: integer or bool operands only");
  CHECK_ERR_MSG(ct_bitwise_not_(f), CT_ERR_DTYPE,
                "bitwise_not: integer or bool operands only, got f16");
}
