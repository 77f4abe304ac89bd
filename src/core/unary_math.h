/* The formulas of the elementwise unary ops and of their derivatives: the one
 * definition both backends compile (backend/cpu/unary.c, unary_backward.c;
 * backend/cuda/unary.cu, unary_backward.cu), so that a CPU and a GPU result
 * differ only by the math library and the compiler's contraction of a * b + c
 * (none on the CPU: the files that compile these formulas are built with
 * -ffp-contract=off, CT_FORMULA_SOURCES in CMakeLists.txt; the emulated GPU
 * gives the CPU's bits, tests/cuda_emu/lib/test_formulas.c).
 *
 * Adding a unary op: its row in ops/op_table.h (name, dtype rule, what its
 * derivative reads, node name), its public function in ops/elementwise.c and
 * ctensor/ops.h, and here its formula (and derivative) and its line in the
 * lists below; both backends' kernel tables are built from these lists. */
#ifndef CT_CORE_UNARY_MATH_H
#define CT_CORE_UNARY_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/exp_math.h"
#include "core/host_device.h"
#include "ops/op_table.h"

/* ---- Which formulas exist: X(ENUM, name), ENUM as in CT_UOP_ENUM ---------------- */

/* ct_uf_<name>(x, p0, p1) for floating x (f32, f64; f16/bf16 in f32). */
#define CT_UNARY_FLOAT_OPS(X)                                                                     \
  X(NEG, neg)                                                                                     \
  X(ABS, abs)                                                                                     \
  X(EXP, exp) X(EXPM1, expm1) X(LOG, log) X(LOG1P, log1p) X(LOG2, log2) X(SQRT, sqrt)             \
      X(RSQRT, rsqrt) X(SIN, sin) X(COS, cos) X(TAN, tan) X(TANH, tanh) X(ERF, erf)               \
          X(SIGMOID, sigmoid) X(RELU, relu) X(GELU, gelu) X(GELU_TANH, gelu_tanh) X(SILU, silu)   \
              X(SOFTPLUS, softplus) X(FLOOR, floor) X(CEIL, ceil) X(ROUND, round) X(TRUNC, trunc) \
                  X(SIGN, sign) X(RECIPROCAL, reciprocal) X(SQUARE, square) X(CLAMP, clamp)       \
                      X(LEAKY_RELU, leaky_relu) \
  X(ACOS, acos) \
  X(ACOSH, acosh) \
  X(ASIN, asin) \
  X(ASINH, asinh) \
  X(ATAN, atan) \
  X(ATANH, atanh) \
  X(COSH, cosh) \
  X(SINH, sinh) \
  X(LOG10, log10)

/* ct_ui_<name>(x, p0, p1) for integer x: the SAME-rule ops (ops/op_table.h)
 * but leaky_relu, which the op layer computes in floating point. */
#define CT_UNARY_INT_OPS(X) \
  X(NEG, neg) X(ABS, abs) X(RELU, relu) X(SIGN, sign) X(SQUARE, square) X(CLAMP, clamp)

/* ct_up_<name>(x), bool, for every dtype: the BOOL-rule ops. */
#define CT_UNARY_PREDICATES(X) \
  X(ISNAN, isnan) X(ISINF, isinf) X(ISFINITE, isfinite) X(LOGICAL_NOT, logical_not) \
  X(SIGNBIT, signbit)

/* X(ENUM, name): ct_ud_<name>(g, v, p0, p1) = g * d op/dx for floating
 * dtypes, v being what the op table's READS column says (ops/op_table.h:
 * the input x for IN, the output y for OUT, either for NONE); a kernel
 * streams three tensors. */
/* clang-format off */
#define CT_UNARY_GRADS(X)                                                                          \
  X(NEG, neg) X(ABS, abs) X(EXP, exp) X(EXPM1, expm1) X(LOG, log) X(LOG1P, log1p) X(LOG2, log2)     \
  X(SQRT, sqrt) X(RSQRT, rsqrt) X(SIN, sin) X(COS, cos) X(TAN, tan) X(TANH, tanh) X(ERF, erf)       \
  X(SIGMOID, sigmoid) X(RELU, relu) X(GELU, gelu) X(GELU_TANH, gelu_tanh) X(SILU, silu)            \
  X(SOFTPLUS, softplus) X(RECIPROCAL, reciprocal) X(SQUARE, square) X(CLAMP, clamp)                \
  X(LEAKY_RELU, leaky_relu) X(FLOOR, zero) X(CEIL, zero) X(ROUND, zero) X(TRUNC, zero)             \
  X(SIGN, zero) \
  X(ACOS, acos) \
  X(ACOSH, acosh) \
  X(ASIN, asin) \
  X(ASINH, asinh) \
  X(ATAN, atan) \
  X(ATANH, atanh) \
  X(COSH, cosh) \
  X(SINH, sinh) \
  X(LOG10, log10)
/* clang-format on */

/* The tie between this list and the op table: every differentiable row of
 * CT_UNARY_OPS (READS other than NOGRAD) has a derivative here, and every
 * derivative here belongs to a differentiable row, checked at compile time
 * (a missing row fails on an undeclared CT__UGRAD_<ENUM>). */
#ifdef __cplusplus
#define CT__STATIC_ASSERT static_assert
#else
#define CT__STATIC_ASSERT _Static_assert
#endif
enum {
#define X(E, n) CT__UGRAD_##E = 1,
  CT_UNARY_GRADS(X)
#undef X
};
#define CT__UGRAD_CHECK_NONE(E, n) \
  CT__STATIC_ASSERT(CT__UGRAD_##E, #n ": no derivative in CT_UNARY_GRADS");
#define CT__UGRAD_CHECK_IN CT__UGRAD_CHECK_NONE
#define CT__UGRAD_CHECK_OUT CT__UGRAD_CHECK_NONE
#define CT__UGRAD_CHECK_NOGRAD(E, n)
#define X(E, n, r, READS, ...) CT__UGRAD_CHECK_##READS(E, n)
CT_UNARY_OPS(X)
#undef X
#define X(E, n)                                                 \
  CT__STATIC_ASSERT((int)CT_UREADS_##E != (int)CT_READS_NOGRAD, \
                    #E ": a derivative for a NOGRAD op");
CT_UNARY_GRADS(X)
#undef X

/* ---- The instances: ct_uf_exp_f32 ... (C), overloads (C++) ------------------------ */

#define CT_TEMPLATE "core/unary_math_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE
#define CT_TEMPLATE "core/unary_int_t.h"
#define CT_WITH_BOOL
#include "core/for_int_types.h"
#undef CT_WITH_BOOL
#undef CT_TEMPLATE

#endif /* CT_CORE_UNARY_MATH_H */
