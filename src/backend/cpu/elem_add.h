/* One element added into another of the same dtype, for the CPU's
 * accumulating writes (scatter_add, index_put with accumulate): floats in
 * their own type (f16/bf16 through f32), integers wrapping, bool as "or". */
#ifndef CT_CPU_ELEM_ADD_H
#define CT_CPU_ELEM_ADD_H

#include "core/half_dtype.h"
#include "core/internal.h"

#define CT__ADD_WRAP(T) *(T *)dst = (T)((uint64_t) * (T *)dst + (uint64_t) * (const T *)src)

static inline void ct__cpu_add_elem(char *dst, const char *src, ct_dtype dtype) {
  switch (dtype) {
    case CT_F32:
      *(float *)dst += *(const float *)src;
      break;
    case CT_F64:
      *(double *)dst += *(const double *)src;
      break;
    case CT_F16:
    case CT_BF16:
      ct__half_store(dst, dtype, ct__half_load(dst, dtype) + ct__half_load(src, dtype));
      break;
    case CT_I8:
      CT__ADD_WRAP(int8_t);
      break;
    case CT_U8:
      CT__ADD_WRAP(uint8_t);
      break;
    case CT_I16:
      CT__ADD_WRAP(int16_t);
      break;
    case CT_I32:
      CT__ADD_WRAP(int32_t);
      break;
    case CT_I64:
      CT__ADD_WRAP(int64_t);
      break;
    case CT_BOOL:
      *(bool *)dst = *(bool *)dst || *(const bool *)src;
      break;
    default:
      break;
  }
}
#undef CT__ADD_WRAP

#endif /* CT_CPU_ELEM_ADD_H */
