/* Every CPU kernel and its CUDA twin compute the shared formulas of src/core
 * (unary_math.h, binary_math.h, optim_math.h, convert.h, reduce_plan.h,
 * interp_math.h) bit
 * for bit. Runs on the emulated GPU (tests/cuda_emu/README.md), where the
 * .cu kernels run on this CPU with its math library and, like the CPU
 * kernels and this file, evaluate the formulas as written (-ffp-contract=off):
 * the slots of both backends get the same inputs, special values included
 * (±0, ±inf, nan, subnormals, the dtype's extremes, halves and integers
 * around rounding and sign boundaries), and their outputs must be the same
 * bits (a nan matches any nan: its payload is no formula's), and the same
 * bits as the formula called here directly. A backend that computed an op
 * its own way (a different libm call, another order of operations, a
 * different saturation) fails here, even where a tolerance test would pass.
 * On a real GPU the math library differs, so this is not a [cuda] test. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/binary_math.h"
#include "core/convert.h"
#include "core/half.h"
#include "core/optim_math.h"
#include "core/reduce_plan.h"
#include "core/unary_math.h"

static long ncases, nfail;
static const ct_backend *cpu, *gpu;
static ct_device gpu_dev;

/* ---- Inputs ------------------------------------------------------------------------ */

#define N_FLOAT 160
#define N_INT 64

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double unif(double a, double b) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return a + (b - a) * (double)(rng >> 11) * 0x1p-53;
}

/* Floating inputs: special values first, then values spread over magnitudes. */
static void float_inputs(double *v) {
  static const double special[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   -0.5,
                                   1.5,
                                   2.5,
                                   -2.5,
                                   3.0,
                                   -3.0,
                                   7.0,
                                   -7.0,
                                   20.0,
                                   20.5,
                                   -20.0,
                                   88.0,
                                   -88.0,
                                   100.0,
                                   -100.0,
                                   1e-8,
                                   -1e-8,
                                   1e10,
                                   -1e10,
                                   1e-40,
                                   -1e-40,
                                   FLT_MIN,
                                   FLT_MAX,
                                   -FLT_MAX,
                                   1e300,
                                   -1e300,
                                   65504.0,
                                   INFINITY,
                                   -INFINITY,
                                   NAN,
                                   -NAN,
                                   3.14159265358979,
                                   0.70710678};
  int ns = (int)(sizeof special / sizeof special[0]);
  for (int i = 0; i < N_FLOAT; i++)
    v[i] = i < ns       ? special[i]
           : i % 3 == 0 ? unif(-1, 1)
           : i % 3 == 1 ? unif(-10, 10)
                        : ldexp(unif(-1, 1), (int)unif(-30, 30));
}

/* Integer inputs, as int64 (wrapped to each dtype when stored). */
static void int_inputs(int64_t *v) {
  static const int64_t special[] = {0,
                                    1,
                                    -1,
                                    2,
                                    -2,
                                    3,
                                    -3,
                                    7,
                                    -7,
                                    127,
                                    -128,
                                    255,
                                    32767,
                                    -32768,
                                    INT32_MAX,
                                    INT32_MIN,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MIN + 1,
                                    100};
  int ns = (int)(sizeof special / sizeof special[0]);
  for (int i = 0; i < N_INT; i++) v[i] = i < ns ? special[i] : (int64_t)unif(-300, 300);
}

/* ---- Elements of any dtype ---------------------------------------------------------- */

static double load_d(const char *p, ct_dtype dt) { return ct__load_as_double(p, dt); }
/* An integer or bool element, exactly (int64 does not fit a double). */
static int64_t load_i(const char *p, ct_dtype dt) {
  switch (dt) {
    case CT_I8:
      return *(const int8_t *)p;
    case CT_U8:
      return *(const uint8_t *)p;
    case CT_I16:
      return *(const int16_t *)p;
    case CT_I32:
      return *(const int32_t *)p;
    case CT_I64:
      return *(const int64_t *)p;
    default:
      return *(const bool *)p;
  }
}
/* Stores a value as a kernel input of dt: floats round (halves via f32), integers wrap. */
static void store_in(char *p, ct_dtype dt, double v, int64_t i) {
  switch (dt) {
    case CT_F32:
      *(float *)p = (float)v;
      break;
    case CT_F64:
      *(double *)p = v;
      break;
    case CT_F16: {
      uint16_t h = ct_f32_to_f16((float)v);
      memcpy(p, &h, 2);
      break;
    }
    case CT_BF16: {
      uint16_t h = ct_f32_to_bf16((float)v);
      memcpy(p, &h, 2);
      break;
    }
    case CT_I8:
      *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)i;
      break;
    case CT_U8:
      *(uint8_t *)p = (uint8_t)(uint64_t)i;
      break;
    case CT_I16:
      *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)i;
      break;
    case CT_I32:
      *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)i;
      break;
    case CT_I64:
      *(int64_t *)p = i;
      break;
    default:
      *(bool *)p = i != 0;
      break;
  }
}

