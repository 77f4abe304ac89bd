/* CPU unary elementwise kernels: out = op(x) for the ops of CT_UNARY_OPS.
 *
 * One row kernel per (op, dtype), generated from one expression per op and
 * type class: F (f32, f64; f16/bf16 run the f32 kernel through
 * ct__half_rows), I (integers: the SAME-rule ops), and the predicates with a
 * bool result for every dtype. Decomposition: ct__ew_run (ew_run.h) treats
 * contiguous operands as one row split into per-thread chunks, else ct__loop
 * rows; each row has a vectorizable contiguous loop and a strided one.
 * Math is done in the element type (expf for f32), as PyTorch does on the CPU. */
#include <tgmath.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/ew_run.h"

/* The integer kernels are instantiated for u8 too, where sign tests are constant. */
#pragma GCC diagnostic ignored "-Wtype-limits"

/* X(ENUM, T, UT, suffix, MIN, MAX, ...): see binary.c for UT. */
#define FLOAT_TYPES(X, ...) \
  X(CT_F32, float, float, f32, -INFINITY, INFINITY, __VA_ARGS__) \
  X(CT_F64, double, double, f64, -INFINITY, INFINITY, __VA_ARGS__)
#define INT_TYPES(X, ...)                                                         \
  X(CT_I8, int8_t, unsigned, i8, INT8_MIN, INT8_MAX, __VA_ARGS__)                 \
  X(CT_U8, uint8_t, unsigned, u8, 0, UINT8_MAX, __VA_ARGS__)                      \
  X(CT_I16, int16_t, unsigned, i16, INT16_MIN, INT16_MAX, __VA_ARGS__)            \
  X(CT_I32, int32_t, uint32_t, i32, INT32_MIN, INT32_MAX, __VA_ARGS__)            \
  X(CT_I64, int64_t, uint64_t, i64, INT64_MIN, INT64_MAX, __VA_ARGS__)
#define BOOL_TYPE(X, ...) X(CT_BOOL, bool, unsigned, b, 0, 1, __VA_ARGS__)

/* ---- Float helpers (tgmath picks expf for float, exp for double) ---------- */
#define DEFINE_FLOAT_HELPERS(E_, T, UT, S, MIN, MAX, unused)                       \
  /* 1 / (1 + e^-x) without overflow: e^-|x| is at most 1. */                     \
  static inline T sigmoid_##S(T x) {                                              \
    T e = exp(-fabs(x));                                                          \
    T r = 1 / (1 + e);                                                            \
    return x >= 0 ? r : e * r;                                                    \
  }                                                                               \
  static inline T sign_##S(T x) {                                                 \
    return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x; /* nan stays */      \
  }
FLOAT_TYPES(DEFINE_FLOAT_HELPERS, 0)

/* ---- Op expressions: E(T, UT, S, x); q0, q1 are the op parameters as T ---- */
#define F_NEG(T, UT, S, x) (-(x))
#define F_ABS(T, UT, S, x) fabs(x)
#define F_EXP(T, UT, S, x) exp(x)
#define F_EXPM1(T, UT, S, x) expm1(x)
#define F_LOG(T, UT, S, x) log(x)
#define F_LOG1P(T, UT, S, x) log1p(x)
#define F_LOG2(T, UT, S, x) log2(x)
#define F_SQRT(T, UT, S, x) sqrt(x)
#define F_RSQRT(T, UT, S, x) ((T)1 / sqrt(x))
#define F_SIN(T, UT, S, x) sin(x)
#define F_COS(T, UT, S, x) cos(x)
#define F_TAN(T, UT, S, x) tan(x)
#define F_TANH(T, UT, S, x) tanh(x)
#define F_ERF(T, UT, S, x) erf(x)
#define F_SIGMOID(T, UT, S, x) sigmoid_##S(x)
#define F_RELU(T, UT, S, x) ((x) < 0 ? (T)0 : (x)) /* nan stays */
/* x * Phi(x) = x/2 (1 + erf(x / sqrt 2)) */
#define F_GELU(T, UT, S, x) ((T)0.5 * (x) * ((T)1 + erf((x) * (T)0.70710678118654752440)))
/* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
#define F_GELU_TANH(T, UT, S, x) \
  ((T)0.5 * (x) * ((T)1 + tanh((T)0.79788456080286535588 * ((x) + (T)0.044715 * (x) * (x) * (x)))))
#define F_SILU(T, UT, S, x) ((x) * sigmoid_##S(x))
#define F_SOFTPLUS(T, UT, S, x) ((x) > (T)20 ? (x) : log1p(exp(x)))
#define F_FLOOR(T, UT, S, x) floor(x)
#define F_CEIL(T, UT, S, x) ceil(x)
#define F_ROUND(T, UT, S, x) nearbyint(x) /* half to even in the default mode */
#define F_TRUNC(T, UT, S, x) trunc(x)
#define F_SIGN(T, UT, S, x) sign_##S(x)
#define F_RECIPROCAL(T, UT, S, x) ((T)1 / (x))
#define F_SQUARE(T, UT, S, x) ((x) * (x))
/* min(max(x, lo), hi); a nan x fails both tests and stays nan */
#define F_CLAMP(T, UT, S, x) (CLAMP_LO(x) > q1 ? q1 : CLAMP_LO(x)) /* lo > hi gives hi */
#define CLAMP_LO(x) ((x) < q0 ? q0 : (x))
#define F_LEAKY_RELU(T, UT, S, x) ((x) > 0 ? (x) : q0 * (x))
#define F_ISNAN(T, UT, S, x) ((x) != (x))
#define F_ISINF(T, UT, S, x) (fabs(x) == (T)INFINITY)
#define F_ISFINITE(T, UT, S, x) ((x) - (x) == 0) /* false for inf and nan */
#define F_NOT(T, UT, S, x) ((x) == 0)

