/* Element conversions shared by both backends. Float-to-integer conversion
 * without undefined behaviour, the one definition for casts (copy), fills,
 * scalar operands and clamp bounds. C leaves an out-of-range conversion undefined (x86 gives
 * INT_MIN, a GPU saturates); torch leaves the result unspecified. ctensor
 * saturates: nan gives 0, values beyond the range give its end. A cast to a
 * narrower integer dtype saturates to int64 first, then wraps to the width
 * (as a C cast of the int64 value), so every backend stores the same bits. */
#ifndef CT_CORE_CONVERT_H
#define CT_CORE_CONVERT_H

#include <stdint.h>

#include "core/host_device.h"
#include "ctensor/dtype.h"

/* v rounded toward zero and saturated to [lo, hi]; nan gives 0. */
CT_HOST_DEVICE int64_t ct_saturate(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}

/* v as an int64, saturated (the first step of every float-to-integer cast). */
CT_HOST_DEVICE int64_t ct_f64_to_i64(double v) { return ct_saturate(v, INT64_MIN, INT64_MAX); }

/* v saturated to the range of integer dtype dt (bool: [0, 1]; any other
 * dtype: int64's), for operands that must stay in the dtype's range rather
 * than wrap, such as clamp's bounds. */
CT_HOST_DEVICE int64_t ct_saturate_to_dtype(double v, int dt) {
  switch (dt) {
    case CT_I8:
      return ct_saturate(v, INT8_MIN, INT8_MAX);
    case CT_U8:
      return ct_saturate(v, 0, UINT8_MAX);
    case CT_I16:
      return ct_saturate(v, INT16_MIN, INT16_MAX);
    case CT_I32:
      return ct_saturate(v, INT32_MIN, INT32_MAX);
    case CT_BOOL:
      return ct_saturate(v, 0, 1);
    default:
      return ct_f64_to_i64(v);
  }
}

/* i wrapped to the width of integer dtype dt and widened back (bool:
 * i != 0): the value a store of i into dt reads back. */
CT_HOST_DEVICE int64_t ct_wrap_to_dtype(int64_t i, int dt) {
  switch (dt) {
    case CT_I8:
      return (int8_t)(uint8_t)(uint64_t)i;
    case CT_U8:
      return (uint8_t)(uint64_t)i;
    case CT_I16:
      return (int16_t)(uint16_t)(uint64_t)i;
    case CT_I32:
      return (int32_t)(uint32_t)(uint64_t)i;
    case CT_BOOL:
      return i != 0;
    default:
      return i;
  }
}

/* A scalar operand v as the value an integer dtype dt holds: saturated to
 * int64, wrapped to the width; bool takes "nonzero" (0.5 is true). */
CT_HOST_DEVICE int64_t ct_scalar_to_int(double v, int dt) {
  return dt == CT_BOOL ? v != 0 : ct_wrap_to_dtype(ct_f64_to_i64(v), dt);
}

/* Moves one element of es (1, 2, 4 or 8) bytes, as bits: index copies,
 * where, same-dtype strided copies. */
CT_HOST_DEVICE void ct_move_elem(char *dst, const char *src, int es) {
  switch (es) {
    case 1:
      *(uint8_t *)dst = *(const uint8_t *)src;
      break;
    case 2:
      *(uint16_t *)dst = *(const uint16_t *)src;
      break;
    case 4:
      *(uint32_t *)dst = *(const uint32_t *)src;
      break;
    default:
      *(uint64_t *)dst = *(const uint64_t *)src;
      break;
  }
}

#endif /* CT_CORE_CONVERT_H */
