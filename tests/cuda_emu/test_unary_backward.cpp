/* ct__cuda_unary_backward (unary_backward.cu) under the emulator: every op's
 * fused gradient grad_x = grad_out * d op/dx against a double-precision host
 * reference of the formulas of backend/cpu/unary_backward.c, f32/f64/f16/bf16;
 * the vector path (contiguous, aligned; every start within 16 bytes) and the
 * generic strided kernel (misaligned phases between operands, permuted,
 * gapped, flipped layouts, broadcast grad_out and x/y), zeros and the clamp
 * bounds themselves (the derivative's branches). */
#include <algorithm>

#include "emu_test.h"

using namespace et;

static double tol(int dt) {
  return dt == CT_F64 ? 1e-12 : dt == CT_F32 ? 2e-5 : dt == CT_F16 ? 2e-3 : 1.6e-2;
}

/* Whether the derivative reads the output: the op table's READS column. */
static bool reads_y(int op) {
  switch (op) {
#define X(E, n, r, api, READS, ...) \
    case CT_UOP_##E: return (int)CT_READS_##READS == (int)CT_READS_OUT;
    CT_UNARY_OPS(X)
#undef X
    default: return false;
  }
}

/* y = op(x) (only the ops whose gradient reads y) */
static double fwd(int op, double x) {
  switch (op) {
    case CT_UOP_EXP: return exp(x);
    case CT_UOP_EXPM1: return expm1(x);
    case CT_UOP_EXP2: return exp2(x);
    case CT_UOP_SQRT: return sqrt(x);
    case CT_UOP_RSQRT: return 1 / sqrt(x);
    case CT_UOP_TAN: return tan(x);
    case CT_UOP_TANH: return tanh(x);
    case CT_UOP_SIGMOID: return 1 / (1 + exp(-x));
    case CT_UOP_RECIPROCAL: return 1 / x;
    case CT_UOP_RELU: return x > 0 ? x : 0;
    default: return 0;
  }
}

/* The CPU's formula in double; *mag: the size of its terms (cancellations) */
static double deriv(int op, double g, double x, double y, double p0, double p1, double *mag) {
  double ag = fabs(g);
  *mag = 0;
  switch (op) {
    case CT_UOP_NEG: return -g;
    case CT_UOP_ABS: return x > 0 ? g : x < 0 ? -g : 0;
    case CT_UOP_EXP: return g * y;
    case CT_UOP_EXPM1: *mag = ag * (fabs(y) + 1); return g * (y + 1);
    case CT_UOP_LOG: return g / x;
    case CT_UOP_LOG1P: return g / (x + 1);
    case CT_UOP_LOG2: return g / (x * 0.69314718055994530942);
    case CT_UOP_SQRT: return g / (2 * y);
    case CT_UOP_RSQRT: return -0.5 * g * y * y * y;
    case CT_UOP_SIN: *mag = ag * 4 * fabs(x); return g * cos(x); /* the argument's rounding */
    case CT_UOP_COS: *mag = ag * 4 * fabs(x); return -g * sin(x);
    case CT_UOP_TAN: return g * (1 + y * y);
    case CT_UOP_TANH: *mag = ag * (1 + y * y); return g * (1 - y * y);
    case CT_UOP_ERF: *mag = ag * 4 * x * x * exp(-x * x); return g * 1.12837916709551257390 * exp(-x * x);
    case CT_UOP_SIGMOID: *mag = ag * fabs(y) * (1 + fabs(y)); return g * y * (1 - y);
    case CT_UOP_RELU: return y > 0 ? g : 0; /* reads y: y > 0 exactly where x > 0 */
    case CT_UOP_GELU: {
      double cdf = 0.5 * (1 + erf(x * 0.70710678118654752440));
      double pdf = exp(-0.5 * x * x) * 0.39894228040143267794;
      *mag = ag * (1 + fabs(x) * pdf * (1 + x * x));
      return g * (cdf + x * pdf);
    }
    case CT_UOP_GELU_TANH: {
      const double k = 0.79788456080286535588, c = 0.044715;
      double th = tanh(k * (x + c * x * x * x));
      double dinner = k * (1 + 3 * c * x * x);
      *mag = ag * (1 + fabs(x) * (1 + th * th) * dinner * (1 + fabs(x)));
      return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * dinner);
    }
    case CT_UOP_SILU: {
      double s = 1 / (1 + exp(-x));
      *mag = ag * s * (1 + fabs(x) * (2 + s));
      return g * s * (1 + x * (1 - s));
    }
    case CT_UOP_SOFTPLUS: return x > 20 ? g : g / (1 + exp(-x));
    case CT_UOP_RECIPROCAL: return -g * y * y;
    case CT_UOP_SQUARE: return 2 * g * x;
    case CT_UOP_CLAMP: return (x >= p0 && x <= p1) ? g : 0;
    case CT_UOP_LEAKY_RELU: return x > 0 ? g : g * p0;
    case CT_UOP_LOG10: return g / (x * 2.30258509299404568402);
    case CT_UOP_EXP2: *mag = ag * fabs(y); return g * y * 0.69314718055994530942;
    case CT_UOP_SINH: return g * cosh(x);
    case CT_UOP_COSH: return g * sinh(x);
    case CT_UOP_ATANH: return g / (1 - x * x);
    case CT_UOP_ATAN: return g / (1 + x * x);
    case CT_UOP_ASINH: return g / sqrt(x * x + 1);
    case CT_UOP_ASIN: return g / sqrt(1 - x * x);
    case CT_UOP_ACOSH: return g / sqrt(x * x - 1);
    case CT_UOP_ACOS: return -g / sqrt(1 - x * x);
    default: return 0; /* floor, ceil, round, trunc, sign */
  }
}

