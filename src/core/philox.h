/* Philox 4x32-10 and the transforms from its words to uniform, normal,
 * integer and Bernoulli values: the one definition of ctensor's random
 * streams, shared by the CPU backend (backend/cpu/random.c) and the CUDA
 * backend, so that the same seed gives bit-identical results on both.
 *
 * ---- The stream layout (what every backend must reproduce) ----
 * A generator state is (seed, offset). Block b of the stream is
 *   w[0..3] = Philox4x32-10(counter = {lo32(offset + b), hi32(offset + b), 0, 0},
 *                           key     = {lo32(seed), hi32(seed)})
 * (offset + b wraps modulo 2^64). A random fill of n elements (element i is
 * the i-th in row-major order of the output) uses blocks 0..ceil(n / per)-1
 * and advances the generator's offset by that many blocks, where
 *   narrow draws, per = 4: element i reads block i/4, word i%4;
 *   wide draws,   per = 2: element i reads block i/2, words 2(i%2), 2(i%2)+1
 *                          (as x = w[2k] | w[2k+1] << 32).
 * Wide draws are f64 uniform/normal and integers with range > 2^32; every
 * other fill is narrow. Per kind (all arithmetic in IEEE binary32 for f32,
 * f16 and bf16 outputs, binary64 for f64, round to nearest, no FMA):
 *   uniform f32/f16/bf16: u = (w >> (32 - d)) * 2^-d with d = 24 / 11 / 8 (the
 *     dtype's significand digits, so u < 1 holds after rounding);
 *     v = (float)low + (float)(high - low) * u; f16/bf16 round v (RNE).
 *   uniform f64: u = (x >> 11) * 2^-53; v = low + (high - low) * u.
 *   normal f32/f16/bf16: the block's words form two pairs (w0, w1), (w2, w3);
 *     element i uses pair (i%4)/2 and takes the cosine branch if i is even,
 *     the sine branch if odd: u1 = ((wa >> 8) + 1) * 2^-24 in (0, 1],
 *     k = wb >> 8, theta = 2 pi k 2^-24,
 *     z = sqrt(-2 log u1) * (cos | sin)(theta), v = (float)mean + (float)std * z.
 *   normal f64: the block is one pair x1 = w0 | w1 << 32, x2 = w2 | w3 << 32;
 *     element i takes cos if even, sin if odd; u1 = ((x1 >> 11) + 1) * 2^-53,
 *     k = x2 >> 11, theta = 2 pi k 2^-53; v = mean + std * z.
 *   integers in [low, low + range): narrow (range <= 2^32): v = low + w % range;
 *     wide: v = low + x % range (64-bit wrapping arithmetic), then converted
 *     to the output dtype.
 *   Bernoulli (narrow): v = (w * 2^-32 < p) ? 1 : 0, compared in binary64.
 * log, sin and cos are computed below by our own range reductions and
 * polynomials using only + - * / and sqrt, which IEEE 754 rounds correctly
 * on every CPU and GPU; libm is not used because glibc and CUDA differ in
 * the last place.
 *
 * ---- Compiling this header ----
 * Every expression must be evaluated exactly as written: no contraction of
 * a * b + c into an FMA, no fast-math. On the host the header turns
 * contraction off for its own functions (GCC and Clang; see below), so an
 * includer needs no special flags. On the device the arithmetic goes
 * through the __fmul_rn / __fadd_rn family, which nvcc never fuses; compile
 * the .cu file that includes this header with -fmad=false anyway (any
 * arithmetic it adds around these calls then stays unfused too), and
 * without --use_fast_math, -ftz=true, -prec-div=false or -prec-sqrt=false. */
#ifndef CT_CORE_PHILOX_H
#define CT_CORE_PHILOX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

/* Arithmetic that must not be contracted. On the device: the _rn intrinsics
 * (never fused); on the host: plain operators in a file compiled with
 * contraction off. */
