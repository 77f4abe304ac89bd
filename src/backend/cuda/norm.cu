/* CUDA batch and layer normalization, forward and backward, with the CPU's
 * semantics (backend/cpu/norm.c): statistics in double (the biased
 * variance normalizes), eps inside the sqrt, running_var updated with
 * the unbiased variance; the elementwise parts in f32 for f32/f16/bf16 x and
 * f64 for f64 x. Statistics/parameters are read and written in their own
 * dtypes (the op layer gives f32 statistics for half x).
 *
 * Batch norm (x (N, C, S) contiguous): the training statistics by Welford
 * per thread and Chan's merge (no cancellation for a large mean). When the
 * channels fill the GPU, or are small, one block per channel reduces them
 * and normalizes its channel (one launch); else P blocks per channel each
 * reduce a range of the N*S elements, a thread per channel merges their
 * parts in order, and a thread per element normalizes (three launches).
 * The backward pass's sums (grad_out, grad_out * (x - mean)) likewise.
 *
 * Layer norm (x (rows, cols) contiguous): one block per row for
 * the statistics and grad_x; grad_w / grad_b by 32-column tiles, 16 row
 * lanes per column merged in a fixed order, and when the tiles do not fill
 * the GPU, by ranges of rows too, their sums added in order by a second
 * launch. Row norms (group, instance, RMS norm; ct_row_norm_params) as
 * layer norm, with grad_w / grad_b by one block per affine parameter.
 * Everything is deterministic. */
#include <math.h>

#include "backend/cuda/common.cuh"

/* A 1-d vector (statistics, parameters) or absent. */
struct vec {
  char *p;
  int dt;
  int64_t st; /* bytes between elements */
};
static vec mkvec(const ctc_t *t) {
  vec v = {nullptr, CT_F32, 0};
  if (t) {
    v.p = t->data;
    v.dt = t->dtype;
    v.st = (t->ndim > 0 ? t->strides[t->ndim - 1] : 1) * (int64_t)ctc_elsize(t->dtype);
  }
  return v;
}
__device__ __forceinline__ double vload(const vec &v, int64_t i, double dflt) {
  return v.p ? ctc_load<double>(v.p + i * v.st, v.dt) : dflt;
}
__device__ __forceinline__ void vstore(const vec &v, int64_t i, double x) {
  if (v.p) ctc_store<double>(v.p + i * v.st, v.dt, x);
}

struct add_d {
  __device__ double operator()(double a, double b) const { return a + b; }
};
__device__ __forceinline__ double block_sum(double v, double *sh) {
  return ctc_block_bcast(ctc_block_reduce(v, add_d(), 0.0, sh), sh);
}

static unsigned grid_for(int64_t items, int dev) {
  int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
  int64_t b = items < cap ? items : cap;
  return (unsigned)(b < 1 ? 1 : b);
}

static ct_status check_dtype(const char *op, int dt) {
  if (!ctc_is_float(dt))
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op,
                           ct_dtype_name((ct_dtype)dt));
  return CT_OK;
}

/* ---- Column reductions ------------------------------------------------------------- */
/* x seen as `rows` rows of W contiguous columns; output u reduces the S
 * adjacent columns u*S .. u*S+S-1 over every row: batch norm's channels of
 * (N, C, S) x and the row norms' affine parameters, when S is small. (A
 * block per output would step its threads S elements on, C*S apart: lanes
 * of a warp on different cache lines for S = 1.) Here a block (32, 16) takes
 * a tile of 32 adjacent columns and a range of rows: the lanes of a warp
 * read 32 adjacent elements of a row, row lane y the rows y, y+16, ... of
 * the range; the 16 row lanes' parts merge in order into part[k * W + c]
 * (range k). A second launch, a thread per output, merges the parts of its
 * S columns and R ranges in order and finishes it (Op::finish). No atomics:
 * deterministic. Op (templated on the compute type) gives the part type P,
 * zero(), add(p, r, c), merge(a, b) and finish(u, p). */
#define COL_TX 32
#define COL_TY 16
#define COL_MAX_S 32 /* S at least a warp's elements: the per-output kernels read whole lines */
template <class Op, class P>
__global__ void col_parts_kernel(Op op, P *part, int64_t rows, int64_t W, int64_t R,
                                 int64_t chunk) {
  __shared__ P sh[COL_TY][COL_TX];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t tiles = (W + COL_TX - 1) / COL_TX;
  for (int64_t t = blockIdx.x; t < tiles * R; t += gridDim.x) {
    int64_t k = t / tiles, c = (t - k * tiles) * COL_TX + tx;
    int64_t r1 = (k + 1) * chunk < rows ? (k + 1) * chunk : rows;
    P p = Op::zero();
    if (c < W)
      for (int64_t r = k * chunk + ty; r < r1; r += COL_TY) op.add(p, r, c);
    __syncthreads(); /* the previous tile's reads of sh are done */
    sh[ty][tx] = p;
    __syncthreads();
    if (ty == 0 && c < W) {
      for (int y = 1; y < COL_TY; y++) p = Op::merge(p, sh[y][tx]);
      part[k * W + c] = p;
    }
  }
}
template <class Op, class P>
__global__ void col_merge_kernel(Op op, const P *part, int64_t U, int64_t S, int64_t R) {
  for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < U;
       u += (int64_t)gridDim.x * blockDim.x) {
    P p = Op::zero();
    for (int64_t k = 0; k < R; k++)
      for (int64_t j = 0; j < S; j++) p = Op::merge(p, part[(k * U + u) * S + j]);
    op.finish(u, p);
  }
}
/* Row ranges: enough blocks for 4 per SM when the column tiles alone are
 * fewer, each range at least COL_MIN_ROWS rows (4 per row lane) so that its
 * parts outweigh their merge. */
#define COL_MIN_ROWS 64
static int64_t col_ranges(int64_t rows, int64_t W, int dev) {
  int64_t tiles = (W + COL_TX - 1) / COL_TX;
  int64_t want = ((int64_t)ctc_sm_count(dev) * 4 + tiles - 1) / tiles, most = rows / COL_MIN_ROWS;
  int64_t R = want < most ? want : most;
  return R < 1 ? 1 : R;
}
/* Both launches (R = 0: no parts, every output finishes from zero()); part
 * holds R * W parts. */
template <class Op, class P>
static ct_status col_reduce(const char *op_name, int dev, cudaStream_t s, const Op &op, P *part,
                            int64_t rows, int64_t U, int64_t S, int64_t R) {
  int64_t W = U * S;
  if (R > 0) {
    int64_t tiles = (W + COL_TX - 1) / COL_TX;
    col_parts_kernel<Op, P><<<grid_for(tiles * R, dev), dim3(COL_TX, COL_TY), 0, s>>>(
        op, part, rows, W, R, (rows + R - 1) / R);
    CT_CUDA_LAUNCH_CHECK(op_name, dev, s);
  }
  col_merge_kernel<Op, P><<<ctc_blocks(U, dev), CTC_THREADS, 0, s>>>(op, part, U, S, R);
  CT_CUDA_LAUNCH_CHECK(op_name, dev, s);
  return CT_OK;
}