/* Every op with a derivative: the op table's view. */
#define X(E, n) CT_UOP_##E,
static const int kOps[] = {CT_UNARY_GRADS(X)};
#undef X
static const int kNops = (int)(sizeof kOps / sizeof kOps[0]);

static long nvec, ngeneric;

/* x in the op's domain (halves: representable values) */
static double draw_x(int op, double p0, double p1) {
  switch (op) {
    case CT_UOP_LOG: case CT_UOP_LOG2: case CT_UOP_SQRT: case CT_UOP_RSQRT: return unif(0.05, 8);
    case CT_UOP_LOG1P: return unif(-0.9, 8);
    case CT_UOP_TAN: return unif(-1.4, 1.4);
    case CT_UOP_RECIPROCAL: return (coin(2) ? 1 : -1) * unif(0.1, 8);
    case CT_UOP_SOFTPLUS: return coin(8) ? (coin(2) ? 20 : unif(19, 30)) : unif(-8, 8);
    case CT_UOP_CLAMP: return coin(4) ? (coin(2) ? p0 : p1) : unif(-4, 4);
    case CT_UOP_ABS: case CT_UOP_RELU: case CT_UOP_LEAKY_RELU: return coin(6) ? 0.0 : unif(-4, 4);
    case CT_UOP_ACOS: return unif(-0.9, 0.9);
    case CT_UOP_ACOSH: return unif(1.1, 8);
    case CT_UOP_ASIN: return unif(-0.9, 0.9);
    case CT_UOP_ASINH: return unif(-4, 4);
    case CT_UOP_ATAN: return unif(-4, 4);
    case CT_UOP_ATANH: return unif(-0.9, 0.9);
    case CT_UOP_COSH: return unif(-4, 4);
    case CT_UOP_SINH: return unif(-4, 4);
    case CT_UOP_LOG10: return unif(0.05, 8);
    default: return unif(-4, 4);
  }
}

