/* CUDA unary elementwise kernels: out = op(x) for the ops of CT_UNARY_OPS.
 *
 * The ops are value functors in a compute type (float for f32/f16/bf16,
 * double for f64, int64 for integers and bool), the op a run-time switch that
 * is uniform across the grid (relu's fixed at compile time on the vector
 * path); loads and stores convert from and to the operands' dtypes, so f16/bf16
 * compute in f32 as on the CPU, and integer results wrap to their width on
 * store (the SAME-rule integer ops give the CPU's results computed in int64).
 * Decomposition: the 16-byte vector kernel for contiguous operands, else
 * ctc_ew_kernel (common.cuh). Math in the compute type (expf for f32), as
 * the CPU. */
#include "backend/cuda/common.cuh"

template <class T> __device__ __forceinline__ T ctc_sigmoid(T x) {
  T e = exp(-fabs(x));
  T r = T(1) / (T(1) + e);
  return x >= T(0) ? r : e * r;
}

/* The BOOL-rule ops (result 0 or 1, stored as bool), for every class. */
template <class T> __device__ __forceinline__ T un_pred(int op, T x) {
  if constexpr (std::is_integral<T>::value) {
    switch (op) {
    case CT_UOP_ISNAN:
    case CT_UOP_ISINF: return 0;
    case CT_UOP_ISFINITE: return 1;
    default: return x == 0; /* CT_UOP_LOGICAL_NOT */
    }
  } else {
    switch (op) {
    case CT_UOP_ISNAN: return x != x;
    case CT_UOP_ISINF: return fabs(x) == T(INFINITY);
    case CT_UOP_ISFINITE: return x - x == T(0);
    default: return x == T(0); /* CT_UOP_LOGICAL_NOT */
    }
  }
}

