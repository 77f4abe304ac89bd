/* CUDA random fills: Philox 4x32-10 blocks transformed per core/philox.h,
 * bit-identical to the CPU (backend/cpu/random.c) for the same (seed,
 * offset). This file is compiled with -fmad=false (CMakeLists.txt) and the
 * header's arithmetic goes through the _rn intrinsics, so nothing is fused.
 * Decomposition: one thread per Philox block (4 elements, 2 for wide draws),
 * grid-stride; out is contiguous. */
#include "backend/cuda/common.cuh"
#include "core/philox.h"

/* An integer-valued result (INT, Bernoulli) into any dtype. */
__device__ __forceinline__ void store_int(char *out, int d, int64_t i, int64_t v) {
  ctc_store<int64_t>(out + i * (int64_t)ctc_elsize(d), d, v);
}
__device__ __forceinline__ void store_f32(char *out, int d, int64_t i, float v) {
  if (d == CT_F32) ((float *)out)[i] = v;
  else if (d == CT_F16) ((__half *)out)[i] = __float2half_rn(v);
  else ((__nv_bfloat16 *)out)[i] = __float2bfloat16_rn(v);
}

struct rng_args {
  ct_random_kind kind;
  int dtype, per, digits;
  bool wide, probs_f64;
  double a, b;
  float lo32, span32, mean32, std32;
  int64_t int_low;
  uint64_t int_range, seed, offset;
  int64_t n;
  char *out;
  const char *probs;
};

__global__ void random_kernel(rng_args c) {
  int64_t blocks = (c.n + c.per - 1) / c.per;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    uint32_t w[4];
    ct_philox_block(c.seed, c.offset, (uint64_t)b, w);
    int64_t i0 = b * c.per;
    int m = c.n - i0 < c.per ? (int)(c.n - i0) : c.per;
    switch (c.kind) {
      case CT_RANDOM_UNIFORM:
      case CT_RANDOM_NORMAL:
        if (c.dtype == CT_F64) {
          double v[2];
          if (c.kind == CT_RANDOM_UNIFORM)
            ct_rng_uniform_f64x2(w, c.a, c.b - c.a, v);
          else
            ct_rng_normal_f64x2(w, c.a, c.b, v);
          for (int j = 0; j < m; j++) ((double *)c.out)[i0 + j] = v[j];
        } else {
          float v[4];
          if (c.kind == CT_RANDOM_UNIFORM)
            ct_rng_uniform_f32x4(w, c.digits, c.lo32, c.span32, v);
          else
            ct_rng_normal_f32x4(w, c.mean32, c.std32, v);
          for (int j = 0; j < m; j++) store_f32(c.out, c.dtype, i0 + j, v[j]);
        }
        break;
      case CT_RANDOM_INT:
        for (int j = 0; j < m; j++) {
          int64_t v = c.wide ? ct_rng_int_wide(ct_philox_u64(w + 2 * j), c.int_low, c.int_range)
                             : ct_rng_int_narrow(w[j], c.int_low, c.int_range);
          store_int(c.out, c.dtype, i0 + j, v);
        }
        break;
      case CT_RANDOM_BERNOULLI:
        for (int j = 0; j < m; j++) store_int(c.out, c.dtype, i0 + j, ct_rng_bernoulli(w[j], c.a));
        break;
      case CT_RANDOM_BERNOULLI_TENSOR:
        for (int j = 0; j < m; j++) {
          int64_t i = i0 + j;
          double pr =
              c.probs_f64 ? ((const double *)c.probs)[i] : (double)((const float *)c.probs)[i];
          store_int(c.out, c.dtype, i, ct_rng_bernoulli(w[j], pr));
        }
        break;
    }
  }
}

extern "C" ct_status ct__cuda_random(ct_tensor *out_t, const ct_random_params *p,
                                     const ct_tensor *probs_t) {
  const ctc_view out(out_t), probs(probs_t);
  int dev = out->device;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("random", dev);
  if (st != CT_OK) return st;
  rng_args c;
  memset(&c, 0, sizeof c);
  c.kind = p->kind;
  c.dtype = out->dtype;
  c.per = p->wide ? 2 : 4;
  c.digits = out->dtype == CT_F16 ? 11 : out->dtype == CT_BF16 ? 8 : 24;
  c.wide = p->wide;
  c.a = p->a;
  c.b = p->b;
  c.lo32 = (float)p->a;
  c.span32 = (float)(p->b - p->a);
  c.mean32 = (float)p->a;
  c.std32 = (float)p->b;
  c.int_low = p->int_low;
  c.int_range = p->int_range;
  c.seed = p->seed;
  c.offset = p->offset;
  c.n = out->numel;
  c.out = out->data;
  if (p->kind == CT_RANDOM_BERNOULLI_TENSOR) {
    if (!probs) return ct__fail_status(CT_ERR_INTERNAL, "bernoulli: no probabilities");
    c.probs = probs->data;
    c.probs_f64 = probs->dtype == CT_F64;
  }
  cudaStream_t s = ctc_stream(dev);
  int64_t blocks = (c.n + c.per - 1) / c.per;
  random_kernel<<<ctc_blocks(blocks, dev), CTC_THREADS, 0, s>>>(c);
  CT_CUDA_LAUNCH_CHECK("random", dev, s);
  return CT_OK;
}