/* Two sums (grad_b-like, grad_w-like). */
struct sum2 {
  double s0, s1;
};
__device__ __forceinline__ sum2 sum2_merge(const sum2 &x, const sum2 &y) {
  return {x.s0 + y.s0, x.s1 + y.s1};
}

/* ---- Batch norm -------------------------------------------------------------------- */

struct bn_args {
  int64_t N, C, S;
  bool training;
  double momentum, eps;
  const char *x, *g;
  char *out, *gx;
  int dt, es; /* x, out, grad_out, grad_x */
  vec w, b, mean, invstd, rm, rv, gw, gb;
};

/* Training statistics of a part of a channel: Welford's count, mean and sum
 * of squared deviations (no cancellation, unlike sum(x^2) - sum(x)^2/n,
 * when the mean is large against the spread), merged by Chan et al.'s
 * formula; and the plain sum, which gives the saved mean as on the CPU
 * (sum / M: an inf element makes it inf, where Welford's mean turns nan). */
struct bn_part {
  double n, mean, m2, sum;
};
__device__ __forceinline__ bn_part bn_merge(const bn_part &a, const bn_part &b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  double n = a.n + b.n, d = b.mean - a.mean, fb = b.n / n;
  return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb, a.sum + b.sum};
}
__device__ __forceinline__ bn_part bn_shfl_down(const bn_part &p, int o) {
  return {__shfl_down_sync(0xffffffffu, p.n, o), __shfl_down_sync(0xffffffffu, p.mean, o),
          __shfl_down_sync(0xffffffffu, p.m2, o), __shfl_down_sync(0xffffffffu, p.sum, o)};
}
/* The block's parts merged (valid in thread 0), in a fixed order: deterministic. */
__device__ bn_part bn_block_merge(bn_part p, bn_part *sh) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) p = bn_merge(p, bn_shfl_down(p, o));
  __syncthreads(); /* sh may hold the previous channel's parts */
  if (lane == 0) sh[w] = p;
  __syncthreads();
  if (w == 0) {
    p = lane < (int)(blockDim.x >> 5) ? sh[lane] : bn_part{0, 0, 0, 0};
    for (int o = 16; o > 0; o >>= 1) p = bn_merge(p, bn_shfl_down(p, o));
  }
  return p;
}
__device__ __forceinline__ void bn_push(bn_part &p, double v) {
  p.n += 1;
  double d = v - p.mean;
  p.mean += d / p.n;
  p.m2 += d * (v - p.mean);
  p.sum += v;
}
/* This thread's part of elements [lo, hi) of channel ch (in (n, s) order). */
template <class C>
__device__ bn_part bn_thread_part(const bn_args &a, int64_t ch, int64_t lo, int64_t hi) {
  bn_part p = {0, 0, 0, 0};
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    int64_t n = i / a.S, j = i - n * a.S;
    bn_push(p, (double)ctc_load<C>(a.x + ((n * a.C + ch) * a.S + j) * a.es, a.dt));
  }
  return p;
}
/* Channel ch's mean and invstd, from its merged part p (training) or the
 * running statistics: saves them, updates the running ones, and gives the
 * normalization's coefficients out = x * coef[0] + coef[1]. */
__device__ void bn_finish(const bn_args &a, int64_t ch, const bn_part &p, double *coef) {
  double M = (double)(a.N * a.S), mean, invstd;
  if (a.training) {
    mean = M > 0 ? p.sum / M : NAN;
    invstd = 1.0 / sqrt((M > 0 ? p.m2 / M : NAN) + a.eps);
    if (a.rm.p) vstore(a.rm, ch, (1 - a.momentum) * vload(a.rm, ch, 0) + a.momentum * mean);
    if (a.rv.p) {
      double unb = M > 1 ? p.m2 / (M - 1) : NAN;
      vstore(a.rv, ch, (1 - a.momentum) * vload(a.rv, ch, 0) + a.momentum * unb);
    }
  } else {
    mean = vload(a.rm, ch, 0);
    invstd = 1.0 / sqrt(vload(a.rv, ch, 1) + a.eps);
  }
  vstore(a.mean, ch, mean);
  vstore(a.invstd, ch, invstd);
  double w = vload(a.w, ch, 1.0), b = vload(a.b, ch, 0.0);
  coef[0] = w * invstd;
  coef[1] = b - mean * w * invstd;
}

/* One block per channel: statistics, then the normalization. */
template <class C>
__global__ void bn_fwd_kernel(bn_args a) {
  __shared__ bn_part sh[32];
  __shared__ double coef[2];
  int64_t M = a.N * a.S;
  for (int64_t ch = blockIdx.x; ch < a.C; ch += gridDim.x) {
    bn_part p = {0, 0, 0, 0};
    if (a.training) p = bn_block_merge(bn_thread_part<C>(a, ch, 0, M), sh);
    if (threadIdx.x == 0) bn_finish(a, ch, p, coef);
    __syncthreads();
    C scale = (C)coef[0], shift = (C)coef[1];
    __syncthreads(); /* every thread has read coef before the next channel's */
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      int64_t n = i / a.S, j = i - n * a.S, o = ((n * a.C + ch) * a.S + j) * a.es;
      ctc_store<C>(a.out + o, a.dt, ctc_load<C>(a.x + o, a.dt) * scale + shift);
    }
  }
}

/* The split path, for channels too few to fill the GPU: P blocks per channel
 * each merge `chunk` consecutive elements into parts[ch * P + p] ... */
template <class C>
__global__ void bn_stats_kernel(bn_args a, bn_part *parts, int64_t P, int64_t chunk) {
  __shared__ bn_part sh[32];
  int64_t M = a.N * a.S;
  for (int64_t b = blockIdx.x; b < a.C * P; b += gridDim.x) {
    int64_t ch = b / P, lo = (b - ch * P) * chunk, hi = lo + chunk < M ? lo + chunk : M;
    bn_part p = bn_block_merge(bn_thread_part<C>(a, ch, lo, hi), sh);
    if (threadIdx.x == 0) parts[b] = p;
  }
}
/* ... a thread per channel merges its P parts in order ... */
__global__ void bn_merge_kernel(bn_args a, const bn_part *parts, int64_t P, double *coef) {
  for (int64_t ch = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ch < a.C;
       ch += (int64_t)gridDim.x * blockDim.x) {
    bn_part p = {0, 0, 0, 0}; /* evaluation: no parts, the running statistics */
    for (int64_t k = 0; a.training && k < P; k++) p = bn_merge(p, parts[ch * P + k]);
    bn_finish(a, ch, p, coef + 2 * ch);
  }
}
/* ... and every element is normalized by a thread of its own. */
template <class C>
__global__ void bn_apply_kernel(bn_args a, const double *coef) {
  int64_t total = a.N * a.C * a.S;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ch = (i / a.S) % a.C;
    C scale = (C)coef[2 * ch], shift = (C)coef[2 * ch + 1];
    ctc_store<C>(a.out + i * a.es, a.dt, ctc_load<C>(a.x + i * a.es, a.dt) * scale + shift);
  }
}

