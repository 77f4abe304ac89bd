/* Template of core/unary_math.h for one floating type (core/for_float_types.h:
 * CT_T float or double, CT_S, CT_MATH). Defines, for the ops of the op
 * table's views CT_UNARY_FLOAT_OPS, CT_UNARY_PREDICATES and CT_UNARY_GRADS:
 *   ct_uf_<op>(x, p0, p1)      the op's value (p0, p1: its parameters as CT_T)
 *   ct_up_<op>(x)              the BOOL-rule predicates
 *   ct_ud_<v>_<grad>(g, v, p0, p1)  g * d op/dx, v being x, the op's output y
 *                              or neither (g): CT_UD_X, CT_UD_Y, CT_UD_G
 * Math in CT_T, as PyTorch computes on the CPU; the exponentials through
 * core/exp_math.h's ct_expv, ct_tanhv and ct_erfv (vectorizable polynomials for
 * float, libm for double). */

/* ---- Values ---------------------------------------------------------------- */

CT_HOST_DEVICE CT_T CT_FN(ct_uf_neg)(CT_T x, CT_T p0, CT_T p1) { return -x; }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_abs)(CT_T x, CT_T p0, CT_T p1) { return CT_M(fabs)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_exp)(CT_T x, CT_T p0, CT_T p1) { return CT_FN(ct_expv)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_expm1)(CT_T x, CT_T p0, CT_T p1) { return CT_M(expm1)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_log)(CT_T x, CT_T p0, CT_T p1) { return CT_M(log)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_log1p)(CT_T x, CT_T p0, CT_T p1) { return CT_M(log1p)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_log2)(CT_T x, CT_T p0, CT_T p1) { return CT_M(log2)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_sqrt)(CT_T x, CT_T p0, CT_T p1) { return CT_M(sqrt)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_rsqrt)(CT_T x, CT_T p0, CT_T p1) { return (CT_T)1 / CT_M(sqrt)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_sin)(CT_T x, CT_T p0, CT_T p1) { return CT_M(sin)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_cos)(CT_T x, CT_T p0, CT_T p1) { return CT_M(cos)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_tan)(CT_T x, CT_T p0, CT_T p1) { return CT_M(tan)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_tanh)(CT_T x, CT_T p0, CT_T p1) { return CT_FN(ct_tanhv)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_erf)(CT_T x, CT_T p0, CT_T p1) { return CT_FN(ct_erfv)(x); }
/* 1 / (1 + e^-x) without overflow: e^-|x| is at most 1. */
CT_HOST_DEVICE CT_T CT_FN(ct_uf_sigmoid)(CT_T x, CT_T p0, CT_T p1) {
  CT_T e = CT_FN(ct_expv)(-CT_M(fabs)(x));
  CT_T r = (CT_T)1 / ((CT_T)1 + e);
  return x >= (CT_T)0 ? r : e * r;
}
CT_HOST_DEVICE CT_T CT_FN(ct_uf_relu)(CT_T x, CT_T p0, CT_T p1) {
  return x < (CT_T)0 ? (CT_T)0 : x; /* nan stays */
}
/* x * Phi(x) = x/2 (1 + erf(x / sqrt 2)) */
CT_HOST_DEVICE CT_T CT_FN(ct_uf_gelu)(CT_T x, CT_T p0, CT_T p1) {
  return (CT_T)0.5 * x * ((CT_T)1 + CT_FN(ct_erfv)(x * (CT_T)0.70710678118654752440));
}
/* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
CT_HOST_DEVICE CT_T CT_FN(ct_uf_gelu_tanh)(CT_T x, CT_T p0, CT_T p1) {
  CT_T inner = (CT_T)0.79788456080286535588 * (x + (CT_T)0.044715 * x * x * x);
  return (CT_T)0.5 * x * ((CT_T)1 + CT_FN(ct_tanhv)(inner));
}
CT_HOST_DEVICE CT_T CT_FN(ct_uf_silu)(CT_T x, CT_T p0, CT_T p1) {
  return x * CT_FN(ct_uf_sigmoid)(x, p0, p1);
}
CT_HOST_DEVICE CT_T CT_FN(ct_uf_softplus)(CT_T x, CT_T p0, CT_T p1) {
  return x > (CT_T)20 ? x : CT_FN(ct_log1p_expv)(x); /* torch's beta 1, threshold 20 */
}
CT_HOST_DEVICE CT_T CT_FN(ct_uf_floor)(CT_T x, CT_T p0, CT_T p1) { return CT_M(floor)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_ceil)(CT_T x, CT_T p0, CT_T p1) { return CT_M(ceil)(x); }
/* half to even (the default rounding mode), as torch.round */
CT_HOST_DEVICE CT_T CT_FN(ct_uf_round)(CT_T x, CT_T p0, CT_T p1) { return CT_M(nearbyint)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_trunc)(CT_T x, CT_T p0, CT_T p1) { return CT_M(trunc)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_sign)(CT_T x, CT_T p0, CT_T p1) {
  return x > (CT_T)0    ? (CT_T)1
         : x < (CT_T)0  ? (CT_T)-1
         : x == (CT_T)0 ? (CT_T)0
                        : x; /* nan stays */
}
CT_HOST_DEVICE CT_T CT_FN(ct_uf_reciprocal)(CT_T x, CT_T p0, CT_T p1) { return (CT_T)1 / x; }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_square)(CT_T x, CT_T p0, CT_T p1) { return x * x; }
/* min(max(x, lo), hi) with lo = p0, hi = p1: lo > hi gives hi; a nan x fails
 * both tests and stays nan */
