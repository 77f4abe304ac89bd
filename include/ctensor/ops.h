/* ctensor/ops.h: operations on tensors, NumPy/PyTorch style.
 *
 * Conventions (names follow PyTorch):
 *  - ct_op(x, ...)          returns a new tensor (a new reference).
 *  - ct_op_(x, ...)         in place: writes into x and returns x (no new
 *                           reference). The result dtype must be castable to
 *                           x's dtype (no float into an integer tensor).
 *  - ct_op_out(out, x, ...) writes into an existing `out` of the result's shape
 *                           and returns out (no new reference).
 * Under autograd (ctensor/autograd.h), in-place forms are differentiable as in
 * PyTorch: writing a tensor made by recorded ops rewrites its history, a
 * write through a view rewrites its base's, and a leaf that requires grad
 * (or a view of one) can only be written inside ct_no_grad_begin/end. _out
 * forms are not recorded: they refuse (CT_ERR_STATE) an out or an input that
 * requires grad while grad mode is on.
 *  - ct_op_scalar(x, s)     the other operand is a number.
 * Binary operations broadcast as NumPy does and promote dtypes as PyTorch
 * (ct_result_type): a 0-d tensor operand counts like a number, raising the
 * result only when it is of a higher category (bool < integer < floating):
 * i16 * 0-d i32 is i16, f32 * 0-d f64 is f32, i32 * 0-d f64 is f64. A scalar
 * takes the tensor's dtype, except that a non-integral scalar with an
 * integer/bool tensor gives f32 (1.5 * int -> f32).
 * (The Python package promotes as NumPy 2 instead, a 0-d tensor counting as
 * an array: python/README.md, "Promotion".)
 * Operands must be on one device (else CT_ERR_DEVICE); ct_to moves tensors.
 * Math functions of integer tensors (exp, sin, sqrt, sigmoid, ...) return f32;
 * the activations gelu, gelu_tanh, silu, softplus and leaky_relu take floating
 * tensors only (CT_ERR_DTYPE, as torch's kernels). Bool
 * tensors, as in torch: square gives i64 (pow(x, 2)), sign and the predicates
 * take them, and neg, abs, relu, floor, ceil, round, trunc refuse them
 * (CT_ERR_DTYPE).
 *
 *   ct_tensor *c = ct_add(a, b);                  // new tensor
 *   ct_add_(a, b);                                // a += b
 *   ct_mul_scalar_(a, 0.5);                       // a *= 0.5
 *   ct_tensor *s = ct_sum(x, CT_DIMS(1));         // sum over dim 1
 *   ct_tensor *m = ct_mean(x, CT_DIMS_KEEP(0, 1)); // keepdim
 */
#ifndef CTENSOR_OPS_H
#define CTENSOR_OPS_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dtype a binary op of a and b computes in, as torch.result_type: the
 * promotion (ct_promote_types) of the dimensioned operands (ndim >= 1, size 0
 * included); a 0-d operand joins only if its category is higher than theirs.
 * Two 0-d operands promote as ct_promote_types. CT_F32 if either is NULL. */
CT_API ct_dtype ct_result_type(const ct_tensor *a, const ct_tensor *b);

