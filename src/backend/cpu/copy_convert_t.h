/* Template of copy.c's converting row kernels, included once per native
 * source type (core/for_float_types.h, for_int_types.h: CT_T, CT_S; CT_UT
 * defined for integers and bool): defines convert_<dst>_<src> for every
 * native destination by including copy_convert_pair_t.h. */
#define CT_TD float
#define CT_SD f32
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_TD double
#define CT_SD f64
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_TD bool
#define CT_SD b8
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_DST_INT
#define CT_TD int8_t
#define CT_SD i8
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_TD uint8_t
#define CT_SD u8
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_TD int16_t
#define CT_SD i16
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_TD int32_t
#define CT_SD i32
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#define CT_TD int64_t
#define CT_SD i64
#include "backend/cpu/copy_convert_pair_t.h"
#undef CT_TD
#undef CT_SD
#undef CT_DST_INT
