/* Element access and rounding shared by cublas_emu.cpp and cudnn_emu.cpp
 * (tests/cuda_emu/lib). Halves are stored as the emulator's shim stores
 * __half and __nv_bfloat16: IEEE binary16 bits and the upper 16 bits of a
 * float; conversions are core/half.h's (round to nearest even, nan stays
 * nan), the library's own and the emulator's bf16 rounding. */
#ifndef CT_EMU_LIB_HOST_MATH_H
#define CT_EMU_LIB_HOST_MATH_H

#include <stdint.h>
#include <string.h>

#include "core/half.h"

namespace emu_lib {

enum class Elem { F16, BF16, F32, F64 };

static inline size_t elem_size(Elem e) {
  switch (e) {
    case Elem::F16:
    case Elem::BF16:
      return 2;
    case Elem::F32:
      return 4;
    default:
      return 8;
  }
}

/* Element i of an array of e, as the accumulator type (float or double). */
template <class Acc>
static inline Acc load(const void *base, size_t i, Elem e) {
  const char *p = (const char *)base + i * elem_size(e);
  switch (e) {
    case Elem::F16: {
      uint16_t h;
      memcpy(&h, p, 2);
      return (Acc)ct_f16_to_f32(h);
    }
    case Elem::BF16: {
      uint16_t h;
      memcpy(&h, p, 2);
      return (Acc)ct_bf16_to_f32(h);
    }
    case Elem::F32: {
      float f;
      memcpy(&f, p, 4);
      return (Acc)f;
    }
    default: {
      double d;
      memcpy(&d, p, 8);
      return (Acc)d;
    }
  }
}

/* Stores v into element i, rounded once to e (halves from a float
 * accumulator: one rounding, as the libraries' epilogues). */
template <class Acc>
static inline void store(void *base, size_t i, Elem e, Acc v) {
  char *p = (char *)base + i * elem_size(e);
  switch (e) {
    case Elem::F16: {
      uint16_t h = ct_f32_to_f16((float)v);
      memcpy(p, &h, 2);
      break;
    }
    case Elem::BF16: {
      uint16_t h = ct_f32_to_bf16((float)v);
      memcpy(p, &h, 2);
      break;
    }
    case Elem::F32: {
      float f = (float)v;
      memcpy(p, &f, 4);
      break;
    }
    default: {
      double d = (double)v;
      memcpy(p, &d, 8);
      break;
    }
  }
}

/* f rounded to TF32 (8-bit exponent, 10-bit mantissa) as the tensor cores'
 * input conversion (cvt.rna.tf32.f32: nearest, ties away from zero); inf and
 * nan unchanged. */
static inline float to_tf32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) {
    u += 0x1000u; /* half a TF32 ulp: a carry rounds the magnitude up */
    u &= 0xffffe000u;
  }
  memcpy(&f, &u, 4);
  return f;
}

}  // namespace emu_lib

#endif /* CT_EMU_LIB_HOST_MATH_H */
