/* Fused gradients of the elementwise unary ops on the CPU:
 *   grad_x[i] = grad_out[i] * d op / dx at (x[i], y[i])
 * One pass over four operands (grad_x, grad_out, x, y) of one shape and one
 * floating dtype, through the strided loop; f16/bf16 through f32 rows. */
#include <math.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"

typedef struct ubw_ctx {
  ct_unary_op op;
  double p0, p1;
} ubw_ctx;

/* d op/dx times g, for T = float or double (M: the math suffix f or empty).
 * Ops without a gradient (floor, ceil, round, trunc, sign) give 0. */
#define DERIV(T, M, op, g, x, y, p0, p1)                                                    \
  switch (op) {                                                                             \
  case CT_UOP_NEG: return -(g);                                                             \
  case CT_UOP_ABS: return (x) > 0 ? (g) : (x) < 0 ? -(g) : (T)0;                            \
  case CT_UOP_EXP: return (g) * (y);                                                        \
  case CT_UOP_EXPM1: return (g) * ((y) + 1);                                                \
  case CT_UOP_LOG: return (g) / (x);                                                        \
  case CT_UOP_LOG1P: return (g) / ((x) + 1);                                                \
  case CT_UOP_LOG2: return (g) / ((x) * (T)0.69314718055994530942);                         \
  case CT_UOP_SQRT: return (g) / (2 * (y));                                                 \
  case CT_UOP_RSQRT: return (T)-0.5 * (g) * (y) * (y) * (y);                                \
  case CT_UOP_SIN: return (g) * cos##M(x);                                                  \
  case CT_UOP_COS: return -(g) * sin##M(x);                                                 \
  case CT_UOP_TAN: return (g) * (1 + (y) * (y));                                            \
  case CT_UOP_TANH: return (g) * (1 - (y) * (y));                                           \
  case CT_UOP_ERF: return (g) * (T)1.12837916709551257390 * exp##M(-(x) * (x));             \
  case CT_UOP_SIGMOID: return (g) * (y) * (1 - (y));                                        \
  case CT_UOP_RELU: return (x) > 0 ? (g) : (T)0;                                            \
  case CT_UOP_GELU: {                                                                       \
    T cdf = (T)0.5 * (1 + erf##M((x) * (T)0.70710678118654752440));                         \
    T pdf = exp##M((T)-0.5 * (x) * (x)) * (T)0.39894228040143267794;                        \
    return (g) * (cdf + (x) * pdf);                                                         \
  }                                                                                         \
  case CT_UOP_GELU_TANH: {                                                                  \
    const T k = (T)0.79788456080286535588, c = (T)0.044715;                                 \
    T inner = k * ((x) + c * (x) * (x) * (x));                                              \
    T th = tanh##M(inner);                                                                  \
    T dinner = k * (1 + 3 * c * (x) * (x));                                                 \
    return (g) * ((T)0.5 * (1 + th) + (T)0.5 * (x) * (1 - th * th) * dinner);               \
  }                                                                                         \
  case CT_UOP_SILU: {                                                                       \
    T s = 1 / (1 + exp##M(-(x)));                                                           \
    return (g) * s * (1 + (x) * (1 - s));                                                   \
  }                                                                                         \
  case CT_UOP_SOFTPLUS:                                                                     \
    return (x) > 20 ? (g) : (g) / (1 + exp##M(-(x)));                                      \
  case CT_UOP_RECIPROCAL: return -(g) * (y) * (y);                                          \
  case CT_UOP_SQUARE: return 2 * (g) * (x);                                                 \
  case CT_UOP_CLAMP: return ((x) >= (T)(p0) && (x) <= (T)(p1)) ? (g) : (T)0;                \
  case CT_UOP_LEAKY_RELU: return (x) > 0 ? (g) : (g) * (T)(p0);                             \
  default: return 0;                                                                        \
  }

static inline __attribute__((always_inline)) float deriv_f32(ct_unary_op op, float g, float x, float y, double p0, double p1) {
  DERIV(float, f, op, g, x, y, p0, p1)
}
static inline __attribute__((always_inline)) double deriv_f64(ct_unary_op op, double g, double x, double y, double p0, double p1) {
  DERIV(double, , op, g, x, y, p0, p1)
}

/* One row function per (op, type): the op is fixed at compile time so the
 * contiguous loop vectorizes (a switch inside the element loop does not get
 * unswitched, and cost ~3 ns per element for relu). Operands: 0 grad_x,
 * 1 grad_out, 2 x, 3 y. */
#define DEFINE_ROW(NAME, T, FN, OP)                                                          \
  static void NAME(char **d, const int64_t *s, int64_t n, void *vctx) {                     \
    const ubw_ctx *c = vctx;                                                                 \
    const double p0 = c->p0, p1 = c->p1;                                                     \
    if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) && s[3] == sizeof(T)) { \
      T *restrict gx = (T *)d[0];                                                            \
      const T *restrict g = (const T *)d[1], *restrict x = (const T *)d[2],                  \
                        *restrict y = (const T *)d[3];                                       \
      for (int64_t i = 0; i < n; i++) gx[i] = FN(OP, g[i], x[i], y[i], p0, p1);              \
      return;                                                                                \
    }                                                                                        \
    for (int64_t i = 0; i < n; i++) {                                                        \
      T g = *(const T *)(d[1] + i * s[1]);                                                   \
      T x = *(const T *)(d[2] + i * s[2]);                                                   \
      T y = *(const T *)(d[3] + i * s[3]);                                                   \
      *(T *)(d[0] + i * s[0]) = FN(OP, g, x, y, p0, p1);                                     \
    }                                                                                        \
  }

/* The differentiable ops (others have no backward kernel). */
#define DIFFERENTIABLE(X)                                                                    \
  X(NEG) X(ABS) X(EXP) X(EXPM1) X(LOG) X(LOG1P) X(LOG2) X(SQRT) X(RSQRT) X(SIN) X(COS) X(TAN)  \
  X(TANH) X(ERF) X(SIGMOID) X(RELU) X(GELU) X(GELU_TANH) X(SILU) X(SOFTPLUS) X(RECIPROCAL)   \
  X(SQUARE) X(CLAMP) X(LEAKY_RELU) X(FLOOR) X(CEIL) X(ROUND) X(TRUNC) X(SIGN)

#define DEFINE_BOTH(E)                                         \
  DEFINE_ROW(row_f32_##E, float, deriv_f32, CT_UOP_##E)        \
  DEFINE_ROW(row_f64_##E, double, deriv_f64, CT_UOP_##E)
DIFFERENTIABLE(DEFINE_BOTH)

static const ct_loop_fn rows_f32[CT_UOP_COUNT] = {
#define ENTRY(E) [CT_UOP_##E] = row_f32_##E,
    DIFFERENTIABLE(ENTRY)
#undef ENTRY
};
static const ct_loop_fn rows_f64[CT_UOP_COUNT] = {
#define ENTRY(E) [CT_UOP_##E] = row_f64_##E,
    DIFFERENTIABLE(ENTRY)
#undef ENTRY
};

ct_status ct__cpu_unary_backward(ct_unary_op op, ct_tensor *grad_x, const ct_tensor *grad_out,
                                 const ct_tensor *x, const ct_tensor *y, double p0, double p1) {
  ubw_ctx c = {op, p0, p1};
  const ct_tensor *ts[4] = {grad_x, grad_out, x, y};
  if (!rows_f32[op])
    return ct__fail_status(CT_ERR_STATE, "unary backward: op %d has no gradient", (int)op);
  switch (grad_x->dtype) {
  case CT_F32: ct__loop(4, ts, rows_f32[op], &c); return CT_OK;
  case CT_F64: ct__loop(4, ts, rows_f64[op], &c); return CT_OK;
  case CT_F16:
  case CT_BF16: {
    ct_half_ctx h = {.f32_fn = rows_f32[op], .f32_ctx = &c, .nargs = 4, .out_is_written = true};
    for (int a = 0; a < 4; a++) h.dtypes[a] = grad_x->dtype;
    ct__loop(4, ts, ct__half_rows, &h);
    return CT_OK;
  }
  default:
    return ct__fail_status(CT_ERR_DTYPE, "unary backward (op %d): gradients need a floating dtype, got %s",
                           (int)op, ct_dtype_name(grad_x->dtype));
  }
}
