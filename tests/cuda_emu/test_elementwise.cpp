/* The elementwise kernels of common.cuh (the 16-byte vector kernel and the
 * generic strided one) through binary.cu, unary.cu and copy.cu, under the
 * emulator, against host references: every binary op (tensor-tensor and
 * tensor-scalar, both orders) and unary op over every dtype it takes, axpy,
 * where, casts between every pair of dtypes, fills. Layouts: contiguous and
 * aligned (the vector path, sizes with and without a tail), misaligned
 * starts, broadcast scalars, strided/permuted/flipped/expanded operands.
 * Integer division by zero and negative integer powers must leave 0 and
 * raise the fault that the next ctc_fault_check reports (fault.cu). */
#include <algorithm>

#include "emu_test.h"

using namespace et;

ct_status ctc_fault_check(int dev); /* fault.cu */

static long nvec, ngeneric, nfaults;

/* ---- Values ---- */
static double float_value(int dt, int kind) {
  switch (kind) {
    case 0:
      return unif(-10, 10);
    case 1:
      return (double)rnd(-6, 6); /* integral: floor_divide, remainder, pow */
    case 2: {
      static const double sp[] = {NAN, INFINITY, -INFINITY, 0.0,  -0.0,   1.0,     -1.0,
                                  0.5, 2.0,      -2.5,      1e30, -1e-30, 65504.0, 3e38};
      return sp[rnd(0, 13)];
    }
    default:
      return unif(-1, 1) * pow(10.0, (double)rnd(-8, 8));
  }
}
static int64_t int_value(int dt, int kind) {
  int64_t lo = dt == CT_I8    ? -128
               : dt == CT_I16 ? -32768
               : dt == CT_I32 ? INT32_MIN
               : dt == CT_U8  ? 0
                              : INT64_MIN;
  int64_t hi = dt == CT_I8    ? 127
               : dt == CT_I16 ? 32767
               : dt == CT_I32 ? INT32_MAX
               : dt == CT_U8  ? 255
                              : INT64_MAX;
  if (dt == CT_BOOL) return rnd(0, 1);
  switch (kind) {
    case 0:
      return rnd(-10, 10) & (dt == CT_U8 ? 0xff : -1);
    case 1:
      return rnd(0, 5);
    case 2:
      return coin(2) ? lo : coin(2) ? hi : coin(2) ? -1 : 0;
    default:
      return (int64_t)rng();
  }
}
static int64_t wrap(int dt, int64_t v) {
  char b[8];
  store_i(b, dt, v);
  return load_i(b, dt);
}

/* Fills t with values of `kind` (-1: a random kind per element); zeros: allow 0. */
static void fill(Tensor &t, int kind, bool zeros) {
  int dt = t.dt();
  for (int64_t i = 0; i < t.numel(); i++) {
    int k = kind >= 0 ? kind : (int)rnd(0, 3);
    if (dt == CT_BOOL) {
      t.at(i)[0] = (char)(coin(2)   ? 0
                          : coin(2) ? 1
                                    : (int)rnd(2, 255)); /* any nonzero byte is true */
    } else if (is_float(dt)) {
      double v = float_value(dt, k);
      if (!zeros && v == 0) v = 1.5;
      store_d(t.at(i), dt, v);
    } else {
      int64_t v = int_value(dt, k);
      if (!zeros && wrap(dt, v) == 0) v = 3;
      store_i(t.at(i), dt, v);
    }
  }
}

/* ---- Layouts ----
 * 0 contiguous, 16-byte aligned; 1 contiguous, misaligned; 2 broadcast scalar
 * (every stride 0); 3 random strides (perm, gaps, flips; inputs expanded). */
static void layout_for(Layout &lay, int cls, int dt, bool input) {
  lay = Layout();
  if (cls == 1) lay.off = rnd(1, std::max(1, 16 / es(dt) - 1));
  if (cls == 3) random_layout(lay, dt, input);
}
static void make_operand(Tensor &t, int dt, const std::vector<int64_t> &shape, int cls,
                         bool input) {
  Layout lay;
  layout_for(lay, cls, dt, input);
  make(t, dt, shape, lay);
  if (cls == 2 && input)
    for (int k = 0; k < t.d.ndim; k++) t.d.strides[k] = 0;
}
static std::vector<int64_t> random_shape(bool big) {
  int64_t n = big ? rnd(4000, 70001) : coin(3) ? rnd(1, 40) : rnd(41, 3000);
  switch (rnd(1, 3)) {
    case 1:
      return {n};
    case 2: {
      int64_t d1 = rnd(1, 64);
      return {std::max<int64_t>(1, n / d1), d1};
    }
    default: {
      int64_t d1 = rnd(1, 16), d2 = rnd(1, 16);
      return {std::max<int64_t>(1, n / (d1 * d2)), d1, d2};
    }
  }
}