/* contiguous (vector path) when !strided, else random layouts and phases */
static void one(int op, int dt, const std::vector<int64_t> &shape, bool strided, bool scalar_g,
                const char *tag) {
  double p0 = 0, p1 = 0;
  if (op == CT_UOP_CLAMP) p0 = -(double)rnd(0, 8) * 0.25, p1 = p0 + (double)rnd(0, 12) * 0.25;
  if (op == CT_UOP_LEAKY_RELU) p0 = coin(2) ? 0.01 : unif(-2, 2);
  bool use_y = reads_y(op);
  Tensor gx, g, x;
  Layout lgx, lg, lx;
  int vecn = 16 / es(dt);
  /* contiguous: all 16-byte aligned (the vector path), or misaligned starts
   * and phases between operands (the generic kernel) */
  bool aligned = !strided && coin(2);
  if (!strided && !aligned) {
    lgx.off = rnd(0, vecn - 1);
    lg.off = coin(4) ? rnd(0, vecn - 1) : lgx.off;
    lx.off = coin(4) ? rnd(0, vecn - 1) : lgx.off;
  } else if (strided) {
    random_layout(lgx, dt, false);
    random_layout(lg, dt, true);
    random_layout(lx, dt, true);
    if (coin(3)) { /* broadcast grad_out: every dim expanded, or a row */
      lg.expand = true;
    }
  }
  make(gx, dt, shape, lgx);
  make(g, dt, shape, lg);
  if (scalar_g) { /* one grad_out element broadcast to the whole shape */
    make(g, dt, {1}, lg);
    g.d.ndim = (int)shape.size();
    for (int k = 0; k < g.d.ndim; k++) g.d.shape[k] = shape[(size_t)k], g.d.strides[k] = 0;
    g.d.numel = gx.numel();
  }
  make(x, dt, shape, lx);
  int64_t N = gx.numel();
  /* expanded inputs: the same element is written more than once; fill then read back */
  for (int64_t i = 0; i < N; i++) store_d(g.at(i), dt, coin(10) ? 0.0 : unif(-2, 2));
  for (int64_t i = 0; i < N; i++) {
    double xv = draw_x(op, p0, p1);
    store_d(x.at(i), dt, use_y ? fwd(op, round_to(dt, xv)) : xv);
  }
  g.snapshot();
  x.snapshot();
  gx.snapshot();
  double q0 = dt == CT_F64 ? p0 : (double)(float)p0, q1 = dt == CT_F64 ? p1 : (double)(float)p1;
  long v0 = emu::launches("ctc_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  emu::clear_message();
  /* the saved tensor the op does not read: a null-data descriptor */
  Tensor unused;
  make(unused, dt, shape, Layout{});
  unused.snapshot();
  ct_status s = ct__cuda_unary_backward((ct_unary_op)op, ct(&gx.d), ct(&g.d),
                                        use_y ? ct(&unused.d) : ct(&x.d),
                                        use_y ? ct(&x.d) : ct(&unused.d), p0, p1);
  ncases++;
  bool vec = emu::launches("ctc_vec_kernel") > v0;
  if (vec) nvec++;
  if (emu::launches("ctc_ew_kernel") > g0) ngeneric++;
  long fails = nfail;
  if (s != CT_OK) failf("%s: status %d (%s)", tag, (int)s, emu::last_message());
  emu_clean(tag);
  if (!strided) { /* the vector path iff every operand (but a broadcast scalar) is 16-byte aligned */
    bool want_vec = (uintptr_t)gx.d.data % 16 == 0 && (uintptr_t)x.d.data % 16 == 0 &&
                    (scalar_g || (uintptr_t)g.d.data % 16 == 0);
    if (want_vec != vec && fails == nfail)
      failf("%s: %s", tag, vec ? "misaligned operands took the vector kernel"
                               : "aligned contiguous operands, no vector kernel");
  }
  for (int64_t i = 0; i < N && nfail == fails; i++) {
    double gv = g.get_d(i), xv = x.get_d(i), mag;
    double w = deriv(op, gv, use_y ? 0 : xv, use_y ? xv : 0, q0, q1, &mag);
    double got = gx.get_d(i);
    double sc = std::max(fabs(w), mag);
    bool ok = w != w ? got != got
                     : (got == w || fabs(got - w) <= tol(dt) * sc + (dt == CT_F16 ? 6e-8 : 1e-37));
    if (!ok)
      failf("%s: [%ld] = %.9g, want %.9g (g %.9g, %s %.9g, p0 %g p1 %g)", tag, (long)i, got, w, gv,
            use_y ? "y" : "x", xv, p0, p1);
  }
  std::string ch;
  if ((ch = gx.changed(false)) != "") failf("%s: grad_x: %s", tag, ch.c_str());
  if ((ch = g.changed(true)) != "") failf("%s: grad_out: %s", tag, ch.c_str());
  if ((ch = x.changed(true)) != "") failf("%s: x/y: %s", tag, ch.c_str());
  if ((ch = unused.changed(true)) != "") failf("%s: the unread saved tensor: %s", tag, ch.c_str());
  if (nfail != fails)
    printf("   gx=%s g=%s %s=%s sms=%d\n", shape_str(gx.d).c_str(), shape_str(g.d).c_str(),
           use_y ? "y" : "x", shape_str(x.d).c_str(), emu::sm_count);
}

int run_unary_backward(void) {
  Suite su("unary_backward.cu: fused gradients of the unary ops");
  const int dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
  char tag[96];
  int reps = full ? 4 : 1;
  for (int rep = 0; rep < reps; rep++)
    for (int k = 0; k < kNops; k++)
      for (int dt : dts) {
        int op = kOps[k];
        /* vector path: lengths around the vector width (tails) and a long one */
        for (int64_t n : {(int64_t)rnd(1, 40), (int64_t)rnd(41, 300), (int64_t)rnd(1000, 5000)}) {
          emu::sm_count = (int)rnd(1, 4);
          snprintf(tag, sizeof tag, "op %d %s contiguous n%ld", op, dname(dt), (long)n);
          one(op, dt, {n}, false, coin(6), tag);
        }
        /* generic: random shapes and layouts */
        for (int it = 0; it < 3; it++) {
          int nd = (int)rnd(1, 3);
          std::vector<int64_t> shape((size_t)nd);
          for (auto &d : shape) d = coin(4) ? 1 : rnd(1, 17);
          emu::sm_count = (int)rnd(1, 4);
          snprintf(tag, sizeof tag, "op %d %s strided #%d", op, dname(dt), it);
          one(op, dt, shape, true, coin(6), tag);
        }
      }
  /* a non-floating dtype: an error, nothing written */
  {
    Tensor gx, g, x;
    make(gx, CT_I32, {5}, Layout{});
    make(g, CT_I32, {5}, Layout{});
    make(x, CT_I32, {5}, Layout{});
    gx.snapshot();
    emu::clear_message();
    ct_status s =
        ct__cuda_unary_backward(CT_UOP_NEG, ct(&gx.d), ct(&g.d), ct(&x.d), ct(&x.d), 0, 0);
    ncases++;
    if (s == CT_OK) failf("unary backward of i32: status OK, want an error");
    emu_clean("unary backward i32");
    std::string ch;
    if ((ch = gx.changed(true)) != "") failf("unary backward i32: %s", ch.c_str());
  }
  printf("  paths: vector %ld, generic %ld cases\n", nvec, ngeneric);
  return su.end("unary_backward.cu");
}
