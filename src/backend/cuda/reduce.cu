/* CUDA reductions (the backend's `reduce` slot). The geometry, the passes
 * an op runs, their folds and merges and the finish are core/reduce_plan.h's,
 * the CPU's: floating x accumulates in double, integers and bool in int64
 * (sums and products wrap), and the finished value is stored in out's dtype.
 *
 * Geometry: x's dims in memory order split into kept dims (K outputs) and
 * reduced dims (R elements each), size-1 dims dropped and contiguous
 * neighbours merged. Decomposition, per pass:
 *   - when each output's R elements are contiguous in x (full and row
 *     reductions) and the pass is a plain one, the fast path below: typed
 *     16-byte loads, a warp or a block per (output, split);
 *   - thread per output when R is tiny, or when the innermost kept dim is
 *     x's fastest (a column reduction: neighbouring threads read neighbouring
 *     elements) and there are enough outputs to fill the GPU;
 *   - a column reduction with fewer outputs (the innermost kept dim >= 16
 *     wide): a block per 32 neighbouring outputs and split, its warps'
 *     lanes on neighbouring outputs, its 8 warps over the reduced elements;
 *   - otherwise a block (32 threads for R <= 1024, else 256) per (output,
 *     split): threads stride over the reduced elements, then a warp-shuffle
 *     block reduction. With few outputs, R is cut into S splits so the grid
 *     fills the GPU; the partials part[s][k] are merged in a fixed order.
 * The results depend only on the shapes and strides, the GPU's
 * multiprocessor count (which sets S) and, on the fast path, where x's runs
 * start within 16 bytes (which elements the scalar head takes), not on
 * timing: reductions are deterministic (a float sum of a view at another
 * alignment may differ in its last bits). */
#include <math.h>

#include <utility>

#include "backend/cuda/reduce_vec.cuh"
#include "core/reduce_plan.h"

/* The geometry of core/reduce_plan.h (element strides) with the data. */
struct rgeom {
  ct_reduce_geom gm;
  const char *x;
  int xdt, xes;
};

static void rgeom_init(rgeom *g, const ctc_t *x, const bool *mask, const ctc_t *out) {
  static const int64_t zeros[CTC_MAX_DIMS] = {0};
  int64_t eshape[CTC_MAX_DIMS];
  bool k_empty = false, empty = x->numel == 0;
  if (empty) ct_reduce_empty_shape(x->ndim, x->shape, mask, eshape, &k_empty);
  const int64_t *os[1] = {k_empty ? zeros : out->strides}, ounit[1] = {1};
  ct_reduce_geom_init(&g->gm, x->ndim, empty ? eshape : x->shape, empty ? zeros : x->strides, 1,
                      mask, 1, os, ounit);
  g->x = x->data;
  g->xdt = x->dtype;
  g->xes = (int)ctc_elsize(x->dtype);
}

/* Offset in x of output k's first element. */
__device__ __forceinline__ int64_t kept_offset(const rgeom &g, int64_t k) {
  int64_t xo, oo;
  ct_reduce_kept_offsets(&g.gm, k, 0, &xo, &oo);
  return xo;
}

/* NaN-propagating max and min in the lane type of the fast path. */
__device__ __forceinline__ float nanmax(float a, float b) { return ct_nanmaxf(a, b); }
__device__ __forceinline__ double nanmax(double a, double b) { return ct_nanmax(a, b); }
__device__ __forceinline__ float nanmin(float a, float b) { return ct_nanminf(a, b); }
__device__ __forceinline__ double nanmin(double a, double b) { return ct_nanmin(a, b); }

