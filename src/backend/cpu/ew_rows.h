/* The CPU elementwise row loops (ew_rows_t.h), one instance per native
 * dtype: CT_FN(unary_row) becomes unary_row_f32, unary_row_i8, ... Included by
 * the files that build kernels from the formulas of core/unary_math.h and
 * core/binary_math.h (unary.c, binary.c). */
#ifndef CT_CPU_EW_ROWS_H
#define CT_CPU_EW_ROWS_H

#include "backend/cpu/ew_run.h"
#include "core/convert.h"
#include "ctensor/dtype.h"

#define CT_TEMPLATE "backend/cpu/ew_rows_t.h"
#include "core/for_float_types.h"
#define CT_WITH_BOOL
#include "core/for_int_types.h"
#undef CT_WITH_BOOL
#undef CT_TEMPLATE

/* X-macros over the dtypes of each class, X(ENUM suffix, type suffix, ...):
 * the kernel tables below the formulas' lists are indexed by dtype. */
#define CT_EW_FLOAT_TYPES(X, ...) X(F32, f32, __VA_ARGS__) X(F64, f64, __VA_ARGS__)
#define CT_EW_INT_TYPES(X, ...) \
  X(I8, i8, __VA_ARGS__)        \
  X(U8, u8, __VA_ARGS__) X(I16, i16, __VA_ARGS__) X(I32, i32, __VA_ARGS__) X(I64, i64, __VA_ARGS__)
#define CT_EW_BOOL_TYPE(X, ...) X(BOOL, b8, __VA_ARGS__)

#endif /* CT_CPU_EW_ROWS_H */