/* ---- Binary references ---- */
static uint64_t ipow_ref(uint64_t b, int64_t e) {
  uint64_t r = 1;
  for (int64_t i = 0; i < e && i < 200; i++) r *= b; /* exponents here are small */
  if (e >= 200) {                                    /* large exponents: by squaring */
    r = 1;
    uint64_t x = b, k = (uint64_t)e;
    while (k) {
      if (k & 1) r *= x;
      x *= x;
      k >>= 1;
    }
  }
  return r;
}
/* Integer op on int64 operands; bad: the pair is invalid (fault). */
static int64_t int_op(int op, int64_t x, int64_t y, bool &bad) {
  __int128 X = x, Y = y;
  switch (op) {
    case CT_BOP_ADD:
      return (int64_t)((uint64_t)x + (uint64_t)y);
    case CT_BOP_SUB:
      return (int64_t)((uint64_t)x - (uint64_t)y);
    case CT_BOP_MUL:
      return (int64_t)((uint64_t)x * (uint64_t)y);
    case CT_BOP_FLOOR_DIVIDE: {
      if (y == 0) return bad = true, 0;
      __int128 q = X / Y;
      if (X % Y != 0 && ((X < 0) != (Y < 0))) q -= 1;
      return (int64_t)(uint64_t)(unsigned __int128)q;
    }
    case CT_BOP_POW:
      if (y < 0) return bad = true, 0;
      return (int64_t)ipow_ref((uint64_t)x, y);
    case CT_BOP_MAXIMUM:
      return std::max(x, y);
    case CT_BOP_MINIMUM:
      return std::min(x, y);
    case CT_BOP_FMOD:
      if (y == 0) return bad = true, 0;
      return (int64_t)(X % Y);
    case CT_BOP_REMAINDER: {
      if (y == 0) return bad = true, 0;
      __int128 r = X % Y;
      if (r != 0 && ((r < 0) != (Y < 0))) r += Y;
      return (int64_t)r;
    }
    case CT_BOP_EQ:
      return x == y;
    case CT_BOP_NE:
      return x != y;
    case CT_BOP_LT:
      return x < y;
    case CT_BOP_LE:
      return x <= y;
    case CT_BOP_GT:
      return x > y;
    case CT_BOP_GE:
      return x >= y;
    case CT_BOP_LOGICAL_AND:
      return x && y;
    case CT_BOP_LOGICAL_OR:
      return x || y;
    case CT_BOP_LOGICAL_XOR:
      return !x != !y;
    case CT_BOP_BITWISE_AND:
      return x & y;
    case CT_BOP_BITWISE_OR:
      return x | y;
    case CT_BOP_BITWISE_XOR:
      return x ^ y;
    /* in int64, wrapped to the dtype after: counts past 63 (or negative) give 0 / -1 */
    case CT_BOP_BITWISE_LEFT_SHIFT:
      return y < 0 || y > 63 ? 0 : (int64_t)(uint64_t)((unsigned __int128)(uint64_t)x << y);
    case CT_BOP_BITWISE_RIGHT_SHIFT:
      return y < 0 || y > 63 ? (x < 0 ? -1 : 0) : (int64_t)(X >> y);
    default:
      return 0;
  }
}
/* Float op in double on values of the compute type; exact: the result is
 * the correctly rounded one (compare bits after rounding to the dtype). */