/* Blocks per channel of the training statistics: enough for 4 blocks per SM
 * when the channels alone are fewer, each merging at least BN_MIN_PART
 * elements (4 per thread) so that a part outweighs its merge. */
#define BN_MIN_PART 1024
#define BN_PART_THREADS 256
static int64_t bn_parts(int64_t M, int64_t C, int dev) {
  int64_t want = ((int64_t)ctc_sm_count(dev) * 4 + C - 1) / C, most = M / BN_MIN_PART;
  int64_t P = want < most ? want : most;
  return P < 1 ? 1 : P;
}

/* Backward: the sums of grad_out and grad_out * (x - mean) over a channel's
 * elements [lo, hi), this thread's share. */
template <class C>
__device__ void bn_thread_gsums(const bn_args &a, int64_t ch, double mean, int64_t lo, int64_t hi,
                                double *sg, double *sgx) {
  double g0 = 0, g1 = 0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    int64_t n = i / a.S, j = i - n * a.S, o = ((n * a.C + ch) * a.S + j) * a.es;
    double gv = (double)ctc_load<C>(a.g + o, a.dt);
    g0 += gv;
    g1 += gv * ((double)ctc_load<C>(a.x + o, a.dt) - mean);
  }
  *sg = g0, *sgx = g1;
}
/* Channel ch's grad_w and grad_b from its sums, and grad_x's coefficients:
 * training gx = w*invstd*(g - sg/M - (x-mean)*invstd^2*sgx/M), as
 * k * (g - dm - (x - mean) * dv) with coef = {k, mean, dm, dv}. */
__device__ void bn_bwd_finish(const bn_args &a, int64_t ch, double sg, double sgx, double *coef) {
  double M = (double)(a.N * a.S), mean = vload(a.mean, ch, 0), invstd = vload(a.invstd, ch, 1);
  vstore(a.gw, ch, sgx * invstd);
  vstore(a.gb, ch, sg);
  coef[0] = vload(a.w, ch, 1.0) * invstd;
  coef[1] = mean;
  coef[2] = a.training && M > 0 ? sg / M : 0;
  coef[3] = a.training && M > 0 ? invstd * invstd * sgx / M : 0;
}
template <class C>
__device__ __forceinline__ void bn_bwd_elem(const bn_args &a, const double *coef, int64_t o) {
  C k = (C)coef[0], m = (C)coef[1], dm = (C)coef[2], dv = (C)coef[3];
  C gv = ctc_load<C>(a.g + o, a.dt), xv = ctc_load<C>(a.x + o, a.dt);
  ctc_store<C>(a.gx + o, a.dt, k * (gv - dm - (xv - m) * dv));
}

/* One block per channel: the sums, then grad_x. */
template <class C>
__global__ void bn_bwd_kernel(bn_args a) {
  __shared__ double sh[32], coef[4];
  int64_t M = a.N * a.S;
  for (int64_t ch = blockIdx.x; ch < a.C; ch += gridDim.x) {
    double sg, sgx;
    bn_thread_gsums<C>(a, ch, vload(a.mean, ch, 0), 0, M, &sg, &sgx);
    sg = block_sum(sg, sh);
    sgx = block_sum(sgx, sh);
    if (threadIdx.x == 0) bn_bwd_finish(a, ch, sg, sgx, coef);
    if (!a.gx) continue;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      int64_t n = i / a.S, j = i - n * a.S;
      bn_bwd_elem<C>(a, coef, ((n * a.C + ch) * a.S + j) * a.es);
    }
    __syncthreads(); /* every thread has read coef before the next channel's */
  }
}

/* The split path: P blocks per channel sum `chunk` elements each into
 * parts[2 * (ch * P + p) + {0, 1}] ... */
template <class C>
__global__ void bn_bwd_sums_kernel(bn_args a, double *parts, int64_t P, int64_t chunk) {
  __shared__ double sh[32];
  int64_t M = a.N * a.S;
  for (int64_t b = blockIdx.x; b < a.C * P; b += gridDim.x) {
    int64_t ch = b / P, lo = (b - ch * P) * chunk, hi = lo + chunk < M ? lo + chunk : M;
    double sg, sgx;
    bn_thread_gsums<C>(a, ch, vload(a.mean, ch, 0), lo, hi, &sg, &sgx);
    sg = ctc_block_reduce(sg, add_d(), 0.0, sh);
    sgx = ctc_block_reduce(sgx, add_d(), 0.0, sh);
    if (threadIdx.x == 0) parts[2 * b] = sg, parts[2 * b + 1] = sgx;
  }
}
/* ... a thread per channel adds its P parts in order ... */
__global__ void bn_bwd_merge_kernel(bn_args a, const double *parts, int64_t P, double *coef) {
  for (int64_t ch = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ch < a.C;
       ch += (int64_t)gridDim.x * blockDim.x) {
    double sg = 0, sgx = 0;
    for (int64_t k = 0; k < P; k++)
      sg += parts[2 * (ch * P + k)], sgx += parts[2 * (ch * P + k) + 1];
    bn_bwd_finish(a, ch, sg, sgx, coef + 4 * ch);
  }
}
/* ... and a thread per element computes grad_x. */
template <class C>
__global__ void bn_bwd_apply_kernel(bn_args a, const double *coef) {
  int64_t total = a.N * a.C * a.S;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x)
    bn_bwd_elem<C>(a, coef + 4 * ((i / a.S) % a.C), i * a.es);
}

/* The column path (S < COL_MAX_S; col_reduce): the training statistics by
 * Welford over column c's rows, or (R = 0) the running ones, finished into
 * the coefficients ... */
