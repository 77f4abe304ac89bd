/* CUDA binary elementwise kernels: out = a op b, out = a op s (scalar),
 * out = a + alpha * b (axpy) and out = cond ? a : b (where).
 *
 * The ops are value functors in a compute type (float for f32/f16/bf16,
 * double for f64, int64 for integers and bool), the op a grid-uniform switch
 * except add, sub, mul and div, fixed at compile time for the vector path;
 * loads and stores convert (common.cuh), so integer results wrap to their
 * width on store and match the CPU's narrow-type arithmetic (add/sub/mul/pow
 * are exact modulo 2^64, division results are in range; INT_MIN / -1 wraps
 * to INT_MIN). Bool
 * add/mul/max/min are or/and on 0/1 values, as the CPU.
 *
 * Invalid integer operands (division, remainder, fmod by zero; negative
 * powers) leave 0 in the element and raise a fault (fault.cu): the next
 * synchronization with the device fails with CT_ERR_ARG naming the op, so no
 * op synchronizes at its launch.
 * Decomposition: contiguous operands of one dtype take the 16-byte vector
 * kernel (ctc_vec_kernel), any others ctc_ew_kernel (common.cuh). */
#include "backend/cuda/common.cuh"

template <class T> __device__ __forceinline__ T floordiv_f(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
  if (div == T(0)) return copysign(T(0), a / b);
  T fl = floor(div);
  if (div - fl > T(0.5)) fl += T(1);
  return fl;
}
template <class T> __device__ __forceinline__ T pyrem_f(T a, T b) {
  T mod = fmod(a, b);
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) mod += b;
  return mod;
}

/* The COMPARE-rule ops (result 0 or 1, stored as bool), for every class. */
template <class T> __device__ __forceinline__ T bin_compare(int op, T x, T y) {
  switch (op) {
  case CT_BOP_EQ: return x == y;
  case CT_BOP_NE: return x != y;
  case CT_BOP_LT: return x < y;
  case CT_BOP_LE: return x <= y;
  case CT_BOP_GT: return x > y;
  case CT_BOP_GE: return x >= y;
  case CT_BOP_LOGICAL_AND: return x != T(0) && y != T(0);
  case CT_BOP_LOGICAL_OR: return x != T(0) || y != T(0);
  case CT_BOP_LOGICAL_XOR: return (x != T(0)) != (y != T(0));
  default: return T(0);
  }
}

template <class T> __device__ __forceinline__ T bin_float(int op, T x, T y) {
  switch (op) {
  case CT_BOP_ADD: return x + y;
  case CT_BOP_SUB: return x - y;
  case CT_BOP_MUL: return x * y;
  case CT_BOP_DIV: return x / y;
  case CT_BOP_FLOOR_DIVIDE: return floordiv_f(x, y);
  case CT_BOP_POW: return pow(x, y);
  case CT_BOP_MAXIMUM: return (x != x || x > y) ? x : y;
  case CT_BOP_MINIMUM: return (x != x || x < y) ? x : y;
  case CT_BOP_FMOD: return fmod(x, y);
  case CT_BOP_REMAINDER: return pyrem_f(x, y);
  case CT_BOP_ATAN2: return atan2(x, y);
  case CT_BOP_EQ: case CT_BOP_NE: case CT_BOP_LT: case CT_BOP_LE: case CT_BOP_GT: case CT_BOP_GE:
  case CT_BOP_LOGICAL_AND: case CT_BOP_LOGICAL_OR: case CT_BOP_LOGICAL_XOR:
    return bin_compare(op, x, y);
  default: return x;
  }
}

__device__ __forceinline__ uint64_t ipow(uint64_t b, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return r;
}

__device__ __forceinline__ int64_t bin_int(int op, int64_t x, int64_t y, bool &bad) {
  switch (op) {
  case CT_BOP_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
  case CT_BOP_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
  case CT_BOP_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
  case CT_BOP_FLOOR_DIVIDE:
    if (y == 0) return bad = true, 0;
    if (y == -1) return (int64_t)(0ull - (uint64_t)x);
    return x / y - ((x % y != 0) & ((x < 0) != (y < 0)));
  case CT_BOP_POW:
    if (y < 0) return bad = true, 0;
    return (int64_t)ipow((uint64_t)x, (uint64_t)y);
  case CT_BOP_MAXIMUM: return x > y ? x : y;
  case CT_BOP_MINIMUM: return x < y ? x : y;
  case CT_BOP_FMOD:
    if (y == 0) return bad = true, 0;
    return y == -1 ? 0 : x % y;
  case CT_BOP_REMAINDER: {
    if (y == 0) return bad = true, 0;
    if (y == -1) return 0;
    int64_t m = x % y;
    return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
  }
  case CT_BOP_EQ: case CT_BOP_NE: case CT_BOP_LT: case CT_BOP_LE: case CT_BOP_GT: case CT_BOP_GE:
  case CT_BOP_LOGICAL_AND: case CT_BOP_LOGICAL_OR: case CT_BOP_LOGICAL_XOR:
    return bin_compare(op, x, y);
  default: return x;
  }
}

