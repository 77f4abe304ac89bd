/* CUDA side of the gradient scaler's unscale (backend.h's amp_unscale, as
 * torch's _amp_foreach_non_finite_check_and_unscale_): every gradient is
 * multiplied in place by 1/scale and found_inf (one f32 on the device) is set
 * to 1 if an element was inf or NaN, in one multi-tensor launch per pack of
 * gradients (multi_tensor.cuh) instead of four ops per gradient.
 *
 * The product is mul_scalar_'s, bit for bit: in the compute type of the
 * gradient's dtype (float for f32/f16/bf16, with the scale rounded to float
 * once; double for f64), halves rounded to nearest even on store. The check
 * reads the value before the product, as torch. Decomposition: block b
 * handles chunk b of CTC_AMP_CHUNK elements (multi_tensor.cuh); a block that
 * met a non-finite value writes the flag (every writer writes 1: no race
 * matters). */
#include "backend/cuda/multi_tensor.cuh"

#define CTC_AMP_CHUNK 16384

template <class T, class C>
__device__ __forceinline__ bool unscale_run(T *g, int64_t start, int64_t end, C inv) {
  bool bad = false;
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    C v = ctc_in<C>(g[i]);
    bad |= !isfinite(v);
    g[i] = ctc_out<T>(v * inv);
  }
  return bad;
}

__global__ void amp_unscale_kernel(ctc_mt_pack<1> pk, float inv_f, double inv_d, float *found_inf) {
  int k = pk.tensor[blockIdx.x];
  int64_t start = (int64_t)pk.chunk[blockIdx.x] * CTC_AMP_CHUNK;
  int64_t end = start + CTC_AMP_CHUNK < pk.numel[k] ? start + CTC_AMP_CHUNK : pk.numel[k];
  void *g = pk.ptr[0][k];
  bool bad;
  switch (pk.dtype[k]) {
    case CT_F64:
      bad = unscale_run((double *)g, start, end, inv_d);
      break;
    case CT_F16:
      bad = unscale_run((__half *)g, start, end, inv_f);
      break;
    case CT_BF16:
      bad = unscale_run((__nv_bfloat16 *)g, start, end, inv_f);
      break;
    default:
      bad = unscale_run((float *)g, start, end, inv_f);
      break;
  }
  if (bad) *found_inf = 1.0f;
}

extern "C" ct_status ct__cuda_amp_unscale(ct_tensor *const *grads, int n, double inv_scale,
                                          ct_tensor *found_inf_t) {
  const char *op = "grad_scaler.unscale_";
  if (n <= 0) return CT_OK;
  const ctc_view found_inf(found_inf_t);
  int dev = found_inf->device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  auto get = [&](int i, void **ptrs, int64_t *numel, int *dtype) {
    ptrs[0] = ct__data(grads[i]);
    *numel = grads[i]->numel;
    *dtype = grads[i]->dtype;
  };
  auto launch = [&](const ctc_mt_pack<1> &pk, int blocks) -> ct_status {
    amp_unscale_kernel<<<(unsigned)blocks, CTC_THREADS, 0, s>>>(pk, (float)inv_scale, inv_scale,
                                                                (float *)found_inf->data);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  };
  return ctc_mt_apply<1>(n, CTC_AMP_CHUNK, get, launch);
}