template <class C>
struct bn_stats_op {
  bn_args a;
  double *coef;
  __device__ static bn_part zero() { return {0, 0, 0, 0}; }
  __device__ void add(bn_part &p, int64_t r, int64_t c) const {
    bn_push(p, (double)ctc_load<C>(a.x + (r * a.C * a.S + c) * a.es, a.dt));
  }
  __device__ static bn_part merge(const bn_part &x, const bn_part &y) { return bn_merge(x, y); }
  __device__ void finish(int64_t ch, const bn_part &p) const { bn_finish(a, ch, p, coef + 2 * ch); }
};
/* ... and the backward's sums of grad_out (s0) and grad_out * (x - mean) (s1). */
template <class C>
struct bn_sums_op {
  bn_args a;
  double *coef;
  __device__ static sum2 zero() { return {0, 0}; }
  __device__ void add(sum2 &p, int64_t r, int64_t c) const {
    int64_t o = (r * a.C * a.S + c) * a.es;
    double gv = (double)ctc_load<C>(a.g + o, a.dt);
    p.s0 += gv;
    p.s1 += gv * ((double)ctc_load<C>(a.x + o, a.dt) - vload(a.mean, c / a.S, 0));
  }
  __device__ static sum2 merge(const sum2 &x, const sum2 &y) { return sum2_merge(x, y); }
  __device__ void finish(int64_t ch, const sum2 &p) const {
    bn_bwd_finish(a, ch, p.s0, p.s1, coef + 4 * ch);
  }
};

/* One launch instead of three when a channel is one column (S = 1) and one
 * range of rows covers the batch (small batches: the launches are most of
 * the time): a block per 32 channels reduces them as col_parts_kernel does
 * (the same order: the same results), finishes them, and normalizes its
 * columns (forward) or computes their grad_x (backward). */
template <class C>
__global__ void bn_col1_fwd_kernel(bn_args a) {
  __shared__ bn_part sh[COL_TY][COL_TX];
  __shared__ double coef[COL_TX][2];
  int tx = threadIdx.x, ty = threadIdx.y;
  bn_stats_op<C> op{a, nullptr};
  for (int64_t t = blockIdx.x; t < (a.C + COL_TX - 1) / COL_TX; t += gridDim.x) {
    int64_t c = t * COL_TX + tx;
    bn_part p = bn_stats_op<C>::zero();
    if (a.training && c < a.C)
      for (int64_t r = ty; r < a.N; r += COL_TY) op.add(p, r, c);
    __syncthreads(); /* the previous tile's reads of sh and coef are done */
    sh[ty][tx] = p;
    __syncthreads();
    if (ty == 0 && c < a.C) {
      for (int y = 1; y < COL_TY; y++) p = bn_merge(p, sh[y][tx]);
      bn_finish(a, c, p, coef[tx]);
    }
    __syncthreads();
    if (c >= a.C) continue;
    C scale = (C)coef[tx][0], shift = (C)coef[tx][1];
    for (int64_t r = ty; r < a.N; r += COL_TY) {
      int64_t o = (r * a.C + c) * a.es;
      ctc_store<C>(a.out + o, a.dt, ctc_load<C>(a.x + o, a.dt) * scale + shift);
    }
  }
}
template <class C>
__global__ void bn_col1_bwd_kernel(bn_args a) {
  __shared__ sum2 sh[COL_TY][COL_TX];
  __shared__ double coef[COL_TX][4];
  int tx = threadIdx.x, ty = threadIdx.y;
  bn_sums_op<C> op{a, nullptr};
  for (int64_t t = blockIdx.x; t < (a.C + COL_TX - 1) / COL_TX; t += gridDim.x) {
    int64_t c = t * COL_TX + tx;
    sum2 p = {0, 0};
    if (c < a.C)
      for (int64_t r = ty; r < a.N; r += COL_TY) op.add(p, r, c);
    __syncthreads(); /* the previous tile's reads of sh and coef are done */
    sh[ty][tx] = p;
    __syncthreads();
    if (ty == 0 && c < a.C) {
      for (int y = 1; y < COL_TY; y++) p = sum2_merge(p, sh[y][tx]);
      bn_bwd_finish(a, c, p.s0, p.s1, coef[tx]);
    }
    __syncthreads();
    if (c >= a.C || !a.gx) continue;
    for (int64_t r = ty; r < a.N; r += COL_TY) bn_bwd_elem<C>(a, coef[tx], (r * a.C + c) * a.es);
  }
}

/* Forward on the column path: the statistics (training), then a thread per
 * element normalizes. */
static ct_status bn_col_forward(const char *op, int dev, cudaStream_t s, const bn_args &a,
                                bool f64) {
  int64_t W = a.C * a.S, R = a.training ? col_ranges(a.N, W, dev) : 0;
  if (a.S == 1 && R <= 1) {
    unsigned g = grid_for((a.C + COL_TX - 1) / COL_TX, dev);
    if (f64)
      bn_col1_fwd_kernel<double><<<g, dim3(COL_TX, COL_TY), 0, s>>>(a);
    else
      bn_col1_fwd_kernel<float><<<g, dim3(COL_TX, COL_TY), 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  }
  size_t pb = sizeof(bn_part) * (size_t)(R * W);
  ctc_scratch buf(dev);
  char *mem = (char *)buf.get(pb + 2 * sizeof(double) * (size_t)a.C);
  if (!mem) return ct_last_error();
  bn_part *part = (bn_part *)mem;
  double *coef = (double *)(mem + pb);
  ct_status st = f64 ? col_reduce(op, dev, s, bn_stats_op<double>{a, coef}, part, a.N, a.C, a.S, R)
                     : col_reduce(op, dev, s, bn_stats_op<float>{a, coef}, part, a.N, a.C, a.S, R);
  if (st != CT_OK) return st;
  unsigned g = ctc_blocks(a.N * W, dev);
  if (f64)
    bn_apply_kernel<double><<<g, CTC_THREADS, 0, s>>>(a, coef);
  else
    bn_apply_kernel<float><<<g, CTC_THREADS, 0, s>>>(a, coef);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}
