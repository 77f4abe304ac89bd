/* CUDA unary elementwise kernels: out = op(x) for the ops of CT_UNARY_OPS.
 *
 * The formulas are core/unary_math.h's, the CPU's, as value functors in a
 * compute type (float for f32/f16/bf16, double for f64, int64 for integers
 * and bool), the op a run-time switch that is uniform across the grid
 * (relu's fixed at compile time on the vector path); loads and stores
 * convert from and to the operands' dtypes, so f16/bf16 compute in f32 as on
 * the CPU, and integer results wrap to their width on store (the CPU's
 * results computed in int64). Decomposition: the 16-byte vector kernel for
 * contiguous operands, else ctc_ew_kernel (common.cuh). */
#include "backend/cuda/common.cuh"
#include "core/convert.h"
#include "core/unary_math.h"

/* The BOOL-rule ops (result 0 or 1, stored as bool), for every class. */
template <class C>
__device__ __forceinline__ C un_pred(int op, C x) {
  switch (op) {
#define X(E, name) \
  case CT_UOP_##E: \
    return (C)ct_up_##name(x);
    CT_UNARY_PREDICATES(X)
#undef X
    default:
      return C(0);
  }
}

/* op's formula (core/unary_math.h) in compute class C: floating (float for
 * f32/f16/bf16, double) or int64 for integers and bool, whose values are
 * sign/zero-extended from their dtype (the store truncates). */
template <class C>
__device__ __forceinline__ C un_value(int op, C x, C q0, C q1) {
  if constexpr (std::is_integral<C>::value) {
    switch (op) {
#define X(E, name) \
  case CT_UOP_##E: \
    return ct_ui_##name(x, q0, q1);
      CT_UNARY_INT_OPS(X)
#undef X
      default:
        return un_pred(op, x);
    }
  } else {
    switch (op) {
#define X(E, name) \
  case CT_UOP_##E: \
    return ct_uf_##name(x, q0, q1);
      CT_UNARY_FLOAT_OPS(X)
#undef X
      default:
        return un_pred(op, x);
    }
  }
}

/* ---- Value functors (common.cuh) ---------------------------------------------------- */

/* relu, the hottest op, with the op a compile-time constant: no switch. */
template <int OP>
struct un_fixed {
  template <class C>
  __device__ C operator()(C x) const {
    return un_value<C>(OP, x, C(0), C(0));
  }
};

/* Any op, chosen at run time (uniform across the grid). */
template <class C>
struct un_dyn {
  int op;
  C q0, q1;
  __device__ C operator()(C x) const { return un_value<C>(op, x, q0, q1); }
};

/* A bool input, computed as a one-bit integer: the integer formula's low bit
 * (bitwise_not is logical not; the predicates give 0 or 1 already). */
struct un_bit {
  int op;
  __device__ int64_t operator()(int64_t x) const { return un_value<int64_t>(op, x, 0, 0) & 1; }
};

/* The BOOL-rule ops alone, for their bool-output vector kernels. */
template <class C>
struct un_bool {
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

/* Which (op, input class) pairs have a kernel: the op table's views, as the CPU's table. */
#define CASE(E, name) case CT_UOP_##E:
static bool int_op_ok(int op) {
  switch (op) {
    CT_UNARY_INT_OPS(CASE)
    CT_UNARY_PREDICATES(CASE)
    return true;
    default:
      return false;
  }
}
static bool bool_op_ok(int op) {
  switch (op) {
    CT_UNARY_INT_RULE_OPS(CASE)
    CT_UNARY_PREDICATES(CASE)
    return true;
    default:
      return false;
  }
}
#undef CASE

extern "C" ct_status ct__cuda_unary(ct_unary_op op, ct_tensor *out_t, const ct_tensor *x_t,
                                    double p0, double p1) {
  const ctc_view out(out_t), x(x_t);
  int dev = out->device, dt = x->dtype;
  const char *name = ct__unary_info[op].name;
  if (dt == CT_BOOL ? !bool_op_ok(op) : !ctc_is_float(dt) && !int_op_ok(op))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no CUDA kernel for %s", name,
                           ct_dtype_name((ct_dtype)dt));
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[2] = {out, x};
  ctc_ew g;
  ctc_ew_init(&g, 2, ts);
  if (dt == CT_BOOL)
    return ctc_ew_map_launch<int64_t, 1>(name, dev, g, un_bit{op}); /* no vector path */
  if (dt == CT_F64) return run_unary<double>(name, op, dev, g, p0, p1);
  if (ctc_is_float(dt)) return run_unary<float>(name, op, dev, g, (float)p0, (float)p1);
  /* clamp's bounds saturated to the dtype's range, as the CPU (core/convert.h) */
  return run_unary<int64_t>(name, op, dev, g, ct_saturate_to_dtype(p0, dt),
                            ct_saturate_to_dtype(p1, dt));
}