#if defined(__CUDA_ARCH__)
#define CT_FADD(a, b) __fadd_rn((a), (b))
#define CT_FSUB(a, b) __fsub_rn((a), (b))
#define CT_FMUL(a, b) __fmul_rn((a), (b))
#define CT_DADD(a, b) __dadd_rn((a), (b))
#define CT_DSUB(a, b) __dsub_rn((a), (b))
#define CT_DMUL(a, b) __dmul_rn((a), (b))
#define CT_FSQRT(a) __fsqrt_rn(a)
#define CT_DSQRT(a) __dsqrt_rn(a)
#else
#define CT_FADD(a, b) ((a) + (b))
#define CT_FSUB(a, b) ((a) - (b))
#define CT_FMUL(a, b) ((a) * (b))
#define CT_DADD(a, b) ((a) + (b))
#define CT_DSUB(a, b) ((a) - (b))
#define CT_DMUL(a, b) ((a) * (b))
#define CT_FSQRT(a) __builtin_sqrtf(a) /* the correctly rounded instruction */
#define CT_DSQRT(a) __builtin_sqrt(a)
#endif

/* No contraction in this header's functions, whatever the includer's flags:
 * GCC (which ignores `#pragma STDC FP_CONTRACT`) gets fp-contract=off as an
 * optimize option on the functions below, kept when they are inlined; Clang
 * gets the standard pragma at the top of each function body (CT_RNG_STRICT).
 * Not covered: Clang's -ffp-contract=fast, which disregards pragmas; don't
 * build with it. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#define CT_RNG_GCC_PUSHED
#endif
#if defined(__clang__)
#define CT_RNG_STRICT _Pragma("STDC FP_CONTRACT OFF")
#else
#define CT_RNG_STRICT
#endif

/* ---- Philox 4x32-10 (Salmon et al., SC'11; Random123's philox4x32_10) ---- */

#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

CT_HOST_DEVICE void ct_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2],
                                     uint32_t out[4]) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += CT_PHILOX_W0;
      k1 += CT_PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)CT_PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)CT_PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = (uint32_t)p0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Block b of the stream (seed, offset): see the layout above. */
CT_HOST_DEVICE void ct_philox_block(uint64_t seed, uint64_t offset, uint64_t b, uint32_t out[4]) {
  uint64_t c = offset + b;
  uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0u, 0u};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  ct_philox4x32_10(ctr, key, out);
}

CT_HOST_DEVICE uint64_t ct_philox_u64(const uint32_t *w) {
  return (uint64_t)w[0] | ((uint64_t)w[1] << 32);
}

/* ---- Bit access without libm (frexp) ---------------------------------- */

#if defined(__CUDA_ARCH__)
CT_HOST_DEVICE uint32_t ct_rng_f32_bits(float f) { return __float_as_uint(f); }
CT_HOST_DEVICE float ct_rng_f32_from_bits(uint32_t u) { return __uint_as_float(u); }
CT_HOST_DEVICE uint64_t ct_rng_f64_bits(double f) { return (uint64_t)__double_as_longlong(f); }
CT_HOST_DEVICE double ct_rng_f64_from_bits(uint64_t u) { return __longlong_as_double((long long)u); }
#else
CT_HOST_DEVICE uint32_t ct_rng_f32_bits(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  return v.u;
}
CT_HOST_DEVICE float ct_rng_f32_from_bits(uint32_t u) {
  union { float f; uint32_t u; } v;
  v.u = u;
  return v.f;
}
CT_HOST_DEVICE uint64_t ct_rng_f64_bits(double f) {
  union { double f; uint64_t u; } v;
  v.f = f;
  return v.u;
}
CT_HOST_DEVICE double ct_rng_f64_from_bits(uint64_t u) {
  union { double f; uint64_t u; } v;
  v.u = u;
  return v.f;
}
#endif

/* ---- log of u in (0, 1], u a positive normal number ------------------- *
 * u = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m-1)/(m+1),
 * |s| <= 0.1716, by its odd series; log u = e ln2_hi + (e ln2_lo + log m). */