/* ---- Elementwise unary ------------------------------------------------- */
/* Each NAME below has ct_NAME(x), ct_NAME_(x) and ct_NAME_out(out, x). */
CT_API ct_tensor *ct_neg(const ct_tensor *x); /* -x */
CT_API ct_tensor *ct_neg_(ct_tensor *x);
CT_API ct_tensor *ct_neg_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_abs(const ct_tensor *x); /* |x| */
CT_API ct_tensor *ct_abs_(ct_tensor *x);
CT_API ct_tensor *ct_abs_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_exp(const ct_tensor *x); /* e^x */
CT_API ct_tensor *ct_exp_(ct_tensor *x);
CT_API ct_tensor *ct_exp_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_expm1(const ct_tensor *x); /* e^x - 1, accurate near 0 */
CT_API ct_tensor *ct_expm1_(ct_tensor *x);
CT_API ct_tensor *ct_expm1_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_log(const ct_tensor *x); /* natural log; log(0) = -inf, log(<0) = nan */
CT_API ct_tensor *ct_log_(ct_tensor *x);
CT_API ct_tensor *ct_log_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_log1p(const ct_tensor *x); /* log(1 + x), accurate near 0 */
CT_API ct_tensor *ct_log1p_(ct_tensor *x);
CT_API ct_tensor *ct_log1p_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_log2(const ct_tensor *x); /* base-2 log */
CT_API ct_tensor *ct_log2_(ct_tensor *x);
CT_API ct_tensor *ct_log2_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_sqrt(const ct_tensor *x); /* square root */
CT_API ct_tensor *ct_sqrt_(ct_tensor *x);
CT_API ct_tensor *ct_sqrt_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_rsqrt(const ct_tensor *x); /* 1 / sqrt(x) */
CT_API ct_tensor *ct_rsqrt_(ct_tensor *x);
CT_API ct_tensor *ct_rsqrt_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_sin(const ct_tensor *x);
CT_API ct_tensor *ct_sin_(ct_tensor *x);
CT_API ct_tensor *ct_sin_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_cos(const ct_tensor *x);
CT_API ct_tensor *ct_cos_(ct_tensor *x);
CT_API ct_tensor *ct_cos_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_tan(const ct_tensor *x);
CT_API ct_tensor *ct_tan_(ct_tensor *x);
CT_API ct_tensor *ct_tan_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_tanh(const ct_tensor *x);
CT_API ct_tensor *ct_tanh_(ct_tensor *x);
CT_API ct_tensor *ct_tanh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_erf(const ct_tensor *x);
CT_API ct_tensor *ct_erf_(ct_tensor *x);
CT_API ct_tensor *ct_erf_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_sigmoid(const ct_tensor *x); /* 1 / (1 + e^-x), stable for large |x| */
CT_API ct_tensor *ct_sigmoid_(ct_tensor *x);
CT_API ct_tensor *ct_sigmoid_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_relu(const ct_tensor *x); /* max(x, 0) */
CT_API ct_tensor *ct_relu_(ct_tensor *x);
CT_API ct_tensor *ct_relu_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_gelu(const ct_tensor *x); /* x * Phi(x), exact (erf) form as torch's default */
CT_API ct_tensor *ct_gelu_(ct_tensor *x);
CT_API ct_tensor *ct_gelu_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_gelu_tanh(
    const ct_tensor *x); /* the tanh approximation (approximate='tanh') */
CT_API ct_tensor *ct_gelu_tanh_(ct_tensor *x);
CT_API ct_tensor *ct_gelu_tanh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_silu(const ct_tensor *x); /* x * sigmoid(x) */
CT_API ct_tensor *ct_silu_(ct_tensor *x);
CT_API ct_tensor *ct_silu_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_softplus(
    const ct_tensor *x); /* log(1 + e^x); x where x > 20 (torch's threshold) */