#define I_NEG(T, UT, S, x) ((T)((UT)0 - (UT)(x)))
#define I_ABS(T, UT, S, x) ((T)((x) < 0 ? (UT)0 - (UT)(x) : (UT)(x)))
#define I_RELU(T, UT, S, x) ((x) < 0 ? (T)0 : (x))
#define I_SIGN(T, UT, S, x) ((T)(((x) > 0) - ((x) < 0)))
#define I_SQUARE(T, UT, S, x) ((T)((UT)(x) * (UT)(x)))
#define I_CLAMP(T, UT, S, x) F_CLAMP(T, UT, S, x)
#define I_FALSE(T, UT, S, x) ((void)(x), false)
#define I_TRUE(T, UT, S, x) ((void)(x), true)
#define I_NOT(T, UT, S, x) ((x) == 0)

/* The kernels: F (floats, result T), FB (floats, bool result), I (integers,
 * result T), IB (integers and bool, bool result). */
#define UNARY_KERNELS(F, FB, I, IB)                                              \
  F(NEG, F_NEG) I(NEG, I_NEG) F(ABS, F_ABS) I(ABS, I_ABS)                        \
  F(EXP, F_EXP) F(EXPM1, F_EXPM1) F(LOG, F_LOG) F(LOG1P, F_LOG1P)                 \
  F(LOG2, F_LOG2) F(SQRT, F_SQRT) F(RSQRT, F_RSQRT) F(SIN, F_SIN) F(COS, F_COS)   \
  F(TAN, F_TAN) F(TANH, F_TANH) F(ERF, F_ERF) F(SIGMOID, F_SIGMOID)               \
  F(RELU, F_RELU) I(RELU, I_RELU) F(GELU, F_GELU) F(GELU_TANH, F_GELU_TANH)       \
  F(SILU, F_SILU) F(SOFTPLUS, F_SOFTPLUS) F(FLOOR, F_FLOOR) F(CEIL, F_CEIL)       \
  F(ROUND, F_ROUND) F(TRUNC, F_TRUNC) F(SIGN, F_SIGN) I(SIGN, I_SIGN)             \
  F(RECIPROCAL, F_RECIPROCAL) F(SQUARE, F_SQUARE) I(SQUARE, I_SQUARE)             \
  F(CLAMP, F_CLAMP) I(CLAMP, I_CLAMP) F(LEAKY_RELU, F_LEAKY_RELU)                 \
  FB(ISNAN, F_ISNAN) IB(ISNAN, I_FALSE) FB(ISINF, F_ISINF) IB(ISINF, I_FALSE)     \
  FB(ISFINITE, F_ISFINITE) IB(ISFINITE, I_TRUE) FB(LOGICAL_NOT, F_NOT)           \
  IB(LOGICAL_NOT, I_NOT)

/* Op parameter as T: floats convert; integers saturate (nan never gets here:
 * the op layer computes such clamps in f32). */
