/* Instantiates a template header once per native floating type: includes
 * CT_TEMPLATE (a quoted path) with CT_T = float, then double, and CT_S (f32,
 * f64), CT_MATH (the libm suffix: f, nothing) and CT_DT (CT_F32, CT_F64)
 * defined (core/host_device.h). Usage:
 *   #define CT_TEMPLATE "backend/cpu/norm_t.h"
 *   #include "core/for_float_types.h"
 *   #undef CT_TEMPLATE */
#define CT_T float
#define CT_S f32
#define CT_MATH f
#define CT_DT CT_F32
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_MATH
#undef CT_DT

#define CT_T double
#define CT_S f64
#define CT_MATH
#define CT_DT CT_F64
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_MATH
#undef CT_DT
