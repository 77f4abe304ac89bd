/* CUDA scans: cumulative sums and products along one dim (cumsum, cumprod
 * and the reversed scans of their gradients). Contract: backend.h,
 * `cumulative`; the combine is core/scan_math.h's (floats accumulate in
 * double, integers in i64 wrapping), as on the CPU.
 *
 * The contiguous input is (outer, n, inner). Two decompositions:
 *  - columns (outer * inner >= COL_MIN threads' worth): a thread per
 *    (outer, inner) column walks k; neighbouring threads read neighbouring
 *    columns, so every step is one coalesced load per warp;
 *  - lines (few columns, or inner == 1): each line of n elements (stride
 *    inner) is scanned in tiles of TILE = BLOCK * ITEMS elements. A tile is
 *    loaded coalesced into shared memory, each thread scans its ITEMS
 *    consecutive elements, the BLOCK thread totals are scanned in shared
 *    memory (Hillis-Steele), and each thread adds its prefix. Lines of at
 *    most LONG_TILES tiles: one block per line walks its tiles with a carry.
 *    Longer lines run as a three-pass scan over all tiles at once: every
 *    tile's total (a block per tile), the scan of each line's tile totals
 *    (the same line kernel, over the totals), then every tile again from its
 *    prefix; so a single 10M-element line keeps every SM busy. */
#include "backend/cuda/common.cuh"
#include "core/scan_math.h"

#define BLOCK 256
#define ITEMS 8
#define TILE (BLOCK * ITEMS)
#define LONG_TILES 8
#define COL_MIN 4096

__device__ __forceinline__ double comb(bool prod, double a, double b) {
  return ct_scan_combine_f(prod, a, b);
}
__device__ __forceinline__ int64_t comb(bool prod, int64_t a, int64_t b) {
  return ct_scan_combine_i(prod, a, b);
}

/* A line: element p (in scan order) at data[base + pos(p) * step]. */
struct line_t {
  int64_t base, n, step;
  bool reverse;
  __device__ int64_t at(int64_t p) const { return base + (reverse ? n - 1 - p : p) * step; }
};
__device__ __forceinline__ line_t line_of(int64_t r, int64_t n, int64_t inner, bool reverse) {
  int64_t o = r / inner, j = r - o * inner;
  line_t l = {o * n * inner + j, n, inner, reverse};
  return l;
}

/* Scans the tile of line l starting at scan position p0 from `carry`; writes
 * out (when out != NULL) and returns the carry after the tile. sh: TILE + BLOCK
 * accumulators of shared memory. Every thread of the block calls it. */
template <typename T, typename A>
__device__ A scan_tile(bool prod, T *out, const T *x, const line_t &l, int64_t p0, A carry, A *sh) {
  A *vals = sh, *tot = sh + TILE;
  const A id = (A)ct_scan_identity(prod);
  int t = threadIdx.x;
  for (int i = 0; i < ITEMS; i++) { /* coalesced: consecutive threads, consecutive positions */
    int64_t p = p0 + i * BLOCK + t;
    vals[i * BLOCK + t] = p < l.n ? (A)x[l.at(p)] : id;
  }
  __syncthreads();
  A run = id; /* this thread's ITEMS consecutive elements */
  for (int i = 0; i < ITEMS; i++) {
    run = comb(prod, run, vals[t * ITEMS + i]);
    vals[t * ITEMS + i] = run;
  }
  tot[t] = run;
  __syncthreads();
  for (int off = 1; off < BLOCK; off *= 2) { /* inclusive scan of the thread totals */
    A v = t >= off ? comb(prod, tot[t - off], tot[t]) : tot[t];
    __syncthreads();
    tot[t] = v;
    __syncthreads();
  }
  A before = t > 0 ? comb(prod, carry, tot[t - 1]) : carry;
  for (int i = 0; i < ITEMS; i++) vals[t * ITEMS + i] = comb(prod, before, vals[t * ITEMS + i]);
  A after = comb(prod, carry, tot[BLOCK - 1]);
  __syncthreads();
  if (out)
    for (int i = 0; i < ITEMS; i++) {
      int64_t p = p0 + i * BLOCK + t;
      if (p < l.n) out[l.at(p)] = (T)vals[i * BLOCK + t];
    }
  __syncthreads(); /* sh is reused by the next tile */
  return after;
}

/* A block per line (grid-stride over lines), tiles in order with a carry. */
template <typename T, typename A>
__global__ void __launch_bounds__(BLOCK)
    scan_lines_kernel(bool prod, bool reverse, T *out, const T *x, int64_t lines, int64_t n,
                      int64_t inner) {
  __shared__ A sh[TILE + BLOCK];
  for (int64_t r = blockIdx.x; r < lines; r += gridDim.x) {
    line_t l = line_of(r, n, inner, reverse);
    A carry = (A)ct_scan_identity(prod);
    for (int64_t p0 = 0; p0 < n; p0 += TILE)
      carry = scan_tile<T, A>(prod, out, x, l, p0, carry, sh);
  }
}

