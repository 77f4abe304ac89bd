/* The formulas of the elementwise binary ops: the one definition both
 * backends compile (backend/cpu/binary.c, backend/cuda/binary.cu), with the
 * lists the backends build their kernel tables from (which (op, type class)
 * pairs exist). Floor division and Python's remainder follow torch; integer
 * arithmetic wraps; invalid integer operands are reported by the caller
 * (CT_ERR_ARG on the CPU, a device fault on CUDA).
 *
 * Adding a binary op: its row in ops/op_table.h (the lists of floating and
 * comparison formulas below derive from it), its formula here (in
 * binary_math_t.h), its derivative in autograd/grad_elementwise.c and its
 * declaration in ctensor/ops.h (docs/architecture.md's checklist). */
#ifndef CT_CORE_BINARY_MATH_H
#define CT_CORE_BINARY_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"
#include "ops/op_table.h"

/* ---- Which formulas exist: X(ENUM, name), ENUM as in CT_BOP_ENUM ---------------- */

/* ct_bf_<name>(x, y) for floating x, y (f32, f64; f16/bf16 in f32): every
 * ARITH and FLOAT row of the op table. */
#define CT_BINARY_FLOAT_OPS(X) CT_BINARY_ARITH_OPS(X)
/* clang-format off */
/* ct_bi_<name>(x, y) for integers, wrapping. */
#define CT_BINARY_INT_OPS(X)                                                            \
  X(ADD, add) X(SUB, sub) X(MUL, mul) X(MAXIMUM, maximum) X(MINIMUM, minimum)           \
  X(BITWISE_AND, bitwise_and) X(BITWISE_OR, bitwise_or) X(BITWISE_XOR, bitwise_xor)     \
  X(BITWISE_LEFT_SHIFT, bitwise_left_shift) X(BITWISE_RIGHT_SHIFT, bitwise_right_shift)
/* ct_bi_<name>(x, y, bad) for integers, with operands that are errors. */
#define CT_BINARY_INT_CHECKED_OPS(X) \
  X(FLOOR_DIVIDE, floor_divide) X(POW, pow) X(FMOD, fmod) X(REMAINDER, remainder)
/* The integer formulas that bool takes (or, and, xor). */
#define CT_BINARY_BOOL_OPS(X)                                           \
  X(ADD, add) X(MUL, mul) X(MAXIMUM, maximum) X(MINIMUM, minimum)       \
  X(BITWISE_AND, bitwise_and) X(BITWISE_OR, bitwise_or) X(BITWISE_XOR, bitwise_xor)
/* clang-format on */
/* ct_bc_<name>(x, y), bool, for every dtype: CT_BINARY_COMPARE_OPS, the
 * COMPARE rows of the op table. */

/* b^e for e >= 0 by squaring, wrapping modulo 2^64 (callers truncate). */
CT_HOST_DEVICE uint64_t ct_ipow_u64(uint64_t b, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return r;
}

/* ---- The instances: ct_bf_add_f32 ... (C), overloads (C++) ------------------------ */

#define CT_TEMPLATE "core/binary_math_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE
/* bool's instance: add/mul/max/min are or/and; the checks don't apply. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wbool-compare"
#endif
#pragma GCC diagnostic ignored "-Wint-in-bool-context"
#endif
#define CT_TEMPLATE "core/binary_int_t.h"
#define CT_WITH_BOOL
#include "core/for_int_types.h"
#undef CT_WITH_BOOL
#undef CT_TEMPLATE
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif /* CT_CORE_BINARY_MATH_H */
