/* Single values of any dtype read and written through double (item, fills,
 * printing, references). Not for hot loops. Floats go to integers through
 * core/convert.h's saturating conversion, as every kernel's casts. */
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

