/* Gradient of softmax / log_softmax along one dim on CUDA:
 *   softmax:     grad_x = y * (g - sum_d(g * y))
 *   log_softmax: grad_x = g - exp(y) * sum_d(g)
 * Two sweeps over each line (the sum, then the write), lines grid-strided;
 * f16/bf16 in f32, sums in f32 (f64 for f64). As softmax.cu: lines
 * contiguous in all three tensors take typed 16-byte loads and stores
 * (reduce_vec.cuh), a warp per line up to SMB_WARP_MAX elements, else a
 * block per line whose warps take contiguous eighths; other lines one block
 * per line with strided element access through the run-time dtype. */
#include "backend/cuda/reduce_vec.cuh"

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

/* ---- Contiguous lines ------------------------------------------------------------------ */

#define SMB_THREADS 256
#define SMB_WARP_MAX 2048                    /* longest line a warp handles alone */
#define SMB_BPS(DT) ((DT) == CT_F64 ? 2 : 4) /* as softmax.cu */

/* Lines with the dim contiguous in grad_x, grad_out and y; dtype DT.
 * warp_lines: a warp per line, else the block. */
template <int DT>
__global__ void __launch_bounds__(SMB_THREADS, SMB_BPS(DT))
    softmax_bw_vec_kernel(ctc_ew lines, int64_t n, bool log_, bool warp_lines) {
  typedef rv_dt<DT> D;
  typedef typename D::raw T;
  typedef typename D::lane C;
  __shared__ C sh[32];
  int lane = (int)threadIdx.x & 31;
  const rv_line_team t = rv_line_team_of(n, warp_lines);
  const int64_t b = t.b, e = t.e;
  for (int64_t line = t.team; line < lines.numel; line += t.nteams) {
    int64_t off[3];
    ctc_ew_offsets<3>(lines, line, off); /* 0 grad_x, 1 grad_out, 2 y */
    T *gx = reinterpret_cast<T *>(lines.data[0]) + off[0] + b;
    const T *g = reinterpret_cast<const T *>(lines.data[1]) + off[1] + b;
    const T *y = reinterpret_cast<const T *>(lines.data[2]) + off[2] + b;
    C acc = 0;
    if (log_) {
      const T *const in[1] = {g};
      rv_warp_map<D, 1, false>(in, nullptr, e - b, lane, [&](const C(&v)[1]) { acc += v[0]; });
    } else {
      const T *const in[2] = {g, y};
      rv_warp_map<D, 2, false>(in, nullptr, e - b, lane,
                               [&](const C(&v)[2]) { acc += v[0] * v[1]; });
    }
    if (warp_lines)
      acc = rv_warp_allreduce(acc, fadd2());
    else
      acc = ctc_block_bcast(ctc_block_reduce(acc, fadd2(), (C)0, sh), sh);
    const T *const in[2] = {g, y};
    if (log_)
      rv_warp_map<D, 2, true>(in, gx, e - b, lane,
                              [&](const C(&v)[2]) { return v[0] - exp(v[1]) * acc; });
    else
      rv_warp_map<D, 2, true>(in, gx, e - b, lane,
                              [&](const C(&v)[2]) { return v[1] * (v[0] - acc); });
    if (!warp_lines) __syncthreads(); /* sh is reused by the next line */
  }
}

/* Launches the vector kernel when lines are contiguous; false when they aren't. */
static bool softmax_bw_vec(const ctc_ew &geo, const ctc_t *gx, const ctc_t *g, const ctc_t *y,
                           int64_t n, bool steps_one, bool log, int dev, cudaStream_t s) {
  uintptr_t es = (uintptr_t)ctc_elsize(gx->dtype);
  if (!steps_one || g->dtype != gx->dtype || y->dtype != gx->dtype ||
      (uintptr_t)gx->data % es != 0 || (uintptr_t)g->data % es != 0 || (uintptr_t)y->data % es != 0)
    return false;
  bool warp_lines = n <= SMB_WARP_MAX;
  unsigned blocks = rv_line_blocks(geo.numel, warp_lines, SMB_THREADS, dev);
  rv_float_dtype(gx->dtype, [&](auto dt) {
    using D = decltype(dt);
    softmax_bw_vec_kernel<D::value><<<blocks, SMB_THREADS, 0, s>>>(geo, n, log, warp_lines);
  });
  return true;
}

extern "C" ct_status ct__cuda_softmax_backward(ct_tensor *gx_t, const ct_tensor *g_t,
                                               const ct_tensor *y_t, int dim, bool log) {
  const ctc_view gx(gx_t), g(g_t), y(y_t);
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
  int64_t s0 = nd ? gx->strides[dim] : 0, s1 = nd ? g->strides[dim] : 0,
          s2 = nd ? y->strides[dim] : 0;
  cudaStream_t s = ctc_stream(dev);
  if (!softmax_bw_vec(geo, gx, g, y, n, s0 == 1 && s1 == 1 && s2 == 1, log, dev, s)) {
    int threads = n <= 1024 ? 32 : 256;
    int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
    unsigned blocks = (unsigned)(geo.numel < cap ? geo.numel : cap);
    if (gx->dtype == CT_F64)
      softmax_bw_kernel<double><<<blocks, threads, 0, s>>>(geo, n, s0, s1, s2, log);
    else
      softmax_bw_kernel<float><<<blocks, threads, 0, s>>>(geo, n, s0, s1, s2, log);
  }
  CT_CUDA_LAUNCH_CHECK(name, dev, s);
  return CT_OK;
}