/* Folds the element at p (dtype dt) into a: core/reduce_plan.h's folds. */
__device__ __forceinline__ double upd_d(int pass, double a, const char *p, int dt, double aux, double P) {
  return ct_rpass_fold_f(pass, a, ctc_load<double>(p, dt), aux, P);
}
__device__ __forceinline__ int64_t upd_i(int pass, int64_t a, const char *p, int dt) {
  if (pass == CT_RP_NZ_ALL || pass == CT_RP_NZ_ANY) {
    int64_t nz = ctc_is_half(dt) ? ((*(const uint16_t *)p & 0x7fff) != 0) : ctc_load<double>(p, dt) != 0;
    return ct_rpass_fold_i(pass, a, nz);
  }
  return ct_rpass_fold_i(pass, a, ctc_load<int64_t>(p, dt));
}

struct merge_d {
  int pass;
  __device__ double operator()(double a, double b) const { return ct_rpass_merge_f(pass, a, b); }
};
struct merge_i {
  int pass;
  __device__ int64_t operator()(int64_t a, int64_t b) const { return ct_rpass_merge_i(pass, a, b); }
};

template <class A> __device__ __forceinline__ A init_of(int pass);
template <>
__device__ __forceinline__ double init_of<double>(int pass) {
  return ct_rpass_init_f(pass);
}
template <>
__device__ __forceinline__ int64_t init_of<int64_t>(int pass) {
  return ct_rpass_init_i(pass);
}

template <class A>
__device__ __forceinline__ A upd(int pass, A a, const char *p, int dt, double aux, double P) {
  if constexpr (std::is_integral<A>::value) return upd_i(pass, a, p, dt);
  else return upd_d(pass, a, p, dt, aux, P);
}
template <class A> struct merge_of { typedef merge_d type; };
template <> struct merge_of<int64_t> { typedef merge_i type; };

/* Block per (output, split) task; part[s * K + k]. */
template <class A>
__global__ void reduce_block_kernel(rgeom g, int pass, const double *aux, double P, A *part, int64_t S) {
  __shared__ A shared[32];
  typename merge_of<A>::type merge{pass};
  int64_t tasks = g.gm.K * S;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    int64_t k = t / S, s = t - k * S;
    int64_t xo = kept_offset(g, k);
    int64_t r0 = g.gm.R * s / S, r1 = g.gm.R * (s + 1) / S;
    double ax = aux ? aux[k] : 0.0;
    A acc = init_of<A>(pass);
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x)
      acc = upd<A>(pass, acc, g.x + (xo + ct_reduce_offset(&g.gm, r)) * g.xes, g.xdt, ax, P);
    acc = ctc_block_reduce(acc, merge, init_of<A>(pass), shared);
    if (threadIdx.x == 0) part[s * g.gm.K + k] = acc;
  }
}

/* Thread per output; part[k]. */
template <class A>
__global__ void reduce_thread_kernel(rgeom g, int pass, const double *aux, double P, A *part) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < g.gm.K; k += stride) {
    int64_t xo = kept_offset(g, k);
    double ax = aux ? aux[k] : 0.0;
    A acc = init_of<A>(pass);
    for (int64_t r = 0; r < g.gm.R; r++)
      acc = upd<A>(pass, acc, g.x + (xo + ct_reduce_offset(&g.gm, r)) * g.xes, g.xdt, ax, P);
    part[k] = acc;
  }
}

/* Column reductions with too few outputs for a thread each: a block of
 * (32, COL_TY) threads per 32 consecutive outputs and split s of the reduced
 * elements. The 32 lanes of a warp take 32 neighbouring outputs, whose
 * elements are neighbours in memory (one load instruction, few sectors),
 * where the block kernel's lanes would read elements a row apart; the
 * COL_TY rows of threads stride over the split and merge in order.
 * part[s * K + k]; consecutive blocks take neighbouring tiles of one split. */