/* Same bits, or both nan in a floating dtype. */
static bool same(const char *a, const char *b, ct_dtype dt) {
  size_t es = ct_dtype_size(dt);
  if (memcmp(a, b, es) == 0) return true;
  if (!ct_dtype_is_floating(dt)) return false;
  double x = load_d(a, dt), y = load_d(b, dt);
  return x != x && y != y;
}

static bool fail(const char *what, int64_t i, const char *cpu_v, const char *gpu_v,
                 const char *want, ct_dtype dt) {
  nfail++;
  if (nfail <= 40)
    printf("  FAIL %s [%s] element %lld: cpu %.17g, cuda %.17g, formula %.17g\n", what,
           ct_dtype_name(dt), (long long)i, load_d(cpu_v, dt), load_d(gpu_v, dt),
           want ? load_d(want, dt) : NAN);
  return false;
}

/* Compares n outputs of dtype dt: cpu vs gpu, and both vs want (NULL: skip). */
static void compare(const char *what, ct_dtype dt, int64_t n, const char *c, const char *g,
                    const char *want) {
  ncases++;
  size_t es = ct_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) {
    const char *ci = c + i * es, *gi = g + i * es, *wi = want ? want + i * es : NULL;
    if (!same(ci, gi, dt) || (wi && (!same(ci, wi, dt) || !same(gi, wi, dt)))) {
      fail(what, i, ci, gi, wi, dt);
      return;
    }
  }
}

/* ---- Tensors on both devices --------------------------------------------------------- */

typedef struct pair {
  ct_tensor *c, *g;
} pair;

static pair make_pair(const void *host, int64_t n, ct_dtype dt) {
  ct_tensor_opts oc = {.dtype = dt}, og = {.dtype = dt, .device = gpu_dev};
  pair p = {ct_from_data(host, &n, 1, &oc), ct_from_data(host, &n, 1, &og)};
  if (!p.c || !p.g) {
    printf("cannot make inputs: %s\n", ct_last_error_message());
    exit(1);
  }
  return p;
}
static pair empty_pair(int64_t n, ct_dtype dt) {
  ct_tensor_opts oc = {.dtype = dt}, og = {.dtype = dt, .device = gpu_dev};
  return (pair){ct_empty(&n, 1, &oc), ct_empty(&n, 1, &og)};
}
static void free_pair(pair p) {
  ct_free(p.c);
  ct_free(p.g);
}
/* The host bytes of both (the GPU's through a synchronizing copy). */
static void fetch(pair p, char *c, char *g) {
  size_t bytes = (size_t)ct_numel(p.c) * ct_dtype_size(ct_dtype_of(p.c));
  if (ct_copy_to_host(p.c, c, bytes) != CT_OK || ct_copy_to_host(p.g, g, bytes) != CT_OK) {
    printf("cannot read results: %s\n", ct_last_error_message());
    exit(1);
  }
}
static void check_status(const char *what, ct_status a, ct_status b) {
  if (a != CT_OK || b != CT_OK) {
    printf("  FAIL %s: status cpu %d, cuda %d (%s)\n", what, (int)a, (int)b,
           ct_last_error_message());
    nfail++;
    ct_clear_error();
  }
}

static const ct_dtype float_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
static const ct_dtype int_dtypes[] = {CT_I8, CT_U8, CT_I16, CT_I32, CT_I64};

/* Inputs of dt as host bytes (n elements): floats from fv, integers from iv. */
static int64_t inputs(ct_dtype dt, const double *fv, const int64_t *iv, char *buf) {
  bool fl = ct_dtype_is_floating(dt);
  int64_t n = fl ? N_FLOAT : N_INT;
  for (int64_t i = 0; i < n; i++)
    store_in(buf + i * ct_dtype_size(dt), dt, fl ? fv[i] : 0, fl ? 0 : iv[i]);
  return n;
}

/* A floating formula result as dt's bytes: f32/f64 directly; halves computed
 * in f32 from their f32 value and rounded, as both backends do. */
static void put_float(char *p, ct_dtype dt, double v) { store_in(p, dt, v, 0); }
static float as_f32(const char *p, ct_dtype dt) { return (float)load_d(p, dt); }

/* ---- Unary ops and their derivatives ------------------------------------------------- */