static double float_op(int op, double x, double y, bool dbl, bool &exact) {
  exact = true;
  auto C = [&](double v) { return dbl ? v : (double)(float)v; };
  switch (op) {
    case CT_BOP_ADD:
      return C(x + y);
    case CT_BOP_SUB:
      return C(x - y);
    case CT_BOP_MUL:
      return C(x * y);
    case CT_BOP_DIV:
      return C(x / y);
    case CT_BOP_MAXIMUM:
      return x != x ? x : y != y ? y : x > y ? x : y;
    case CT_BOP_MINIMUM:
      return x != x ? x : y != y ? y : x < y ? x : y;
    case CT_BOP_FMOD:
      return fmod(x, y);
    case CT_BOP_REMAINDER: {
      exact = false;
      long double m = fmodl(x, y);
      if (m != 0 && ((y < 0) != (m < 0))) m += y;
      return C((double)m);
    }
    case CT_BOP_FLOOR_DIVIDE: {
      exact = false;
      if (y == 0) return x / y;
      if (x != x || y != y || std::isinf(x)) return NAN;
      if (std::isinf(y)) return (x == 0 || (x > 0) == (y > 0)) ? copysign(0.0, x / y) : -1.0;
      long double q = floorl((long double)x / (long double)y);
      if (q == 0) return copysign(0.0, x / y);
      exact = fabsl(q) < (dbl ? 0x1p40L : 0x1p18L);
      return C((double)q);
    }
    case CT_BOP_POW:
      exact = false;
      return pow(x, y);
    case CT_BOP_ATAN2:
      exact = false;
      return atan2(x, y);
    case CT_BOP_HYPOT:
      exact = false;
      return hypot(x, y);
    case CT_BOP_LOGADDEXP: {
      exact = false;
      if (x != x || y != y) return NAN;
      if (std::isinf(x) || std::isinf(y)) return x > y ? x : y;
      long double m = x > y ? x : y, d = fabsl((long double)x - (long double)y);
      return C((double)(m + log1pl(expl(-d))));
    }
    case CT_BOP_COPYSIGN:
      return std::signbit(y) ? -std::fabs(x) : std::fabs(x);
    case CT_BOP_EQ:
      return x == y;
    case CT_BOP_NE:
      return x != y;
    case CT_BOP_LT:
      return x < y;
    case CT_BOP_LE:
      return x <= y;
    case CT_BOP_GT:
      return x > y;
    case CT_BOP_GE:
      return x >= y;
    case CT_BOP_LOGICAL_AND:
      return x != 0 && y != 0;
    case CT_BOP_LOGICAL_OR:
      return x != 0 || y != 0;
    case CT_BOP_LOGICAL_XOR:
      return (x != 0) != (y != 0);
    default:
      return 0;
  }
}
static bool binary_has_kernel(int op, int dt) {
  if (ct__binary_info[op].rule == CT_BRULE_INT) /* bitwise: integers, bool without the shifts */
    return !is_float(dt) &&
           (dt != CT_BOOL || (op != CT_BOP_BITWISE_LEFT_SHIFT && op != CT_BOP_BITWISE_RIGHT_SHIFT));
  if (is_float(dt)) return true;
  if (ct__binary_info[op].rule == CT_BRULE_COMPARE) return true;
  if (dt == CT_BOOL)
    return op == CT_BOP_ADD || op == CT_BOP_MUL || op == CT_BOP_MAXIMUM || op == CT_BOP_MINIMUM;
  return ct__binary_info[op].rule != CT_BRULE_FLOAT; /* FLOAT ops compute integers in f32 */
}
static bool checked(int op) {
  return op == CT_BOP_FLOOR_DIVIDE || op == CT_BOP_POW || op == CT_BOP_FMOD ||
         op == CT_BOP_REMAINDER;
}

/* The scalar operand as the kernels get it (binary.cu: the CPU's storage of s in dt). */
static int64_t int_scalar(int dt, double s) {
  int64_t i = s != s                        ? 0
              : s >= 9.2233720368547758e18  ? INT64_MAX
              : s <= -9.2233720368547758e18 ? INT64_MIN
                                            : (int64_t)s;
  if (dt == CT_BOOL) return s != 0;
  return wrap(dt, i);
}

/* Checks one output element; ok = false prints. */
static bool check_value(const char *tag, int64_t i, const char *got_p, int odt, double want,
                        bool want_int, int64_t want_i, bool exact, double tol, double x) {
  if (want_int || !is_float(odt)) {
    int64_t got = load_i(got_p, odt);
    if (odt == CT_BOOL && (uint8_t)got_p[0] > 1) {
      failf("%s: [%ld] bool byte %d", tag, (long)i, got_p[0]);
      return false;
    }
    if (got != want_i) {
      failf("%s: [%ld] = %lld, want %lld", tag, (long)i, (long long)got, (long long)want_i);
      return false;
    }
    return true;
  }
  double got = load_d(got_p, odt), w = round_to(odt, want);
  bool ok = exact ? same_float(got, w)
                  : close_float(got, w, tol + 2 * eps_of(odt), 1e-300) ||
                        (std::isfinite(w) && fabs(got - w) <= tol * (1 + fabs(x)));
  if (!ok) failf("%s: [%ld] = %.17g, want %.17g", tag, (long)i, got, w);
  return ok;
}

/* After an op whose integer kind may fault: the fault check must report exactly when a pair was
 * bad. */
static void check_fault(const char *tag, const char *name, const char *what, bool any_bad,
                        ct_status st) {
  /* with CT_LAUNCH_BLOCKING the op reports its own fault; else the next check does */
  ct_status f = emu::launch_blocking ? st : ctc_fault_check(0);
  if (!any_bad) {
    if (f != CT_OK)
      failf("%s: fault %d (%s) with no bad operand", tag, (int)f, emu::last_message());
    return;
  }
  nfaults++;
  char want[160];
  snprintf(want, sizeof want, "%s: %s", name, what);
  if (f != CT_ERR_ARG || strncmp(emu::last_message(), want, strlen(want)) != 0)
    failf("%s: %s returned %d '%s', want CT_ERR_ARG '%s...'", tag,
          emu::launch_blocking ? "the op" : "the fault check", (int)f, emu::last_message(), want);
  if (ctc_fault_check(0) != CT_OK) failf("%s: the fault was not cleared by its report", tag);
}

