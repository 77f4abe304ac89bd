/* The exponential, tanh and erf the activations use (core/unary_math.h): for f32 a
 * branch-free polynomial that compilers turn into vector code inside the
 * CPU's row loops (libm's expf is a call per element), for f64 libm's.
 * Both backends compile it, so a CPU and a GPU f32 result are the same bits
 * (tests/cuda_emu/lib/test_formulas.c) and no math library enters them.
 *
 * ct_expv_f32: x = k ln2 + r with k = rint(x / ln2) (the 1.5 * 2^23 shifter,
 * no float-to-int conversion of a nan) and r reduced in two steps
 * (Cody-Waite: k * LN2_HI is exact for |k| <= 151); e^r by its Taylor
 * polynomial of degree 7 (truncation below 6e-9 relative for |r| <= ln2/2);
 * 2^k applied as two exact powers of two, so that results down to the
 * subnormals (x >= -103.97) and up to FLT_MAX come out without a special
 * case. Accuracy, measured by tests/test_activation_accuracy.c over every
 * 1024th f32 in [-104, 89] and the special values: 1.11 ulp at most from
 * e^x (subnormal results in units of their own spacing), bounded there at 2;
 * exp(-inf) = 0, exp(inf) = inf, exp(nan) = nan, inf past 88.72. (libm's
 * expf is within 1 ulp; torch's vectorized CPU expf, Sleef's, too.) */
#ifndef CT_CORE_EXP_MATH_H
#define CT_CORE_EXP_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/host_device.h"

