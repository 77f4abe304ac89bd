/* CUDA upsampling (torch's interpolate: nearest, nearest-exact, linear,
 * bilinear), forward and backward, with the CPU's positions and weights
 * (core/interp_math.h). Forward: a thread per output element. Backward: a
 * thread per input element, gathering from the outputs that read it (found
 * by ct_interp_first_out): no atomics, every gradient element written once
 * and summed in a fixed order, so the result is deterministic (torch's CUDA
 * backward adds with atomics). Compute in f32 for f32/f16/bf16, f64 for f64. */
#include <math.h>

#include "backend/cuda/common.cuh"

/* The compute type's instance of the shared formulas (the C names keep
 * their suffix). */
__device__ __forceinline__ float interp_linear(const ct_interp_axis *a, int64_t o, int64_t *i0,
                                               int64_t *i1, float) {
  return ct_interp_linear_f32(a, o, i0, i1);
}
__device__ __forceinline__ double interp_linear(const ct_interp_axis *a, int64_t o, int64_t *i0,
                                                int64_t *i1, double) {
  return ct_interp_linear_f64(a, o, i0, i1);
}
__device__ __forceinline__ float interp_weight(const ct_interp_axis *a, int64_t o, int64_t j,
                                               float) {
  return ct_interp_weight_f32(a, o, j);
}
__device__ __forceinline__ double interp_weight(const ct_interp_axis *a, int64_t o, int64_t j,
                                                double) {
  return ct_interp_weight_f64(a, o, j);
}
__device__ __forceinline__ int64_t interp_first_out(const ct_interp_axis *a, int64_t j, float) {
  return ct_interp_first_out_f32(a, j);
}
__device__ __forceinline__ int64_t interp_first_out(const ct_interp_axis *a, int64_t j, double) {
  return ct_interp_first_out_f64(a, j);
}

/* x (planes, H, W) -> out (planes, OH, OW), both contiguous of dtype dt. */
template <class C>
__global__ void upsample_fwd_kernel(ct_interp_params p, int64_t planes, int dt, const char *x,
                                    char *out) {
  int64_t H = p.h.n_in, W = p.w.n_in, OH = p.h.n_out, OW = p.w.n_out;
  int64_t total = planes * OH * OW, stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(dt);
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t ow = e % OW, oh = e / OW % OH, pl = e / (OW * OH);
    const char *xp = x + pl * H * W * es;
    C v;
    if (p.w.kind != CT_INTERP_KIND_LINEAR) {
      v = ctc_load<C>(xp + (ct_interp_nearest(&p.h, oh) * W + ct_interp_nearest(&p.w, ow)) * es,
                      dt);
    } else {
      int64_t h0, h1, w0, w1;
      C lh = interp_linear(&p.h, oh, &h0, &h1, C()), lw = interp_linear(&p.w, ow, &w0, &w1, C());
      C kh = (C)1 - lh, kw = (C)1 - lw;
      C x00 = ctc_load<C>(xp + (h0 * W + w0) * es, dt),
        x01 = ctc_load<C>(xp + (h0 * W + w1) * es, dt);
      C x10 = ctc_load<C>(xp + (h1 * W + w0) * es, dt),
        x11 = ctc_load<C>(xp + (h1 * W + w1) * es, dt);
      v = kh * (kw * x00 + lw * x01) + lh * (kw * x10 + lw * x11);
    }
    ctc_store<C>(out + e * es, dt, v);
  }
}

/* grad_x (planes, H, W) from grad_out (planes, OH, OW): input (h, w) sums
 * the outputs whose rows read h and whose columns read w, in output order. */
template <class C>
__global__ void upsample_bwd_kernel(ct_interp_params p, int64_t planes, int dt, char *gx,
                                    const char *go) {
  int64_t H = p.h.n_in, W = p.w.n_in, OH = p.h.n_out, OW = p.w.n_out;
  int64_t total = planes * H * W, stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(dt);
  int64_t back = p.w.kind == CT_INTERP_KIND_LINEAR ? 1 : 0; /* linear outputs read j - 1 and j */
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t w = e % W, h = e / W % H, pl = e / (W * H);
    int64_t oh0 = interp_first_out(&p.h, h - back, C()), oh1 = interp_first_out(&p.h, h + 1, C());
    int64_t ow0 = interp_first_out(&p.w, w - back, C()), ow1 = interp_first_out(&p.w, w + 1, C());
    const char *gp = go + pl * OH * OW * es;
    C s = 0;
    for (int64_t oh = oh0; oh < oh1; oh++) {
      C wh = interp_weight(&p.h, oh, h, C());
      if (wh == 0) continue;
      for (int64_t ow = ow0; ow < ow1; ow++) {
        C ww = interp_weight(&p.w, ow, w, C());
        if (ww != 0) s += wh * ww * ctc_load<C>(gp + (oh * OW + ow) * es, dt);
      }
    }
    ctc_store<C>(gx + e * es, dt, s);
  }
}

static ct_status check_dtype(const char *op, int dt) {
  if (!ctc_is_float(dt))
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op,
                           ct_dtype_name((ct_dtype)dt));
  return CT_OK;
}

/* Forward (dst out, src x) or backward (dst grad_x, src grad_out): a thread
 * per element of dst. */
static ct_status launch(bool backward, const ctc_t *dst, const ctc_t *src,
                        const ct_interp_params *p) {
  const char *op = backward ? "interpolate_backward" : "interpolate";
  int dev = dst->device, dt = dst->dtype;
  ct_status st = check_dtype(op, dt);
  if (st != CT_OK || dst->numel == 0) return st;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  int64_t planes = dst->shape[0] * dst->shape[1];
  unsigned blocks = ctc_blocks(dst->numel, dev);
  if (backward && dt == CT_F64)
    upsample_bwd_kernel<double>
        <<<blocks, CTC_THREADS, 0, s>>>(*p, planes, dt, dst->data, src->data);
  else if (backward)
    upsample_bwd_kernel<float><<<blocks, CTC_THREADS, 0, s>>>(*p, planes, dt, dst->data, src->data);
  else if (dt == CT_F64)
    upsample_fwd_kernel<double>
        <<<blocks, CTC_THREADS, 0, s>>>(*p, planes, dt, src->data, dst->data);
  else
    upsample_fwd_kernel<float><<<blocks, CTC_THREADS, 0, s>>>(*p, planes, dt, src->data, dst->data);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_upsample2d(ct_tensor *out_t, const ct_tensor *x_t,
                                         const ct_interp_params *p) {
  const ctc_view out(out_t), x(x_t);
  return launch(false, out, x, p);
}

extern "C" ct_status ct__cuda_upsample2d_backward(ct_tensor *gx_t, const ct_tensor *g_t,
                                                  const ct_interp_params *p) {
  const ctc_view gx(gx_t), g(g_t);
  return launch(true, gx, g, p);
}