/* ---- Value functors (common.cuh) ----------------------------------------------------- */

/* Where invalid integer operands are reported: dev's fault record and the op's name. */
struct bin_fault {
  ctc_fault *record;
  const char *name;
};

/* op in compute class C; integer operands that are invalid for op raise a
 * fault in record (none when NULL). The fields come by value: a pointer to the
 * functor's bin_fault (a kernel parameter) put a 24-40 byte frame on the stack. */
template <class C>
__device__ __forceinline__ C bin_value(int op, C x, C y, ctc_fault *record, const char *name) {
  if constexpr (std::is_integral<C>::value) {
    bool bad = false;
    C r = bin_int(op, x, y, bad);
    if (bad && record)
      ctc_fault_raise(record, op == CT_BOP_POW ? CTC_FAULT_NEG_POW : CTC_FAULT_DIV_ZERO, name, 0,
                      (long long)y, 0);
    return r;
  } else {
    return bin_float<C>(op, x, y);
  }
}

/* The hottest ops with the op a compile-time constant: their kernels carry no
 * switch and none of the registers of pow, atan2 or fmod. */
template <int OP> struct bin_fixed {
  template <class C> __device__ C operator()(C x, C y) const {
    return bin_value<C>(OP, x, y, nullptr, nullptr);
  }
};

/* Any op, chosen at run time (uniform across the grid). */
template <class C> struct bin_dyn {
  int op;
  bin_fault fault; /* checked integer ops only (record NULL otherwise) */
  __device__ C operator()(C x, C y) const { return bin_value<C>(op, x, y, fault.record, fault.name); }
};

/* The COMPARE-rule ops alone, for their bool-output vector kernels. */
template <class C> struct bin_cmp {
  int op;
  __device__ C operator()(C x, C y) const { return bin_compare<C>(op, x, y); }
};

/* f with one operand a host scalar: f(x, s), or f(s, x) when reversed. */
template <class C, class F> struct bin_scalar {
  F f;
  C s;
  bool reversed;
  __device__ C operator()(C v) const {
    C x = reversed ? s : v, y = reversed ? v : s;
    return f(x, y);
  }
};

static bool checked_op(int op) {
  return op == CT_BOP_FLOOR_DIVIDE || op == CT_BOP_POW || op == CT_BOP_FMOD || op == CT_BOP_REMAINDER;
}

/* Which (op, compute dtype) pairs exist: as the CPU's table. */
static bool have_kernel(int op, int dt) {
  if (ctc_is_float(dt)) return true;
  if (ct__binary_info[op].rule == CT_BRULE_COMPARE) return true;
  if (dt == CT_BOOL) return op == CT_BOP_ADD || op == CT_BOP_MUL || op == CT_BOP_MAXIMUM || op == CT_BOP_MINIMUM;
  return op != CT_BOP_DIV && op != CT_BOP_ATAN2;
}

/* The vector path (common.cuh) for op, its functor passed through wrap
 * (identity for two tensors, K = 2; bin_scalar for a tensor and a scalar,
 * K = 1): false when g doesn't qualify. Integer ops other than add, sub, mul
 * and comparisons (division with its error flag, pow...) stay generic. */
template <class C, int K, class W>
static bool vec_binary(const char *name, int op, int dev, const ctc_ew &g, W wrap, ct_status *st) {
  if (ct__binary_info[op].rule == CT_BRULE_COMPARE)
    return ctc_vec_run<C, K, true>(name, dev, g, wrap(bin_cmp<C>{op}), st);
  auto run = [&](auto f) { return ctc_vec_run<C, K, false>(name, dev, g, wrap(f), st); };
  switch (op) {
  case CT_BOP_ADD: return run(bin_fixed<CT_BOP_ADD>());
  case CT_BOP_SUB: return run(bin_fixed<CT_BOP_SUB>());
  case CT_BOP_MUL: return run(bin_fixed<CT_BOP_MUL>());
  default: break;
  }
  if constexpr (std::is_integral<C>::value) {
    return false;
  } else {
    if (op == CT_BOP_DIV) return run(bin_fixed<CT_BOP_DIV>());
    return ctc_vec_run<C, K, false, 1>(name, dev, g, wrap(bin_dyn<C>{op, {nullptr, nullptr}}), st);
  }
}

/* Runs op over g (K inputs, see vec_binary); the checked integer ops report
 * invalid operands through dev's fault record. */
template <class C, int K, class W>
static ct_status run_binary(const char *name, int op, int dev, const ctc_ew &g, W wrap) {
  bin_fault fault = {nullptr, name};
  if (std::is_integral<C>::value && checked_op(op) && !(fault.record = ctc_fault_record(name, dev)))
    return ct_last_error();
  ct_status st;
  if (!vec_binary<C, K>(name, op, dev, g, wrap, &st))
    st = ctc_ew_map_launch<C, K>(name, dev, g, wrap(bin_dyn<C>{op, fault}));
  return st;
}