/* 2^e for e in [-126, 127] (exponent bits). */
CT_HOST_DEVICE float ct_pow2i_f32(int32_t e) {
  uint32_t b = (uint32_t)(e + 127) << 23;
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

CT_HOST_DEVICE float ct_expv_f32(float x) {
  /* e^-104 rounds to 0 in f32 and e^89 overflows: clamping keeps k in
   * [-151, 129] (a nan fails both tests and stays nan) */
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  float kf = (xc * 1.44269504088896341f + shifter) - shifter;
  float r = xc - kf * 0.693145751953125f; /* LN2_HI: its low 12 bits are zero */
  r = r - kf * 1.42860676533018704e-06f;  /* LN2_LO */
  float p = 1.98412698412698413e-04f;     /* 1/7! */
  p = p * r + 1.38888888888888889e-03f;
  p = p * r + 8.33333333333333333e-03f;
  p = p * r + 4.16666666666666667e-02f;
  p = p * r + 1.66666666666666667e-01f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t k = (int32_t)(kf == kf ? kf : 0.0f); /* integral, in [-151, 129] */
  int32_t k1 = k / 2;
  return p * ct_pow2i_f32(k1) * ct_pow2i_f32(k - k1);
}

/* tanh from the same exponential: 1 - 2 / (e^2|x| + 1) with x's sign for
 * |x| >= 0.625, where that difference keeps its precision; below, x + x^3
 * P(x^2) with P of degree 5 (least squares on tanh's relative error, fitted
 * for f32: 0.79 ulp evaluated in f32). Both are computed and one chosen, so
 * loops stay branch-free. Measured by tests/test_activation_accuracy.c: at
 * most 2 ulp (bounded there at 3); tanh(+-inf) = +-1, nan stays nan. */
CT_HOST_DEVICE float ct_tanhv_f32(float x) {
  float a = x < 0.0f ? -x : x;
  float u = x * x;
  float p = 2.14898400008678436e-03f;
  p = p * u - 8.18466208875179291e-03f;
  p = p * u + 2.17039994895458221e-02f;
  p = p * u - 5.39474524557590485e-02f;
  p = p * u + 1.33332118391990662e-01f;
  p = p * u - 3.33333313465118408e-01f;
  float small = x + (x * u) * p;
  float big = 1.0f - 2.0f / (ct_expv_f32(2.0f * a) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.625f ? small : big; /* nan: big, which is nan */
}

/* erf from the same exponential: x P(x^2) (P of degree 5) below |x| =
 * 0.921875; above, 1 - e^q(|x|) with q of degree 9 fitted to log erfc on
 * [0.921875, 3.921875], and 1 beyond (erfc < 2^-26 there), with x's sign.
 * Least-squares fits for f32's relative error; measured by
 * tests/test_activation_accuracy.c: 2.55 ulp at most (bound 4); erf(+-inf) =
 * +-1, nan stays nan. */
CT_HOST_DEVICE float ct_erfv_f32(float x) {
  float a = x < 0.0f ? -x : x;
  float u = x * x;
  float ps = -6.02448650170117617e-04f;
  ps = ps * u + 5.00086648389697075e-03f;
  ps = ps * u - 2.67729312181472778e-02f;
  ps = ps * u + 1.12820379436016083e-01f;
  ps = ps * u - 3.76125246286392212e-01f;
  ps = ps * u + 1.12837910652160645e+00f;
  float small = x * ps;
  float t = a < 3.921875f ? a : 3.921875f;
  float q = 9.91479396361683e-07f;
  q = q * t - 1.595582943991758e-05f;
  q = q * t + 9.0143243141938e-05f;
  q = q * t - 6.802969437558204e-06f;
  q = q * t - 3.0726229306310415e-03f;
  q = q * t + 2.333862893283367e-02f;
  q = q * t - 1.0639830678701401e-01f;
  q = q * t - 6.345977783203125e-01f;
  q = q * t - 1.1290398836135864e+00f;
  q = q * t + 9.607760148355737e-05f;
  float big = a >= 3.921875f ? 1.0f : 1.0f - ct_expv_f32(q);
  big = x < 0.0f ? -big : big;
  return !(a >= 0.921875f) ? small : big; /* nan: small, which is nan */
}

/* log(1 + e^x) for x <= 20 (softplus below torch's threshold) from the same
 * exponential, branch-free: max(x, 0) + log1p(t) with t = e^-|x| in (0, 1],
 * log1p(t) = 2 atanh(s), s = t / (2 + t) in (0, 1/3], by atanh's Taylor
 * series to s^17 (truncation below 2e-10 relative). No cancellation: every
 * term is >= 0. Measured by tests/test_activation_accuracy.c through
 * softplus (bound 3 ulp); softplus(-inf) = 0, nan stays nan. */
CT_HOST_DEVICE float ct_log1p_expv_f32(float x) {
  float a = x < 0.0f ? -x : x;
  float t = ct_expv_f32(-a);
  float s = t / (2.0f + t), u = s * s, s2 = 2.0f * s;
  float p = 1.0f / 17.0f;
  p = p * u + 1.0f / 15.0f;
  p = p * u + 1.0f / 13.0f;
  p = p * u + 1.0f / 11.0f;
  p = p * u + 1.0f / 9.0f;
  p = p * u + 1.0f / 7.0f;
  p = p * u + 1.0f / 5.0f;
  p = p * u + 1.0f / 3.0f;
  /* 2s + 2s u p: the correction (< 4% of 2s) adds its rounding errors scaled down */
  return (x > 0.0f ? x : 0.0f) + (s2 + (s2 * u) * p);
}

CT_HOST_DEVICE double ct_expv_f64(double x) { return exp(x); }
CT_HOST_DEVICE double ct_log1p_expv_f64(double x) { return log1p(exp(x)); }
CT_HOST_DEVICE double ct_erfv_f64(double x) { return erf(x); }
CT_HOST_DEVICE double ct_tanhv_f64(double x) { return tanh(x); }

#ifdef __cplusplus
/* The overloads templates call (core/host_device.h's CT_FN). */
CT_HOST_DEVICE float ct_expv(float x) { return ct_expv_f32(x); }
CT_HOST_DEVICE double ct_expv(double x) { return ct_expv_f64(x); }
CT_HOST_DEVICE float ct_tanhv(float x) { return ct_tanhv_f32(x); }
CT_HOST_DEVICE double ct_tanhv(double x) { return ct_tanhv_f64(x); }
CT_HOST_DEVICE float ct_log1p_expv(float x) { return ct_log1p_expv_f32(x); }
CT_HOST_DEVICE double ct_log1p_expv(double x) { return ct_log1p_expv_f64(x); }
CT_HOST_DEVICE float ct_erfv(float x) { return ct_erfv_f32(x); }
CT_HOST_DEVICE double ct_erfv(double x) { return ct_erfv_f64(x); }
#endif

#endif /* CT_CORE_EXP_MATH_H */