typedef float (*uf_f32_fn)(float, float, float);
typedef double (*uf_f64_fn)(double, double, double);
#define X(E, n) [CT_UOP_##E] = ct_uf_##n##_f32,
static const uf_f32_fn uf_f32[CT_UOP_COUNT] = {CT_UNARY_FLOAT_OPS(X)};
#undef X
#define X(E, n) [CT_UOP_##E] = ct_uf_##n##_f64,
static const uf_f64_fn uf_f64[CT_UOP_COUNT] = {CT_UNARY_FLOAT_OPS(X)};
#undef X
typedef float (*ud_f32_fn)(float, float, float, float);
typedef double (*ud_f64_fn)(double, double, double, double);
#define X(E, n) [CT_UOP_##E] = ct_ud_##n##_f32,
static const ud_f32_fn ud_f32[CT_UOP_COUNT] = {CT_UNARY_GRADS(X)};
#undef X
#define X(E, n) [CT_UOP_##E] = ct_ud_##n##_f64,
static const ud_f64_fn ud_f64[CT_UOP_COUNT] = {CT_UNARY_GRADS(X)};
#undef X
#define X(E, n) [CT_UOP_##E] = (int)CT_UREADS_##E == (int)CT_READS_OUT ? R_OUT : R_IN,
enum { R_IN = 1, R_OUT = 2 };
static const int ud_reads[CT_UOP_COUNT] = {CT_UNARY_GRADS(X)};
#undef X
typedef bool (*up_f32_fn)(float);
typedef bool (*up_f64_fn)(double);
typedef bool (*up_i64_fn)(int64_t);
#define X(E, n) [CT_UOP_##E] = ct_up_##n##_f32,
static const up_f32_fn up_f32[CT_UOP_COUNT] = {CT_UNARY_PREDICATES(X)};
#undef X
#define X(E, n) [CT_UOP_##E] = ct_up_##n##_f64,
static const up_f64_fn up_f64[CT_UOP_COUNT] = {CT_UNARY_PREDICATES(X)};
#undef X
#define X(E, n) [CT_UOP_##E] = ct_up_##n##_i64,
static const up_i64_fn up_i64[CT_UOP_COUNT] = {CT_UNARY_PREDICATES(X)};
#undef X
typedef int64_t (*ui_i64_fn)(int64_t, int64_t, int64_t);
#define X(E, n) [CT_UOP_##E] = ct_ui_##n##_i64,
static const ui_i64_fn ui_i64[CT_UOP_COUNT] = {CT_UNARY_INT_OPS(X)};
#undef X
typedef bool (*ui_b8_fn)(bool, bool, bool);
#define X(E, n) [CT_UOP_##E] = ct_ui_##n##_b8,
static const ui_b8_fn ui_b8[CT_UOP_COUNT] = {CT_UNARY_INT_RULE_OPS(X)};
#undef X

static void unary_params(ct_unary_op op, double *p0, double *p1) {
  *p0 = op == CT_UOP_CLAMP ? -1.5 : op == CT_UOP_LEAKY_RELU ? 0.01 : 0;
  *p1 = op == CT_UOP_CLAMP ? 2.5 : 0;
}

static void unary_case(ct_unary_op op, ct_dtype dt, const double *fv, const int64_t *iv) {
  char in[N_FLOAT * 8], c[N_FLOAT * 8], g[N_FLOAT * 8], want[N_FLOAT * 8];
  bool pred = ct__unary_info[op].rule == CT_RULE_BOOL, fl = ct_dtype_is_floating(dt);
  ct_dtype odt = pred ? CT_BOOL : dt;
  int64_t n = inputs(dt, fv, iv, in);
  double p0, p1;
  unary_params(op, &p0, &p1);
  size_t es = ct_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) {
    const char *x = in + i * es;
    char *w = want + i * ct_dtype_size(odt);
    if (pred && dt == CT_F64)
      *(bool *)w = up_f64[op](load_d(x, dt));
    else if (pred)
      *(bool *)w = fl ? up_f32[op](as_f32(x, dt)) : up_i64[op](load_i(x, dt));
    else if (dt == CT_F64)
      put_float(w, dt, uf_f64[op](load_d(x, dt), p0, p1));
    else if (fl)
      put_float(w, dt, uf_f32[op](as_f32(x, dt), (float)p0, (float)p1));
    else if (dt == CT_BOOL)
      *(bool *)w = ui_b8[op](load_i(x, dt) != 0, false, false);
    else
      store_in(
          w, dt, 0,
          ui_i64[op](load_i(x, dt), ct_saturate_to_dtype(p0, dt), ct_saturate_to_dtype(p1, dt)));
  }
  pair x = make_pair(in, n, dt), o = empty_pair(n, odt);
  check_status(ct__unary_info[op].name, cpu->unary(op, o.c, x.c, p0, p1),
               gpu->unary(op, o.g, x.g, p0, p1));
  fetch(o, c, g);
  char what[64];
  snprintf(what, sizeof what, "unary %s", ct__unary_info[op].name);
  compare(what, odt, n, c, g, want);
  free_pair(x), free_pair(o);
}