#define CONV_FLOAT(T, MIN, MAX, v) ((T)(v))
#define CONV_INT(T, MIN, MAX, v) \
  ((v) <= (double)(MIN) ? (T)(MIN) : (v) >= (double)(MAX) ? (T)(MAX) : (T)(v))

/* out (TO) = E(x) over a row. */
#define DEFINE_ROW(NAME, TO, T, UT, S, MIN, MAX, E, CONV)                         \
  static void NAME(char **d, const int64_t *s, int64_t n, void *ctx) {            \
    const ct_ew_ctx *c = ctx;                                                     \
    const T q0 = CONV(T, MIN, MAX, c->p0), q1 = CONV(T, MIN, MAX, c->p1);         \
    (void)q0;                                                                     \
    (void)q1;                                                                     \
    if (s[0] == (int64_t)sizeof(TO) && s[1] == (int64_t)sizeof(T)) {              \
      TO *o = (TO *)d[0];                                                         \
      const T *px = (const T *)d[1];                                              \
      CT_SIMD for (int64_t i = 0; i < n; i++) {                                   \
        const T x = px[i];                                                        \
        o[i] = (TO)(E(T, UT, S, x));                                              \
      }                                                                           \
    } else {                                                                      \
      for (int64_t i = 0; i < n; i++) {                                           \
        const T x = *(const T *)(d[1] + i * s[1]);                                \
        *(TO *)(d[0] + i * s[0]) = (TO)(E(T, UT, S, x));                          \
      }                                                                           \
    }                                                                             \
  }

#define DEF_F1(E_, T, UT, S, MIN, MAX, OP, E) \
  DEFINE_ROW(un_##OP##_##S, T, T, UT, S, MIN, MAX, E, CONV_FLOAT)
#define DEF_FB1(E_, T, UT, S, MIN, MAX, OP, E) \
  DEFINE_ROW(un_##OP##_##S, bool, T, UT, S, MIN, MAX, E, CONV_FLOAT)
#define DEF_I1(E_, T, UT, S, MIN, MAX, OP, E) \
  DEFINE_ROW(un_##OP##_##S, T, T, UT, S, MIN, MAX, E, CONV_INT)
#define DEF_IB1(E_, T, UT, S, MIN, MAX, OP, E) \
  DEFINE_ROW(un_##OP##_##S, bool, T, UT, S, MIN, MAX, E, CONV_INT)
#define DEF_F(OP, E) FLOAT_TYPES(DEF_F1, OP, E)
#define DEF_FB(OP, E) FLOAT_TYPES(DEF_FB1, OP, E)
#define DEF_I(OP, E) INT_TYPES(DEF_I1, OP, E)
#define DEF_IB(OP, E) INT_TYPES(DEF_IB1, OP, E) BOOL_TYPE(DEF_IB1, OP, E)
UNARY_KERNELS(DEF_F, DEF_FB, DEF_I, DEF_IB)

#define ENTRY(E_, T, UT, S, MIN, MAX, OP, E) [CT_UOP_##OP][E_] = un_##OP##_##S,
#define ENT_F(OP, E) FLOAT_TYPES(ENTRY, OP, E)
#define ENT_I(OP, E) INT_TYPES(ENTRY, OP, E)
#define ENT_IB(OP, E) INT_TYPES(ENTRY, OP, E) BOOL_TYPE(ENTRY, OP, E)
/* Indexed [op][input dtype]; f16/bf16 use the f32 entry. */
static const ct_loop_fn unary_fns[CT_UOP_COUNT][CT_DTYPE_COUNT] = {
    UNARY_KERNELS(ENT_F, ENT_F, ENT_I, ENT_IB)};

ct_status ct__cpu_unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1) {
  ct_ew_ctx ectx = {.p0 = p0, .p1 = p1};
  void *ctx = &ectx;
  ct_loop_fn fn;
  ct_half_ctx hctx;
  if (ct__is_half(x->dtype)) {
    hctx = (ct_half_ctx){.f32_fn = unary_fns[op][CT_F32], .f32_ctx = &ectx, .nargs = 2,
                         .dtypes = {out->dtype, x->dtype}, .out_is_written = true};
    fn = hctx.f32_fn ? ct__half_rows : NULL;
    ctx = &hctx;
  } else {
    fn = unary_fns[op][x->dtype];
  }
  if (!fn)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no CPU kernel for %s", ct__unary_info[op].name,
                           ct_dtype_name(x->dtype));
  const ct_tensor *ts[2] = {out, x};
  ct__ew_run(2, ts, fn, ctx);
  return CT_OK;
}