template <class T> __device__ __forceinline__ T un_float(int op, T x, T q0, T q1) {
  switch (op) {
  case CT_UOP_NEG: return -x;
  case CT_UOP_ABS: return fabs(x);
  case CT_UOP_EXP: return exp(x);
  case CT_UOP_EXPM1: return expm1(x);
  case CT_UOP_LOG: return log(x);
  case CT_UOP_LOG1P: return log1p(x);
  case CT_UOP_LOG2: return log2(x);
  case CT_UOP_SQRT: return sqrt(x);
  case CT_UOP_RSQRT: return T(1) / sqrt(x);
  case CT_UOP_SIN: return sin(x);
  case CT_UOP_COS: return cos(x);
  case CT_UOP_TAN: return tan(x);
  case CT_UOP_TANH: return tanh(x);
  case CT_UOP_ERF: return erf(x);
  case CT_UOP_SIGMOID: return ctc_sigmoid(x);
  case CT_UOP_RELU: return x < T(0) ? T(0) : x;
  case CT_UOP_GELU: return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
  case CT_UOP_GELU_TANH:
    return T(0.5) * x * (T(1) + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
  case CT_UOP_SILU: return x * ctc_sigmoid(x);
  case CT_UOP_SOFTPLUS: return x > T(20) ? x : log1p(exp(x));
  case CT_UOP_FLOOR: return floor(x);
  case CT_UOP_CEIL: return ceil(x);
  case CT_UOP_ROUND: return rint(x); /* half to even */
  case CT_UOP_TRUNC: return trunc(x);
  case CT_UOP_SIGN: return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x;
  case CT_UOP_RECIPROCAL: return T(1) / x;
  case CT_UOP_SQUARE: return x * x;
  case CT_UOP_CLAMP: {
    T lo = x < q0 ? q0 : x;
    return lo > q1 ? q1 : lo;
  }
  case CT_UOP_LEAKY_RELU: return x > T(0) ? x : q0 * x;
  case CT_UOP_ISNAN: case CT_UOP_ISINF: case CT_UOP_ISFINITE: case CT_UOP_LOGICAL_NOT:
    return un_pred(op, x);
  default: return x;
  }
}

/* Integers and bool in int64 (values sign/zero-extended from their dtype);
 * the store truncates. q0, q1: clamp bounds saturated to the dtype's range. */
__device__ __forceinline__ int64_t un_int(int op, int64_t x, int64_t q0, int64_t q1) {
  switch (op) {
  case CT_UOP_NEG: return (int64_t)(0ull - (uint64_t)x);
  case CT_UOP_ABS: return x < 0 ? (int64_t)(0ull - (uint64_t)x) : x;
  case CT_UOP_RELU: return x < 0 ? 0 : x;
  case CT_UOP_SIGN: return (x > 0) - (x < 0);
  case CT_UOP_SQUARE: return (int64_t)((uint64_t)x * (uint64_t)x);
  case CT_UOP_CLAMP: {
    int64_t lo = x < q0 ? q0 : x;
    return lo > q1 ? q1 : lo;
  }
  case CT_UOP_ISNAN: case CT_UOP_ISINF: case CT_UOP_ISFINITE: case CT_UOP_LOGICAL_NOT:
    return un_pred(op, x);
  default: return x;
  }
}

/* ---- Value functors (common.cuh) ---------------------------------------------------- */

template <class C> __device__ __forceinline__ C un_value(int op, C x, C q0, C q1) {
  if constexpr (std::is_integral<C>::value) return un_int(op, x, q0, q1);
  else return un_float<C>(op, x, q0, q1);
}

/* relu, the hottest op, with the op a compile-time constant: no switch. */
template <int OP> struct un_fixed {
  template <class C> __device__ C operator()(C x) const { return un_value<C>(OP, x, C(0), C(0)); }
};

/* Any op, chosen at run time (uniform across the grid). */
template <class C> struct un_dyn {
  int op;
  C q0, q1;
  __device__ C operator()(C x) const { return un_value<C>(op, x, q0, q1); }
};

/* The BOOL-rule ops alone, for their bool-output vector kernels. */
template <class C> struct un_bool {
  int op;
  __device__ C operator()(C x) const { return un_pred<C>(op, x); }
};

/* The vector path when g qualifies (the dyn functor with one vector per
 * thread per step: its switch holds exp, erf, tan...), else the generic kernel. */
template <class C>
static ct_status run_unary(const char *name, int op, int dev, const ctc_ew &g, C q0, C q1) {
  ct_status st;
  bool done;
  if (ct__unary_info[op].rule == CT_RULE_BOOL)
    done = ctc_vec_run<C, 1, true>(name, dev, g, un_bool<C>{op}, &st);
  else if (op == CT_UOP_RELU)
    done = ctc_vec_run<C, 1, false>(name, dev, g, un_fixed<CT_UOP_RELU>(), &st);
  else
    done = ctc_vec_run<C, 1, false, 1>(name, dev, g, un_dyn<C>{op, q0, q1}, &st);
  return done ? st : ctc_ew_map_launch<C, 1>(name, dev, g, un_dyn<C>{op, q0, q1});
}

/* Which (op, input class) pairs have a kernel: as the CPU's table. */
static bool int_op_ok(int op) {
  switch (op) {
  case CT_UOP_NEG: case CT_UOP_ABS: case CT_UOP_RELU: case CT_UOP_SIGN: case CT_UOP_SQUARE:
  case CT_UOP_CLAMP: case CT_UOP_ISNAN: case CT_UOP_ISINF: case CT_UOP_ISFINITE:
  case CT_UOP_LOGICAL_NOT: return true;
  default: return false;
  }
}
static bool bool_op_ok(int op) {
  return op == CT_UOP_ISNAN || op == CT_UOP_ISINF || op == CT_UOP_ISFINITE || op == CT_UOP_LOGICAL_NOT;
}

/* Clamp bound as the dtype's integer (saturating, as the CPU's CONV_INT). */
static int64_t sat_to(int dt, double v) {
  double lo, hi;
  switch (dt) {
  case CT_I8: lo = INT8_MIN, hi = INT8_MAX; break;
  case CT_U8: lo = 0, hi = UINT8_MAX; break;
  case CT_I16: lo = INT16_MIN, hi = INT16_MAX; break;
  case CT_I32: lo = INT32_MIN, hi = INT32_MAX; break;
  case CT_BOOL: lo = 0, hi = 1; break;
  default:
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    return (int64_t)v;
  }
  return v <= lo ? (int64_t)lo : v >= hi ? (int64_t)hi : (int64_t)v;
}

extern "C" ct_status ct__cuda_unary(int op, const ctc_t *out, const ctc_t *x, double p0, double p1) {
  int dev = out->device, dt = x->dtype;
  const char *name = ct__unary_info[op].name;
  if (dt == CT_BOOL ? !bool_op_ok(op) : !ctc_is_float(dt) && !int_op_ok(op))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no CUDA kernel for %s", name, ct_dtype_name((ct_dtype)dt));
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[2] = {out, x};
  ctc_ew g;
  ctc_ew_init(&g, 2, ts);
  if (dt == CT_F64) return run_unary<double>(name, op, dev, g, p0, p1);
  if (ctc_is_float(dt)) return run_unary<float>(name, op, dev, g, (float)p0, (float)p1);
  return run_unary<int64_t>(name, op, dev, g, sat_to(dt, p0), sat_to(dt, p1));
}