static void unary_backward_case(ct_unary_op op, ct_dtype dt, const double *fv) {
  char xin[N_FLOAT * 8], gin[N_FLOAT * 8], yin[N_FLOAT * 8], c[N_FLOAT * 8], g[N_FLOAT * 8],
      want[N_FLOAT * 8];
  double gv[N_FLOAT];
  for (int i = 0; i < N_FLOAT; i++) gv[i] = i % 7 == 0 ? 1.0 : unif(-2, 2);
  inputs(dt, fv, NULL, xin);
  inputs(dt, gv, NULL, gin);
  double p0, p1;
  unary_params(op, &p0, &p1);
  size_t es = ct_dtype_size(dt);
  for (int64_t i = 0; i < N_FLOAT; i++) { /* y: the forward's output (the formula's) */
    double x = load_d(xin + i * es, dt);
    if (dt == CT_F64)
      put_float(yin + i * es, dt, uf_f64[op](x, p0, p1));
    else
      put_float(yin + i * es, dt, uf_f32[op]((float)x, (float)p0, (float)p1));
  }
  const char *vin = ud_reads[op] == R_OUT ? yin : xin;
  for (int64_t i = 0; i < N_FLOAT; i++) {
    double gi = load_d(gin + i * es, dt), v = load_d(vin + i * es, dt);
    if (dt == CT_F64)
      put_float(want + i * es, dt, ud_f64[op](gi, v, p0, p1));
    else
      put_float(want + i * es, dt, ud_f32[op]((float)gi, (float)v, (float)p0, (float)p1));
  }
  pair x = make_pair(xin, N_FLOAT, dt), y = make_pair(yin, N_FLOAT, dt),
       go = make_pair(gin, N_FLOAT, dt);
  pair gx = empty_pair(N_FLOAT, dt);
  check_status(ct__unary_info[op].name, cpu->unary_backward(op, gx.c, go.c, x.c, y.c, p0, p1),
               gpu->unary_backward(op, gx.g, go.g, x.g, y.g, p0, p1));
  fetch(gx, c, g);
  char what[64];
  snprintf(what, sizeof what, "unary backward %s", ct__unary_info[op].name);
  compare(what, dt, N_FLOAT, c, g, want);
  free_pair(x), free_pair(y), free_pair(go), free_pair(gx);
}

/* ---- Binary ops ------------------------------------------------------------------------ */

typedef float (*bf_f32_fn)(float, float);
typedef double (*bf_f64_fn)(double, double);
#define X(E, n) [CT_BOP_##E] = ct_bf_##n##_f32,
static const bf_f32_fn bf_f32[CT_BOP_COUNT] = {CT_BINARY_FLOAT_OPS(X)};
#undef X
#define X(E, n) [CT_BOP_##E] = ct_bf_##n##_f64,
static const bf_f64_fn bf_f64[CT_BOP_COUNT] = {CT_BINARY_FLOAT_OPS(X)};
#undef X

/* A binary op over every (a, b) pair of the inputs (N x N elements); integer
 * divisors and exponents that are errors are replaced by 1 (their reporting is
 * tested elsewhere). scalar: b is the scalar s instead (a op s, and s op a). */
