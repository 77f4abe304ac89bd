/* Template of core/unary_math.h for one integer type (core/for_int_types.h:
 * CT_T, CT_S, CT_UT; bool with CT_IS_BOOL). Defines
 *   ct_ui_<op>(x, p0, p1)  the ops of CT_UNARY_INT_OPS, wrapping through CT_UT
 *                          (p0, p1 already saturated to the dtype, core/convert.h)
 *   ct_up_<op>(x)          the BOOL-rule predicates
 * For bool the predicates and the INT-rule ops (CT_UNARY_INT_RULE_OPS), bool
 * being a one-bit integer.
 * The CUDA backend computes every integer dtype in int64 and wraps on store:
 * the same bits as these formulas in the narrow type. */

CT_HOST_DEVICE bool CT_FN(ct_up_isnan)(CT_T x) { return false; }
CT_HOST_DEVICE bool CT_FN(ct_up_isinf)(CT_T x) { return false; }
CT_HOST_DEVICE bool CT_FN(ct_up_isfinite)(CT_T x) { return true; }
CT_HOST_DEVICE bool CT_FN(ct_up_logical_not)(CT_T x) { return x == 0; }
#ifdef CT_IS_BOOL
CT_HOST_DEVICE bool CT_FN(ct_up_signbit)(CT_T x) { return false; }
#else
CT_HOST_DEVICE bool CT_FN(ct_up_signbit)(CT_T x) { return x < 0; } /* unsigned: never */
#endif

/* ~x; on bool, a one-bit integer, logical not (the CUDA backend, computing
 * bool in int64, keeps the low bit) */
#ifdef CT_IS_BOOL
CT_HOST_DEVICE CT_T CT_FN(ct_ui_bitwise_not)(CT_T x, CT_T p0, CT_T p1) { return !x; }
#else
CT_HOST_DEVICE CT_T CT_FN(ct_ui_bitwise_not)(CT_T x, CT_T p0, CT_T p1) { return (CT_T) ~(CT_UT)x; }
#endif

#ifndef CT_IS_BOOL
CT_HOST_DEVICE CT_T CT_FN(ct_ui_neg)(CT_T x, CT_T p0, CT_T p1) {
  return (CT_T)((CT_UT)0 - (CT_UT)x);
}
CT_HOST_DEVICE CT_T CT_FN(ct_ui_abs)(CT_T x, CT_T p0, CT_T p1) {
  return (CT_T)(x < 0 ? (CT_UT)0 - (CT_UT)x : (CT_UT)x); /* abs(INT_MIN) wraps to INT_MIN */
}
CT_HOST_DEVICE CT_T CT_FN(ct_ui_relu)(CT_T x, CT_T p0, CT_T p1) { return x < 0 ? (CT_T)0 : x; }
CT_HOST_DEVICE CT_T CT_FN(ct_ui_sign)(CT_T x, CT_T p0, CT_T p1) {
  return (CT_T)((x > 0) - (x < 0));
}
CT_HOST_DEVICE CT_T CT_FN(ct_ui_square)(CT_T x, CT_T p0, CT_T p1) {
  return (CT_T)((CT_UT)x * (CT_UT)x);
}
CT_HOST_DEVICE CT_T CT_FN(ct_ui_clamp)(CT_T x, CT_T p0, CT_T p1) {
  CT_T lo = x < p0 ? p0 : x;
  return lo > p1 ? p1 : lo;
}
#endif