#define COL_TY 8
template <class A>
__global__ void reduce_column_kernel(rgeom g, int pass, const double *aux, double P, A *part, int64_t S) {
  __shared__ A sh[COL_TY][32];
  typename merge_of<A>::type merge{pass};
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t tiles = (g.gm.K + 31) / 32;
  for (int64_t t = blockIdx.x; t < tiles * S; t += gridDim.x) {
    int64_t s = t / tiles, k = (t - s * tiles) * 32 + tx;
    int64_t r0 = g.gm.R * s / S, r1 = g.gm.R * (s + 1) / S;
    A acc = init_of<A>(pass);
    if (k < g.gm.K) {
      int64_t xo = kept_offset(g, k);
      double ax = aux ? aux[k] : 0.0;
      for (int64_t r = r0 + ty; r < r1; r += COL_TY)
        acc = upd<A>(pass, acc, g.x + (xo + ct_reduce_offset(&g.gm, r)) * g.xes, g.xdt, ax, P);
    }
    __syncthreads(); /* the previous tile's reads of sh are done */
    sh[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && k < g.gm.K) {
      for (int y = 1; y < COL_TY; y++) acc = merge(acc, sh[y][tx]);
      part[s * g.gm.K + k] = acc;
    }
  }
}

/* res[k] = merge of part[s][k] over s in order (S > 1), or init when R == 0. */
template <class A> __global__ void merge_kernel(int pass, const A *part, int64_t S, int64_t K, A *res, bool empty) {
  typename merge_of<A>::type merge{pass};
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < K; k += stride) {
    if (empty) {
      res[k] = init_of<A>(pass);
      continue;
    }
    A a = part[k];
    for (int64_t s = 1; s < S; s++) a = merge(a, part[s * K + k]);
    res[k] = a;
  }
}

/* res[k] = merge of part[s][k] over s, for many pieces per output (a full
 * reduction's): a block per output, threads striding over s, then a block
 * reduction (a fixed tree: deterministic). One thread folding ~800 partials
 * in a serial loop is latency-bound: up to tens of microseconds next to a
 * ~300 us pass over 1 GiB. */
template <class A>
__global__ void merge_wide_kernel(int pass, const A *part, int64_t S, int64_t K, A *res) {
  __shared__ A shared[32];
  typename merge_of<A>::type merge{pass};
  for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    A a = init_of<A>(pass);
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) a = merge(a, part[s * K + k]);
    a = ctc_block_reduce(a, merge, init_of<A>(pass), shared);
    if (threadIdx.x == 0) res[k] = a;
  }
}

#define MERGE_WIDE_MIN_S 64

/* res[k] = merge of the S > 1 pieces part[s][k]. */
template <class A>
static ct_status merge_parts(const char *name, int dev, int pass, const A *part, int64_t S,
                             int64_t K, A *res) {
  cudaStream_t st = ctc_stream(dev);
  if (S >= MERGE_WIDE_MIN_S) {
    int64_t cap = (int64_t)ctc_sm_count(dev) * 8;
    merge_wide_kernel<A>
        <<<(unsigned)(K < cap ? K : cap), CTC_THREADS, 0, st>>>(pass, part, S, K, res);
  } else {
    merge_kernel<A><<<ctc_blocks(K, dev), CTC_THREADS, 0, st>>>(pass, part, S, K, res, false);
  }
  CT_CUDA_LAUNCH_CHECK(name, dev, st);
  return CT_OK;
}

/* ---- Fast path: each output's reduced elements contiguous --------------------------------- *
 * When g.gm.nr == 1 && g.gm.rx[0] == 1 (full reductions of contiguous data; row
 * reductions over the innermost dims) output k reduces the run
 * x[xo(k), xo(k) + R). A task (k, s) folds the s-th of S contiguous pieces of
 * that run. A team folds one task: a warp for short runs (8 tasks per block,
 * no __syncthreads), else the block, each of its warps folding one
 * contiguous eighth of the piece. In a warp, each lane keeps FAST_UNROLL
 * 16-byte loads in flight (rv_ldg; scalar head and tail) and FAST_NACC
 * independent accumulators, with the dtype and the pass template parameters:
 * the loop body is loads, conversions and adds, no per-element switch or
 * offset arithmetic. The team's values then meet in a warp-shuffle (block)
 * reduction and the pieces in merge_parts, in a fixed order. S depends on the
 * shapes and the SM count only, and a task's value on its run's start
 * within 16 bytes but not on which team ran it: results are deterministic.
 *
 * Why it reaches bandwidth: FAST_BPS blocks of 256 threads per SM with 4 x 16
 * bytes in flight each are 96 KiB per SM, well above the ~30 KiB per SM that
 * HBM3 needs (bandwidth x latency / SMs); the generic kernel had ~1000
 * threads per SM with one 4-byte load each behind one dependent accumulator.
 *
 * Accumulators: sums of floating x stay in double, as on the generic path and
 * the CPU (f64 accumulators): at full HBM3 bandwidth the f32->f64 conversions
 * take about a third of the H100's f64-conversion rate and the DADDs less, so
 * double is not the bottleneck and keeps results close to the CPU's.
 * Max/min-like passes are exact in any precision: they compare in the lane
 * type (float for f32/f16/bf16) and widen once per thread. */
