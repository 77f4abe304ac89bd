/* Fused gradients of the elementwise unary ops on CUDA:
 *   grad_x[i] = grad_out[i] * d op / dx at x[i] (or at the output y[i])
 * The derivatives are core/unary_math.h's, the CPU's; each reads one of x
 * and y (the op table's READS column, ops/op_table.h), so one elementwise pass streams three
 * tensors (grad_x, grad_out, x or y) of one floating dtype; f16/bf16 in f32. Decomposition: the
 * 16-byte vector kernel for contiguous operands, else ctc_ew_kernel (common.cuh). */
#include "backend/cuda/common.cuh"
#include "core/unary_math.h"

/* g * d op/dx at v (x or y, as uses_x says). */
template <class T>
__device__ __forceinline__ T deriv(int op, T g, T v, T p0, T p1) {
  switch (op) {
#define X(E, name) \
  case CT_UOP_##E: \
    return ct_ud_##name(g, v, p0, p1);
    CT_UNARY_GRADS(X)
#undef X
    default:
      return T(0);
  }
}

/* Whether op's derivative reads x (else the output y). */
static bool uses_x(int op) {
  switch (op) {
#define X(E, name) \
  case CT_UOP_##E: \
    return (int)CT_UREADS_##E != (int)CT_READS_OUT;
    CT_UNARY_GRADS(X)
#undef X
    default:
      return true;
  }
}

/* Value functors (common.cuh) of (grad_out, v), v being x or y. relu's op
 * is a compile-time constant: no switch. */
template <class C>
struct ubw_dyn {
  int op;
  C p0, p1;
  __device__ C operator()(C g, C v) const { return deriv<C>(op, g, v, p0, p1); }
};
struct ubw_relu {
  template <class C>
  __device__ C operator()(C g, C x) const {
    return deriv<C>(CT_UOP_RELU, g, x, C(0), C(0));
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
  return ctc_map<C, 2, false, 1>(name, dev, geo, ubw_dyn<C>{op, p0, p1});
}

extern "C" ct_status ct__cuda_unary_backward(ct_unary_op op, ct_tensor *gx_t, const ct_tensor *g_t,
                                             const ct_tensor *x_t, const ct_tensor *y_t, double p0,
                                             double p1) {
  const ctc_view gx(gx_t), g(g_t), x(x_t), y(y_t);
  int dev = gx->device;
  if (!ctc_is_float(gx->dtype))
    return ct__fail_status(CT_ERR_DTYPE,
                           "unary backward (%s): gradients need a floating dtype, got %s",
                           ct__unary_info[op].name, ct_dtype_name((ct_dtype)gx->dtype));
  if (gx->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("unary backward", dev);
  if (st != CT_OK) return st;
  const ctc_t *xy = uses_x(op) ? x : y;
  if (gx->dtype == CT_F64) return run_backward<double>(op, dev, gx, g, xy, p0, p1);
  return run_backward<float>(op, dev, gx, g, xy, (float)p0, (float)p1);
}
