/* f16 (IEEE binary16) and bf16 (bfloat16) conversions to and from f32.
 * Round to nearest even; nan stays nan; overflow goes to inf. Usable from C
 * and CUDA host code. */
#ifndef CT_CORE_HALF_H
#define CT_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ct__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float ct__bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline float ct_bf16_to_f32(uint16_t h) { return ct__bits_f32((uint32_t)h << 16); }

static inline uint16_t ct_f32_to_bf16(float f) {
  uint32_t u = ct__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet nan */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

static inline float ct_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return ct__bits_f32(sign | 0x7f800000u | (man << 13)); /* inf/nan */
  if (exp == 0) {
    if (man == 0) return ct__bits_f32(sign);
    /* subnormal: value = man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return ct__bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t ct_f32_to_f16(float f) {
  uint32_t u = ct__f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* nan */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
  if (a < 0x38800000u) {
    /* result is subnormal or zero: scale by 2^24 and round to an integer */
    float v = ct__bits_f32(a) * 16777216.0f; /* exact */
    /* round half to even of v (v < 1024) */
    uint32_t i = (uint32_t)v;
    float frac = v - (float)i;
    if (frac > 0.5f || (frac == 0.5f && (i & 1u))) i++;
    return (uint16_t)(sign | i);
  }
  /* normal: rebias exponent, round mantissa from 23 to 10 bits */
  uint32_t r = a - 0x38000000u; /* exponent 127 -> 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

#endif /* CT_CORE_HALF_H */