#define FAST_THREADS 256
#define FAST_NACC 4 /* independent accumulators per thread */

/* 16-byte loads in flight per thread, and the resident blocks per SM that
 * the launch bound asks for and the grid plans with: 6 x 256 threads leave
 * 40 registers, which 4 loads in flight and 4 double accumulators fit with
 * no spill (96 KiB in flight per SM). */
#define FAST_UNROLL 4
#define FAST_BPS 6

/* How pass P folds a lane value v (type L, rv_dt::lane) into an accumulator:
 * core/reduce_plan.h's folds (P a constant: the switch disappears), except
 * that max/min-like passes compare in the lane type, exact in any precision. */
template <int P, class L>
struct fold_rule {
  static constexpr bool cmp =
      P == CT_RP_F_MAX || P == CT_RP_F_MIN || P == CT_RP_F_ABS_MAX || P == CT_RP_F_ABS_MIN;
  typedef std::conditional_t<ct_rpass_is_int(P), int64_t, std::conditional_t<cmp, L, double>> acc;

  static __device__ __forceinline__ acc init() {
    if constexpr (ct_rpass_is_int(P))
      return ct_rpass_init_i(P);
    else
      return (acc)ct_rpass_init_f(P);
  }
  static __device__ __forceinline__ acc fold(acc a, L v, double aux) {
    if constexpr (P == CT_RP_F_MAX)
      return nanmax(a, v);
    else if constexpr (P == CT_RP_F_MIN)
      return nanmin(a, v);
    else if constexpr (P == CT_RP_F_ABS_MAX)
      return nanmax(a, (L)fabs(v));
    else if constexpr (P == CT_RP_F_ABS_MIN)
      return nanmin(a, (L)fabs(v));
    else if constexpr (P == CT_RP_NZ_ALL || P == CT_RP_NZ_ANY)
      return ct_rpass_fold_i(P, a, (int64_t)(v != 0));
    else if constexpr (ct_rpass_is_int(P))
      return ct_rpass_fold_i(P, a, (int64_t)v);
    else
      return ct_rpass_fold_f(P, a, (double)v, aux, 0.0);
  }
  static __device__ __forceinline__ acc merge(acc a, acc b) {
    if constexpr (P == CT_RP_F_MAX || P == CT_RP_F_ABS_MAX)
      return nanmax(a, b);
    else if constexpr (P == CT_RP_F_MIN || P == CT_RP_F_ABS_MIN)
      return nanmin(a, b);
    else if constexpr (ct_rpass_is_int(P))
      return ct_rpass_merge_i(P, a, b);
    else
      return ct_rpass_merge_f(P, a, b);
  }
};

/* Which (dtype, pass) pairs have a fast kernel. Not: the f64 exp of
 * logsumexp's second pass, the divisions and pows of the scaled and power
 * sums (norms other than 1, 2, inf), which are compute-bound and need more
 * registers than the launch bound leaves, nor the rare count of nonzeros
 * (norm 0). */