CT_API ct_tensor *ct_softplus_(ct_tensor *x);
CT_API ct_tensor *ct_softplus_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_floor(const ct_tensor *x);
CT_API ct_tensor *ct_floor_(ct_tensor *x);
CT_API ct_tensor *ct_floor_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_ceil(const ct_tensor *x);
CT_API ct_tensor *ct_ceil_(ct_tensor *x);
CT_API ct_tensor *ct_ceil_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_round(const ct_tensor *x); /* half to even, as torch.round */
CT_API ct_tensor *ct_round_(ct_tensor *x);
CT_API ct_tensor *ct_round_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_trunc(const ct_tensor *x);
CT_API ct_tensor *ct_trunc_(ct_tensor *x);
CT_API ct_tensor *ct_trunc_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_sign(const ct_tensor *x); /* -1, 0, 1 (0 for 0 and -0; nan stays nan) */
CT_API ct_tensor *ct_sign_(ct_tensor *x);
CT_API ct_tensor *ct_sign_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_reciprocal(const ct_tensor *x); /* 1 / x */
CT_API ct_tensor *ct_reciprocal_(ct_tensor *x);
CT_API ct_tensor *ct_reciprocal_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_square(const ct_tensor *x); /* x * x */
CT_API ct_tensor *ct_square_(ct_tensor *x);
CT_API ct_tensor *ct_square_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_acos(const ct_tensor *x); /* arccosine in [0, pi]; |x| > 1 gives nan */
CT_API ct_tensor *ct_acos_(ct_tensor *x);
CT_API ct_tensor *ct_acos_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_acosh(const ct_tensor *x); /* inverse hyperbolic cosine; x < 1 gives nan */
CT_API ct_tensor *ct_acosh_(ct_tensor *x);
CT_API ct_tensor *ct_acosh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_asin(const ct_tensor *x); /* arcsine in [-pi/2, pi/2]; |x| > 1 gives nan */
CT_API ct_tensor *ct_asin_(ct_tensor *x);
CT_API ct_tensor *ct_asin_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_asinh(const ct_tensor *x); /* inverse hyperbolic sine */
CT_API ct_tensor *ct_asinh_(ct_tensor *x);
CT_API ct_tensor *ct_asinh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_atan(const ct_tensor *x); /* arctangent in (-pi/2, pi/2) */
CT_API ct_tensor *ct_atan_(ct_tensor *x);
CT_API ct_tensor *ct_atan_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_atanh(
    const ct_tensor *x); /* inverse hyperbolic tangent; atanh(+-1) = +-inf, |x| > 1 gives nan */
CT_API ct_tensor *ct_atanh_(ct_tensor *x);
CT_API ct_tensor *ct_atanh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_cosh(const ct_tensor *x); /* hyperbolic cosine */
CT_API ct_tensor *ct_cosh_(ct_tensor *x);
CT_API ct_tensor *ct_cosh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_sinh(const ct_tensor *x); /* hyperbolic sine */
CT_API ct_tensor *ct_sinh_(ct_tensor *x);
CT_API ct_tensor *ct_sinh_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_log10(const ct_tensor *x); /* base-10 log; log10(0) = -inf, log10(<0) = nan */
CT_API ct_tensor *ct_log10_(ct_tensor *x);
CT_API ct_tensor *ct_log10_out(ct_tensor *out, const ct_tensor *x);
CT_API ct_tensor *ct_exp2(const ct_tensor *x); /* base-2 exponential 2^x; exp2(-inf) = 0 */
CT_API ct_tensor *ct_exp2_(ct_tensor *x);
CT_API ct_tensor *ct_exp2_out(ct_tensor *out, const ct_tensor *x);

/* Elementwise predicates: bool results. */
CT_API ct_tensor *ct_isnan(const ct_tensor *x);
CT_API ct_tensor *ct_isinf(const ct_tensor *x);
CT_API ct_tensor *ct_isfinite(const ct_tensor *x);
CT_API ct_tensor *ct_logical_not(const ct_tensor *x);
/* signbit: the sign bit, as torch.signbit and NumPy: true for negative
 * values, -0.0 and a nan whose sign bit is set; false for every unsigned or
 * bool element. */
CT_API ct_tensor *ct_signbit(const ct_tensor *x);

/* clamp(x, lo, hi) = min(max(x, lo), hi) (lo > hi gives hi); pass -INFINITY /
 * INFINITY for no bound (torch's None: an infinite bound never promotes).
 * nan in x stays nan; a nan bound makes every element nan, as torch. The
 * bounds promote like scalars: a fractional (or nan) bound with an integer or
 * bool x gives f32; integral bounds keep an integer dtype (and must fit it, as
 * ct_fill_'s value) and give i64 for bool. Also ct_clamp_(x, ...),
 * ct_clamp_out(out, x, ...). */
CT_API ct_tensor *ct_clamp(const ct_tensor *x, double lo, double hi);
CT_API ct_tensor *ct_clamp_(ct_tensor *x, double lo, double hi);
CT_API ct_tensor *ct_clamp_out(ct_tensor *out, const ct_tensor *x, double lo, double hi);
/* x > 0 ? x : slope * x; floating x only (CT_ERR_DTYPE otherwise, as torch). */
CT_API ct_tensor *ct_leaky_relu(const ct_tensor *x, double slope);
CT_API ct_tensor *ct_leaky_relu_(ct_tensor *x, double slope);

