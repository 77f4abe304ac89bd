/* CUDA copies with dtype conversion (any pair of the 10 dtypes, any strides),
 * fills, and host transfers (cudaMemcpyAsync on the current stream).
 *
 * Conversions match the CPU's (backend/cpu/copy.c): integers wrap to the
 * destination width, floats go to integers through a saturating int64 (nan
 * to 0), bool takes "nonzero", f64 -> f16/bf16 rounds through f32, integers
 * -> halves through f32. Decomposition: the elementwise grid-stride kernel of
 * common.cuh; same-dtype contiguous copies are one cudaMemcpyAsync. */
#include "backend/cuda/common.cuh"

__device__ __forceinline__ int64_t ctc_f2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

__device__ __forceinline__ void ctc_store_val(char *p, int dt, ctc_val v) {
  switch (dt) {
  case CT_F32: *(float *)p = v.is_int ? (float)v.i : (float)v.d; break;
  case CT_F64: *(double *)p = v.is_int ? (double)v.i : v.d; break;
  case CT_F16: *(__half *)p = __float2half_rn(v.is_int ? (float)v.i : (float)v.d); break;
  case CT_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn(v.is_int ? (float)v.i : (float)v.d); break;
  case CT_BOOL: *(uint8_t *)p = v.is_int ? v.i != 0 : v.d != 0; break;
  default: {
    int64_t i = v.is_int ? v.i : ctc_f2i(v.d);
    ctc_store<int64_t>(p, dt, i);
  }
  }
}

struct copy_same_fn {
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    ctc_move(ctc_ew_ptr(g, 0, off[0]), ctc_ew_ptr(g, 1, off[1]), g.es[0]);
  }
};

struct copy_conv_fn {
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    ctc_store_val(ctc_ew_ptr(g, 0, off[0]), g.dt[0], ctc_load_val(ctc_ew_ptr(g, 1, off[1]), g.dt[1]));
  }
};

extern "C" ct_status ct__cuda_copy(const ctc_t *dst, const ctc_t *src) {
  int dev = dst->device;
  if (dst->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("copy", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[2] = {dst, src};
  ctc_ew g;
  ctc_ew_init(&g, 2, ts);
  if (dst->dtype == src->dtype && g.contig && !g.scalar[1]) {
    if (dst->data == src->data) return CT_OK;
    CT_CUDA_CHECK("copy", dev, cudaMemcpyAsync(dst->data, src->data, (size_t)dst->numel * g.es[0],
                                               cudaMemcpyDeviceToDevice, ctc_stream(dev)));
    return CT_OK;
  }
  if (dst->dtype == src->dtype) return ctc_ew_launch<2>("copy", dev, g, copy_same_fn());
  return ctc_ew_launch<2>("copy", dev, g, copy_conv_fn());
}

/* Blocking copies synchronize the stream before returning (as torch's
 * non_blocking=False); non-blocking ones (pinned host memory only, decided by
 * the caller) return at once. */
extern "C" ct_status ct__cuda_copy_from_host(const ctc_t *dst, const void *src, size_t nbytes,
                                            bool non_blocking) {
  int dev = dst->device;
  if (nbytes == 0) return CT_OK;
  ct_status st = ctc_use_device("copy_from_host", dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  CT_CUDA_CHECK("copy_from_host", dev, cudaMemcpyAsync(dst->data, src, nbytes, cudaMemcpyHostToDevice, s));
  if (!non_blocking) CT_CUDA_CHECK("copy_from_host", dev, cudaStreamSynchronize(s));
  return CT_OK;
}

extern "C" ct_status ct__cuda_copy_to_host(void *dst, const ctc_t *src, size_t nbytes, bool non_blocking) {
  int dev = src->device;
  if (nbytes == 0) return CT_OK;
  ct_status st = ctc_use_device("copy_to_host", dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  CT_CUDA_CHECK("copy_to_host", dev, cudaMemcpyAsync(dst, src->data, nbytes, cudaMemcpyDeviceToHost, s));
  if (!non_blocking) CT_CUDA_CHECK("copy_to_host", dev, cudaStreamSynchronize(s));
  return CT_OK;
}

/* ---- Fill: the value's bytes in dst's dtype, moved by size ------------------------ */

struct fill_fn {
  uint64_t bits;
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    char *p = ctc_ew_ptr(g, 0, off[0]);
    switch (g.es[0]) {
    case 1: *(uint8_t *)p = (uint8_t)bits; break;
    case 2: *(uint16_t *)p = (uint16_t)bits; break;
    case 4: *(uint32_t *)p = (uint32_t)bits; break;
    default: *(uint64_t *)p = bits; break;
    }
  }
};

/* Host: value as dtype's bytes (as ct__store_from_double: to int64 saturating,
 * nan gives 0, then wrapped to the width). */
static uint64_t fill_bits(int dt, double v) {
  uint64_t b = 0;
  int64_t i;
  if (v != v) i = 0;
  else if (v >= 9.2233720368547758e18) i = INT64_MAX;
  else if (v <= -9.2233720368547758e18) i = INT64_MIN;
  else i = (int64_t)v;
  switch (dt) {
  case CT_F32: { float f = (float)v; memcpy(&b, &f, 4); break; }
  case CT_F64: memcpy(&b, &v, 8); break;
  case CT_F16: { __half h = __float2half_rn((float)v); memcpy(&b, &h, 2); break; }
  case CT_BF16: { __nv_bfloat16 h = __float2bfloat16_rn((float)v); memcpy(&b, &h, 2); break; }
  case CT_I8: case CT_U8: b = (uint8_t)(uint64_t)i; break; /* wraps, as the CPU */
  case CT_I16: b = (uint16_t)(uint64_t)i; break;
  case CT_I32: b = (uint32_t)(uint64_t)i; break;
  case CT_I64: b = (uint64_t)i; break;
  default: b = v != 0; break;
  }
  return b;
}

extern "C" ct_status ct__cuda_fill(const ctc_t *dst, double value) {
  int dev = dst->device;
  if (dst->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("fill", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[1] = {dst};
  ctc_ew g;
  ctc_ew_init(&g, 1, ts);
  fill_fn f;
  f.bits = fill_bits(dst->dtype, value);
  if (f.bits == 0 && g.contig) {
    CT_CUDA_CHECK("fill", dev, cudaMemsetAsync(dst->data, 0, (size_t)dst->numel * g.es[0], ctc_stream(dev)));
    return CT_OK;
  }
  return ctc_ew_launch<1>("fill", dev, g, f);
}