template <int DT, int P>
constexpr bool fast_ok() {
  if (P == CT_RP_NZ_ALL || P == CT_RP_NZ_ANY) return true;
  if (DT == CT_F32 || DT == CT_F64 || DT == CT_F16 || DT == CT_BF16)
    return P <= CT_RP_F_DEV_SQ_SUM && P != CT_RP_F_EXP_SUM && P != CT_RP_F_NONZERO;
  return ct_rpass_is_int(P);
}

/* Folds the vector r (elements e0.. of this thread's stream) into a. */
template <class D, class F>
__device__ __forceinline__ void fold_vec(typename F::acc (&a)[FAST_NACC],
                                         const rv_vec<typename D::raw> &r, double aux) {
#pragma unroll
  for (int j = 0; j < rv_vec<typename D::raw>::N; j++)
    a[j % FAST_NACC] = F::fold(a[j % FAST_NACC], D::get(r.v[j]), aux);
}

/* This lane's share of the run [p, p + n) folded by its warp: lane l takes
 * vectors l, l + 32, ... (each load instruction of the warp reads 512
 * contiguous bytes; the stride is a constant, so the FAST_UNROLL loads share
 * one address register). */
template <class D, class F>
__device__ __forceinline__ typename F::acc warp_fold(const typename D::raw *p, int64_t n, int lane,
                                                     double aux) {
  typedef typename D::raw T;
  typedef rv_vec<T> V;
  typename F::acc a[FAST_NACC];
#pragma unroll
  for (int j = 0; j < FAST_NACC; j++) a[j] = F::init();
  /* the scalar head and tail first: p and n are then dead in the loop */
  int64_t head = rv_head(p, n); /* < V::N <= 32 */
  const V *v = reinterpret_cast<const V *>(p + head), *end = v + (n - head) / V::N;
  if (lane < head) a[0] = F::fold(a[0], D::get(p[lane]), aux);
  const T *tail = reinterpret_cast<const T *>(end); /* fewer than V::N elements */
  if (lane < p + n - tail) a[1 % FAST_NACC] = F::fold(a[1 % FAST_NACC], D::get(tail[lane]), aux);
  v += lane;
#pragma unroll 1 /* the loads of one iteration are the ones in flight */
  for (; v + (FAST_UNROLL - 1) * 32 < end; v += FAST_UNROLL * 32) {
    V r[FAST_UNROLL]; /* all loads first */
#pragma unroll
    for (int u = 0; u < FAST_UNROLL; u++) r[u] = rv_ldg(v + u * 32);
#pragma unroll
    for (int u = 0; u < FAST_UNROLL; u++) fold_vec<D, F>(a, r[u], aux);
  }
#pragma unroll 1
  for (; v < end; v += 32) fold_vec<D, F>(a, rv_ldg(v), aux);
#pragma unroll
  for (int j = 1; j < FAST_NACC; j++) a[0] = F::merge(a[0], a[j]);
  return a[0];
}

/* Task (k, s) -> part[s * K + k] for k < K, s < S. With warp_teams a warp
 * folds a task; else the block does, each warp folding one contiguous
 * eighth of the piece (so the warps' loops are the same code). */
