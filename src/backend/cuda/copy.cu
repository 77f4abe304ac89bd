/* CUDA copies with dtype conversion (any pair of the 10 dtypes, any strides),
 * fills, and host transfers (cudaMemcpyAsync on the current stream).
 *
 * Conversions match the CPU's (backend/cpu/copy.c): integers wrap to the
 * destination width, floats go to integers through a saturating int64 (nan
 * to 0), bool takes "nonzero", f64 -> f16/bf16 rounds through f32, integers
 * -> halves through f32. Decomposition: the elementwise grid-stride kernel of
 * common.cuh; same-dtype contiguous copies are one cudaMemcpyAsync; common
 * casts and fills of contiguous tensors move 16-byte vectors. */
#include "backend/cuda/common.cuh"
#include "core/convert.h"

__device__ __forceinline__ void ctc_store_val(char *p, int dt, ctc_val v) {
  switch (dt) {
  case CT_F32: *(float *)p = v.is_int ? (float)v.i : (float)v.d; break;
  case CT_F64: *(double *)p = v.is_int ? (double)v.i : v.d; break;
  case CT_F16: *(__half *)p = __float2half_rn(v.is_int ? (float)v.i : (float)v.d); break;
  case CT_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn(v.is_int ? (float)v.i : (float)v.d); break;
  case CT_BOOL: *(uint8_t *)p = v.is_int ? v.i != 0 : v.d != 0; break;
  default: {
    int64_t i = v.is_int ? v.i : ct_f64_to_i64(v.d);
    ctc_store<int64_t>(p, dt, i);
  }
  }
}

struct copy_same_fn {
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    ct_move_elem(ctc_ew_ptr(g, 0, off[0]), ctc_ew_ptr(g, 1, off[1]), g.es[0]);
  }
};

struct copy_conv_fn {
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    ctc_store_val(ctc_ew_ptr(g, 0, off[0]), g.dt[0], ctc_load_val(ctc_ew_ptr(g, 1, off[1]), g.dt[1]));
  }
};

/* ---- Casts on the vector path (common.cuh) ----------------------------------------- *
 * f32 <-> f16, bf16, f64 (mixed precision's casts) and u8, bool, i32, i64 ->
 * f32 (images, masks, labels), through compute type C = double when either
 * side is f64 (exact), else float: the same results as ctc_load_val and
 * ctc_store_val. Other pairs take the generic kernel. */

struct cast_fn {
  template <class C> __device__ C operator()(C x) const { return x; }
};

/* One vector per thread per step when the output is wider than the input (a
 * u8 -> f32 vector writes 64 bytes): registers for occupancy. */
template <class S, class O> static bool vec_cast(int dev, const ctc_ew &g, ct_status *st) {
  constexpr bool wide = std::is_same<S, double>::value || std::is_same<O, double>::value;
  using C = typename std::conditional<wide, double, float>::type;
  constexpr int U = sizeof(O) > sizeof(S) ? 1 : CTC_VEC_UNROLL;
  return ctc_vec_launch<S, O, C, 1, U>("copy", dev, g, cast_fn(), st);
}

static bool vec_cast_any(int dev, const ctc_ew &g, ct_status *st) {
  if (g.dt[0] == CT_F32) {
    switch (g.dt[1]) {
    case CT_F16: return vec_cast<__half, float>(dev, g, st);
    case CT_BF16: return vec_cast<__nv_bfloat16, float>(dev, g, st);
    case CT_F64: return vec_cast<double, float>(dev, g, st);
    case CT_U8: return vec_cast<uint8_t, float>(dev, g, st);
    case CT_BOOL: return vec_cast<ctc_bool8, float>(dev, g, st);
    case CT_I32: return vec_cast<int32_t, float>(dev, g, st);
    case CT_I64: return vec_cast<int64_t, float>(dev, g, st);
    default: return false;
    }
  }
  if (g.dt[1] != CT_F32) return false;
  switch (g.dt[0]) {
  case CT_F16: return vec_cast<float, __half>(dev, g, st);
  case CT_BF16: return vec_cast<float, __nv_bfloat16>(dev, g, st);
  case CT_F64: return vec_cast<float, double>(dev, g, st);
  default: return false;
  }
}

extern "C" ct_status ct__cuda_copy(ct_tensor *dst_t, const ct_tensor *src_t) {
  if (ct__is_cpu(dst_t) || ct__is_cpu(src_t))
    return ct__fail_status(CT_ERR_INTERNAL, "copy: the CUDA copy kernel got a CPU tensor");
  const ctc_view dst(dst_t), src(src_t);
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
  if (vec_cast_any(dev, g, &st)) return st;
  return ctc_ew_launch<2>("copy", dev, g, copy_conv_fn());
}

/* Blocking copies synchronize the stream before returning (as torch's
 * non_blocking=False); non-blocking ones (pinned host memory only, decided by
 * the caller) return at once, and may still be reading or writing the pinned
 * memory: the pinned cache must not hand that memory out again before the
 * stream is past the copy (ct__cuda_pinned_in_use). */