static void binary_case(ct_binary_op op, ct_dtype dt, const double *fv, const int64_t *iv) {
  bool fl = ct_dtype_is_floating(dt), cmp = ct__binary_info[op].rule == CT_BRULE_COMPARE;
  int64_t m = fl ? 40 : 24, n = m * m; /* the first m inputs, special values included */
  ct_dtype odt = cmp ? CT_BOOL : dt;
  size_t es = ct_dtype_size(dt), os = ct_dtype_size(odt);
  char *a = malloc((size_t)n * 8), *b = malloc((size_t)n * 8), *c = malloc((size_t)n * 8),
       *g = malloc((size_t)n * 8), *want = malloc((size_t)n * 8);
  bool checked = !fl && (op == CT_BOP_FLOOR_DIVIDE || op == CT_BOP_REMAINDER || op == CT_BOP_FMOD ||
                         op == CT_BOP_POW);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < m; j++) {
      int64_t k = i * m + j, bj = iv[j], yw = ct_wrap_to_dtype(bj, dt);
      if (checked && (yw == 0 || (op == CT_BOP_POW && yw < 0))) bj = 1;
      store_in(a + k * es, dt, fl ? fv[i] : 0, fl ? 0 : iv[i]);
      store_in(b + k * es, dt, fl ? fv[j] : 0, bj);
      double x = load_d(a + k * es, dt), y = load_d(b + k * es, dt);
      if (fl && !cmp) {
        if (dt == CT_F64)
          put_float(want + k * os, dt, bf_f64[op](x, y));
        else
          put_float(want + k * os, dt, bf_f32[op]((float)x, (float)y));
      }
    }
  pair pa = make_pair(a, n, dt), pb = make_pair(b, n, dt), o = empty_pair(n, odt);
  check_status(ct__binary_info[op].name, cpu->binary(op, o.c, pa.c, pb.c),
               gpu->binary(op, o.g, pa.g, pb.g));
  fetch(o, c, g);
  char what[64];
  snprintf(what, sizeof what, "binary %s", ct__binary_info[op].name);
  compare(what, odt, n, c, g, fl && !cmp ? want : NULL);
  /* the scalar forms: a op s and s op a for a few scalars (saturated and
   * wrapped into integer dtypes, core/convert.h) */
  static const double scalars[] = {2.5, -3.0, 1e300, -7.0};
  for (int s = 0; s < 4; s++)
    for (int rev = 0; rev < 2; rev++) {
      if (checked && (rev || ct_scalar_to_int(scalars[s], dt) <= 0)) continue;
      check_status(what, cpu->binary_scalar(op, o.c, pa.c, scalars[s], rev),
                   gpu->binary_scalar(op, o.g, pa.g, scalars[s], rev));
      fetch(o, c, g);
      char sw[160];
      snprintf(sw, sizeof sw, "%s with scalar %g%s", what, scalars[s], rev ? " (reversed)" : "");
      compare(sw, odt, n, c, g, NULL);
    }
  free_pair(pa), free_pair(pb), free_pair(o);
  free(a), free(b), free(c), free(g), free(want);
}

static void axpy_case(ct_dtype dt, const double *fv, const int64_t *iv) {
  char a[N_FLOAT * 8], b[N_FLOAT * 8], c[N_FLOAT * 8], g[N_FLOAT * 8], want[N_FLOAT * 8];
  int64_t n = inputs(dt, fv, iv, a);
  for (int64_t i = 0; i < n; i++)
    store_in(b + i * ct_dtype_size(dt), dt, fv[(i * 7) % N_FLOAT], iv[(i * 5) % N_INT]);
  double alpha = ct_dtype_is_floating(dt) ? -0.37 : 3.0;
  size_t es = ct_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) {
    double x = load_d(a + i * es, dt), y = load_d(b + i * es, dt);
    if (dt == CT_F64)
      put_float(want + i * es, dt, ct_bf_axpy_f64(x, y, alpha));
    else if (ct_dtype_is_floating(dt))
      put_float(want + i * es, dt, ct_bf_axpy_f32((float)x, (float)y, (float)alpha));
    else
      store_in(want + i * es, dt, 0,
               ct_bi_axpy_i64(load_i(a + i * es, dt), load_i(b + i * es, dt), 3));
  }
  pair pa = make_pair(a, n, dt), pb = make_pair(b, n, dt), o = empty_pair(n, dt);
  check_status("axpy", cpu->axpy(o.c, pa.c, pb.c, alpha), gpu->axpy(o.g, pa.g, pb.g, alpha));
  fetch(o, c, g);
  compare("axpy", dt, n, c, g, want);
  free_pair(pa), free_pair(pb), free_pair(o);
}

/* ---- Saturating conversions: casts and fills into integers ------------------------------ */

static void convert_case(ct_dtype src, ct_dtype dst, const double *fv) {
  char in[N_FLOAT * 8], c[N_FLOAT * 8], g[N_FLOAT * 8], want[N_FLOAT * 8];
  inputs(src, fv, NULL, in);
  size_t es = ct_dtype_size(src), ds = ct_dtype_size(dst);
  for (int64_t i = 0; i < N_FLOAT; i++) /* through int64, saturated, then wrapped */
    store_in(want + i * ds, dst, 0, ct_f64_to_i64(load_d(in + i * es, src)));
  pair x = make_pair(in, N_FLOAT, src), o = empty_pair(N_FLOAT, dst);
  check_status("copy", cpu->copy(o.c, x.c), gpu->copy(o.g, x.g));
  fetch(o, c, g);
  char what[64];
  snprintf(what, sizeof what, "cast %s to %s", ct_dtype_name(src), ct_dtype_name(dst));
  compare(what, dst, N_FLOAT, c, g, want);
  static const double fills[] = {NAN, INFINITY, -1e300, 3.7, -3.7, 300.0, 0.5};
  for (int f = 0; f < 7; f++) {
    check_status("fill", cpu->fill(o.c, fills[f]), gpu->fill(o.g, fills[f]));
    fetch(o, c, g);
    for (int64_t i = 0; i < N_FLOAT; i++) ct__store_from_double(want + i * ds, dst, fills[f]);
    snprintf(what, sizeof what, "fill %s with %g", ct_dtype_name(dst), fills[f]);
    compare(what, dst, N_FLOAT, c, g, want);
  }
  free_pair(x), free_pair(o);
}

