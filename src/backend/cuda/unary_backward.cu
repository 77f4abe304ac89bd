/* Fused gradients of the elementwise unary ops on CUDA:
 *   grad_x[i] = grad_out[i] * d op / dx at (x[i], y[i])
 * One elementwise pass over (grad_x, grad_out, x or y) of one floating dtype;
 * f16/bf16 in f32. Formulas as backend/cpu/unary_backward.c. Decomposition:
 * the 16-byte vector kernel for contiguous operands, else ctc_ew_kernel
 * (common.cuh). */
#include "backend/cuda/common.cuh"

template <class T> __device__ __forceinline__ T deriv(int op, T g, T x, T y, T p0, T p1) {
  switch (op) {
  case CT_UOP_NEG: return -g;
  case CT_UOP_ABS: return x > T(0) ? g : x < T(0) ? -g : T(0);
  case CT_UOP_EXP: return g * y;
  case CT_UOP_EXPM1: return g * (y + T(1));
  case CT_UOP_LOG: return g / x;
  case CT_UOP_LOG1P: return g / (x + T(1));
  case CT_UOP_LOG2: return g / (x * T(0.69314718055994530942));
  case CT_UOP_SQRT: return g / (T(2) * y);
  case CT_UOP_RSQRT: return T(-0.5) * g * y * y * y;
  case CT_UOP_SIN: return g * cos(x);
  case CT_UOP_COS: return -g * sin(x);
  case CT_UOP_TAN: return g * (T(1) + y * y);
  case CT_UOP_TANH: return g * (T(1) - y * y);
  case CT_UOP_ERF: return g * T(1.12837916709551257390) * exp(-x * x);
  case CT_UOP_SIGMOID: return g * y * (T(1) - y);
  case CT_UOP_RELU: return x > T(0) ? g : T(0);
  case CT_UOP_GELU: {
    T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));
    T pdf = exp(T(-0.5) * x * x) * T(0.39894228040143267794);
    return g * (cdf + x * pdf);
  }
  case CT_UOP_GELU_TANH: {
    const T k = T(0.79788456080286535588), c = T(0.044715);
    T th = tanh(k * (x + c * x * x * x));
    T dinner = k * (T(1) + T(3) * c * x * x);
    return g * (T(0.5) * (T(1) + th) + T(0.5) * x * (T(1) - th * th) * dinner);
  }
  case CT_UOP_SILU: {
    T s = T(1) / (T(1) + exp(-x));
    return g * s * (T(1) + x * (T(1) - s));
  }
  case CT_UOP_SOFTPLUS: return x > T(20) ? g : g / (T(1) + exp(-x));
  case CT_UOP_RECIPROCAL: return -g * y * y;
  case CT_UOP_SQUARE: return T(2) * g * x;
  case CT_UOP_CLAMP: return (x >= p0 && x <= p1) ? g : T(0);
  case CT_UOP_LEAKY_RELU: return x > T(0) ? g : g * p0;
  default: return T(0);
  }
}

/* Which saved tensor op's derivative reads: x (true) or y. Every formula
 * above reads at most one of them, so the kernel streams three tensors, not
 * four (a quarter less traffic). */
static bool uses_x(int op) {
  switch (op) {
  case CT_UOP_EXP: case CT_UOP_EXPM1: case CT_UOP_SQRT: case CT_UOP_RSQRT: case CT_UOP_TAN:
  case CT_UOP_TANH: case CT_UOP_SIGMOID: case CT_UOP_RECIPROCAL: return false;
  default: return true;
  }
}

/* Value functors (common.cuh) of (grad_out, x) or (grad_out, y); the unused
 * one is 0. relu's op is a compile-time constant: no switch. */
template <class C> struct ubw_x {
  int op;
  C p0, p1;
  __device__ C operator()(C g, C x) const { return deriv<C>(op, g, x, C(0), p0, p1); }
};
template <class C> struct ubw_y {
  int op;
  C p0, p1;
  __device__ C operator()(C g, C y) const { return deriv<C>(op, g, C(0), y, p0, p1); }
};
struct ubw_relu {
  template <class C> __device__ C operator()(C g, C x) const {
    return deriv<C>(CT_UOP_RELU, g, x, C(0), C(0), C(0));
  }
};

/* The vector path when geo qualifies (one vector per thread per step for the
 * switch over erf, tanh...), else the generic kernel. */
template <class C>
static ct_status run_backward(int op, int dev, const ctc_t *gx, const ctc_t *g, const ctc_t *xy,
                              C p0, C p1) {
  const char *name = "unary backward";
  const ctc_t *ts[3] = {gx, g, xy};
  ctc_ew geo;
  ctc_ew_init(&geo, 3, ts);
  ct_status st;
  if (op == CT_UOP_RELU && ctc_vec_run<C, 2, false>(name, dev, geo, ubw_relu(), &st)) return st;
  if (uses_x(op)) return ctc_map<C, 2, false, 1>(name, dev, geo, ubw_x<C>{op, p0, p1});
  return ctc_map<C, 2, false, 1>(name, dev, geo, ubw_y<C>{op, p0, p1});
}

extern "C" ct_status ct__cuda_unary_backward(int op, const ctc_t *gx, const ctc_t *g, const ctc_t *x,
                                            const ctc_t *y, double p0, double p1) {
  int dev = gx->device;
  if (!ctc_is_float(gx->dtype))
    return ct__fail_status(CT_ERR_DTYPE, "unary backward (op %d): gradients need a floating dtype, got %s",
                           op, ct_dtype_name((ct_dtype)gx->dtype));
  if (gx->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("unary backward", dev);
  if (st != CT_OK) return st;
  const ctc_t *xy = uses_x(op) ? x : y;
  if (gx->dtype == CT_F64) return run_backward<double>(op, dev, gx, g, xy, p0, p1);
  return run_backward<float>(op, dev, gx, g, xy, (float)p0, (float)p1);
}