template <int DT, int P>
__global__ void __launch_bounds__(FAST_THREADS, FAST_BPS)
    reduce_fast_kernel(rgeom g, const double *aux,
                       std::conditional_t<ct_rpass_is_int(P), int64_t, double> *part, int64_t S,
                       bool warp_teams) {
  typedef rv_dt<DT> D;
  typedef fold_rule<P, typename D::lane> F;
  typedef std::conditional_t<ct_rpass_is_int(P), int64_t, double> A;
  __shared__ A shared[32];
  typename merge_of<A>::type merge{P};
  int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, nwarps = (int)blockDim.x >> 5;
  int64_t team = warp_teams ? (int64_t)blockIdx.x * nwarps + warp : blockIdx.x;
  int64_t nteams = warp_teams ? (int64_t)gridDim.x * nwarps : gridDim.x;
  int nsub = warp_teams ? 1 : nwarps, sub = warp_teams ? 0 : warp;
  for (int64_t t = team; t < g.gm.K * S; t += nteams) {
    /* no 64-bit divisions in the common cases: one piece, one kept dim */
    int64_t k = S == 1 ? t : t / S, s = t - k * S, xo;
    if (g.gm.nk <= 1)
      xo = g.gm.nk ? k * g.gm.kx[0] : 0;
    else
      xo = kept_offset(g, k);
    int64_t r0 = S == 1 ? 0 : g.gm.R * s / S, len = S == 1 ? g.gm.R : g.gm.R * (s + 1) / S - r0;
    int64_t w0 = r0 + len * sub / nsub, w1 = r0 + len * (sub + 1) / nsub;
    const typename D::raw *p = reinterpret_cast<const typename D::raw *>(g.x) + xo + w0;
    A *dst = part + s * g.gm.K + k;
    A v = (A)warp_fold<D, F>(p, w1 - w0, lane, aux ? aux[k] : 0.0);
    if (warp_teams) v = ctc_warp_reduce(v, merge);
    else v = ctc_block_reduce(v, merge, init_of<A>(P), shared);
    if (warp_teams ? lane == 0 : threadIdx.x == 0) *dst = v;
  }
}

/* The fast kernel's decomposition for g. */
struct fast_plan {
  bool warp_teams;
  int64_t S;
  unsigned blocks;
};

static fast_plan plan_fast(const rgeom &g, int nsm) {
  fast_plan f;
  int64_t vec = 16 / g.xes, warp_step = 32 * vec * FAST_UNROLL; /* elements per warp iteration */
  f.warp_teams = g.gm.R <= 8 * warp_step;
  int64_t ts = f.warp_teams ? 32 : FAST_THREADS, per_block = FAST_THREADS / ts;
  /* at most one wave of teams, each task at least two loop iterations. Not
   * rounded up: K * S just over the wave (K = 10 on 792 teams: 800 tasks)
   * leaves a second round of a few equal tasks, doubling the time. */
  int64_t wave = (int64_t)nsm * FAST_BPS * per_block, piece = 2 * ts * vec * FAST_UNROLL;
  int64_t want = wave / g.gm.K, most = (g.gm.R + piece - 1) / piece;
  f.S = want < most ? want : most;
  if (f.S < 1) f.S = 1;
  int64_t blocks = (g.gm.K * f.S + per_block - 1) / per_block, cap = (int64_t)nsm * FAST_BPS;
  f.blocks = (unsigned)(blocks < cap ? blocks : cap);
  return f;
}

typedef void (*fast_launch_fn)(const rgeom &g, const double *aux, void *part, const fast_plan &f,
                               cudaStream_t st);

template <int DT, int P>
static void fast_launch(const rgeom &g, const double *aux, void *part, const fast_plan &f,
                        cudaStream_t st) {
  typedef std::conditional_t<ct_rpass_is_int(P), int64_t, double> A;
  reduce_fast_kernel<DT, P>
      <<<f.blocks, FAST_THREADS, 0, st>>>(g, aux, (A *)part, f.S, f.warp_teams);
}

template <int DT, int P>
static fast_launch_fn fast_fn() {
  if constexpr (fast_ok<DT, P>()) return fast_launch<DT, P>;
  else return nullptr;
}

/* fast_fn<DT, P> for every (dtype, pass), NULL where there is none. */
template <int DT, int... P>
static fast_launch_fn fast_fn_pass(int pass, std::integer_sequence<int, P...>) {
  static const fast_launch_fn by_pass[] = {fast_fn<DT, P>()...};
  return by_pass[pass];
}
template <int... DT>
static fast_launch_fn fast_fn_dtype(int dt, int pass, std::integer_sequence<int, DT...>) {
  typedef fast_launch_fn (*pick_fn)(int, std::make_integer_sequence<int, CT_RP_COUNT>);
  static const pick_fn by_dtype[] = {fast_fn_pass<DT>...};
  return by_dtype[dt](pass, std::make_integer_sequence<int, CT_RP_COUNT>());
}