extern "C" ct_status ct__cuda_binary(int op, const ctc_t *out, const ctc_t *a, const ctc_t *b) {
  int dev = out->device, dt = a->dtype;
  const char *name = ct__binary_info[op].name;
  if (!have_kernel(op, dt))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no CUDA kernel for %s", name, ct_dtype_name((ct_dtype)dt));
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[3] = {out, a, b};
  ctc_ew g;
  ctc_ew_init(&g, 3, ts);
  auto same = [](auto f) { return f; };
  if (dt == CT_F64) return run_binary<double, 2>(name, op, dev, g, same);
  if (ctc_is_float(dt)) return run_binary<float, 2>(name, op, dev, g, same);
  return run_binary<int64_t, 2>(name, op, dev, g, same);
}

static int64_t sat_i64(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

/* s as the CPU stores it in dtype dt (integers wrap to the width), widened to int64. */
static int64_t int_scalar(int dt, double s) {
  int64_t i = sat_i64(s);
  switch (dt) {
  case CT_I8: return (int8_t)(uint8_t)(uint64_t)i;
  case CT_U8: return (uint8_t)(uint64_t)i;
  case CT_I16: return (int16_t)(uint16_t)(uint64_t)i;
  case CT_I32: return (int32_t)(uint32_t)(uint64_t)i;
  case CT_BOOL: return s != 0;
  default: return i;
  }
}

/* A tensor and a host scalar sv of compute class C. */
template <class C>
static ct_status run_binary_scalar(const char *name, int op, int dev, const ctc_ew &g, C sv,
                                   bool reversed) {
  auto with_scalar = [=](auto f) { return bin_scalar<C, decltype(f)>{f, sv, reversed}; };
  return run_binary<C, 1>(name, op, dev, g, with_scalar);
}

extern "C" ct_status ct__cuda_binary_scalar(int op, const ctc_t *out, const ctc_t *a, double s,
                                           bool reversed) {
  int dev = out->device, dt = a->dtype;
  const char *name = ct__binary_info[op].name;
  if (!have_kernel(op, dt))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no CUDA kernel for %s", name, ct_dtype_name((ct_dtype)dt));
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[2] = {out, a};
  ctc_ew g;
  ctc_ew_init(&g, 2, ts);
  /* f16/bf16: the scalar stays an f32 operand, not rounded to half (as the CPU) */
  if (dt == CT_F64) return run_binary_scalar<double>(name, op, dev, g, s, reversed);
  if (ctc_is_float(dt)) return run_binary_scalar<float>(name, op, dev, g, (float)s, reversed);
  return run_binary_scalar<int64_t>(name, op, dev, g, int_scalar(dt, s), reversed);
}

/* ---- axpy: out = a + alpha * b ---------------------------------------------------------- */

template <class C> struct axpy_fn {
  C alpha;
  bool is_bool;
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral<C>::value)
      return is_bool ? (x | (alpha & y)) : (C)((uint64_t)x + (uint64_t)alpha * (uint64_t)y);
    else
      return x + alpha * y;
  }
};

extern "C" ct_status ct__cuda_axpy(const ctc_t *out, const ctc_t *a, const ctc_t *b, double alpha) {
  int dev = out->device, dt = out->dtype;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("axpy", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[3] = {out, a, b};
  ctc_ew g;
  ctc_ew_init(&g, 3, ts);
  if (dt == CT_F64) return ctc_map<double, 2, false>("axpy", dev, g, axpy_fn<double>{alpha, false});
  if (ctc_is_float(dt))
    return ctc_map<float, 2, false>("axpy", dev, g, axpy_fn<float>{(float)alpha, false});
  axpy_fn<int64_t> f{int_scalar(dt, alpha), dt == CT_BOOL};
  return ctc_map<int64_t, 2, false>("axpy", dev, g, f);
}

/* ---- where: elements move by size ---------------------------------------------------------- */

struct where_fn {
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    bool c = *(const uint8_t *)ctc_ew_ptr(g, 1, off[1]) != 0;
    /* selects pointers, not off[c ? 2 : 3]: a run-time index would put off in local memory */
    const char *src = c ? ctc_ew_ptr(g, 2, off[2]) : ctc_ew_ptr(g, 3, off[3]);
    ctc_move(ctc_ew_ptr(g, 0, off[0]), src, g.es[0]);
  }
};

extern "C" ct_status ct__cuda_where(const ctc_t *out, const ctc_t *cond, const ctc_t *a, const ctc_t *b) {
  int dev = out->device;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("where", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[4] = {out, cond, a, b};
  ctc_ew g;
  ctc_ew_init(&g, 4, ts);
  return ctc_ew_launch<4>("where", dev, g, where_fn());
}
