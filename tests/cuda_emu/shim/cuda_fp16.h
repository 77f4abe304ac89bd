/* Host emulation of cuda_fp16.h (tests/cuda_emu/README.md): __half stores
 * IEEE binary16 bits; conversions go through the compiler's _Float16 (round
 * to nearest even, as __float2half_rn), arithmetic through float. */
#ifndef CT_EMU_CUDA_FP16_H
#define CT_EMU_CUDA_FP16_H
#include <cuda_runtime.h>

struct alignas(2) __half {
  unsigned short __x;
  __half() = default;
  template <class T, class = typename std::enable_if<std::is_arithmetic<T>::value>::type>
  __half(T v) { /* one rounding from any arithmetic type, as __float2half_rn, __double2half... */
    _Float16 h = (_Float16)v;
    memcpy(&__x, &h, 2);
  }
  operator float() const {
    _Float16 h;
    memcpy(&h, &__x, 2);
    return (float)h;
  }
  static __half from_bits(unsigned short b) {
    __half h;
    h.__x = b;
    return h;
  }
};
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double d) { return __half(d); }
static inline __half __ushort_as_half(unsigned short u) { return __half::from_bits(u); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __short_as_half(short u) { return __half::from_bits((unsigned short)u); }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __hadd(__half a, __half b) { return __half((float)a + (float)b); }
static inline __half __hsub(__half a, __half b) { return __half((float)a - (float)b); }
static inline __half __hmul(__half a, __half b) { return __half((float)a * (float)b); }
static inline __half __hdiv(__half a, __half b) { return __half((float)a / (float)b); }
static inline __half __hneg(__half a) {
  return __half::from_bits((unsigned short)(a.__x ^ 0x8000u));
}
static inline __half __habs(__half a) {
  return __half::from_bits((unsigned short)(a.__x & 0x7fffu));
}
static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline bool __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u; }
static inline __half atomicAdd(__half *p, __half v) {
  __half old = *p;
  *p = __half((float)old + (float)v);
  return old;
}
#endif