CT_HOST_DEVICE float ct_rng_logf(float u) {
  CT_RNG_STRICT
  uint32_t bits = ct_rng_f32_bits(u);
  int e = (int)((bits >> 23) & 0xffu) - 127;
  float m = ct_rng_f32_from_bits((bits & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
  if (m > 1.41421356f) {
    m = CT_FMUL(m, 0.5f);
    e += 1;
  }
  float s = CT_FSUB(m, 1.0f) / CT_FADD(m, 1.0f);
  float z = CT_FMUL(s, s);
  float p = 1.81818181818181818182e-1f;            /* 2/11 */
  p = CT_FADD(2.22222222222222222222e-1f, CT_FMUL(z, p)); /* 2/9 */
  p = CT_FADD(2.85714285714285714286e-1f, CT_FMUL(z, p)); /* 2/7 */
  p = CT_FADD(4.0e-1f, CT_FMUL(z, p));                    /* 2/5 */
  p = CT_FADD(6.66666666666666666667e-1f, CT_FMUL(z, p)); /* 2/3 */
  float logm = CT_FADD(CT_FMUL(2.0f, s), CT_FMUL(CT_FMUL(s, z), p));
  float fe = (float)e;
  return CT_FADD(CT_FMUL(fe, 6.93145751953125e-1f),             /* ln2_hi, 16 bits */
                 CT_FADD(CT_FMUL(fe, 1.42860682030941723212e-6f), logm)); /* ln2_lo */
}

CT_HOST_DEVICE double ct_rng_log(double u) {
  CT_RNG_STRICT
  uint64_t bits = ct_rng_f64_bits(u);
  int e = (int)((bits >> 52) & 0x7ffu) - 1023;
  double m = ct_rng_f64_from_bits((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m = CT_DMUL(m, 0.5);
    e += 1;
  }
  double s = CT_DSUB(m, 1.0) / CT_DADD(m, 1.0);
  double z = CT_DMUL(s, s);
  double p = 8.69565217391304347826e-2; /* 2/23 */
  p = CT_DADD(9.52380952380952380952e-2, CT_DMUL(z, p)); /* 2/21 */
  p = CT_DADD(1.05263157894736842105e-1, CT_DMUL(z, p)); /* 2/19 */
  p = CT_DADD(1.17647058823529411765e-1, CT_DMUL(z, p)); /* 2/17 */
  p = CT_DADD(1.33333333333333333333e-1, CT_DMUL(z, p)); /* 2/15 */
  p = CT_DADD(1.53846153846153846154e-1, CT_DMUL(z, p)); /* 2/13 */
  p = CT_DADD(1.81818181818181818182e-1, CT_DMUL(z, p)); /* 2/11 */
  p = CT_DADD(2.22222222222222222222e-1, CT_DMUL(z, p)); /* 2/9 */
  p = CT_DADD(2.85714285714285714286e-1, CT_DMUL(z, p)); /* 2/7 */
  p = CT_DADD(4.0e-1, CT_DMUL(z, p));                    /* 2/5 */
  p = CT_DADD(6.66666666666666666667e-1, CT_DMUL(z, p)); /* 2/3 */
  double logm = CT_DADD(CT_DMUL(2.0, s), CT_DMUL(CT_DMUL(s, z), p));
  double fe = (double)e;
  return CT_DADD(CT_DMUL(fe, 6.93147180369123816490e-1),              /* ln2_hi (fdlibm) */
                 CT_DADD(CT_DMUL(fe, 1.90821492927058770002e-10), logm)); /* ln2_lo */
}

/* ---- sin and cos of theta = 2 pi k 2^-bits, k in [0, 2^bits) ------------ *
 * Exact reduction in integers: theta = (q + f) pi/2 with q the nearest
 * quadrant and f = k/2^(bits-2) - q in [-1/2, 1/2); x = f pi/2 in [-pi/4, pi/4)
 * by Taylor polynomials, then rotated by q. */

CT_HOST_DEVICE void ct_rng_sincos2pi_f32(uint32_t k /* 24 bits */, float *sin_out, float *cos_out) {
  CT_RNG_STRICT
  uint32_t q = (k + (1u << 21)) >> 22; /* 0..4 */
  int32_t fi = (int32_t)k - (int32_t)(q << 22);
  float x = CT_FMUL(CT_FMUL((float)fi, 2.384185791015625e-7f), 1.57079632679489661923f); /* fi 2^-22 pi/2 */
  float z = CT_FMUL(x, x);
  float ps = 1.60590438368216145994e-10f;                  /* 1/13! */
  ps = CT_FSUB(2.50521083854417187751e-8f, CT_FMUL(z, ps)); /* 1/11! */
  ps = CT_FSUB(2.75573192239858906526e-6f, CT_FMUL(z, ps)); /* 1/9! */
  ps = CT_FSUB(1.98412698412698412698e-4f, CT_FMUL(z, ps)); /* 1/7! */
  ps = CT_FSUB(8.33333333333333333333e-3f, CT_FMUL(z, ps)); /* 1/5! */
  ps = CT_FSUB(1.66666666666666666667e-1f, CT_FMUL(z, ps)); /* 1/3! */
  float s = CT_FSUB(x, CT_FMUL(CT_FMUL(x, z), ps));
  float pc = 2.08767569878680989792e-9f;                   /* 1/12! */
  pc = CT_FSUB(2.75573192239858906526e-7f, CT_FMUL(z, pc)); /* 1/10! */
  pc = CT_FSUB(2.48015873015873015873e-5f, CT_FMUL(z, pc)); /* 1/8! */
  pc = CT_FSUB(1.38888888888888888889e-3f, CT_FMUL(z, pc)); /* 1/6! */
  pc = CT_FSUB(4.16666666666666666667e-2f, CT_FMUL(z, pc)); /* 1/4! */
  pc = CT_FSUB(0.5f, CT_FMUL(z, pc));                       /* 1/2! */
  float c = CT_FSUB(1.0f, CT_FMUL(z, pc));
  switch (q & 3u) {
  case 0: *sin_out = s, *cos_out = c; break;
  case 1: *sin_out = c, *cos_out = -s; break;
  case 2: *sin_out = -s, *cos_out = -c; break;
  default: *sin_out = -c, *cos_out = s; break;
  }
}

CT_HOST_DEVICE void ct_rng_sincos2pi_f64(uint64_t k /* 53 bits */, double *sin_out, double *cos_out) {
  CT_RNG_STRICT
  uint64_t q = (k + (1ull << 50)) >> 51; /* 0..4 */
  int64_t fi = (int64_t)k - (int64_t)(q << 51);
  double x = CT_DMUL(CT_DMUL((double)fi, 4.44089209850062616169e-16), 1.57079632679489661923); /* fi 2^-51 pi/2 */
  double z = CT_DMUL(x, x);
  double ps = 8.22063524662432971696e-18;                 /* 1/19! */
  ps = CT_DSUB(2.81145725434552076320e-15, CT_DMUL(z, ps)); /* 1/17! */
  ps = CT_DSUB(7.64716373181981647590e-13, CT_DMUL(z, ps)); /* 1/15! */
  ps = CT_DSUB(1.60590438368216145994e-10, CT_DMUL(z, ps)); /* 1/13! */
  ps = CT_DSUB(2.50521083854417187751e-8, CT_DMUL(z, ps));  /* 1/11! */
  ps = CT_DSUB(2.75573192239858906526e-6, CT_DMUL(z, ps));  /* 1/9! */
  ps = CT_DSUB(1.98412698412698412698e-4, CT_DMUL(z, ps));  /* 1/7! */
  ps = CT_DSUB(8.33333333333333333333e-3, CT_DMUL(z, ps));  /* 1/5! */
  ps = CT_DSUB(1.66666666666666666667e-1, CT_DMUL(z, ps));  /* 1/3! */
  double s = CT_DSUB(x, CT_DMUL(CT_DMUL(x, z), ps));
  double pc = 1.56192069685862264622e-16;                  /* 1/18! */
  pc = CT_DSUB(4.77947733238738529744e-14, CT_DMUL(z, pc)); /* 1/16! */
  pc = CT_DSUB(1.14707455977297247139e-11, CT_DMUL(z, pc)); /* 1/14! */
  pc = CT_DSUB(2.08767569878680989792e-9, CT_DMUL(z, pc));  /* 1/12! */
  pc = CT_DSUB(2.75573192239858906526e-7, CT_DMUL(z, pc));  /* 1/10! */
  pc = CT_DSUB(2.48015873015873015873e-5, CT_DMUL(z, pc));  /* 1/8! */
  pc = CT_DSUB(1.38888888888888888889e-3, CT_DMUL(z, pc));  /* 1/6! */
  pc = CT_DSUB(4.16666666666666666667e-2, CT_DMUL(z, pc));  /* 1/4! */
  pc = CT_DSUB(0.5, CT_DMUL(z, pc));                        /* 1/2! */
  double c = CT_DSUB(1.0, CT_DMUL(z, pc));
  switch (q & 3u) {
  case 0: *sin_out = s, *cos_out = c; break;
  case 1: *sin_out = c, *cos_out = -s; break;
  case 2: *sin_out = -s, *cos_out = -c; break;
  default: *sin_out = -c, *cos_out = s; break;
  }
}

/* ---- Transforms of one block ------------------------------------------- */

/* Uniform [0, 1) with `digits` significant bits (24, 11 or 8). */
CT_HOST_DEVICE float ct_rng_unit_f32(uint32_t w, int digits) {
  CT_RNG_STRICT
  return CT_FMUL((float)(w >> (32 - digits)), ct_rng_f32_from_bits((uint32_t)(127 - digits) << 23));
}
/* Uniform [0, 1) with 53 bits. */
CT_HOST_DEVICE double ct_rng_unit_f64(uint64_t x) {
  CT_RNG_STRICT
  return CT_DMUL((double)(x >> 11), 1.1102230246251565404e-16); /* 2^-53 */
}

/* Narrow uniform: 4 values low + span * u (low = (float)a, span = (float)(b - a)). */
CT_HOST_DEVICE void ct_rng_uniform_f32x4(const uint32_t w[4], int digits, float low, float span,
                                         float out[4]) {
  CT_RNG_STRICT
  for (int j = 0; j < 4; j++) out[j] = CT_FADD(low, CT_FMUL(span, ct_rng_unit_f32(w[j], digits)));
}
/* Wide uniform: 2 values low + span * u (span = b - a). */
CT_HOST_DEVICE void ct_rng_uniform_f64x2(const uint32_t w[4], double low, double span, double out[2]) {
  CT_RNG_STRICT
  for (int j = 0; j < 2; j++) out[j] = CT_DADD(low, CT_DMUL(span, ct_rng_unit_f64(ct_philox_u64(w + 2 * j))));
}

/* Narrow normal: 4 values mean + std * z from two Box-Muller pairs:
 * out[0], out[1] = r cos, r sin of pair (w0, w1); out[2], out[3] of (w2, w3). */
CT_HOST_DEVICE void ct_rng_normal_f32x4(const uint32_t w[4], float mean, float std, float out[4]) {
  CT_RNG_STRICT
  for (int j = 0; j < 2; j++) {
    float u1 = CT_FMUL((float)((w[2 * j] >> 8) + 1u), 5.9604644775390625e-8f); /* (0, 1] */
    float r = CT_FSQRT(CT_FMUL(-2.0f, ct_rng_logf(u1)));
    float sn, cs;
    ct_rng_sincos2pi_f32(w[2 * j + 1] >> 8, &sn, &cs);
    out[2 * j] = CT_FADD(mean, CT_FMUL(std, CT_FMUL(r, cs)));
    out[2 * j + 1] = CT_FADD(mean, CT_FMUL(std, CT_FMUL(r, sn)));
  }
}
/* Wide normal: 2 values (r cos, r sin) of the pair (w0|w1<<32, w2|w3<<32). */
CT_HOST_DEVICE void ct_rng_normal_f64x2(const uint32_t w[4], double mean, double std, double out[2]) {
  CT_RNG_STRICT
  uint64_t x1 = ct_philox_u64(w), x2 = ct_philox_u64(w + 2);
  double u1 = CT_DMUL((double)((x1 >> 11) + 1u), 1.1102230246251565404e-16); /* (0, 1] */
  double r = CT_DSQRT(CT_DMUL(-2.0, ct_rng_log(u1)));
  double sn, cs;
  ct_rng_sincos2pi_f64(x2 >> 11, &sn, &cs);
  out[0] = CT_DADD(mean, CT_DMUL(std, CT_DMUL(r, cs)));
  out[1] = CT_DADD(mean, CT_DMUL(std, CT_DMUL(r, sn)));
}

/* Integer in [low, low + range): narrow (range <= 2^32) from one word. */
CT_HOST_DEVICE int64_t ct_rng_int_narrow(uint32_t w, int64_t low, uint64_t range) {
  return (int64_t)((uint64_t)low + (uint64_t)w % range);
}
/* Wide (range > 2^32) from x = w[2k] | w[2k+1] << 32. */
CT_HOST_DEVICE int64_t ct_rng_int_wide(uint64_t x, int64_t low, uint64_t range) {
  return (int64_t)((uint64_t)low + x % range);
}

/* Bernoulli: 1 if w 2^-32 < p. */
CT_HOST_DEVICE bool ct_rng_bernoulli(uint32_t w, double p) {
  CT_RNG_STRICT
  return CT_DMUL((double)w, 2.3283064365386962890625e-10) < p;
}

#ifdef CT_RNG_GCC_PUSHED
#undef CT_RNG_GCC_PUSHED
#pragma GCC pop_options
#endif

#endif /* CT_CORE_PHILOX_H */
