/* The formulas of the elementwise unary ops and of their derivatives: the one
 * definition both backends compile (backend/cpu/unary.c, unary_backward.c;
 * backend/cuda/unary.cu, unary_backward.cu), so that a CPU and a GPU result
 * differ only by the math library and the compiler's contraction of a * b + c
 * (none on the CPU: the files that compile these formulas are built with
 * -ffp-contract=off, CT_FORMULA_SOURCES in CMakeLists.txt; the emulated GPU
 * gives the CPU's bits, tests/cuda_emu/lib/test_formulas.c).
 *
 * Adding a unary op: its row in ops/op_table.h (name, dtype rule, public
 * functions, what its derivative reads, node name), here its formula and
 * derivative (unary_math_t.h; unary_int_t.h for an integer formula), and its
 * declaration in ctensor/ops.h. The lists the backends build their kernel
 * tables from are views of the op table (ops/op_table.h):
 *   CT_UNARY_FLOAT_OPS    ct_uf_<name>(x, p0, p1) for floating x (f32, f64;
 *                         f16/bf16 in f32): every rule but BOOL and INT
 *   CT_UNARY_INT_OPS      ct_ui_<name>(x, p0, p1) for integer x: SAME, INT
 *   CT_UNARY_INT_RULE_OPS the INT rows, whose ct_ui_<name> has a bool
 *                         instance (bool as a one-bit integer)
 *   CT_UNARY_PREDICATES   ct_up_<name>(x), bool, for every dtype: BOOL
 *   CT_UNARY_GRADS        X(ENUM, fn): ct_ud_<fn>(g, v, p0, p1) = g * d op/dx
 *                         for floating dtypes, fn = x_<grad>, y_<grad> or
 *                         g_<grad> as the row's READS is IN, OUT or NONE */
#ifndef CT_CORE_UNARY_MATH_H
#define CT_CORE_UNARY_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/exp_math.h"
#include "core/host_device.h"
#include "ops/op_table.h"

/* The derivatives' heads, for unary_math_t.h: each names the one value its
 * formula may read, v being x (the input), y (the output) or neither (the
 * parameter is then `unused`); the op table's READS column chooses which
 * name the kernels call (CT_UNARY_GRADS), so a derivative that reads what
 * its row does not save fails to compile: undeclared ct_ud_y_<grad>, or an
 * undeclared x in its body. */
#define CT_UD_X(grad) CT_HOST_DEVICE CT_T CT_FN(ct_ud_x_##grad)(CT_T g, CT_T x, CT_T p0, CT_T p1)
#define CT_UD_Y(grad) CT_HOST_DEVICE CT_T CT_FN(ct_ud_y_##grad)(CT_T g, CT_T y, CT_T p0, CT_T p1)
#define CT_UD_G(grad) \
  CT_HOST_DEVICE CT_T CT_FN(ct_ud_g_##grad)(CT_T g, CT_T unused, CT_T p0, CT_T p1)

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