/* Backward on the column path: the sums, then a thread per element of grad_x. */
static ct_status bn_col_backward(const char *op, int dev, cudaStream_t s, const bn_args &a,
                                 bool f64) {
  int64_t W = a.C * a.S, R = col_ranges(a.N, W, dev);
  if (a.S == 1 && R == 1) {
    unsigned g = grid_for((a.C + COL_TX - 1) / COL_TX, dev);
    if (f64)
      bn_col1_bwd_kernel<double><<<g, dim3(COL_TX, COL_TY), 0, s>>>(a);
    else
      bn_col1_bwd_kernel<float><<<g, dim3(COL_TX, COL_TY), 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  }
  size_t pb = sizeof(sum2) * (size_t)(R * W);
  ctc_scratch buf(dev);
  char *mem = (char *)buf.get(pb + 4 * sizeof(double) * (size_t)a.C);
  if (!mem) return ct_last_error();
  sum2 *part = (sum2 *)mem;
  double *coef = (double *)(mem + pb);
  ct_status st = f64 ? col_reduce(op, dev, s, bn_sums_op<double>{a, coef}, part, a.N, a.C, a.S, R)
                     : col_reduce(op, dev, s, bn_sums_op<float>{a, coef}, part, a.N, a.C, a.S, R);
  if (st != CT_OK || !a.gx) return st;
  unsigned g = ctc_blocks(a.N * W, dev);
  if (f64)
    bn_bwd_apply_kernel<double><<<g, CTC_THREADS, 0, s>>>(a, coef);
  else
    bn_bwd_apply_kernel<float><<<g, CTC_THREADS, 0, s>>>(a, coef);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

static unsigned bn_threads(int64_t M) {
  return M >= 4096 ? 512 : M >= 512 ? 256 : M >= 128 ? 128 : 32;
}

static bn_args bn_init(const ctc_t *x) {
  bn_args a;
  memset(&a, 0, sizeof a);
  a.N = x->shape[0];
  a.C = x->ndim > 1 ? x->shape[1] : 1;
  a.S = x->ndim > 2 ? x->shape[2] : 1;
  a.x = x->data;
  a.dt = x->dtype;
  a.es = (int)ctc_elsize(x->dtype);
  return a;
}

extern "C" ct_status ct__cuda_batch_norm(ct_tensor *out_t, ct_tensor *save_mean_t,
                                         ct_tensor *save_invstd_t, const ct_tensor *x_t,
                                         const ct_tensor *weight_t, const ct_tensor *bias_t,
                                         ct_tensor *running_mean_t, ct_tensor *running_var_t,
                                         bool training, double momentum, double eps) {
  const ctc_view out(out_t), save_mean(save_mean_t), save_invstd(save_invstd_t), x(x_t),
      weight(weight_t), bias(bias_t), running_mean(running_mean_t), running_var(running_var_t);
  const char *op = "batch_norm";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (!training && (!running_mean || !running_var))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: evaluation needs the running statistics", op);
  bn_args a = bn_init(x);
  /* Training on no elements (N or S is 0): nothing to normalize, and the op
   * layer fills an empty batch's statistics (the column path's ranges would
   * divide by W = C * S). Evaluation still writes the saved statistics from
   * the running ones. */
  if (a.C == 0 || (training && a.N * a.S == 0)) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.training = training;
  a.momentum = momentum;
  a.eps = eps;
  a.out = out->data;
  a.w = mkvec(weight), a.b = mkvec(bias), a.mean = mkvec(save_mean), a.invstd = mkvec(save_invstd);
  a.rm = mkvec(running_mean), a.rv = mkvec(running_var);
  cudaStream_t s = ctc_stream(dev);
  bool f64 = x->dtype == CT_F64;
  if (a.S < COL_MAX_S) return bn_col_forward(op, dev, s, a, f64);
  int64_t M = a.N * a.S, P = bn_parts(M, a.C, dev);
  if (P == 1) {
    unsigned g = grid_for(a.C, dev), t = bn_threads(M);
    if (f64)
      bn_fwd_kernel<double><<<g, t, 0, s>>>(a);
    else
      bn_fwd_kernel<float><<<g, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  }
  ctc_scratch buf(dev);
  bn_part *parts =
      (bn_part *)buf.get(sizeof(bn_part) * (size_t)(a.C * P) + 2 * sizeof(double) * (size_t)a.C);
  if (!parts) return ct_last_error();
  double *coef = (double *)(parts + a.C * P);
  if (training) { /* evaluation reads the running statistics only */
    unsigned g = grid_for(a.C * P, dev);
    int64_t chunk = (M + P - 1) / P;
    if (f64)
      bn_stats_kernel<double><<<g, BN_PART_THREADS, 0, s>>>(a, parts, P, chunk);
    else
      bn_stats_kernel<float><<<g, BN_PART_THREADS, 0, s>>>(a, parts, P, chunk);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  bn_merge_kernel<<<ctc_blocks(a.C, dev), CTC_THREADS, 0, s>>>(a, parts, P, coef);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  unsigned g = ctc_blocks(a.N * a.C * a.S, dev);
  if (f64)
    bn_apply_kernel<double><<<g, CTC_THREADS, 0, s>>>(a, coef);
  else
    bn_apply_kernel<float><<<g, CTC_THREADS, 0, s>>>(a, coef);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_batch_norm_backward(ct_tensor *gx_t, ct_tensor *gw_t, ct_tensor *gb_t,
                                                  const ct_tensor *g_t, const ct_tensor *x_t,
                                                  const ct_tensor *weight_t,
                                                  const ct_tensor *save_mean_t,
                                                  const ct_tensor *save_invstd_t, bool training) {
  const ctc_view gx(gx_t), gw(gw_t), gb(gb_t), g(g_t), x(x_t), weight(weight_t),
      save_mean(save_mean_t), save_invstd(save_invstd_t);
  const char *op = "batch_norm_backward";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (!gx && !gw && !gb) return CT_OK;
  bn_args a = bn_init(x);
  if (a.C == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (a.N * a.S == 0) { /* no elements: grad_x is empty, gw and gb empty sums */
    cudaStream_t s = ctc_stream(dev);
    const ctc_t *outs[2] = {gw, gb};
    for (int i = 0; i < 2; i++)
      if (outs[i] && outs[i]->numel > 0)
        CT_CUDA_CHECK(op, dev,
                      cudaMemsetAsync(outs[i]->data, 0,
                                      (size_t)outs[i]->numel * ctc_elsize(outs[i]->dtype), s));
    return CT_OK;
  }
  a.training = training;
  a.g = g->data;
  a.gx = gx ? gx->data : nullptr;
  a.w = mkvec(weight), a.mean = mkvec(save_mean), a.invstd = mkvec(save_invstd);
  a.gw = mkvec(gw), a.gb = mkvec(gb);
  cudaStream_t s = ctc_stream(dev);
  bool f64 = x->dtype == CT_F64;
  if (a.S < COL_MAX_S) return bn_col_backward(op, dev, s, a, f64);
  int64_t M = a.N * a.S, P = bn_parts(M, a.C, dev);
  if (P == 1) {
    unsigned gr = grid_for(a.C, dev), t = bn_threads(M);
    if (f64)
      bn_bwd_kernel<double><<<gr, t, 0, s>>>(a);
    else
      bn_bwd_kernel<float><<<gr, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    return CT_OK;
  }
  ctc_scratch buf(dev);
  double *parts = (double *)buf.get(sizeof(double) * (size_t)(a.C * (2 * P + 4)));
  if (!parts) return ct_last_error();
  double *coef = parts + 2 * a.C * P;
  unsigned gr = grid_for(a.C * P, dev);
  int64_t chunk = (M + P - 1) / P;
  if (f64)
    bn_bwd_sums_kernel<double><<<gr, BN_PART_THREADS, 0, s>>>(a, parts, P, chunk);
  else
    bn_bwd_sums_kernel<float><<<gr, BN_PART_THREADS, 0, s>>>(a, parts, P, chunk);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  bn_bwd_merge_kernel<<<ctc_blocks(a.C, dev), CTC_THREADS, 0, s>>>(a, parts, P, coef);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  if (gx) {
    gr = ctc_blocks(a.N * a.C * a.S, dev);
    if (f64)
      bn_bwd_apply_kernel<double><<<gr, CTC_THREADS, 0, s>>>(a, coef);
    else
      bn_bwd_apply_kernel<float><<<gr, CTC_THREADS, 0, s>>>(a, coef);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return CT_OK;
}

/* ---- Layer norm -------------------------------------------------------------------- */

struct ln_args {
  int64_t rows, cols;
  double eps;
  const char *x, *g;
  char *out, *gx;
  int dt, es;
  vec w, b, mean, rstd, gw, gb;
};

template <class C>
__global__ void ln_fwd_kernel(ln_args a) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const char *x = a.x + r * a.cols * a.es;
    char *o = a.out + r * a.cols * a.es;
    double s = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x)
      s += (double)ctc_load<C>(x + i * a.es, a.dt);
    double mean = block_sum(s, sh) / (double)a.cols;
    double ss = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      double d = (double)ctc_load<C>(x + i * a.es, a.dt) - mean;
      ss += d * d;
    }
    ss = block_sum(ss, sh);
    double rstd = 1.0 / sqrt(ss / (double)a.cols + a.eps);
    if (threadIdx.x == 0) {
      vstore(a.mean, r, mean);
      vstore(a.rstd, r, rstd);
    }
    C m = (C)mean, k = (C)rstd;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      C v = (ctc_load<C>(x + i * a.es, a.dt) - m) * k;
      if (a.w.p) v *= (C)vload(a.w, i, 1.0);
      if (a.b.p) v += (C)vload(a.b, i, 0.0);
      ctc_store<C>(o + i * a.es, a.dt, v);
    }
  }
}

