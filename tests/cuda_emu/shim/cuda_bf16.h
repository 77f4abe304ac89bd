/* Host emulation of cuda_bf16.h (tests/cuda_emu/README.md): __nv_bfloat16
 * stores the upper 16 bits of a float; float -> bf16 rounds to nearest even
 * (nan stays a quiet nan), arithmetic goes through float. */
#ifndef CT_EMU_CUDA_BF16_H
#define CT_EMU_CUDA_BF16_H
#include <cuda_runtime.h>

#include "core/half.h" /* the library's own rounding, not a second copy */

struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  template <class T, class = typename std::enable_if<std::is_arithmetic<T>::value>::type>
  __nv_bfloat16(T v) {
    __x = round((float)v);
  } /* through float (two roundings from double) */
  operator float() const { return __uint_as_float((unsigned)__x << 16); }
  static __nv_bfloat16 from_bits(unsigned short b) {
    __nv_bfloat16 h;
    h.__x = b;
    return h;
  }
  static unsigned short round(float f) { return ct_f32_to_bf16(f); }
};
typedef __nv_bfloat16 nv_bfloat16;
static inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16((float)d); }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
  return __nv_bfloat16::from_bits(u);
}
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) {
  __nv_bfloat16 old = *p;
  *p = __nv_bfloat16((float)old + (float)v);
  return old;
}
#endif
