/* CUDA binary elementwise kernels: out = a op b, out = a op s (scalar),
 * out = a + alpha * b (axpy) and out = cond ? a : b (where).
 *
 * The formulas are core/binary_math.h's, the CPU's, as value functors in a
 * compute type (float for f32/f16/bf16, double for f64, int64 for integers
 * and bool), the op a grid-uniform switch except add, sub, mul and div,
 * fixed at compile time for the vector path; loads and stores convert
 * (common.cuh), so integer results wrap to their width on store and match
 * the CPU's narrow-type arithmetic (add/sub/mul/pow are exact modulo 2^64,
 * division results are in range). Bool add/mul/max/min are or/and on 0/1
 * values, as the CPU.
 *
 * Invalid integer operands (division, remainder, fmod by zero; negative
 * powers) leave 0 in the element and raise a fault (fault.cu): the next
 * synchronization with the device fails with CT_ERR_ARG naming the op, so no
 * op synchronizes at its launch.
 * Decomposition: contiguous operands of one dtype take the 16-byte vector
 * kernel (ctc_vec_kernel), any others ctc_ew_kernel (common.cuh). */
#include "backend/cuda/common.cuh"
#include "core/binary_math.h"
#include "core/convert.h"

/* The COMPARE-rule ops (result 0 or 1, stored as bool), for every class. */
template <class T> __device__ __forceinline__ T bin_compare(int op, T x, T y) {
  switch (op) {
#define X(E, name) \
  case CT_BOP_##E: \
    return (T)ct_bc_##name(x, y);
    CT_BINARY_COMPARE_OPS(X)
#undef X
    default:
      return T(0);
  }
}

template <class T> __device__ __forceinline__ T bin_float(int op, T x, T y) {
  switch (op) {
#define X(E, name) \
  case CT_BOP_##E: \
    return ct_bf_##name(x, y);
    CT_BINARY_FLOAT_OPS(X)
#undef X
    default:
      return bin_compare(op, x, y);
  }
}

/* Integers and bool in int64 (bool's add/mul/max/min are or/and on 0/1 values). */
__device__ __forceinline__ int64_t bin_int(int op, int64_t x, int64_t y, bool &bad) {
  switch (op) {
#define X(E, name) \
  case CT_BOP_##E: \
    return ct_bi_##name(x, y);
    CT_BINARY_INT_OPS(X)
#undef X
#define X(E, name) \
  case CT_BOP_##E: \
    return ct_bi_##name(x, y, &bad);
    CT_BINARY_INT_CHECKED_OPS(X)
#undef X
    default:
      return bin_compare(op, x, y);
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

#define CASE(E, name) case CT_BOP_##E:
static bool checked_op(int op) {
  switch (op) {
    CT_BINARY_INT_CHECKED_OPS(CASE)
    return true;
    default:
      return false;
  }
}

/* Which (op, compute dtype) pairs exist: the formulas' lists, as the CPU's table. */
static bool have_kernel(int op, int dt) {
  if (ct__binary_info[op].rule == CT_BRULE_COMPARE) return true;
  if (ctc_is_float(dt)) {
    switch (op) {
      CT_BINARY_FLOAT_OPS(CASE)
      return true;
      default:
        return false;
    }
  }
  if (dt == CT_BOOL) {
    switch (op) {
      CT_BINARY_BOOL_OPS(CASE)
      return true;
      default:
        return false;
    }
  }
  switch (op) {
    CT_BINARY_INT_OPS(CASE)
    CT_BINARY_INT_CHECKED_OPS(CASE)
    return true;
    default:
      return false;
  }
}
#undef CASE

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

extern "C" ct_status ct__cuda_binary(ct_binary_op op, ct_tensor *out_t, const ct_tensor *a_t,
                                     const ct_tensor *b_t) {
  const ctc_view out(out_t), a(a_t), b(b_t);
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

/* A tensor and a host scalar sv of compute class C. */
template <class C>
static ct_status run_binary_scalar(const char *name, int op, int dev, const ctc_ew &g, C sv,
                                   bool reversed) {
  auto with_scalar = [=](auto f) { return bin_scalar<C, decltype(f)>{f, sv, reversed}; };
  return run_binary<C, 1>(name, op, dev, g, with_scalar);
}

extern "C" ct_status ct__cuda_binary_scalar(ct_binary_op op, ct_tensor *out_t, const ct_tensor *a_t,
                                            double s, bool reversed) {
  const ctc_view out(out_t), a(a_t);
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
  return run_binary_scalar<int64_t>(name, op, dev, g, ct_scalar_to_int(s, dt), reversed);
}

/* ---- axpy: out = a + alpha * b ---------------------------------------------------------- */

/* core/binary_math.h's axpy; bool in int64: x + alpha * y is nonzero iff x | (alpha & y). */
template <class C> struct axpy_fn {
  C alpha;
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral<C>::value)
      return ct_bi_axpy(x, y, alpha);
    else
      return ct_bf_axpy(x, y, alpha);
  }
};

extern "C" ct_status ct__cuda_axpy(ct_tensor *out_t, const ct_tensor *a_t, const ct_tensor *b_t,
                                   double alpha) {
  const ctc_view out(out_t), a(a_t), b(b_t);
  int dev = out->device, dt = out->dtype;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("axpy", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[3] = {out, a, b};
  ctc_ew g;
  ctc_ew_init(&g, 3, ts);
  if (dt == CT_F64) return ctc_map<double, 2, false>("axpy", dev, g, axpy_fn<double>{alpha});
  if (ctc_is_float(dt))
    return ctc_map<float, 2, false>("axpy", dev, g, axpy_fn<float>{(float)alpha});
  return ctc_map<int64_t, 2, false>("axpy", dev, g, axpy_fn<int64_t>{ct_scalar_to_int(alpha, dt)});
}

/* ---- where: elements move by size ---------------------------------------------------------- */

struct where_fn {
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    bool c = *(const uint8_t *)ctc_ew_ptr(g, 1, off[1]) != 0;
    /* selects pointers, not off[c ? 2 : 3]: a run-time index would put off in local memory */
    const char *src = c ? ctc_ew_ptr(g, 2, off[2]) : ctc_ew_ptr(g, 3, off[3]);
    ct_move_elem(ctc_ew_ptr(g, 0, off[0]), src, g.es[0]);
  }
};

extern "C" ct_status ct__cuda_where(ct_tensor *out_t, const ct_tensor *cond_t, const ct_tensor *a_t,
                                    const ct_tensor *b_t) {
  const ctc_view out(out_t), cond(cond_t), a(a_t), b(b_t);
  int dev = out->device;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("where", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[4] = {out, cond, a, b};
  ctc_ew g;
  ctc_ew_init(&g, 4, ts);
  return ctc_ew_launch<4>("where", dev, g, where_fn());
}