extern "C" ct_status ct__cuda_copy_from_host(ct_tensor *dst_t, const void *src, size_t nbytes,
                                             bool non_blocking) {
  const ctc_view dst(dst_t);
  int dev = dst->device;
  if (nbytes == 0) return CT_OK;
  ct_status st = ctc_use_device("copy_from_host", dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  CT_CUDA_CHECK("copy_from_host", dev, cudaMemcpyAsync(dst->data, src, nbytes, cudaMemcpyHostToDevice, s));
  if (!non_blocking) CT_CUDA_CHECK("copy_from_host", dev, cudaStreamSynchronize(s));
  else
    ct__cuda_pinned_in_use(dev, src);
  return CT_OK;
}

extern "C" ct_status ct__cuda_copy_to_host(void *dst, const ct_tensor *src_t, size_t nbytes,
                                           bool non_blocking) {
  const ctc_view src(src_t);
  int dev = src->device;
  if (nbytes == 0) return CT_OK;
  ct_status st = ctc_use_device("copy_to_host", dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  CT_CUDA_CHECK("copy_to_host", dev, cudaMemcpyAsync(dst, src->data, nbytes, cudaMemcpyDeviceToHost, s));
  if (non_blocking) {
    ct__cuda_pinned_in_use(dev, dst);
    return CT_OK;
  }
  CT_CUDA_CHECK("copy_to_host", dev, cudaStreamSynchronize(s));
  return ctc_fault_check(dev); /* values read on the host: report a kernel's fault now */
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

/* Host: value as dtype's bytes (as ct__store_from_double: floats to integers
 * through core/convert.h, then wrapped to the width). */
static uint64_t fill_bits(int dt, double v) {
  uint64_t b = 0;
  switch (dt) {
  case CT_F32: { float f = (float)v; memcpy(&b, &f, 4); break; }
  case CT_F64: memcpy(&b, &v, 8); break;
  case CT_F16: { __half h = __float2half_rn((float)v); memcpy(&b, &h, 2); break; }
  case CT_BF16: { __nv_bfloat16 h = __float2bfloat16_rn((float)v); memcpy(&b, &h, 2); break; }
  case CT_BOOL:
    b = v != 0;
    break;
  default: { /* integers: the bytes of the wrapped int64, little-endian */
    uint64_t i = (uint64_t)ct_f64_to_i64(v);
    b = ctc_elsize(dt) == 8 ? i : i & ((1ull << (8 * ctc_elsize(dt))) - 1);
  }
  }
  return b;
}

/* Contiguous fill, dst 16-byte aligned: 16-byte words of the repeated value
 * (grid-stride), then the nbytes % 16 tail bytes, one per thread. */
__global__ void __launch_bounds__(CTC_THREADS)
    fill_vec_kernel(char *dst, int64_t nbytes, uint4 word) {
  const int64_t nw = nbytes / 16, stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nw; i += stride) reinterpret_cast<uint4 *>(dst)[i] = word;
  const int64_t t = nw * 16 + tid;
  if (t < nbytes) {
    int b = (int)(t & 15); /* byte b of the word (little-endian) */
    uint32_t w = b < 4 ? word.x : b < 8 ? word.y : b < 12 ? word.z : word.w;
    dst[t] = (char)(uint8_t)(w >> (8 * (b & 3)));
  }
}

/* The element's bytes (es of them) repeated over 16 bytes. */
static uint4 fill_word(uint64_t bits, int es) {
  uint8_t b[16];
  for (int i = 0; i < 16; i++) b[i] = (uint8_t)(bits >> (8 * (i % es)));
  uint4 w;
  memcpy(&w, b, sizeof w);
  return w;
}

extern "C" ct_status ct__cuda_fill(ct_tensor *dst_t, double value) {
  const ctc_view dst(dst_t);
  int dev = dst->device;
  if (dst->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("fill", dev);
  if (st != CT_OK) return st;
  const ctc_t *ts[1] = {dst};
  ctc_ew g;
  ctc_ew_init(&g, 1, ts);
  fill_fn f;
  f.bits = fill_bits(dst->dtype, value);
  cudaStream_t s = ctc_stream(dev);
  int64_t nbytes = dst->numel * g.es[0];
  if (f.bits == 0 && g.contig) {
    CT_CUDA_CHECK("fill", dev, cudaMemsetAsync(dst->data, 0, (size_t)nbytes, s));
    return CT_OK;
  }
  if (g.contig && (uintptr_t)dst->data % 16 == 0) {
    fill_vec_kernel<<<ctc_blocks(nbytes / 16 > 0 ? nbytes / 16 : 1, dev), CTC_THREADS, 0, s>>>(
        dst->data, nbytes, fill_word(f.bits, g.es[0]));
    CT_CUDA_LAUNCH_CHECK("fill", dev, s);
    return CT_OK;
  }
  return ctc_ew_launch<1>("fill", dev, g, f);
}
