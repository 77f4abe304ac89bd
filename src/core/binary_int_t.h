/* Template of core/binary_math.h for one integer type (core/for_int_types.h:
 * CT_T, CT_S, CT_UT; bool with CT_IS_BOOL): the comparisons
 * (binary_cmp_t.h), ct_bi_<op>(x, y) for CT_BINARY_INT_OPS (wrapping
 * through CT_UT: defined behaviour, torch's results), the checked ops of
 * CT_BINARY_INT_CHECKED_OPS, ct_bi_<op>(x, y, bad), which leave 0 and set
 * *bad on an invalid operand (division by zero, a negative power), and
 * ct_bi_axpy. INT_MIN / -1 wraps to INT_MIN. Also instantiated for bool,
 * where add and maximum are "or", mul and minimum "and".
 *
 * The bitwise ops: and, or, xor (bool too) and the shifts (integers only),
 * as NumPy and the array API: a count at least the width, or negative (taken
 * as unsigned, as NumPy), gives 0, or -1 for a right shift of a negative
 * value; right shifts of signed types are arithmetic. */

CT_HOST_DEVICE CT_T CT_FN(ct_bi_add)(CT_T x, CT_T y) { return (CT_T)((CT_UT)x + (CT_UT)y); }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_sub)(CT_T x, CT_T y) { return (CT_T)((CT_UT)x - (CT_UT)y); }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_mul)(CT_T x, CT_T y) { return (CT_T)((CT_UT)x * (CT_UT)y); }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_maximum)(CT_T x, CT_T y) { return x > y ? x : y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_minimum)(CT_T x, CT_T y) { return x < y ? x : y; }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_axpy)(CT_T x, CT_T y, CT_T alpha) {
  return (CT_T)((CT_UT)x + (CT_UT)alpha * (CT_UT)y);
}
CT_HOST_DEVICE CT_T CT_FN(ct_bi_bitwise_and)(CT_T x, CT_T y) { return (CT_T)(x & y); }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_bitwise_or)(CT_T x, CT_T y) { return (CT_T)(x | y); }
CT_HOST_DEVICE CT_T CT_FN(ct_bi_bitwise_xor)(CT_T x, CT_T y) { return (CT_T)(x ^ y); }

#ifndef CT_IS_BOOL
CT_HOST_DEVICE CT_T CT_FN(ct_bi_bitwise_left_shift)(CT_T x, CT_T y) {
  if ((uint64_t)(int64_t)y >= 8 * sizeof(CT_T)) return (CT_T)0;
  return (CT_T)((CT_UT)x << (CT_UT)y);
}
CT_HOST_DEVICE CT_T CT_FN(ct_bi_bitwise_right_shift)(CT_T x, CT_T y) {
  if ((uint64_t)(int64_t)y >= 8 * sizeof(CT_T)) return (CT_T)(x < 0 ? -1 : 0);
  return (CT_T)(x >> y);
}

/* Python's //: rounds toward -inf. */
CT_HOST_DEVICE CT_T CT_FN(ct_bi_floor_divide)(CT_T x, CT_T y, bool *bad) {
  if (y == 0) return *bad = true, (CT_T)0;
  if (y == -1) return (CT_T)((CT_UT)0 - (CT_UT)x);
  return (CT_T)(x / y - ((x % y != 0) & ((x < 0) != (y < 0))));
}
/* x^y for y >= 0, modulo 2^64 and then the width. */
CT_HOST_DEVICE CT_T CT_FN(ct_bi_pow)(CT_T x, CT_T y, bool *bad) {
  if (y < 0) return *bad = true, (CT_T)0;
  return (CT_T)ct_ipow_u64((uint64_t)x, (uint64_t)y);
}
/* C's %: the sign of the dividend. */
CT_HOST_DEVICE CT_T CT_FN(ct_bi_fmod)(CT_T x, CT_T y, bool *bad) {
  if (y == 0) return *bad = true, (CT_T)0;
  return y == -1 ? (CT_T)0 : (CT_T)(x % y);
}
/* Python's %: the sign of the divisor. */
CT_HOST_DEVICE CT_T CT_FN(ct_bi_remainder)(CT_T x, CT_T y, bool *bad) {
  if (y == 0) return *bad = true, (CT_T)0;
  if (y == -1) return (CT_T)0;
  CT_T m = (CT_T)(x % y);
  return (m != 0 && ((m < 0) != (y < 0))) ? (CT_T)(m + y) : m;
}
#endif

#include "core/binary_cmp_t.h"