/* ---- Optimizers ---------------------------------------------------------------------------- */

static void optim_case(ct_optim_params p, ct_dtype dt, bool has_buf, bool amsgrad) {
  int64_t n = N_FLOAT;
  size_t es = ct_dtype_size(dt);
  char w[N_FLOAT * 8], gr[N_FLOAT * 8], s[3][N_FLOAT * 8], c[N_FLOAT * 8], g[N_FLOAT * 8];
  double wv[N_FLOAT], gv[N_FLOAT], sv[3][N_FLOAT];
  for (int i = 0; i < N_FLOAT; i++) {
    wv[i] = unif(-2, 2), gv[i] = i == 3 ? NAN : i == 4 ? INFINITY : unif(-1, 1);
    sv[0][i] = unif(-1, 1), sv[1][i] = unif(0, 1), sv[2][i] = i == 5 ? NAN : unif(0, 1.5);
  }
  inputs(dt, wv, NULL, w);
  inputs(dt, gv, NULL, gr);
  for (int k = 0; k < 3; k++) inputs(dt, sv[k], NULL, s[k]);
  p.amsgrad = amsgrad;
  int nstate = p.kind == CT_OPTIM_SGD ? (has_buf ? 1 : 0) : (amsgrad ? 3 : 2);
  pair pw = make_pair(w, n, dt), pg = make_pair(gr, n, dt), ps[3] = {{0}};
  for (int k = 0; k < nstate; k++) ps[k] = make_pair(s[k], n, dt);
  ct_tensor *sc[3] = {ps[0].c, ps[1].c, ps[2].c}, *sg[3] = {ps[0].g, ps[1].g, ps[2].g};
  ct_tensor *const *st_c[3] = {nstate > 0 ? &sc[0] : NULL, nstate > 1 ? &sc[1] : NULL,
                               nstate > 2 ? &sc[2] : NULL};
  ct_tensor *const *st_g[3] = {nstate > 0 ? &sg[0] : NULL, nstate > 1 ? &sg[1] : NULL,
                               nstate > 2 ? &sg[2] : NULL};
  check_status("optimizer_step",
               cpu->optimizer_step(&p, &pw.c, &pg.c, st_c[0], st_c[1], st_c[2], 1),
               gpu->optimizer_step(&p, &pw.g, &pg.g, st_g[0], st_g[1], st_g[2], 1));
  /* the formula here, element by element */
  char want[4][N_FLOAT * 8];
  memcpy(want[0], w, (size_t)n * es);
  for (int k = 0; k < 3; k++) memcpy(want[k + 1], s[k], (size_t)n * es);
  if (dt == CT_F32) {
    ct_optim_consts_f32 k = ct_optim_consts_of_f32(&p);
    float *pw_ = (float *)want[0], *g_ = (float *)gr, *s0 = (float *)want[1],
          *s1 = (float *)want[2], *s2 = (float *)want[3];
    for (int64_t i = 0; i < n; i++)
      pw_[i] = p.kind == CT_OPTIM_SGD
                   ? ct_sgd_update_f32(&k, pw_[i], g_[i], has_buf ? &s0[i] : NULL)
                   : ct_adam_update_f32(&k, pw_[i], g_[i], &s0[i], &s1[i], amsgrad ? &s2[i] : NULL);
  } else {
    ct_optim_consts_f64 k = ct_optim_consts_of_f64(&p);
    double *pw_ = (double *)want[0], *g_ = (double *)gr, *s0 = (double *)want[1],
           *s1 = (double *)want[2], *s2 = (double *)want[3];
    for (int64_t i = 0; i < n; i++)
      pw_[i] = p.kind == CT_OPTIM_SGD
                   ? ct_sgd_update_f64(&k, pw_[i], g_[i], has_buf ? &s0[i] : NULL)
                   : ct_adam_update_f64(&k, pw_[i], g_[i], &s0[i], &s1[i], amsgrad ? &s2[i] : NULL);
  }
  const char *kind = p.kind == CT_OPTIM_SGD ? "sgd" : p.kind == CT_OPTIM_ADAM ? "adam" : "adamw";
  char what[96];
  fetch(pw, c, g);
  snprintf(what, sizeof what, "%s%s%s parameters", kind, has_buf ? " momentum" : "",
           amsgrad ? " amsgrad" : "");
  compare(what, dt, n, c, g, want[0]);
  for (int k = 0; k < nstate; k++) {
    fetch(ps[k], c, g);
    snprintf(what, sizeof what, "%s state %d", kind, k);
    compare(what, dt, n, c, g, want[k + 1]);
    free_pair(ps[k]);
  }
  free_pair(pw), free_pair(pg);
}