template <class C>
__global__ void ln_bwd_x_kernel(ln_args a) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const char *x = a.x + r * a.cols * a.es, *g = a.g + r * a.cols * a.es;
    char *gx = a.gx + r * a.cols * a.es;
    C m = (C)vload(a.mean, r, 0), k = (C)vload(a.rstd, r, 1);
    double s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      C wg = ctc_load<C>(g + i * a.es, a.dt);
      if (a.w.p) wg *= (C)vload(a.w, i, 1.0);
      s1 += (double)wg;
      s2 += (double)(wg * (ctc_load<C>(x + i * a.es, a.dt) - m) * k);
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    C am = (C)(s1 / (double)a.cols), bm = (C)(s2 / (double)a.cols);
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      C wg = ctc_load<C>(g + i * a.es, a.dt);
      if (a.w.p) wg *= (C)vload(a.w, i, 1.0);
      C xv = ctc_load<C>(x + i * a.es, a.dt);
      ctc_store<C>(gx + i * a.es, a.dt, k * (wg - am - (xv - m) * k * bm));
    }
  }
}

#define LN_TX 32
#define LN_TY 16
/* grad_w / grad_b: a block (32, 16) per 32 columns and range of `chunk` rows;
 * lane y sums rows y, y+16, ... of the range, the 16 lanes merge in order.
 * With one range (R == 1) the block writes grad_w / grad_b; else its sums go
 * to part[k * cols + j] (grad_w) and part[(R + k) * cols + j] (grad_b) for
 * range k, which ln_bwd_w_merge_kernel adds. Consecutive blocks take adjacent
 * tiles of the same rows. */
template <class C>
__global__ void ln_bwd_w_kernel(ln_args a, double *part, int64_t R, int64_t chunk) {
  __shared__ double sw[LN_TY][LN_TX], sb[LN_TY][LN_TX];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t tiles = (a.cols + LN_TX - 1) / LN_TX;
  for (int64_t t = blockIdx.x; t < tiles * R; t += gridDim.x) {
    int64_t k = t / tiles, j = (t - k * tiles) * LN_TX + tx;
    int64_t r1 = (k + 1) * chunk < a.rows ? (k + 1) * chunk : a.rows;
    double accw = 0, accb = 0;
    if (j < a.cols)
      for (int64_t r = k * chunk + ty; r < r1; r += LN_TY) {
        int64_t o = (r * a.cols + j) * a.es;
        C gv = ctc_load<C>(a.g + o, a.dt);
        if (a.gw.p) {
          C m = (C)vload(a.mean, r, 0), rs = (C)vload(a.rstd, r, 1);
          accw += (double)(gv * (ctc_load<C>(a.x + o, a.dt) - m) * rs);
        }
        accb += (double)gv;
      }
    __syncthreads(); /* the previous tile's reads of sw/sb are done */
    sw[ty][tx] = accw;
    sb[ty][tx] = accb;
    __syncthreads();
    if (ty == 0 && j < a.cols) {
      double w = 0, b = 0;
      for (int y = 0; y < LN_TY; y++) w += sw[y][tx], b += sb[y][tx];
      if (R == 1) {
        vstore(a.gw, j, w);
        vstore(a.gb, j, b);
      } else {
        part[k * a.cols + j] = w;
        part[(R + k) * a.cols + j] = b;
      }
    }
  }
}
/* The R ranges' sums of each column, added in order (adjacent threads,
 * adjacent columns). */
__global__ void ln_bwd_w_merge_kernel(ln_args a, const double *part, int64_t R) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < a.cols;
       j += (int64_t)gridDim.x * blockDim.x) {
    double w = 0, b = 0;
    for (int64_t k = 0; k < R; k++) w += part[k * a.cols + j], b += part[(R + k) * a.cols + j];
    vstore(a.gw, j, w);
    vstore(a.gb, j, b);
  }
}
/* Row ranges of grad_w / grad_b: enough blocks for 4 per SM when the column
 * tiles alone are fewer, each range at least LN_MIN_ROWS rows (4 per lane)
 * so that its sums outweigh their merge. */
#define LN_MIN_ROWS 64
static int64_t ln_row_parts(int64_t rows, int64_t tiles, int dev) {
  int64_t want = ((int64_t)ctc_sm_count(dev) * 4 + tiles - 1) / tiles, most = rows / LN_MIN_ROWS;
  int64_t R = want < most ? want : most;
  return R < 1 ? 1 : R;
}

static ln_args ln_init(const ctc_t *x, int64_t cols) {
  ln_args a;
  memset(&a, 0, sizeof a);
  a.cols = cols;
  a.rows = cols > 0 ? x->numel / cols : 0;
  a.x = x->data;
  a.dt = x->dtype;
  a.es = (int)ctc_elsize(x->dtype);
  return a;
}

static unsigned ln_threads(int64_t cols) {
  int64_t t = (cols + 31) / 32 * 32;
  if (t > 256) t = 256;
  return (unsigned)(t < 32 ? 32 : t);
}

