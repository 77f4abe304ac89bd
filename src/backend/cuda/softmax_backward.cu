/* Gradient of softmax / log_softmax along one dim on CUDA:
 *   softmax:     grad_x = y * (g - sum_d(g * y))
 *   log_softmax: grad_x = g - exp(y) * sum_d(g)
 * One block per line (as softmax.cu), any strides; f16/bf16 in f32, sums in
 * f32 (f64 for f64). */
#include "backend/cuda/common.cuh"

struct fadd2 {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};

template <class C>
__global__ void softmax_bw_kernel(ctc_ew lines, int64_t n, int64_t s0, int64_t s1, int64_t s2, bool log_) {
  __shared__ C sh[32];
  int es = lines.es[0], dt = lines.dt[0];
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t off[3];
    ctc_ew_offsets<3>(lines, line, off); /* 0 grad_x, 1 grad_out, 2 y */
    char *gx = lines.data[0] + off[0] * es;
    const char *g = lines.data[1] + off[1] * es, *y = lines.data[2] + off[2] * es;
    C acc = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      C gv = ctc_load<C>(g + r * s1 * es, dt);
      acc += log_ ? gv : gv * ctc_load<C>(y + r * s2 * es, dt);
    }
    acc = ctc_block_bcast(ctc_block_reduce(acc, fadd2(), (C)0, sh), sh);
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      C gv = ctc_load<C>(g + r * s1 * es, dt), yv = ctc_load<C>(y + r * s2 * es, dt);
      ctc_store<C>(gx + r * s0 * es, dt, log_ ? gv - exp(yv) * acc : yv * (gv - acc));
    }
    __syncthreads();
  }
}

extern "C" ct_status ct__cuda_softmax_backward(const ctc_t *gx, const ctc_t *g, const ctc_t *y, int dim,
                                              bool log) {
  int dev = gx->device;
  const char *name = "softmax backward";
  if (!ctc_is_float(gx->dtype))
    return ct__fail_status(CT_ERR_DTYPE, "softmax backward: needs a floating dtype, got %s",
                           ct_dtype_name((ct_dtype)gx->dtype));
  if (gx->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  ctc_t l0 = ctc_line_desc(gx, dim), l1 = ctc_line_desc(g, dim), l2 = ctc_line_desc(y, dim);
  const ctc_t *ts[3] = {&l0, &l1, &l2};
  ctc_ew geo;
  ctc_ew_init(&geo, 3, ts);
  geo.contig = false;
  bool nd = gx->ndim > 0;
  int64_t n = nd ? gx->shape[dim] : 1;
  int64_t s0 = nd ? gx->strides[dim] : 0, s1 = nd ? g->strides[dim] : 0, s2 = nd ? y->strides[dim] : 0;
  cudaStream_t s = ctc_stream(dev);
  int threads = n <= 1024 ? 32 : 256;
  int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
  unsigned blocks = (unsigned)(geo.numel < cap ? geo.numel : cap);
  if (gx->dtype == CT_F64) softmax_bw_kernel<double><<<blocks, threads, 0, s>>>(geo, n, s0, s1, s2, log);
  else softmax_bw_kernel<float><<<blocks, threads, 0, s>>>(geo, n, s0, s1, s2, log);
  CT_CUDA_LAUNCH_CHECK(name, dev, s);
  return CT_OK;
}