/* ---- Elementwise binary (broadcasting) ---------------------------------- */
/* Each NAME below has ct_NAME(a, b), ct_NAME_(a, b), ct_NAME_out(out, a, b),
 * ct_NAME_scalar(a, s) and ct_NAME_scalar_(a, s). */
CT_API ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b); /* a + b */
CT_API ct_tensor *ct_add_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_add_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_add_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b); /* a - b */
CT_API ct_tensor *ct_sub_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_sub_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_sub_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_sub_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b); /* a * b */
CT_API ct_tensor *ct_mul_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_mul_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_mul_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_div(const ct_tensor *a,
                         const ct_tensor *b); /* true division: integers give f32 */
CT_API ct_tensor *ct_div_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_div_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_div_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_div_scalar_(ct_tensor *a, double s);
/* floor(a / b); integers: error on division by zero (not for an empty a, as torch) */
CT_API ct_tensor *ct_floor_divide(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_floor_divide_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_floor_divide_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_floor_divide_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_floor_divide_scalar_(ct_tensor *a, double s);
/* a ^ b; integers: a negative exponent is CT_ERR_ARG (also in a tensor, where
 * torch gives 1, -1 or 0), a scalar one must fit the dtype */
CT_API ct_tensor *ct_pow(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_pow_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_pow_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_pow_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_pow_scalar_(ct_tensor *a, double s);
/* propagates nan; an integer tensor's scalar must fit its dtype (as
 * torch.clamp, its scalar form) */
CT_API ct_tensor *ct_maximum(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_maximum_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_maximum_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_maximum_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_maximum_scalar_(ct_tensor *a, double s);
/* propagates nan; scalar as maximum's */
CT_API ct_tensor *ct_minimum(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_minimum_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_minimum_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_minimum_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_minimum_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_fmod(const ct_tensor *a,
                          const ct_tensor *b); /* C fmod: sign of the dividend */
CT_API ct_tensor *ct_fmod_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_fmod_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_fmod_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_fmod_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_remainder(const ct_tensor *a,
                               const ct_tensor *b); /* Python %: sign of the divisor */
CT_API ct_tensor *ct_remainder_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_remainder_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_remainder_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_remainder_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_atan2(const ct_tensor *a, const ct_tensor *b); /* atan2(a, b) */
CT_API ct_tensor *ct_atan2_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_atan2_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_atan2_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_atan2_scalar_(ct_tensor *a, double s);
/* sqrt(a² + b²) without undue overflow or underflow; inf when either is inf
 * (even next to a nan); integers compute in f32 */
CT_API ct_tensor *ct_hypot(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_hypot_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_hypot_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_hypot_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_hypot_scalar_(ct_tensor *a, double s);
/* log(exp(a) + exp(b)) without overflow (max + log1p(exp(-|a - b|))), as
 * NumPy: equal infinities give themselves, a nan propagates; integers
 * compute in f32 */
CT_API ct_tensor *ct_logaddexp(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logaddexp_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logaddexp_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logaddexp_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_logaddexp_scalar_(ct_tensor *a, double s);
/* |a| with the sign bit of b (-0 and a nan's sign count); integers compute
 * in f32; the gradient for b is 0, as torch */
CT_API ct_tensor *ct_copysign(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_copysign_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_copysign_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_copysign_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_copysign_scalar_(ct_tensor *a, double s);

/* s - a and s / a. */
CT_API ct_tensor *ct_rsub_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_rdiv_scalar(const ct_tensor *a, double s);
/* a + alpha * b (torch.add with alpha); the in-place form is an axpy. */
CT_API ct_tensor *ct_add_scaled(const ct_tensor *a, const ct_tensor *b, double alpha);
CT_API ct_tensor *ct_add_scaled_(ct_tensor *a, const ct_tensor *b, double alpha);

/* ---- Comparisons and logic (bool results) ------------------------------ */
/* A number is converted to the floating tensor's dtype before comparing, as
 * torch: an f32 tensor's 0.1f equals 0.1, and in f16 1e10 is inf, which an
 * inf element equals. */
CT_API ct_tensor *ct_eq(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_eq_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_eq_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_ne(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_ne_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_ne_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_lt(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_lt_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_lt_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_le(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_le_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_le_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_gt(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_gt_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_gt_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_ge(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_ge_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_ge_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_logical_and(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_and_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_and_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_logical_or(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_or_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_or_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_logical_xor(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_xor_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_xor_scalar(const ct_tensor *a, double s);

/* ---- Bitwise ops (integer and bool tensors) ------------------------------ */
/* Integer and bool operands only (a floating tensor, or a number that is not
 * an integer, is CT_ERR_DTYPE naming the op and the dtype); the result is the
 * promoted dtype (as ct_add), bool for two bools; not differentiable (integer
 * results, never recorded). The _scalar forms take an integer s in the
 * tensor's dtype (wrapping). */
/* a & b, a | b, a ^ b (bool too). */
CT_API ct_tensor *ct_bitwise_and(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_and_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_and_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_and_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_and_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_or(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_or_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_or_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_or_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_or_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_xor(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_xor_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_xor_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_xor_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_xor_scalar_(ct_tensor *a, double s);
/* a << b and a >> b, integers only (bool is CT_ERR_DTYPE, as torch), as
 * NumPy and the array API: a count at least the bit width gives 0, or -1 for
 * a right shift of a negative value; right shifts of signed values are
 * arithmetic; a negative count counts as one at least the width (NumPy's and
 * torch's definition: a << -1 is 0). */
CT_API ct_tensor *ct_bitwise_left_shift(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_left_shift_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_left_shift_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_left_shift_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_left_shift_scalar_(ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_right_shift(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_right_shift_(ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_right_shift_out(ct_tensor *out, const ct_tensor *a,
                                             const ct_tensor *b);
CT_API ct_tensor *ct_bitwise_right_shift_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_right_shift_scalar_(ct_tensor *a, double s);
/* ~a (the array API's bitwise_invert): every bit flipped; logical not on
 * bool; a floating tensor is CT_ERR_DTYPE. */
CT_API ct_tensor *ct_bitwise_not(const ct_tensor *a);
CT_API ct_tensor *ct_bitwise_not_(ct_tensor *a);
CT_API ct_tensor *ct_bitwise_not_out(ct_tensor *out, const ct_tensor *a);
/* s << a and s >> a: the count is the tensor. */
CT_API ct_tensor *ct_bitwise_left_shift_rscalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_bitwise_right_shift_rscalar(const ct_tensor *a, double s);

/* cond ? a : b, broadcasting all three; cond is bool (else nonzero = true). */
CT_API ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_where_scalar(const ct_tensor *cond, const ct_tensor *a, double b);

/* Whole-tensor checks on values (false with an error for mismatched shapes). */
CT_API bool ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol);
CT_API bool ct_equal(const ct_tensor *a, const ct_tensor *b);

/* Fills. Return t. As in PyTorch, the value must convert to t's dtype without
 * overflow (else CT_ERR_ARG): no nan or infinity into an integer tensor, an
 * integer range per dtype (an integral value into u8 may also be -255..-1,
 * wrapping, as a Python int in torch; i64 takes [-2^63, 2^63)), up to the
 * largest finite value for f16/bf16/f32; bool takes any value. A fractional
 * value truncates toward zero in an integer tensor. fill_ may write an
 * expanded view (filling is idempotent), as torch's fill_ does. */
CT_API ct_tensor *ct_fill_(ct_tensor *t, double value);
CT_API ct_tensor *ct_zero_(ct_tensor *t);

/* ---- Reductions --------------------------------------------------------- */
/* Which dims to reduce: ndims == 0 (or a NULL pointer) means all dims. */
typedef struct ct_reduce_opts {
  int dims[CT_MAX_DIMS]; /* negative dims count from the end */
  int ndims;
  bool keepdim; /* keep reduced dims with size 1 */
} ct_reduce_opts;
/* CT_DIMS(0, 2): a pointer to options reducing dims 0 and 2; CT_DIMS_KEEP
 * keeps them with size 1. C: a compound literal (lives to the end of the
 * block); C++: a temporary (ct__dims, below), which lives to the end of the
 * full expression, so pass it to the call directly. */
#ifndef __cplusplus
#define CT_DIMS(...) (&(ct_reduce_opts){.dims = {__VA_ARGS__}, .ndims = CT__NARGS(__VA_ARGS__)})
#define CT_DIMS_KEEP(...) \
  (&(ct_reduce_opts){.dims = {__VA_ARGS__}, .ndims = CT__NARGS(__VA_ARGS__), .keepdim = true})
#else
#define CT_DIMS(...) (ct__dims(__VA_ARGS__).get(false))
#define CT_DIMS_KEEP(...) (ct__dims(__VA_ARGS__).get(true))
#endif

/* sum and prod of integers/bool give i64; mean, var, std and norm need
 * floating input; logsumexp of integers/bool computes in f32 (as torch). f32
 * sums are accurate for long inputs (blocked pairwise summation). Each has a
 * ct_NAME_out(out, x, r) form.
 * Gradients where the derivative is undefined are PyTorch's: prod at a zero
 * gets the product of the other elements (0 with two zeros in the slice);
 * max/min split the gradient evenly among tied elements; std at zero spread
 * and norm at zero give 0 (var and std with N - correction <= 0 give nan). */
CT_API ct_tensor *ct_sum(const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_mean(const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_prod(const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_max(const ct_tensor *x,
                         const ct_reduce_opts *r); /* torch.amax; nan propagates */
CT_API ct_tensor *ct_min(const ct_tensor *x, const ct_reduce_opts *r); /* torch.amin */
CT_API ct_tensor *ct_logsumexp(const ct_tensor *x, const ct_reduce_opts *r);
/* all/any: bool, except u8 for a u8 input (as torch). */
CT_API ct_tensor *ct_all(const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_any(const ct_tensor *x, const ct_reduce_opts *r);
/* Variance / standard deviation dividing by N - correction (1: unbiased). */
CT_API ct_tensor *ct_var(const ct_tensor *x, const ct_reduce_opts *r, double correction);
CT_API ct_tensor *ct_std(const ct_tensor *x, const ct_reduce_opts *r, double correction);
/* p-norm: (sum |x|^p)^(1/p); p = INFINITY is max |x|, p = 0 counts nonzeros. */
CT_API ct_tensor *ct_norm(const ct_tensor *x, double p, const ct_reduce_opts *r);

CT_API ct_tensor *ct_sum_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_mean_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_prod_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_max_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_min_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
CT_API ct_tensor *ct_logsumexp_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);

/* The dim argument CT_DIM_ALL asks for the index into the flattened tensor. */
#define CT_DIM_ALL (-1000)
/* i64 indices of the first maximum / minimum along dim (nan counts as max). */
CT_API ct_tensor *ct_argmax(const ct_tensor *x, int dim, bool keepdim);
CT_API ct_tensor *ct_argmin(const ct_tensor *x, int dim, bool keepdim);
/* Values and (if indices != NULL) i64 indices along one dim, as torch.max(x, dim). */
CT_API ct_tensor *ct_max_dim(const ct_tensor *x, int dim, bool keepdim, ct_tensor **indices);
CT_API ct_tensor *ct_min_dim(const ct_tensor *x, int dim, bool keepdim, ct_tensor **indices);

/* Numerically stable softmax / log_softmax along dim. */
CT_API ct_tensor *ct_softmax(const ct_tensor *x, int dim);
CT_API ct_tensor *ct_log_softmax(const ct_tensor *x, int dim);
CT_API ct_tensor *ct_softmax_out(ct_tensor *out, const ct_tensor *x, int dim);
CT_API ct_tensor *ct_log_softmax_out(ct_tensor *out, const ct_tensor *x, int dim);

/* ---- Linear algebra ----------------------------------------------------- */
/* torch.matmul: 1-d x 1-d dot; 2-d x 2-d matrix product; 1-d operands are
 * promoted to a matrix and the added dim removed; batched (>2-d) operands
 * broadcast their batch dims. Transposed views go to BLAS without a copy. */
CT_API ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_matmul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* 2-d x 2-d only. */
CT_API ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b);
/* (B, n, k) x (B, k, m) only. */
CT_API ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b);
/* 1-d dot product. */
CT_API ct_tensor *ct_dot(const ct_tensor *a, const ct_tensor *b);
/* x @ w^T + bias, as torch.nn.functional.linear (bias may be NULL). With 0
 * input features the result is the bias (zeros without one), and x and w
 * get empty gradients. */
CT_API ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias);

/* ---- Indexing, joining, splitting -------------------------------------- */
/* Entries of x along dim at positions index (1-d integer tensor). */
CT_API ct_tensor *ct_index_select(const ct_tensor *x, int dim, const ct_tensor *index);
/* out[i][j] = x[index[i][j]][j] (dim 0), etc.; index has x's ndim. */
CT_API ct_tensor *ct_gather(const ct_tensor *x, int dim, const ct_tensor *index);
/* x with x[index[i][j]][j] = src[i][j] (dim 0); the in-place form writes x. */
CT_API ct_tensor *ct_scatter(const ct_tensor *x, int dim, const ct_tensor *index,
                             const ct_tensor *src);
CT_API ct_tensor *ct_scatter_(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src);
/* As scatter, but adds into x (repeated indices accumulate). */
CT_API ct_tensor *ct_scatter_add(const ct_tensor *x, int dim, const ct_tensor *index,
                                 const ct_tensor *src);
CT_API ct_tensor *ct_scatter_add_(ct_tensor *x, int dim, const ct_tensor *index,
                                  const ct_tensor *src);
/* 1-d tensor of the elements where mask (bool, broadcast to x) is true. */
CT_API ct_tensor *ct_masked_select(const ct_tensor *x, const ct_tensor *mask);
/* x with value where mask is true (the value checked as ct_fill_'s). */
CT_API ct_tensor *ct_masked_fill(const ct_tensor *x, const ct_tensor *mask, double value);
CT_API ct_tensor *ct_masked_fill_(ct_tensor *x, const ct_tensor *mask, double value);
/* Joins n tensors along an existing dim (cat) or a new one (stack). */
CT_API ct_tensor *ct_cat(ct_tensor *const *tensors, int n, int dim);
CT_API ct_tensor *ct_stack(ct_tensor *const *tensors, int n, int dim);
/* Views of pieces of `split_size` along dim (the last may be smaller). Writes
 * at most max_out pieces to out and returns how many there are (-1 on error). */
CT_API int ct_split(const ct_tensor *x, int64_t split_size, int dim, ct_tensor **out, int max_out);
/* `chunks` nearly equal views along dim, as torch.chunk; returns the count. */
CT_API int ct_chunk(const ct_tensor *x, int chunks, int dim, ct_tensor **out, int max_out);
/* i64 one-hot of integer class indices: shape (..., num_classes); num_classes
 * < 0 means max(index) + 1. */
CT_API ct_tensor *ct_one_hot(const ct_tensor *index, int64_t num_classes);
/* Lower / upper triangle of the last two dims (diagonal offset k); others zero. */
CT_API ct_tensor *ct_tril(const ct_tensor *x, int64_t k);
CT_API ct_tensor *ct_triu(const ct_tensor *x, int64_t k);
CT_API ct_tensor *ct_tril_(ct_tensor *x, int64_t k);
CT_API ct_tensor *ct_triu_(ct_tensor *x, int64_t k);

#ifdef __cplusplus
}
/* CT_DIMS in C++: the options in a temporary, valid to the end of the full
 * expression that names it. */
struct ct__dims {
  ct_reduce_opts opts;
  template <typename... T>
  constexpr ct__dims(T... d) : opts{{static_cast<int>(d)...}, (int)sizeof...(T), false} {
    static_assert(sizeof...(T) <= CT_MAX_DIMS, "CT_DIMS: more than CT_MAX_DIMS dims");
  }
  ct_reduce_opts *get(bool keepdim) {
    opts.keepdim = keepdim;
    return &opts;
  }
};
#endif
#endif /* CTENSOR_OPS_H */