CT_HOST_DEVICE CT_T CT_FN(ct_uf_clamp)(CT_T x, CT_T p0, CT_T p1) {
  CT_T lo = x < p0 ? p0 : x;
  return lo > p1 ? p1 : lo;
}
/* p0: the negative slope */
CT_HOST_DEVICE CT_T CT_FN(ct_uf_leaky_relu)(CT_T x, CT_T p0, CT_T p1) {
  return x > (CT_T)0 ? x : p0 * x;
}
CT_HOST_DEVICE CT_T CT_FN(ct_uf_acos)(CT_T x, CT_T p0, CT_T p1) { return CT_M(acos)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_acosh)(CT_T x, CT_T p0, CT_T p1) { return CT_M(acosh)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_asin)(CT_T x, CT_T p0, CT_T p1) { return CT_M(asin)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_asinh)(CT_T x, CT_T p0, CT_T p1) { return CT_M(asinh)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_atan)(CT_T x, CT_T p0, CT_T p1) { return CT_M(atan)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_atanh)(CT_T x, CT_T p0, CT_T p1) { return CT_M(atanh)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_cosh)(CT_T x, CT_T p0, CT_T p1) { return CT_M(cosh)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_sinh)(CT_T x, CT_T p0, CT_T p1) { return CT_M(sinh)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_log10)(CT_T x, CT_T p0, CT_T p1) { return CT_M(log10)(x); }
CT_HOST_DEVICE CT_T CT_FN(ct_uf_exp2)(CT_T x, CT_T p0, CT_T p1) { return CT_M(exp2)(x); }

/* ---- Predicates (written without libm, so fast-math flags can't fold them) ---- */

CT_HOST_DEVICE bool CT_FN(ct_up_isnan)(CT_T x) { return x != x; }
CT_HOST_DEVICE bool CT_FN(ct_up_isinf)(CT_T x) { return CT_M(fabs)(x) == (CT_T)INFINITY; }
CT_HOST_DEVICE bool CT_FN(ct_up_isfinite)(CT_T x) {
  return x - x == (CT_T)0; /* not inf, not nan */
}
CT_HOST_DEVICE bool CT_FN(ct_up_logical_not)(CT_T x) { return x == (CT_T)0; }
/* the sign bit itself: true for -0.0 and a nan with its sign set, as torch */
CT_HOST_DEVICE bool CT_FN(ct_up_signbit)(CT_T x) { return signbit(x) != 0; }

/* ---- Derivatives: g * d op/dx at x, or at the output y (core/unary_math.h: CT_UD_X
 * reads x, CT_UD_Y reads y, CT_UD_G neither; the op table's READS column must agree) ---- */

