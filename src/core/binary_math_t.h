/* Template of core/binary_math.h for one floating type (core/for_float_types.h:
 * CT_T, CT_S, CT_MATH): the comparisons (binary_cmp_t.h), ct_bf_<op>(x, y)
 * for the ops of CT_BINARY_FLOAT_OPS and ct_bf_axpy(x, y, alpha). Math in
 * CT_T. */

CT_HOST_DEVICE CT_T CT_FN(ct_bf_add)(CT_T x, CT_T y) { return x + y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bf_sub)(CT_T x, CT_T y) { return x - y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bf_mul)(CT_T x, CT_T y) { return x * y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bf_div)(CT_T x, CT_T y) { return x / y; }
/* Python's floor division, as torch's div_floor: exact for representable
 * quotients, IEEE results (inf, nan) for y == 0. */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_floor_divide)(CT_T x, CT_T y) {
  if (y == (CT_T)0) return x / y;
  CT_T mod = CT_M(fmod)(x, y);
  CT_T div = (x - mod) / y;
  if (mod != (CT_T)0 && (y < (CT_T)0) != (mod < (CT_T)0)) div -= (CT_T)1;
  if (div == (CT_T)0) return CT_M(copysign)((CT_T)0, x / y);
  CT_T fl = CT_M(floor)(div);
  if (div - fl > (CT_T)0.5) fl += (CT_T)1;
  return fl;
}
CT_HOST_DEVICE CT_T CT_FN(ct_bf_pow)(CT_T x, CT_T y) { return CT_M(pow)(x, y); }
/* nan wins, as torch.maximum / minimum */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_maximum)(CT_T x, CT_T y) { return (x != x || x > y) ? x : y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bf_minimum)(CT_T x, CT_T y) { return (x != x || x < y) ? x : y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bf_fmod)(CT_T x, CT_T y) { return CT_M(fmod)(x, y); }
/* Python's %: the sign of the divisor. */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_remainder)(CT_T x, CT_T y) {
  CT_T mod = CT_M(fmod)(x, y);
  if (mod != (CT_T)0 && (y < (CT_T)0) != (mod < (CT_T)0)) mod += y;
  return mod;
}
CT_HOST_DEVICE CT_T CT_FN(ct_bf_atan2)(CT_T x, CT_T y) { return CT_M(atan2)(x, y); }
/* sqrt(x² + y²) without undue overflow or underflow (C's hypot): inf when
 * either is inf, even next to a nan, as NumPy and torch. */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_hypot)(CT_T x, CT_T y) { return CT_M(hypot)(x, y); }
/* log(exp(x) + exp(y)) as max + log1p(exp(-|x - y|)), as NumPy: equal
 * operands (infinities of one sign included) give x + log 2, inf and -inf
 * give inf, a nan propagates. */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_logaddexp)(CT_T x, CT_T y) {
  if (x == y) return x + (CT_T)0.693147180559945309417232121458176568;
  CT_T d = x - y;
  if (d > (CT_T)0) return x + CT_M(log1p)(CT_M(exp)(-d));
  if (d <= (CT_T)0) return y + CT_M(log1p)(CT_M(exp)(d));
  return d; /* nan */
}
/* |x| with y's sign bit (-0 and a nan's sign included). */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_copysign)(CT_T x, CT_T y) { return CT_M(copysign)(x, y); }

/* x + alpha * y fused, as ATen's add(x, y, alpha) (fmadd). */
CT_HOST_DEVICE CT_T CT_FN(ct_bf_axpy)(CT_T x, CT_T y, CT_T alpha) { return CT_M(fma)(alpha, y, x); }

#include "core/binary_cmp_t.h"