/* Pass 1 of long lines: totals[r * tiles + k] = combine of tile k (in scan
 * order) of line r. grid (tiles, lines). */
template <typename T, typename A>
__global__ void __launch_bounds__(BLOCK)
    tile_totals_kernel(bool prod, bool reverse, const T *x, A *totals, int64_t n, int64_t inner,
                       int64_t tiles) {
  __shared__ A sh[TILE + BLOCK];
  int64_t r = blockIdx.y, k = blockIdx.x;
  line_t l = line_of(r, n, inner, reverse);
  A t = scan_tile<T, A>(prod, (T *)nullptr, x, l, k * TILE, (A)ct_scan_identity(prod), sh);
  if (threadIdx.x == 0) totals[r * tiles + k] = t;
}

/* Pass 3: tile k of line r from the inclusive scan of the totals before it. */
template <typename T, typename A>
__global__ void __launch_bounds__(BLOCK)
    scan_tiles_kernel(bool prod, bool reverse, T *out, const T *x, const A *prefix, int64_t n,
                      int64_t inner, int64_t tiles) {
  __shared__ A sh[TILE + BLOCK];
  int64_t r = blockIdx.y, k = blockIdx.x;
  line_t l = line_of(r, n, inner, reverse);
  A carry = k > 0 ? prefix[r * tiles + k - 1] : (A)ct_scan_identity(prod);
  scan_tile<T, A>(prod, out, x, l, k * TILE, carry, sh);
}

/* A thread per column (outer * inner of them), walking k. */
template <typename T, typename A>
__global__ void scan_cols_kernel(bool prod, bool reverse, T *out, const T *x, int64_t cols,
                                 int64_t n, int64_t inner) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += stride) {
    line_t l = line_of(c, n, inner, reverse);
    A acc = (A)ct_scan_identity(prod);
    for (int64_t p = 0; p < n; p++) {
      int64_t e = l.at(p);
      acc = comb(prod, acc, (A)x[e]);
      out[e] = (T)acc;
    }
  }
}

template <typename T, typename A>
static ct_status run_scan(const char *op, bool prod, bool reverse, const ctc_t *out, const ctc_t *x,
                          int dim) {
  int dev = out->device;
  int64_t outer = 1, inner = 1, n = x->ndim ? x->shape[dim] : 1;
  for (int d = 0; d < dim; d++) outer *= x->shape[d];
  for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
  cudaStream_t s = ctc_stream(dev);
  T *o = (T *)out->data;
  const T *in = (const T *)x->data;
  int64_t lines = outer * inner, tiles = (n + TILE - 1) / TILE;
  if (inner > 1 && lines >= COL_MIN) {
    scan_cols_kernel<T, A>
        <<<ctc_blocks(lines, dev), CTC_THREADS, 0, s>>>(prod, reverse, o, in, lines, n, inner);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  }
  if (tiles <= LONG_TILES || lines > 65535) {
    int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
    unsigned grid = (unsigned)(lines < cap ? lines : cap);
    scan_lines_kernel<T, A><<<grid, BLOCK, 0, s>>>(prod, reverse, o, in, lines, n, inner);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  }
  /* three passes; the tile totals are scanned in place as lines of `tiles` */
  ctc_scratch buf(dev);
  A *totals = (A *)buf.get((size_t)(lines * tiles) * sizeof(A));
  if (!totals) return ct_last_error();
  dim3 grid((unsigned)tiles, (unsigned)lines);
  tile_totals_kernel<T, A><<<grid, BLOCK, 0, s>>>(prod, reverse, in, totals, n, inner, tiles);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
  scan_lines_kernel<A, A><<<(unsigned)(lines < cap ? lines : cap), BLOCK, 0, s>>>(
      prod, false, totals, totals, lines, tiles, 1);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  scan_tiles_kernel<T, A><<<grid, BLOCK, 0, s>>>(prod, reverse, o, in, totals, n, inner, tiles);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_cumulative(bool prod, bool reverse, ct_tensor *out_t,
                                         const ct_tensor *x_t, int dim) {
  const ctc_view out(out_t), x(x_t);
  const char *op = prod ? "cumprod" : "cumsum";
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(op, out->device);
  if (st != CT_OK) return st;
  switch (x->dtype) {
    case CT_F32:
      return run_scan<float, double>(op, prod, reverse, out, x, dim);
    case CT_F64:
      return run_scan<double, double>(op, prod, reverse, out, x, dim);
    case CT_I64:
      return run_scan<int64_t, int64_t>(op, prod, reverse, out, x, dim);
    default:
      return ct__fail_status(CT_ERR_DTYPE, "%s: dtype %d not cast by the op layer", op, x->dtype);
  }
}