extern "C" ct_status ct__cuda_layer_norm(ct_tensor *out_t, ct_tensor *mean_t, ct_tensor *rstd_t,
                                         const ct_tensor *x_t, const ct_tensor *weight_t,
                                         const ct_tensor *bias_t, int64_t cols, double eps) {
  const ctc_view out(out_t), mean(mean_t), rstd(rstd_t), x(x_t), weight(weight_t), bias(bias_t);
  const char *op = "layer_norm";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  ln_args a = ln_init(x, cols);
  if (a.rows == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.eps = eps;
  a.out = out->data;
  a.w = mkvec(weight), a.b = mkvec(bias), a.mean = mkvec(mean), a.rstd = mkvec(rstd);
  cudaStream_t s = ctc_stream(dev);
  unsigned g = grid_for(a.rows, dev), t = ln_threads(cols);
  if (x->dtype == CT_F64)
    ln_fwd_kernel<double><<<g, t, 0, s>>>(a);
  else
    ln_fwd_kernel<float><<<g, t, 0, s>>>(a);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_layer_norm_backward(ct_tensor *gx_t, ct_tensor *gw_t, ct_tensor *gb_t,
                                                  const ct_tensor *g_t, const ct_tensor *x_t,
                                                  const ct_tensor *weight_t,
                                                  const ct_tensor *mean_t, const ct_tensor *rstd_t,
                                                  int64_t cols) {
  const ctc_view gx(gx_t), gw(gw_t), gb(gb_t), g(g_t), x(x_t), weight(weight_t), mean(mean_t),
      rstd(rstd_t);
  const char *op = "layer_norm_backward";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  ln_args a = ln_init(x, cols);
  if (cols <= 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.g = g->data;
  a.gx = gx ? gx->data : nullptr;
  a.w = mkvec(weight), a.mean = mkvec(mean), a.rstd = mkvec(rstd), a.gw = mkvec(gw),
  a.gb = mkvec(gb);
  cudaStream_t s = ctc_stream(dev);
  bool f64 = x->dtype == CT_F64;
  if (gx && a.rows > 0) {
    unsigned gr = grid_for(a.rows, dev), t = ln_threads(cols);
    if (f64)
      ln_bwd_x_kernel<double><<<gr, t, 0, s>>>(a);
    else
      ln_bwd_x_kernel<float><<<gr, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  if (gw || gb) {
    /* rows == 0 gives zeros: the kernel's sums are empty */
    int64_t tiles = (cols + LN_TX - 1) / LN_TX, R = ln_row_parts(a.rows, tiles, dev);
    ctc_scratch buf(dev);
    double *part = nullptr;
    if (R > 1 && !(part = (double *)buf.get(2 * sizeof(double) * (size_t)(R * cols))))
      return ct_last_error();
    unsigned gr = grid_for(tiles * R, dev);
    dim3 t(LN_TX, LN_TY);
    if (f64)
      ln_bwd_w_kernel<double><<<gr, t, 0, s>>>(a, part, R, (a.rows + R - 1) / R);
    else
      ln_bwd_w_kernel<float><<<gr, t, 0, s>>>(a, part, R, (a.rows + R - 1) / R);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    if (R > 1) {
      ln_bwd_w_merge_kernel<<<ctc_blocks(cols, dev), CTC_THREADS, 0, s>>>(a, part, R);
      CT_CUDA_LAUNCH_CHECK(op, dev, s);
    }
  }
  return CT_OK;
}

/* ---- Row norms: group norm, instance norm, RMS norm -------------------------------- */
/* x is p.rows rows of p.channels x p.inner elements (ct_row_norm_params): one
 * block per row for the statistics and grad_x, as layer norm; one block per
 * affine parameter for grad_w / grad_b (its rows' elements, reduced in a fixed
 * order). */

struct rn_args {
  ct_row_norm_params p;
  const char *x, *g;
  char *out, *gx;
  int dt, es;
  vec w, b, mean, rstd, gw, gb;
};

__device__ __forceinline__ int64_t rn_param(const rn_args &a, int64_t r, int64_t i) {
  return (r % a.p.groups) * a.p.channels + i / a.p.inner;
}

template <class C>
__global__ void rn_fwd_kernel(rn_args a) {
  __shared__ double sh[32];
  int64_t cols = a.p.channels * a.p.inner;
  for (int64_t r = blockIdx.x; r < a.p.rows; r += gridDim.x) {
    const char *x = a.x + r * cols * a.es;
    char *o = a.out + r * cols * a.es;
    double mean = 0;
    if (!a.p.rms) {
      double s = 0;
      for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
        s += (double)ctc_load<C>(x + i * a.es, a.dt);
      mean = block_sum(s, sh) / (double)cols;
    }
    double ss = 0;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      double d = (double)ctc_load<C>(x + i * a.es, a.dt) - mean;
      ss += d * d;
    }
    ss = block_sum(ss, sh);
    double rstd = 1.0 / sqrt(ss / (double)cols + a.p.eps);
    if (threadIdx.x == 0) {
      vstore(a.mean, r, mean);
      vstore(a.rstd, r, rstd);
    }
    C m = (C)mean, k = (C)rstd;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      C v = (ctc_load<C>(x + i * a.es, a.dt) - m) * k;
      int64_t j = rn_param(a, r, i);
      if (a.w.p) v *= (C)vload(a.w, j, 1.0);
      if (a.b.p) v += (C)vload(a.b, j, 0.0);
      ctc_store<C>(o + i * a.es, a.dt, v);
    }
  }
}

template <class C>
__global__ void rn_bwd_x_kernel(rn_args a) {
  __shared__ double sh[32];
  int64_t cols = a.p.channels * a.p.inner;
  for (int64_t r = blockIdx.x; r < a.p.rows; r += gridDim.x) {
    const char *x = a.x + r * cols * a.es, *g = a.g + r * cols * a.es;
    char *gx = a.gx + r * cols * a.es;
    C m = a.p.rms ? (C)0 : (C)vload(a.mean, r, 0), k = (C)vload(a.rstd, r, 1);
    double s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      C wg = ctc_load<C>(g + i * a.es, a.dt);
      if (a.w.p) wg *= (C)vload(a.w, rn_param(a, r, i), 1.0);
      s1 += (double)wg;
      s2 += (double)(wg * (ctc_load<C>(x + i * a.es, a.dt) - m) * k);
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    C am = a.p.rms ? (C)0 : (C)(s1 / (double)cols), bm = (C)(s2 / (double)cols);
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      C wg = ctc_load<C>(g + i * a.es, a.dt);
      if (a.w.p) wg *= (C)vload(a.w, rn_param(a, r, i), 1.0);
      C xv = ctc_load<C>(x + i * a.es, a.dt);
      ctc_store<C>(gx + i * a.es, a.dt, k * (wg - am - (xv - m) * k * bm));
    }
  }
}

template <class C>
__global__ void rn_bwd_w_kernel(rn_args a) {
  __shared__ double sh[32];
  int64_t G = a.p.groups, D = a.p.channels, S = a.p.inner, cols = D * S;
  int64_t n_rows = a.p.rows / G, per = n_rows * S;
  for (int64_t j = blockIdx.x; j < G * D; j += gridDim.x) {
    int64_t grp = j / D, d = j - grp * D;
    double sw = 0, sb = 0;
    for (int64_t e = threadIdx.x; e < per; e += blockDim.x) {
      int64_t n = e / S, r = n * G + grp;
      int64_t o = (r * cols + d * S + (e - n * S)) * a.es;
      C gv = ctc_load<C>(a.g + o, a.dt);
      if (a.gw.p) {
        C m = a.p.rms ? (C)0 : (C)vload(a.mean, r, 0), k = (C)vload(a.rstd, r, 1);
        sw += (double)(gv * (ctc_load<C>(a.x + o, a.dt) - m) * k);
      }
      sb += (double)gv;
    }
    sw = block_sum(sw, sh);
    sb = block_sum(sb, sh);
    if (threadIdx.x == 0) {
      vstore(a.gw, j, sw);
      vstore(a.gb, j, sb);
    }
  }
}

/* grad_w (s0) / grad_b (s1) on the column path (inner < COL_MAX_S): x as
 * rows / groups rows of groups * channels * inner columns, column c of row n
 * in row n * groups + c / (channels * inner) of the statistics. */
template <class C>
struct rn_w_op {
  rn_args a;
  __device__ static sum2 zero() { return {0, 0}; }
  __device__ void add(sum2 &p, int64_t n, int64_t c) const {
    int64_t G = a.p.groups, cols = a.p.channels * a.p.inner, r = n * G + c / cols;
    int64_t o = (n * G * cols + c) * a.es;
    C gv = ctc_load<C>(a.g + o, a.dt);
    if (a.gw.p) {
      C m = a.p.rms ? (C)0 : (C)vload(a.mean, r, 0), k = (C)vload(a.rstd, r, 1);
      p.s0 += (double)(gv * (ctc_load<C>(a.x + o, a.dt) - m) * k);
    }
    p.s1 += (double)gv;
  }
  __device__ static sum2 merge(const sum2 &x, const sum2 &y) { return sum2_merge(x, y); }
  __device__ void finish(int64_t j, const sum2 &p) const {
    vstore(a.gw, j, p.s0);
    vstore(a.gb, j, p.s1);
  }
};
static ct_status rn_col_backward_w(const char *op, int dev, cudaStream_t s, const rn_args &a,
                                   bool f64) {
  int64_t rows = a.p.rows / a.p.groups, U = a.p.groups * a.p.channels, W = U * a.p.inner;
  int64_t R = col_ranges(rows, W, dev);
  ctc_scratch buf(dev);
  sum2 *part = (sum2 *)buf.get(sizeof(sum2) * (size_t)(R * W));
  if (!part) return ct_last_error();
  if (f64) return col_reduce(op, dev, s, rn_w_op<double>{a}, part, rows, U, a.p.inner, R);
  return col_reduce(op, dev, s, rn_w_op<float>{a}, part, rows, U, a.p.inner, R);
}

static rn_args rn_init(const ctc_t *x, const ct_row_norm_params *p) {
  rn_args a;
  memset(&a, 0, sizeof a);
  a.p = *p;
  a.x = x->data;
  a.dt = x->dtype;
  a.es = (int)ctc_elsize(x->dtype);
  return a;
}

extern "C" ct_status ct__cuda_row_norm(ct_tensor *out_t, ct_tensor *mean_t, ct_tensor *rstd_t,
                                       const ct_tensor *x_t, const ct_tensor *weight_t,
                                       const ct_tensor *bias_t, const ct_row_norm_params *p) {
  const ctc_view out(out_t), mean(mean_t), rstd(rstd_t), x(x_t), weight(weight_t), bias(bias_t);
  const char *op = "row_norm";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (p->rows == 0 || p->channels * p->inner == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  rn_args a = rn_init(x, p);
  a.out = out->data;
  a.w = mkvec(weight), a.b = mkvec(bias), a.mean = mkvec(mean), a.rstd = mkvec(rstd);
  cudaStream_t s = ctc_stream(dev);
  unsigned g = grid_for(p->rows, dev), t = ln_threads(p->channels * p->inner);
  if (x->dtype == CT_F64)
    rn_fwd_kernel<double><<<g, t, 0, s>>>(a);
  else
    rn_fwd_kernel<float><<<g, t, 0, s>>>(a);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_row_norm_backward(ct_tensor *gx_t, ct_tensor *gw_t, ct_tensor *gb_t,
                                                const ct_tensor *g_t, const ct_tensor *x_t,
                                                const ct_tensor *weight_t, const ct_tensor *mean_t,
                                                const ct_tensor *rstd_t,
                                                const ct_row_norm_params *p) {
  const ctc_view gx(gx_t), gw(gw_t), gb(gb_t), g(g_t), x(x_t), weight(weight_t), mean(mean_t),
      rstd(rstd_t);
  const char *op = "row_norm_backward";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  int64_t cols = p->channels * p->inner, params = p->groups * p->channels;
  if (cols == 0 && params == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  if (cols == 0 || p->rows == 0) { /* an empty input: gw, gb are empty sums (gx is empty) */
    const ctc_t *outs[2] = {gw, gb};
    for (int i = 0; i < 2; i++)
      if (outs[i] && outs[i]->numel > 0)
        CT_CUDA_CHECK(op, dev,
                      cudaMemsetAsync(outs[i]->data, 0,
                                      (size_t)outs[i]->numel * ctc_elsize(outs[i]->dtype), s));
    return CT_OK;
  }
  rn_args a = rn_init(x, p);
  a.g = g->data;
  a.gx = gx ? gx->data : nullptr;
  a.w = mkvec(weight), a.mean = mkvec(mean), a.rstd = mkvec(rstd), a.gw = mkvec(gw),
  a.gb = mkvec(gb);
  bool f64 = x->dtype == CT_F64;
  if (gx && p->rows > 0) {
    unsigned gr = grid_for(p->rows, dev), t = ln_threads(cols);
    if (f64)
      rn_bwd_x_kernel<double><<<gr, t, 0, s>>>(a);
    else
      rn_bwd_x_kernel<float><<<gr, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  if ((gw || gb) && params > 0) {
    if (p->inner < COL_MAX_S) return rn_col_backward_w(op, dev, s, a, f64);
    unsigned gr = grid_for(params, dev), t = ln_threads(p->rows / p->groups * p->inner);
    if (f64)
      rn_bwd_w_kernel<double><<<gr, t, 0, s>>>(a);
    else
      rn_bwd_w_kernel<float><<<gr, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return CT_OK;
}
