/* CUDA softmax / log_softmax along one dim (the backend's `softmax` slot),
 * fused: m = max along the line (nan propagates), s = sum exp(x - m), then
 * softmax = exp(x - m) / s or log_softmax = (x - m) - log s. A line holding
 * +inf or only -inf gives nan, as torch. f32/f16/bf16 compute in f32, f64 in
 * f64; any strides (out may be x).
 *
 * Decomposition: one block per line (32 threads = one warp for lines up to
 * 1024 elements, else 256), lines grid-strided; three strided sweeps over the
 * line (max, exp-sum, write) with block reductions in between. Lines along a
 * non-last dim read with a stride (uncoalesced); fine for the sizes softmax
 * meets in practice. */
#include "backend/cuda/common.cuh"

struct fmax_nan {
  template <class T> __device__ T operator()(T a, T b) const { return (b > a || b != b) && a == a ? b : a; }
};
struct sum_op {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};

template <class C>
__global__ void softmax_kernel(ctc_ew lines, int64_t n, int64_t xstep, int64_t ostep, bool log_) {
  __shared__ C sh[32];
  int xes = lines.es[1], oes = lines.es[0];
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t off[2];
    ctc_ew_offsets<2>(lines, line, off);
    const char *x = lines.data[1] + off[1] * xes;
    char *o = lines.data[0] + off[0] * oes;
    C m = -INFINITY;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) m = fmax_nan()(m, ctc_load<C>(x + r * xstep * xes, lines.dt[1]));
    m = ctc_block_bcast(ctc_block_reduce(m, fmax_nan(), (C)-INFINITY, sh), sh);
    C s = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) s += exp(ctc_load<C>(x + r * xstep * xes, lines.dt[1]) - m);
    s = ctc_block_bcast(ctc_block_reduce(s, sum_op(), (C)0, sh), sh);
    C ls = log(s);
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      C d = ctc_load<C>(x + r * xstep * xes, lines.dt[1]) - m;
      ctc_store<C>(o + r * ostep * oes, lines.dt[0], log_ ? d - ls : exp(d) / s);
    }
    __syncthreads(); /* sh is reused by the next line */
  }
}

extern "C" ct_status ct__cuda_softmax(const ctc_t *out, const ctc_t *x, int dim, bool log) {
  int dev = out->device;
  const char *name = log ? "log_softmax" : "softmax";
  if (x->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  ctc_t lo = ctc_line_desc(out, dim), lx = ctc_line_desc(x, dim);
  const ctc_t *ts[2] = {&lo, &lx};
  ctc_ew g;
  ctc_ew_init(&g, 2, ts);
  g.contig = false;
  int64_t n = x->ndim ? x->shape[dim] : 1;
  int64_t xstep = x->ndim ? x->strides[dim] : 0, ostep = out->ndim ? out->strides[dim] : 0;
  cudaStream_t s = ctc_stream(dev);
  int threads = n <= 1024 ? 32 : 256;
  int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
  unsigned blocks = (unsigned)(g.numel < cap ? g.numel : cap);
  if (x->dtype == CT_F64) softmax_kernel<double><<<blocks, threads, 0, s>>>(g, n, xstep, ostep, log);
  else softmax_kernel<float><<<blocks, threads, 0, s>>>(g, n, xstep, ostep, log);
  CT_CUDA_LAUNCH_CHECK(name, dev, s);
  return CT_OK;
}