CT_UD_G(neg) { return -g; }
CT_UD_X(abs) { return x > (CT_T)0 ? g : x < (CT_T)0 ? -g : (CT_T)0; }
CT_UD_Y(exp) { return g * y; }
CT_UD_Y(expm1) { return g * (y + (CT_T)1); }
CT_UD_X(log) { return g / x; }
CT_UD_X(log1p) { return g / (x + (CT_T)1); }
CT_UD_X(log2) { return g / (x * (CT_T)0.69314718055994530942); }
CT_UD_Y(sqrt) { return g / ((CT_T)2 * y); }
CT_UD_Y(rsqrt) { return (CT_T)-0.5 * g * y * y * y; }
CT_UD_X(sin) { return g * CT_M(cos)(x); }
CT_UD_X(cos) { return -g * CT_M(sin)(x); }
CT_UD_Y(tan) { return g * ((CT_T)1 + y * y); }
CT_UD_Y(tanh) { return g * ((CT_T)1 - y * y); }
/* 2/sqrt(pi) e^(-x^2) */
CT_UD_X(erf) { return g * (CT_T)1.12837916709551257390 * CT_FN(ct_expv)(-x * x); }
CT_UD_Y(sigmoid) { return g * y * ((CT_T)1 - y); }
CT_UD_Y(relu) { return y > (CT_T)0 ? g : (CT_T)0; /* y > 0 exactly where x > 0 */ }
/* Phi(x) + x phi(x) */
CT_UD_X(gelu) {
  CT_T cdf = (CT_T)0.5 * ((CT_T)1 + CT_FN(ct_erfv)(x * (CT_T)0.70710678118654752440));
  CT_T pdf = CT_FN(ct_expv)((CT_T)-0.5 * x * x) * (CT_T)0.39894228040143267794;
  return g * (cdf + x * pdf);
}
CT_UD_X(gelu_tanh) {
  const CT_T k = (CT_T)0.79788456080286535588, c = (CT_T)0.044715;
  CT_T th = CT_FN(ct_tanhv)(k * (x + c * x * x * x));
  CT_T dinner = k * ((CT_T)1 + (CT_T)3 * c * x * x);
  return g * ((CT_T)0.5 * ((CT_T)1 + th) + (CT_T)0.5 * x * ((CT_T)1 - th * th) * dinner);
}
CT_UD_X(silu) {
  CT_T s = (CT_T)1 / ((CT_T)1 + CT_FN(ct_expv)(-x));
  return g * s * ((CT_T)1 + x * ((CT_T)1 - s));
}
CT_UD_X(softplus) { return x > (CT_T)20 ? g : g / ((CT_T)1 + CT_FN(ct_expv)(-x)); }
CT_UD_Y(reciprocal) { return -g * y * y; }
CT_UD_X(square) { return (CT_T)2 * g * x; }
CT_UD_X(clamp) { return (x >= p0 && x <= p1) ? g : (CT_T)0; }
CT_UD_X(leaky_relu) { return x > (CT_T)0 ? g : g * p0; }
CT_UD_X(acos) { return -g / CT_M(sqrt)((CT_T)1 - x * x); }
CT_UD_X(acosh) { return g / CT_M(sqrt)(x * x - (CT_T)1); }
CT_UD_X(asin) { return g / CT_M(sqrt)((CT_T)1 - x * x); }
CT_UD_X(asinh) { return g / CT_M(sqrt)(x * x + (CT_T)1); }
CT_UD_X(atan) { return g / ((CT_T)1 + x * x); }
CT_UD_X(atanh) { return g / ((CT_T)1 - x * x); }
CT_UD_X(cosh) { return g * CT_M(sinh)(x); }
CT_UD_X(sinh) { return g * CT_M(cosh)(x); }
CT_UD_X(log10) { return g / (x * (CT_T)2.30258509299404568402); }
/* 2^x ln 2 */
CT_UD_Y(exp2) { return g * y * (CT_T)0.69314718055994530942; }
/* floor, ceil, round, trunc, sign: zero almost everywhere, as torch */
CT_UD_G(zero) { return (CT_T)0; }