/* The fast launcher for pass over g, or NULL when g or the pair doesn't fit. */
static fast_launch_fn fast_fn_for(const rgeom &g, int pass) {
  if (g.gm.nr != 1 || g.gm.rx[0] != 1 || (uintptr_t)g.x % (uintptr_t)g.xes != 0) return nullptr;
  return fast_fn_dtype(g.xdt, pass, std::make_integer_sequence<int, CT_DTYPE_COUNT>());
}

/* Runs one pass into res[K] (device). */
template <class A>
static ct_status run_pass(const char *name, int dev, const rgeom &g, int pass, const double *aux,
                          double P, A *res) {
  cudaStream_t st = ctc_stream(dev);
  int nsm = ctc_sm_count(dev);
  if (g.gm.R == 0) {
    merge_kernel<A>
        <<<ctc_blocks(g.gm.K, dev), CTC_THREADS, 0, st>>>(pass, res, 1, g.gm.K, res, true);
    CT_CUDA_LAUNCH_CHECK(name, dev, st);
    return CT_OK;
  }
  ctc_scratch partbuf(dev);
  A *part = res;
  fast_launch_fn fast = g.gm.R > 32 ? fast_fn_for(g, pass) : nullptr;
  if (fast) {
    fast_plan f = plan_fast(g, nsm);
    if (f.S > 1 && !(part = (A *)partbuf.get(sizeof(A) * (size_t)(f.S * g.gm.K))))
      return ct_last_error();
    fast(g, aux, part, f, st);
    CT_CUDA_LAUNCH_CHECK(name, dev, st);
    return f.S > 1 ? merge_parts<A>(name, dev, pass, part, f.S, g.gm.K, res) : CT_OK;
  }
  if (g.gm.R <= 32 || (g.gm.column && g.gm.K >= (int64_t)nsm * 256 && g.gm.R <= 65536)) {
    reduce_thread_kernel<A><<<ctc_blocks(g.gm.K, dev), CTC_THREADS, 0, st>>>(g, pass, aux, P, res);
    CT_CUDA_LAUNCH_CHECK(name, dev, st);
    return CT_OK;
  }
  if (g.gm.column && g.gm.kshape[g.gm.nk - 1] >= 16) {
    /* S splits: 4 blocks per SM when the tiles are fewer, >= 16 elements per thread */
    int64_t tiles = (g.gm.K + 31) / 32, want = (4 * (int64_t)nsm + tiles - 1) / tiles,
            most = g.gm.R / (COL_TY * 16);
    int64_t S = want < most ? want : most;
    if (S < 1) S = 1;
    if (S > 1 && !(part = (A *)partbuf.get(sizeof(A) * (size_t)(S * g.gm.K)))) return ct_last_error();
    int64_t cap = (int64_t)nsm * 32;
    unsigned blocks = (unsigned)(tiles * S < cap ? tiles * S : cap);
    reduce_column_kernel<A><<<blocks, dim3(32, COL_TY), 0, st>>>(g, pass, aux, P, part, S);
    CT_CUDA_LAUNCH_CHECK(name, dev, st);
    return S > 1 ? merge_parts<A>(name, dev, pass, part, S, g.gm.K, res) : CT_OK;
  }
  int threads = g.gm.R <= 1024 ? 32 : 256;
  int64_t S = 1;
  if (g.gm.K < 2 * (int64_t)nsm) {
    int64_t want = (4 * (int64_t)nsm + g.gm.K - 1) / g.gm.K, most = (g.gm.R + 16383) / 16384;
    S = want < most ? want : most;
    if (S < 1) S = 1;
  }
  if (S > 1 && !(part = (A *)partbuf.get(sizeof(A) * (size_t)(S * g.gm.K)))) return ct_last_error();
  int64_t tasks = g.gm.K * S, cap = (int64_t)nsm * 32;
  unsigned blocks = (unsigned)(tasks < cap ? tasks : cap);
  reduce_block_kernel<A><<<blocks, threads, 0, st>>>(g, pass, aux, P, part, S);
  CT_CUDA_LAUNCH_CHECK(name, dev, st);
  return S > 1 ? merge_parts<A>(name, dev, pass, part, S, g.gm.K, res) : CT_OK;
}