/* ---- Reductions: plans and folds (the results that don't depend on the order) ------------ */

static void reduce_case(ct_reduce_op op, ct_dtype dt, const double *fv, const int64_t *iv) {
  char in[N_FLOAT * 8], c[64], g[64];
  int64_t n = inputs(dt, fv, iv, in);
  bool fl = ct_dtype_is_floating(dt);
  ct_dtype odt = op == CT_ROP_ALL || op == CT_ROP_ANY ? CT_BOOL
                 : !fl && op == CT_ROP_SUM            ? CT_I64
                                                      : dt;
  /* 4 rows of n/4 (rows with a nan or an inf, and rows without) */
  int64_t shape[2] = {4, n / 4}, oshape[2] = {4, 1};
  ct_tensor_opts oc = {.dtype = dt}, og = {.dtype = dt, .device = gpu_dev};
  ct_tensor *xc = ct_from_data(in, shape, 2, &oc), *xg = ct_from_data(in, shape, 2, &og);
  ct_tensor_opts ooc = {.dtype = odt}, oog = {.dtype = odt, .device = gpu_dev};
  pair o = {ct_empty(oshape, 2, &ooc), ct_empty(oshape, 2, &oog)};
  bool mask[2] = {false, true};
  check_status(ct__reduce_names[op], cpu->reduce(op, o.c, xc, mask, 0),
               gpu->reduce(op, o.g, xg, mask, 0));
  fetch(o, c, g);
  char what[64];
  snprintf(what, sizeof what, "reduce %s", ct__reduce_names[op]);
  compare(what, odt, 4, c, g, NULL);
  /* argmax / argmin: the indices */
  ct_tensor_opts ic = {.dtype = CT_I64}, ig = {.dtype = CT_I64, .device = gpu_dev};
  pair idx = {ct_empty(oshape, 2, &ic), ct_empty(oshape, 2, &ig)};
  bool is_max = op != CT_ROP_MIN;
  check_status("arg_reduce", cpu->arg_reduce(is_max, NULL, idx.c, xc, 1),
               gpu->arg_reduce(is_max, NULL, idx.g, xg, 1));
  fetch(idx, c, g);
  snprintf(what, sizeof what, "%s indices", is_max ? "argmax" : "argmin");
  compare(what, CT_I64, 4, c, g, NULL);
  ct_free(xc), ct_free(xg), free_pair(o), free_pair(idx);
}

/* ---- Upsampling: the positions and weights of core/interp_math.h ---------------------- */

/* interpolate's forward from x (1, 2, 5, 7): the CPU's tabulated taps and the
 * GPU's per-element ones (same formulas, same blend order) give the same
 * bits; scales that are not the sizes' ratio, as a kept scale factor gives. */
static void upsample_case(ct_interp_kind kind, bool align, ct_dtype dt, const double *fv) {
  int64_t xs[4] = {1, 2, 5, 7}, os[4] = {1, 2, 8, 13}, nx = 70, no = 2 * 8 * 13;
  ct_interp_params p = {{5, 8, 1 / 1.7, kind, align}, {7, 13, 1 / 1.9, kind, align}};
  if (align) p.h.scale = 4.0 / 7.0, p.w.scale = 6.0 / 12.0;
  char buf[70 * 8], *c = malloc((size_t)no * 8), *g = malloc((size_t)no * 8);
  for (int64_t i = 0; i < nx; i++) put_float(buf + i * ct_dtype_size(dt), dt, fv[i + 20]);
  ct_tensor_opts oc = {.dtype = dt}, og = {.dtype = dt, .device = gpu_dev};
  pair x = {ct_from_data(buf, xs, 4, &oc), ct_from_data(buf, xs, 4, &og)};
  pair o = {ct_empty(os, 4, &oc), ct_empty(os, 4, &og)};
  char what[64];
  snprintf(what, sizeof what, "upsample2d kind %d%s %s", (int)kind, align ? " aligned" : "",
           ct_dtype_name(dt));
  if (!x.c || !x.g || !o.c || !o.g || !c || !g) {
    printf("cannot make inputs: %s\n", ct_last_error_message());
    exit(1);
  }
  check_status(what, cpu->upsample2d(o.c, x.c, &p), gpu->upsample2d(o.g, x.g, &p));
  fetch(o, c, g);
  compare(what, dt, no, c, g, NULL);
  free_pair(x), free_pair(o), free(c), free(g);
}

