/* CUDA softmax / log_softmax along one dim (the backend's `softmax` slot),
 * fused: m = max along the line (nan propagates), s = sum exp(x - m), then
 * softmax = exp(x - m) / s or log_softmax = (x - m) - log s. A line holding
 * +inf or only -inf gives nan, as torch. f32/f16/bf16 compute in f32, f64 in
 * f64; any strides (out may be x).
 *
 * Decomposition: three sweeps over each line (max, exp-sum, write) with
 * reductions in between; lines grid-strided.
 *   - contiguous lines (the softmax dim is x's and out's fastest, the common
 *     case): the dtype a template parameter and 16-byte loads and stores
 *     (reduce_vec.cuh); a warp per line up to SM_WARP_MAX elements (8 lines
 *     per block, warp shuffles only), else a block per line whose warps take
 *     contiguous eighths. The second and third sweeps re-read the line from
 *     L1/L2.
 *   - other lines: one block per line (32 threads = one warp for lines up to
 *     1024 elements, else 256), strided element loads through the run-time
 *     dtype (uncoalesced along a non-last dim; fine for the sizes softmax
 *     meets in practice). */
#include "backend/cuda/reduce_vec.cuh"

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

/* ---- Contiguous lines ------------------------------------------------------------------ */

#define SM_THREADS 256
#define SM_WARP_MAX 2048 /* longest line a warp handles alone */
/* Resident blocks per SM the launch bound asks for: 4 x 256 threads at 64
 * registers hold 64 KiB of loads in flight per SM (fewer registers spill:
 * the write sweep has 16 exps and divisions in flight); f64's exp needs
 * ~100 registers. */
#define SM_BPS(DT) ((DT) == CT_F64 ? 2 : 4)

/* v reduced over the line's team (the warp, or the block: then sh's 32
 * slots), in every thread of it. */
template <class C, class M>
__device__ __forceinline__ C team_allreduce(C v, M merge, C id, bool warp_lines, C *sh) {
  if (warp_lines) return rv_warp_allreduce(v, merge);
  return ctc_block_bcast(ctc_block_reduce(v, merge, id, sh), sh);
}

/* The line with x's and out's softmax dim contiguous; dtype DT for both.
 * warp_lines: a warp per line, else the block. */
template <int DT>
__global__ void __launch_bounds__(SM_THREADS, SM_BPS(DT))
    softmax_vec_kernel(ctc_ew lines, int64_t n, bool log_, bool warp_lines) {
  typedef rv_dt<DT> D;
  typedef typename D::raw T;
  typedef typename D::lane C;
  __shared__ C sh[32];
  int lane = (int)threadIdx.x & 31;
  const rv_line_team t = rv_line_team_of(n, warp_lines);
  const int64_t b = t.b, e = t.e;
  for (int64_t line = t.team; line < lines.numel; line += t.nteams) {
    int64_t off[2];
    ctc_ew_offsets<2>(lines, line, off);
    const T *const x[1] = {reinterpret_cast<const T *>(lines.data[1]) + off[1] + b};
    T *o = reinterpret_cast<T *>(lines.data[0]) + off[0] + b;
    C m = -INFINITY;
    rv_warp_map<D, 1, false>(x, nullptr, e - b, lane,
                             [&](const C(&v)[1]) { m = fmax_nan()(m, v[0]); });
    m = team_allreduce(m, fmax_nan(), (C)-INFINITY, warp_lines, sh);
    C s = 0;
    rv_warp_map<D, 1, false>(x, nullptr, e - b, lane, [&](const C(&v)[1]) { s += exp(v[0] - m); });
    s = team_allreduce(s, sum_op(), (C)0, warp_lines, sh);
    C ls = log(s);
    if (log_)
      rv_warp_map<D, 1, true>(x, o, e - b, lane, [&](const C(&v)[1]) { return v[0] - m - ls; });
    else
      rv_warp_map<D, 1, true>(x, o, e - b, lane, [&](const C(&v)[1]) { return exp(v[0] - m) / s; });
    if (!warp_lines) __syncthreads(); /* sh is reused by the next line */
  }
}

/* Launches the vector kernel when lines are contiguous; false when they aren't. */
static bool softmax_vec(const ctc_ew &g, const ctc_t *out, const ctc_t *x, int64_t n, int64_t xstep,
                        int64_t ostep, bool log, int dev, cudaStream_t s) {
  size_t es = ctc_elsize(x->dtype);
  if (xstep != 1 || ostep != 1 || out->dtype != x->dtype || !ctc_is_float(x->dtype) ||
      (uintptr_t)x->data % es != 0 || (uintptr_t)out->data % es != 0)
    return false;
  bool warp_lines = n <= SM_WARP_MAX;
  unsigned blocks = rv_line_blocks(g.numel, warp_lines, SM_THREADS, dev);
  rv_float_dtype(x->dtype, [&](auto dt) {
    using D = decltype(dt);
    softmax_vec_kernel<D::value><<<blocks, SM_THREADS, 0, s>>>(g, n, log, warp_lines);
  });
  return true;
}

extern "C" ct_status ct__cuda_softmax(ct_tensor *out_t, const ct_tensor *x_t, int dim, bool log) {
  const ctc_view out(out_t), x(x_t);
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
  if (!softmax_vec(g, out, x, n, xstep, ostep, log, dev, s)) {
    int threads = n <= 1024 ? 32 : 256;
    int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
    unsigned blocks = (unsigned)(g.numel < cap ? g.numel : cap);
    if (x->dtype == CT_F64)
      softmax_kernel<double><<<blocks, threads, 0, s>>>(g, n, xstep, ostep, log);
    else
      softmax_kernel<float><<<blocks, threads, 0, s>>>(g, n, xstep, ostep, log);
  }
  CT_CUDA_LAUNCH_CHECK(name, dev, s);
  return CT_OK;
}