static void finish_case(const char *tag, long fails, std::initializer_list<Tensor *> inputs,
                        Tensor &out, long v0, long g0) {
  ncases++;
  emu_clean(tag);
  for (Tensor *t : inputs) {
    std::string ch = t->changed(true);
    if (!ch.empty()) failf("%s: input: %s", tag, ch.c_str());
  }
  std::string ch = out.changed(false);
  if (!ch.empty()) failf("%s: out: %s", tag, ch.c_str());
  if (emu::launches("ctc_vec_kernel") + emu::launches("fill_vec_kernel") > v0) nvec++;
  if (emu::launches("ctc_ew_kernel") > g0) ngeneric++;
  if (nfail != fails) {
    printf("   out=%s", shape_str(out.d).c_str());
    for (Tensor *t : inputs) printf(" in=%s", shape_str(t->d).c_str());
    printf(" sms=%d blocking=%d\n", emu::sm_count, (int)emu::launch_blocking);
  }
}

/* ---- Binary: tensor op tensor, tensor op scalar ---- */
static void binary_case(int op, int dt, const std::vector<int64_t> &shape, int cls_a, int cls_b,
                        int cls_o, int scalar_mode /* 0 tensor, 1 scalar, 2 reversed scalar */,
                        int kind) {
  const char *name = ct__binary_info[op].name;
  int odt = ct__binary_info[op].rule == CT_BRULE_COMPARE ? CT_BOOL : dt;
  Tensor a, b, out;
  make_operand(a, dt, shape, cls_a, true);
  make_operand(out, odt, shape, cls_o == 2 ? 0 : cls_o, false);
  bool zeros = !checked(op) || coin(2);
  fill(a, kind, true);
  if (!scalar_mode) {
    make_operand(b, dt, shape, cls_b, true);
    fill(b, kind, zeros);
  }
  double s = 0;
  if (scalar_mode) {
    s = is_float(dt) ? float_value(dt, kind < 0 ? (int)rnd(0, 2) : kind)
                     : (double)int_value(dt, kind < 0 ? 0 : kind);
    if (!zeros && s == 0) s = 2;
    if (coin(8)) s = 300.7; /* wraps in narrow integers */
  }
  a.snapshot();
  if (!scalar_mode) b.snapshot();
  out.snapshot();
  char tag[128];
  snprintf(tag, sizeof tag, "%s %s %s%s", name, dname(dt), scalar_mode ? "scalar " : "tensor",
           scalar_mode == 2 ? " reversed" : "");
  long fails = nfail, v0 = emu::launches("ctc_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  emu::clear_message();
  ct_status st = scalar_mode ? ct__cuda_binary_scalar((ct_binary_op)op, ct(&out.d), ct(&a.d), s,
                                                      scalar_mode == 2)
                             : ct__cuda_binary((ct_binary_op)op, ct(&out.d), ct(&a.d), ct(&b.d));
  bool intc = !is_float(dt), dbl = dt == CT_F64, any_bad = false;
  if (st != CT_OK && !(emu::launch_blocking && st == CT_ERR_ARG))
    failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  double sc = dbl ? s : (double)(float)s;
  int64_t si = intc ? int_scalar(dt, s) : 0;
  bool mismatch = false; /* reported once; every element still counts for any_bad */
  for (int64_t i = 0; i < out.numel(); i++) {
    bool bad = false, exact = true;
    int64_t wi = 0;
    double w = 0, xa;
    if (intc) {
      int64_t x = a.get_i(i), y = scalar_mode ? si : b.get_i(i);
      if (scalar_mode == 2) std::swap(x, y);
      if (dt == CT_BOOL && ct__binary_info[op].rule == CT_BRULE_INT)
        wi = int_op(op, x, y, bad);
      else if (dt == CT_BOOL && ct__binary_info[op].rule != CT_BRULE_COMPARE)
        wi = op == CT_BOP_ADD || op == CT_BOP_MAXIMUM ? (x | y) : (x & y);
      else
        wi = int_op(op, x, y, bad);
      wi = odt == CT_BOOL ? wi != 0 : wrap(odt, wi);
      any_bad |= bad;
      xa = (double)x;
    } else {
      double x = a.get_d(i), y = scalar_mode ? sc : b.get_d(i);
      if (scalar_mode == 2) std::swap(x, y);
      w = float_op(op, x, y, dbl, exact);
      xa = fabs(x) + fabs(y);
      if (odt == CT_BOOL) wi = w != 0;
    }
    if (mismatch) continue;
    mismatch = !check_value(
        tag, i, out.at(i), odt, w, intc || odt == CT_BOOL, wi, exact,
        (op == CT_BOP_POW || op == CT_BOP_REMAINDER || op == CT_BOP_FLOOR_DIVIDE ? 8 : 4) *
            (dbl ? 0x1p-52 : 0x1p-23),
        op == CT_BOP_POW ? 0 : xa);
  }
  if (intc && checked(op))
    check_fault(
        tag, name,
        op == CT_BOP_POW ? "integers to negative integer powers" : "integer division by zero",
        any_bad, st);
  if (scalar_mode)
    finish_case(tag, fails, {&a}, out, v0, g0);
  else
    finish_case(tag, fails, {&a, &b}, out, v0, g0);
}

/* ---- axpy and where ---- */
static void axpy_case(int dt, const std::vector<int64_t> &shape, int ca, int cb, int co) {
  Tensor a, b, out;
  make_operand(a, dt, shape, ca, true);
  make_operand(b, dt, shape, cb, true);
  make_operand(out, dt, shape, co == 2 ? 0 : co, false);
  fill(a, -1, true);
  fill(b, -1, true);
  double alpha = dt == CT_BOOL ? (double)rnd(0, 1) : coin(3) ? -1.0 : coin(2) ? 2.5 : unif(-3, 3);
  if (!is_float(dt)) alpha = (double)rnd(-3, 3);
  a.snapshot(), b.snapshot(), out.snapshot();
  char tag[96];
  snprintf(tag, sizeof tag, "axpy %s alpha %g", dname(dt), alpha);
  long fails = nfail, v0 = emu::launches("ctc_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  ct_status st = ct__cuda_axpy(ct(&out.d), ct(&a.d), ct(&b.d), alpha);
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  for (int64_t i = 0; i < out.numel(); i++) {
    bool ok;
    if (dt == CT_BOOL) {
      ok = check_value(tag, i, out.at(i), dt, 0, true,
                       a.get_i(i) | ((int64_t)(alpha != 0) & b.get_i(i)), true, 0, 0);
    } else if (!is_float(dt)) {
      int64_t w = (int64_t)((uint64_t)a.get_i(i) + (uint64_t)(int64_t)alpha * (uint64_t)b.get_i(i));
      ok = check_value(tag, i, out.at(i), dt, 0, true, wrap(dt, w), true, 0, 0);
    } else {
      /* x + alpha * y fused in the compute type (core/binary_math.h, as ATen's add with alpha) */
      double x = a.get_d(i), y = b.get_d(i), al = dt == CT_F64 ? alpha : (double)(float)alpha;
      double w = dt == CT_F64 ? fma(al, y, x) : (double)fmaf((float)al, (float)y, (float)x);
      ok = check_value(tag, i, out.at(i), dt, w, false, 0, false,
                       2 * (dt == CT_F64 ? 0x1p-52 : 0x1p-23), fabs(x) + fabs(al * y));
    }
    if (!ok) break;
  }
  finish_case(tag, fails, {&a, &b}, out, v0, g0);
}
static void where_case(int dt, const std::vector<int64_t> &shape, int cc, int ca, int cb, int co) {
  Tensor c, a, b, out;
  make_operand(c, CT_BOOL, shape, cc, true);
  make_operand(a, dt, shape, ca, true);
  make_operand(b, dt, shape, cb, true);
  make_operand(out, dt, shape, co == 2 ? 0 : co, false);
  fill(c, -1, true), fill(a, -1, true), fill(b, -1, true);
  c.snapshot(), a.snapshot(), b.snapshot(), out.snapshot();
  char tag[96];
  snprintf(tag, sizeof tag, "where %s", dname(dt));
  long fails = nfail, v0 = emu::launches("ctc_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  ct_status st = ct__cuda_where(ct(&out.d), ct(&c.d), ct(&a.d), ct(&b.d));
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  for (int64_t i = 0; i < out.numel(); i++) {
    const char *src = c.at(i)[0] ? a.at(i) : b.at(i);
    if (memcmp(out.at(i), src, (size_t)es(dt)) != 0) {
      failf("%s: [%ld] is not the %s element", tag, (long)i, c.at(i)[0] ? "true" : "false");
      break;
    }
  }
  finish_case(tag, fails, {&c, &a, &b}, out, v0, g0);
}

/* ---- Unary ---- */
/* Which (op, dtype) pairs have a kernel: the op table's views (ops/op_table.h). */
#define X(E, n) op == CT_UOP_##E ||
static bool unary_has_kernel(int op, int dt) {
  bool pred = CT_UNARY_PREDICATES(X) false;
  if (dt == CT_BOOL) return pred || CT_UNARY_INT_RULE_OPS(X) false;
  if (is_float(dt)) return pred || CT_UNARY_FLOAT_OPS(X) false;
  return pred || CT_UNARY_INT_OPS(X) false;
}
#undef X
static int64_t sat_to(int dt, double v) {
  double lo, hi;
  switch (dt) {
    case CT_I8:
      lo = -128, hi = 127;
      break;
    case CT_U8:
      lo = 0, hi = 255;
      break;
    case CT_I16:
      lo = -32768, hi = 32767;
      break;
    case CT_I32:
      lo = INT32_MIN, hi = INT32_MAX;
      break;
    case CT_BOOL:
      lo = 0, hi = 1;
      break;
    default:
      return v <= -9.2233720368547758e18  ? INT64_MIN
             : v >= 9.2233720368547758e18 ? INT64_MAX
                                          : (int64_t)v;
  }
  return v <= lo ? (int64_t)lo : v >= hi ? (int64_t)hi : (int64_t)v;
}
static double sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double unary_float(int op, double x, double q0, double q1, bool &exact) {
  exact = false;
  switch (op) {
    case CT_UOP_EXP:
      return exp(x);
    case CT_UOP_EXPM1:
      return expm1(x);
    case CT_UOP_LOG:
      return log(x);
    case CT_UOP_LOG1P:
      return log1p(x);
    case CT_UOP_LOG2:
      return log2(x);
    case CT_UOP_RSQRT:
      return 1 / sqrt(x);
    case CT_UOP_SIN:
      return sin(x);
    case CT_UOP_COS:
      return cos(x);
    case CT_UOP_TAN:
      return tan(x);
    case CT_UOP_TANH:
      return tanh(x);
    case CT_UOP_ERF:
      return erf(x);
    case CT_UOP_SIGMOID:
      return sigmoid(x);
    case CT_UOP_GELU:
      return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case CT_UOP_GELU_TANH:
      return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case CT_UOP_SILU:
      return x * sigmoid(x);
    case CT_UOP_SOFTPLUS:
      return x > 20 ? x : log1p(exp(x));
    case CT_UOP_LOG10:
      return log10(x);
    case CT_UOP_EXP2:
      return exp2(x);
    case CT_UOP_SINH:
      return sinh(x);
    case CT_UOP_COSH:
      return cosh(x);
    case CT_UOP_ATANH:
      return atanh(x);
    case CT_UOP_ATAN:
      return atan(x);
    case CT_UOP_ASINH:
      return asinh(x);
    case CT_UOP_ASIN:
      return asin(x);
    case CT_UOP_ACOSH:
      return acosh(x);
    case CT_UOP_ACOS:
      return acos(x);
    default:
      break;
  }
  exact = true;
  switch (op) {
    case CT_UOP_NEG:
      return -x;
    case CT_UOP_ABS:
      return fabs(x);
    case CT_UOP_SQRT:
      return sqrt(x);
    case CT_UOP_RELU:
      return x < 0 ? 0.0 : x;
    case CT_UOP_FLOOR:
      return floor(x);
    case CT_UOP_CEIL:
      return ceil(x);
    case CT_UOP_ROUND:
      return nearbyint(x);
    case CT_UOP_TRUNC:
      return trunc(x);
    case CT_UOP_SIGN:
      return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x;
    case CT_UOP_RECIPROCAL:
      return 1 / x;
    case CT_UOP_SQUARE:
      return x * x;
    case CT_UOP_CLAMP:
      return std::min(std::max(x, q0), q1); /* nan stays; q1 wins over q0 */
    case CT_UOP_LEAKY_RELU:
      return x > 0 ? x : q0 * x;
    case CT_UOP_ISNAN:
      return x != x;
    case CT_UOP_ISINF:
      return std::isinf(x);
    case CT_UOP_ISFINITE:
      return std::isfinite(x);
    case CT_UOP_SIGNBIT:
      return std::signbit(x);
    case CT_UOP_LOGICAL_NOT:
      return x == 0;
    default:
      return 0;
  }
}
static int64_t unary_int(int op, int dt, int64_t x, int64_t q0, int64_t q1) {
  switch (op) {
    case CT_UOP_BITWISE_NOT:
      return dt == CT_BOOL ? x == 0 : ~x;
    case CT_UOP_NEG:
      return (int64_t)(0 - (uint64_t)x);
    case CT_UOP_ABS:
      return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case CT_UOP_RELU:
      return x < 0 ? 0 : x;
    case CT_UOP_SIGN:
      return (x > 0) - (x < 0);
    case CT_UOP_SQUARE:
      return (int64_t)((uint64_t)x * (uint64_t)x);
    case CT_UOP_CLAMP:
      return std::min(std::max(x, q0), q1);
    case CT_UOP_ISNAN:
    case CT_UOP_ISINF:
      return 0;
    case CT_UOP_ISFINITE:
      return 1;
    case CT_UOP_SIGNBIT:
      return x < 0;
    case CT_UOP_LOGICAL_NOT:
      return x == 0;
    default:
      return 0;
  }
}
static void unary_case(int op, int dt, const std::vector<int64_t> &shape, int cx, int co) {
  const char *name = ct__unary_info[op].name;
  int odt = ct__unary_info[op].rule == CT_RULE_BOOL ? CT_BOOL : dt;
  Tensor x, out;
  make_operand(x, dt, shape, cx, true);
  make_operand(out, odt, shape, co == 2 ? 0 : co, false);
  fill(x, -1, true);
  double p0 = coin(2) ? unif(-3, 1) : -1.5, p1 = coin(2) ? unif(-1, 3) : 2.0;
  if (op == CT_UOP_LEAKY_RELU) p0 = coin(2) ? 0.01 : unif(0, 1);
  if (op == CT_UOP_CLAMP && !is_float(dt) && coin(2))
    p0 = -1e6, p1 = 1e20; /* saturate to the dtype */
  x.snapshot(), out.snapshot();
  char tag[96];
  snprintf(tag, sizeof tag, "%s %s", name, dname(dt));
  long fails = nfail, v0 = emu::launches("ctc_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  emu::clear_message();
  ct_status st = ct__cuda_unary((ct_unary_op)op, ct(&out.d), ct(&x.d), p0, p1);
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  bool dbl = dt == CT_F64;
  for (int64_t i = 0; i < out.numel(); i++) {
    bool ok, exact = true;
    if (!is_float(dt)) {
      int64_t w = unary_int(op, dt, x.get_i(i), sat_to(dt, p0), sat_to(dt, p1));
      ok = check_value(tag, i, out.at(i), odt, 0, true, odt == CT_BOOL ? w != 0 : wrap(odt, w),
                       true, 0, 0);
    } else {
      double v = x.get_d(i), q0 = dbl ? p0 : (double)(float)p0, q1 = dbl ? p1 : (double)(float)p1;
      double w = unary_float(op, v, q0, q1, exact);
      if (!dbl && exact && op == CT_UOP_LEAKY_RELU) w = (double)(float)w;
      ok = check_value(tag, i, out.at(i), odt, w, odt == CT_BOOL, (int64_t)(w != 0), exact,
                       8 * (dbl ? 0x1p-52 : 0x1p-23), fabs(v));
    }
    if (!ok) break;
  }
  finish_case(tag, fails, {&x}, out, v0, g0);
}

/* ---- Copies (casts) and fills ---- */
/* The bytes of src element value as dtype odt (copy.cu's contract, the CPU's conversions). */
static void cast_ref(char *o, int odt, const char *p, int sdt) {
  if (sdt == odt) { /* moved as bytes (a bool byte stays what it was) */
    memcpy(o, p, (size_t)es(odt));
    return;
  }
  bool sint = !is_float(sdt);
  int64_t i = load_i(p, sdt);
  double d = load_d(p, sdt);
  switch (odt) {
    case CT_F32: {
      float f = sint ? (float)i : (float)d;
      memcpy(o, &f, 4);
      return;
    }
    case CT_F64: {
      double f = sint ? (double)i : d;
      memcpy(o, &f, 8);
      return;
    }
    case CT_F16: {
      uint16_t h = f_to_f16(sint ? (float)i : (float)d);
      memcpy(o, &h, 2);
      return;
    }
    case CT_BF16: {
      uint16_t h = f_to_bf16(sint ? (float)i : (float)d);
      memcpy(o, &h, 2);
      return;
    }
    case CT_BOOL:
      o[0] = sint ? i != 0 : d != 0;
      return;
    default:
      store_i(o, odt, sint ? i : load_i(p, sdt));
      return; /* floats: saturating, nan -> 0 */
  }
}
static void copy_case(int sdt, int odt, const std::vector<int64_t> &shape, int cs, int co,
                      bool alias) {
  Tensor x, out;
  make_operand(x, sdt, shape, cs, true);
  make_operand(out, odt, shape, co == 2 ? 0 : co, false);
  fill(x, -1, true);
  Tensor &dst = alias && sdt == odt && cs != 2 ? x : out;
  std::vector<char> want((size_t)(x.numel() * es(odt)));
  for (int64_t i = 0; i < x.numel(); i++) cast_ref(&want[(size_t)(i * es(odt))], odt, x.at(i), sdt);
  if (&dst != &x) x.snapshot();
  dst.snapshot();
  char tag[96];
  snprintf(tag, sizeof tag, "copy %s -> %s%s", dname(sdt), dname(odt),
           &dst == &x ? " (same tensor)" : "");
  long fails = nfail, v0 = emu::launches("ctc_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  ct_status st = ct__cuda_copy(ct(&dst.d), ct(&x.d));
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  for (int64_t i = 0; i < x.numel(); i++) {
    if (memcmp(dst.at(i), &want[(size_t)(i * es(odt))], (size_t)es(odt)) != 0) {
      /* nan: any nan of the dtype */
      bool nan_ok =
          is_float(odt) && load_d(dst.at(i), odt) != load_d(dst.at(i), odt) &&
          load_d(&want[(size_t)(i * es(odt))], odt) != load_d(&want[(size_t)(i * es(odt))], odt);
      if (!nan_ok) {
        failf("%s: [%ld] = %.17g, want %.17g (from %.17g)", tag, (long)i, load_d(dst.at(i), odt),
              load_d(&want[(size_t)(i * es(odt))], odt), load_d(x.at(i), sdt));
        break;
      }
    }
  }
  ncases++;
  emu_clean(tag);
  std::string ch;
  if (&dst != &x && (ch = x.changed(true)) != "") failf("%s: input: %s", tag, ch.c_str());
  if ((ch = dst.changed(false)) != "") failf("%s: out: %s", tag, ch.c_str());
  if (emu::launches("ctc_vec_kernel") > v0) nvec++;
  if (emu::launches("ctc_ew_kernel") > g0) ngeneric++;
  if (nfail != fails)
    printf("   out=%s in=%s sms=%d\n", shape_str(dst.d).c_str(), shape_str(x.d).c_str(),
           emu::sm_count);
}
static void fill_case(int dt, const std::vector<int64_t> &shape, int co, double v) {
  Tensor out;
  make_operand(out, dt, shape, co == 2 ? 0 : co, false);
  out.snapshot();
  char want[8];
  store_d(want, dt, v); /* floats through f32 (f64 exact), integers saturate then wrap, nan -> 0 */
  char tag[96];
  snprintf(tag, sizeof tag, "fill %s %g", dname(dt), v);
  long fails = nfail, v0 = emu::launches("fill_vec_kernel"), g0 = emu::launches("ctc_ew_kernel");
  ct_status st = ct__cuda_fill(ct(&out.d), v);
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  for (int64_t i = 0; i < out.numel(); i++)
    if (memcmp(out.at(i), want, (size_t)es(dt)) != 0) {
      failf("%s: [%ld] = %.17g", tag, (long)i, load_d(out.at(i), dt));
      break;
    }
  finish_case(tag, fails, {}, out, v0, g0);
}

int run_elementwise(void) {
  Suite su("binary.cu, unary.cu, copy.cu, common.cuh: elementwise kernels, vector and generic");
  /* layouts: mostly contiguous aligned (the vector path) */
  auto cls = [](bool input) -> int {
    int r = (int)rnd(0, 9);
    return r < 5 ? 0 : r < 7 ? 1 : r < 8 && input ? 2 : 3;
  };
  long reps = full ? 8 : 3;
  /* every binary op x dtype, tensor and scalar forms */
  for (long rep = 0; rep < reps; rep++)
    for (int op = 0; op < CT_BOP_COUNT; op++)
      for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        if (!binary_has_kernel(op, dt)) continue;
        emu::sm_count = (int)rnd(1, 4);
        emu::launch_blocking = coin(8);
        bool big = coin(full ? 4 : 12);
        int kind = checked(op) ? (int)rnd(0, 2) : -1;
        if (op == CT_BOP_POW && !is_float(dt)) kind = coin(2) ? 1 : 0;
        binary_case(op, dt, random_shape(big), cls(true), cls(true), cls(false), 0, kind);
        binary_case(op, dt, random_shape(big && coin(2)), cls(true), 0, cls(false), (int)rnd(1, 2),
                    kind);
      }
  emu::launch_blocking = false;
  /* the vector path's edges: every size 1..40 around the pack width, every start */
  for (int dt : {CT_F32, CT_F16, CT_I64, CT_U8}) {
    for (int64_t n = 1; n <= (full ? 80 : 40); n += full ? 1 : 3) {
      emu::sm_count = (int)rnd(1, 3);
      int op = dt == CT_U8 ? CT_BOP_LT : coin(2) ? CT_BOP_ADD : CT_BOP_MUL;
      binary_case(op, dt, {n}, coin(3) ? 1 : 0, 0, coin(3) ? 1 : 0, coin(3) ? 1 : 0, -1);
    }
  }
  /* axpy, where */
  for (long rep = 0; rep < 2 * reps; rep++)
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
      emu::sm_count = (int)rnd(1, 4);
      axpy_case(dt, random_shape(coin(10)), cls(true), cls(true), cls(false));
      where_case(dt, random_shape(coin(10)), cls(true), cls(true), cls(true), cls(false));
    }
  /* every unary op x dtype */
  for (long rep = 0; rep < reps; rep++)
    for (int op = 0; op < CT_UOP_COUNT; op++)
      for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        if (!unary_has_kernel(op, dt)) continue;
        emu::sm_count = (int)rnd(1, 4);
        unary_case(op, dt, random_shape(coin(full ? 4 : 15)), cls(true), cls(false));
      }
  /* casts: every pair of dtypes; fills */
  for (long rep = 0; rep < 2 * reps; rep++)
    for (int s = 0; s < CT_DTYPE_COUNT; s++)
      for (int o = 0; o < CT_DTYPE_COUNT; o++) {
        emu::sm_count = (int)rnd(1, 4);
        copy_case(s, o, random_shape(coin(full ? 4 : 20)), cls(true), cls(false), coin(10));
      }
  for (long rep = 0; rep < 2 * reps; rep++)
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
      static const double vs[] = {0.0, 1.0, -2.5, 300.0, NAN, 1e40, -1e20, 65519.0};
      emu::sm_count = (int)rnd(1, 4);
      int c = (int)rnd(0, 3);
      fill_case(dt, random_shape(coin(8)), c == 2 ? 0 : c, vs[rnd(0, 7)]);
    }
  printf("  paths: vector %ld, generic %ld cases; %ld faults raised and reported\n", nvec, ngeneric,
         nfaults);
  return su.end("binary.cu,unary.cu,copy.cu,common.cuh");
}