int main(void) {
  cpu = ct__backend(CT_DEVICE_CPU);
  gpu = ct__backend(CT_DEVICE_CUDA);
  if (!gpu || !ct_cuda_is_available()) {
    printf("backend formulas: no (emulated) GPU: skipped\n");
    return 77;
  }
  gpu_dev = ct_cuda(0);
  double fv[N_FLOAT];
  int64_t iv[N_INT];
  float_inputs(fv);
  int_inputs(iv);
  for (int op = 0; op < CT_UOP_COUNT; op++) {
    bool pred = ct__unary_info[op].rule == CT_RULE_BOOL;
    for (int d = 0; d < 4; d++)
      if (uf_f32[op] || pred) unary_case((ct_unary_op)op, float_dtypes[d], fv, iv);
    for (int d = 0; d < 5; d++)
      if (ui_i64[op] || pred) unary_case((ct_unary_op)op, int_dtypes[d], fv, iv);
    if (pred || ui_b8[op]) unary_case((ct_unary_op)op, CT_BOOL, fv, iv);
    for (int d = 0; d < 4; d++)
      if (ud_f32[op]) unary_backward_case((ct_unary_op)op, float_dtypes[d], fv);
  }
  for (int op = 0; op < CT_BOP_COUNT; op++) {
    bool cmp = ct__binary_info[op].rule == CT_BRULE_COMPARE,
         fl_only = ct__binary_info[op].rule == CT_BRULE_FLOAT,
         int_only = ct__binary_info[op].rule == CT_BRULE_INT; /* bitwise: no float kernels */
    for (int d = 0; d < 4 && !int_only; d++) binary_case((ct_binary_op)op, float_dtypes[d], fv, iv);
    for (int d = 0; d < 5 && !fl_only; d++) binary_case((ct_binary_op)op, int_dtypes[d], fv, iv);
    if (cmp || op == CT_BOP_ADD || op == CT_BOP_MUL || op == CT_BOP_MAXIMUM || op == CT_BOP_MINIMUM)
      binary_case((ct_binary_op)op, CT_BOOL, fv, iv);
  }
  for (int d = 0; d < 4; d++) axpy_case(float_dtypes[d], fv, iv);
  for (int d = 0; d < 5; d++) axpy_case(int_dtypes[d], fv, iv);
  axpy_case(CT_BOOL, fv, iv);
  for (int s = 0; s < 4; s++)
    for (int d = 0; d < 5; d++) convert_case(float_dtypes[s], int_dtypes[d], fv);
  for (int d = 0; d < 2; d++) {
    ct_dtype dt = float_dtypes[d];
    ct_optim_params sgd = {
        .kind = CT_OPTIM_SGD, .lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 1e-2};
    optim_case(sgd, dt, false, false);
    optim_case(sgd, dt, true, false);
    sgd.nesterov = true, sgd.dampening = 0;
    optim_case(sgd, dt, true, false);
    sgd.first_step = true;
    optim_case(sgd, dt, true, false);
    ct_optim_params adam = {.kind = CT_OPTIM_ADAM,
                            .lr = 1e-3,
                            .beta1 = 0.9,
                            .beta2 = 0.999,
                            .eps = 1e-8,
                            .weight_decay = 1e-2,
                            .step = 3};
    optim_case(adam, dt, false, false);
    optim_case(adam, dt, false, true);
    adam.kind = CT_OPTIM_ADAMW;
    optim_case(adam, dt, false, false);
    optim_case(adam, dt, false, true);
  }
  static const ct_reduce_op exact[] = {CT_ROP_MAX, CT_ROP_MIN, CT_ROP_ALL, CT_ROP_ANY};
  for (int r = 0; r < 4; r++) {
    for (int d = 0; d < 4; d++) reduce_case(exact[r], float_dtypes[d], fv, iv);
    for (int d = 0; d < 5; d++) reduce_case(exact[r], int_dtypes[d], fv, iv);
  }
  for (int d = 0; d < 5; d++) reduce_case(CT_ROP_SUM, int_dtypes[d], fv, iv); /* wraps: exact */
  for (int d = 0; d < 4; d++) {
    upsample_case(CT_INTERP_KIND_NEAREST, false, float_dtypes[d], fv);
    upsample_case(CT_INTERP_KIND_NEAREST_EXACT, false, float_dtypes[d], fv);
    upsample_case(CT_INTERP_KIND_LINEAR, false, float_dtypes[d], fv);
    upsample_case(CT_INTERP_KIND_LINEAR, true, float_dtypes[d], fv);
  }
  printf(
      "backend formulas, CPU vs emulated GPU vs the formula (CPU emulation, not a GPU run): %ld "
      "cases, "
      "%ld failures\n",
      ncases, nfail);
  return nfail ? 1 : 0;
}