/* ---- Aux and finishing: core/reduce_plan.h ---------------------------------------------- */

__global__ void aux_kernel(ct_reduce_op op, const double *a1, int64_t K, int64_t R, double *aux) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < K; k += stride)
    aux[k] = ct_reduce_aux(op, a1[k], R);
}

/* out[k] = finished value of (a1, a2, aux). */
template <class A>
__global__ void store_kernel(rgeom g, ct_reduce_op op, ct_reduce_plan pl, const A *a1,
                             const double *a2, const double *aux, double p, char *out, int odt) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int oes = (int)ctc_elsize(odt);
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < g.gm.K; k += stride) {
    int64_t xo, oo;
    ct_reduce_kept_offsets(&g.gm, k, 0, &xo, &oo);
    char *p0 = out + oo * oes;
    if constexpr (std::is_integral<A>::value) {
      ctc_store<int64_t>(p0, odt, a1[k]);
    } else {
      double v = ct_reduce_finish(op, &pl, a1[k], a2 ? a2[k] : 0.0, aux ? aux[k] : 0.0, g.gm.R, p);
      ctc_store<double>(p0, odt, v);
    }
  }
}

extern "C" ct_status ct__cuda_reduce(ct_reduce_op op, ct_tensor *out_t, const ct_tensor *x_t,
                                     const bool *mask, double p) {
  const ctc_view out(out_t), x(x_t);
  int dev = out->device;
  const char *name = ct__reduce_names[op];
  rgeom g;
  rgeom_init(&g, x, mask, out);
  if (g.gm.K == 0) return CT_OK;
  ct_reduce_plan pl = ct_reduce_plan_of(op, ctc_is_float(x->dtype), x->dtype == CT_F64, p);
  if (pl.npass == 0) return ct__fail_status(CT_ERR_INTERNAL, "%s: unknown reduction", name);
  ct_status st = ctc_use_device(name, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  unsigned blocks = ctc_blocks(g.gm.K, dev);
  ctc_scratch buf(dev);
  /* a1[K] (8 bytes each), then a2[K] and aux[K] for two-pass ops */
  char *mem = (char *)buf.get((size_t)g.gm.K * 8 * (pl.npass == 2 ? 3 : 1));
  if (!mem) return ct_last_error();
  if (ct_rpass_is_int(pl.pass[0])) {
    int64_t *a1 = (int64_t *)mem;
    if ((st = run_pass<int64_t>(name, dev, g, pl.pass[0], nullptr, p, a1)) != CT_OK) return st;
    store_kernel<int64_t>
        <<<blocks, CTC_THREADS, 0, s>>>(g, op, pl, a1, nullptr, nullptr, p, out->data, out->dtype);
    CT_CUDA_LAUNCH_CHECK(name, dev, s);
    return CT_OK;
  }
  double *a1 = (double *)mem, *a2 = nullptr, *aux = nullptr;
  if ((st = run_pass<double>(name, dev, g, pl.pass[0], nullptr, p, a1)) != CT_OK) return st;
  if (pl.npass == 2) {
    a2 = a1 + g.gm.K;
    aux = a2 + g.gm.K;
    aux_kernel<<<blocks, CTC_THREADS, 0, s>>>(op, a1, g.gm.K, g.gm.R, aux);
    CT_CUDA_LAUNCH_CHECK(name, dev, s);
    if ((st = run_pass<double>(name, dev, g, pl.pass[1], aux, p, a2)) != CT_OK) return st;
  }
  store_kernel<double>
      <<<blocks, CTC_THREADS, 0, s>>>(g, op, pl, a1, a2, aux, p, out->data, out->dtype);
  CT_CUDA_LAUNCH_CHECK(name, dev, s);
  return CT_OK;
}
