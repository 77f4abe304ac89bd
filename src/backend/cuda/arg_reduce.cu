/* CUDA argmax/argmin along one dim (the backend's `arg_reduce` slot): values
 * and i64 indices of the first maximum/minimum; nan counts as the extreme
 * (the first nan wins), as the CPU (backend/cpu/arg_reduce.c).
 *
 * Decomposition: one block per line along dim (32 threads for lines up to
 * 4096 elements, else 256), lines grid-strided; each thread scans a strided
 * subset keeping (best, index), then a block reduction with a merge that is
 * order-independent (ties and nans go to the smaller index), so the result is
 * the sequential one. Floating values compare as double, integers as int64. */
#include "backend/cuda/common.cuh"
#include "core/reduce_plan.h"

template <class A> struct arg_pair {
  A v;
  int64_t i; /* -1: nothing seen */
};

/* Whether (v, i) is preferred over (b, j): core/reduce_plan.h's rule (ties
 * and nans to the smaller index, so any merge order gives the sequential
 * result). */
template <class A>
__device__ __forceinline__ bool arg_better(bool is_max, A v, int64_t i, A b, int64_t j) {
  if constexpr (std::is_integral<A>::value)
    return ct_arg_better_i(is_max, v, i, b, j);
  else
    return ct_arg_better_f(is_max, v, i, b, j);
}

template <class A>
__global__ void arg_kernel(ctc_ew lines, int64_t n, int64_t step, bool is_max, int xdt, int vdt,
                           bool want_v, bool want_i) {
  __shared__ A sv[32];
  __shared__ int64_t si[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  int xes = (int)ctc_elsize(xdt);
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t off[3];
    ctc_ew_offsets<3>(lines, line, off); /* 0 x, 1 values, 2 indices */
    const char *x = lines.data[0] + off[0] * xes;
    A best = 0;
    int64_t bi = -1;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      A v = ctc_load<A>(x + r * step * xes, xdt);
      if (arg_better(is_max, v, r, best, bi)) best = v, bi = r;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      A ov = __shfl_down_sync(0xffffffffu, best, o);
      int64_t oi = __shfl_down_sync(0xffffffffu, bi, o);
      if (arg_better(is_max, ov, oi, best, bi)) best = ov, bi = oi;
    }
    __syncthreads();
    if (lane == 0) sv[w] = best, si[w] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int k = 1; k < nw; k++)
        if (arg_better(is_max, sv[k], si[k], best, bi)) best = sv[k], bi = si[k];
      if (want_v) ctc_store<A>(lines.data[1] + off[1] * lines.es[1], vdt, best);
      if (want_i) *(int64_t *)(lines.data[2] + off[2] * 8) = bi;
    }
  }
}

extern "C" ct_status ct__cuda_arg_reduce(bool is_max, ct_tensor *values_t, ct_tensor *indices_t,
                                         const ct_tensor *x_t, int dim) {
  const ctc_view values(values_t), indices(indices_t), x(x_t);
  int dev = x->device;
  const char *name = is_max ? "argmax" : "argmin";
  const ctc_t *ref = values ? values : indices;
  if (!ref) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  /* geometry over the lines: x, values, indices with dim removed */
  ctc_t lx = ctc_line_desc(x, dim), lv = ctc_line_desc(values ? values : ref, dim),
        li = ctc_line_desc(indices ? indices : ref, dim);
  if (!indices) li.dtype = CT_I64;
  const ctc_t *ts[3] = {&lx, &lv, &li};
  ctc_ew g;
  ctc_ew_init(&g, 3, ts);
  g.contig = false; /* offsets through the dims: the operands have different layouts */
  if (g.ndim == 0) { g.ndim = 1; g.shape[0] = 1; ctc_ew_set_dividers(&g); }
  if (g.numel == 0) return CT_OK;
  int64_t n = x->ndim ? x->shape[dim] : 1, step = x->ndim ? x->strides[dim] : 0;
  cudaStream_t s = ctc_stream(dev);
  int threads = n <= 4096 ? 32 : 256;
  unsigned blocks = (unsigned)(g.numel < (int64_t)ctc_sm_count(dev) * 32 ? g.numel : (int64_t)ctc_sm_count(dev) * 32);
  if (ctc_is_float(x->dtype))
    arg_kernel<double><<<blocks, threads, 0, s>>>(g, n, step, is_max, x->dtype, values ? values->dtype : 0,
                                                  values != NULL, indices != NULL);
  else
    arg_kernel<int64_t><<<blocks, threads, 0, s>>>(g, n, step, is_max, x->dtype, values ? values->dtype : 0,
                                                   values != NULL, indices != NULL);
  CT_CUDA_LAUNCH_CHECK(name, dev, s);
  return CT_OK;
}
