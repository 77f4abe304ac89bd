/* Single values of any dtype read and written through double (item, fills,
 * printing, references). Not for hot loops. Floats go to integers through
 * core/convert.h's saturating conversion, as every kernel's casts. */
#include <float.h>
#include <math.h>

#include "core/convert.h"
#include "core/half_dtype.h"

double ct__load_as_double(const void *p, ct_dtype dtype) {
  switch (dtype) {
#define X(E, T) \
  case E: return (double)*(const T *)p;
    X(CT_F32, float) X(CT_F64, double) X(CT_I8, int8_t) X(CT_U8, uint8_t) X(CT_I16, int16_t) X(CT_I32, int32_t) X(CT_I64, int64_t) X(CT_BOOL, bool)
#undef X
  case CT_F16:
  case CT_BF16: return (double)ct__half_load(p, dtype);
  default: return 0;
  }
}

int64_t ct__load_as_i64(const void *p, ct_dtype dtype) {
  switch (dtype) {
#define X(E, T) \
  case E: return (int64_t)*(const T *)p;
    X(CT_I8, int8_t) X(CT_U8, uint8_t) X(CT_I16, int16_t) X(CT_I32, int32_t) X(CT_I64, int64_t) X(CT_BOOL, bool)
#undef X
  default: return 0; /* not an integer dtype */
  }
}

void ct__store_from_double(void *p, ct_dtype dtype, double v) {
  switch (dtype) {
  case CT_BOOL: *(bool *)p = v != 0; break;
  case CT_F32: *(float *)p = (float)v; break;
  case CT_F64: *(double *)p = v; break;
#define X(E, T)                              \
  case E:                                    \
    *(T *)p = (T)(uint64_t)ct_f64_to_i64(v); \
    break;
    X(CT_I8, int8_t) X(CT_U8, uint8_t) X(CT_I16, int16_t) X(CT_I32, int32_t) X(CT_I64, int64_t)
#undef X
  case CT_F16:
  case CT_BF16: ct__half_store(p, dtype, (float)v); break;
  default: break;
  }
}

/* PyTorch's checked conversion of a fill value (c10::checked_convert): a
 * value outside the dtype's range is an error, not a silent wrap. C has one
 * number type, so an integral v follows the rule for Python ints (u8 also
 * takes -255..-1, wrapping, as torch does for int values) and any other v the
 * rule for Python floats. Bool takes every value; floating dtypes take nan,
 * infinities and finite values up to their largest finite value. */
bool ct__scalar_fits(double v, ct_dtype dtype) {
  static const double int_lo[CT_DTYPE_COUNT] = {
      [CT_I8] = -128, [CT_U8] = 0, [CT_I16] = -32768, [CT_I32] = -2147483648.0,
      [CT_I64] = -9223372036854775808.0};
  static const double int_hi[CT_DTYPE_COUNT] = {
      [CT_I8] = 127, [CT_U8] = 255, [CT_I16] = 32767, [CT_I32] = 2147483647.0};
  switch (dtype) {
  case CT_BOOL:
  case CT_F64: return true;
  case CT_F32: return !isfinite(v) || fabs(v) <= FLT_MAX;
  case CT_F16: return !isfinite(v) || fabs(v) <= 65504.0;
  case CT_BF16: return !isfinite(v) || fabs(v) <= 3.3895313892515355e38;
  case CT_I64: return isfinite(v) && v >= int_lo[dtype] && v < 9223372036854775808.0;
  case CT_U8:
    if (!isfinite(v)) return false;
    return v == trunc(v) ? fabs(v) <= 255 : v >= 0 && v <= 255;
  case CT_I8:
  case CT_I16:
  case CT_I32: return isfinite(v) && v >= int_lo[dtype] && v <= int_hi[dtype];
  default: return false;
  }
}

bool ct__check_scalar_fits(const char *op, double v, ct_dtype dtype) {
  if (ct__scalar_fits(v, dtype)) return true;
  ct__fail(CT_ERR_ARG, "%s: value %.17g cannot be converted to %s without overflow", op, v,
           ct_dtype_name(dtype));
  return false;
}
