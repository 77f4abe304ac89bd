/* Instantiates a template header of the CPU reduction kernels once per dtype
 * (reduce_kernels.c, arg_reduce.c): includes CT_TEMPLATE with CT_T (the
 * element's storage type: uint16_t for f16 and bf16), CT_S (f32, f64, f16,
 * bf16, i8, u8, i16, i32, i64, b8), CT_DT and, for the floating dtypes,
 * CT_IS_FLOAT defined (their elements fold as double, the others as int64:
 * reduce.h's ct__rload_<S>). */
#define CT_IS_FLOAT
#define CT_T float
#define CT_S f32
#define CT_DT CT_F32
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#define CT_T double
#define CT_S f64
#define CT_DT CT_F64
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#define CT_T uint16_t
#define CT_S f16
#define CT_DT CT_F16
#include CT_TEMPLATE
#undef CT_S
#undef CT_DT
#define CT_S bf16
#define CT_DT CT_BF16
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_IS_FLOAT

#define CT_WITH_BOOL
#include "core/for_int_types.h"
#undef CT_WITH_BOOL
