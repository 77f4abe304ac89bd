/* CUDA scaled dot-product attention on the tensor cores: the score and
 * weight products as batched cuBLAS GEMMs (ct__cuda_gemm, matmul.cu: f16/bf16
 * in with f32 accumulate, f32 under the TF32 setting, f64 in f64) and one
 * fused, coalesced row kernel (a warp per row) between them. Same semantics
 * as the fused kernels of attention.cu (core/sdpa_math.h: mask layout,
 * causal triangle, dropout stream), which remain for the shapes this path
 * does not take.
 *
 * Per chunk of problems (row-major, a problem's S (L, S) materialized):
 *  - forward: S = Q K^T (f32; f64 for f64); a warp per row scales, masks,
 *    finds max and sum in f32 and writes P = exp(s - lse) (dropped, in the
 *    storage dtype) and the row's lse; O = P V.
 *  - backward: S = Q K^T and dP = dO V^T (f32); a warp per row computes
 *    D = dO . O, P = exp(s - lse), and writes the dropped weights Pd = P F
 *    and dS = scale P (F dP - D) in the storage dtype; then dV = Pd^T dO,
 *    dQ = dS K, dK = dS^T Q.
 * f32 and f64 write P (and dS) over S (and dP) in place: each element is
 * read and then written by one thread. Halves write them to buffers of
 * their own, as the GEMMs take one dtype for both operands.
 *
 * Scratch: chunks of problems so that it stays under SDPA_SCRATCH bytes
 * (256 MiB; CT_CUDA_SDPA_SCRATCH in the environment overrides it, so tests
 * can make small shapes chunk). A problem alone larger than 4 times that
 * (1 GiB; L = S = T: bf16 T > 13377 forward, T > 9459 backward) goes to the
 * fused kernels, as do shapes without queries, keys or features (L, S, E or
 * Ev = 0) and dims beyond cuBLAS's int range. */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/attention_gemm.cuh"
#include "backend/cuda/gemm.cuh"
#include "core/sdpa_math.h"

#define SDPA_SCRATCH ((size_t)256 << 20)
#define SDPA_ROW_THREADS 256 /* 8 rows a block */

/* The scratch budget in bytes (the environment may lower or raise it). */
static size_t scratch_budget(void) {
  const char *v = getenv("CT_CUDA_SDPA_SCRATCH");
  if (!v || !*v) return SDPA_SCRATCH;
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  return *end == '\0' && n > 0 ? (size_t)n : SDPA_SCRATCH;
}

/* Scratch bytes per problem: one (or, backward, two) (L, S) accumulator
 * buffers, and as many in the storage dtype for halves. */
static size_t problem_bytes(const ct_sdpa_params *p, int dtype, bool backward) {
  size_t acc = dtype == CT_F64 ? 8 : 4, es = ctc_elsize(dtype);
  size_t per = acc + (es == acc ? 0 : es);
  return (size_t)(p->L * p->S) * per * (backward ? 2 : 1);
}

bool ct__cuda_sdpa_gemm_fits(const ct_sdpa_params *p, int dtype, bool backward) {
  if (p->S == 0 || p->E == 0 || p->Ev == 0 || p->L == 0) return false;
  if (p->L > INT32_MAX || p->S > INT32_MAX || p->E > INT32_MAX || p->Ev > INT32_MAX) return false;
  if (p->L * p->S > ((int64_t)1 << 40)) return false; /* beyond any budget; no size_t overflow */
  return problem_bytes(p, dtype, backward) <= 4 * scratch_budget();
}

/* Problems per chunk: as many as the budget holds, at least one. */
static int64_t chunk_problems(const ct_sdpa_params *p, int dtype, bool backward) {
  int64_t n = (int64_t)(scratch_budget() / problem_bytes(p, dtype, backward));
  if (n < 1) n = 1;
  if (n > INT32_MAX) n = INT32_MAX;
  return n < p->BH ? n : p->BH;
}

/* Blocks for a warp per row, grid-strided beyond 64 per multiprocessor. */
static unsigned row_blocks(int64_t rows, int dev) {
  int64_t blocks = (rows + SDPA_ROW_THREADS / 32 - 1) / (SDPA_ROW_THREADS / 32);
  int64_t cap = (int64_t)ctc_sm_count(dev) * 64;
  return (unsigned)(blocks < cap ? blocks : cap);
}

/* Row-major c (M, N) = op(a) (M, K) op(b) (K, N) for `batch` problems, a
 * stored (M, K) or, transposed, (K, M) (ld: its row length), b likewise;
 * c's dtype is cdt. As column-major: c^T = op(b)^T op(a)^T. */
struct rm_operand {
  const void *p;
  bool trans;
  int64_t ld, stride;
};
static ct_status rm_gemm(const char *op, int dev, int64_t M, int64_t N, int64_t K, rm_operand a,
                         rm_operand b, void *c, int64_t ldc, int64_t sc, int64_t batch, int dt,
                         int cdt) {
  ctc_gemm g = {};
  g.ta = b.trans, g.tb = a.trans;
  g.m = N, g.n = M, g.k = K;
  g.a = b.p, g.lda = b.ld, g.sa = b.stride;
  g.b = a.p, g.ldb = a.ld, g.sb = a.stride;
  g.c = c, g.ldc = ldc, g.sc = sc;
  g.batch = batch, g.ab_dtype = dt, g.c_dtype = cdt;
  g.alpha = 1, g.beta = 0;
  return ct__cuda_gemm(op, dev, &g);
}

/* The arguments of the row kernels for a chunk of problems b0.. . */
struct row_args {
  ct_sdpa_params p;
  int64_t b0, rows; /* first problem, rows in the chunk (problems x L) */
  const char *mask, *g, *o;
  void *s, *dp;  /* scores, dP: the accumulator type */
  char *pw, *ds; /* dropped weights, dS: the storage type */
  char *lse;     /* (BH, L), the accumulator type */
};

/* Scaled, masked and hidden score of (b, i, j) from the product x. */
template <class T, class A>
__device__ __forceinline__ A row_score(const row_args &a, int64_t b, int64_t i, int64_t j, A x) {
  const ct_sdpa_params &p = a.p;
  A s = x * (A)p.scale;
  if (a.mask) s += ctc_in<A>(((const T *)a.mask)[ct_sdpa_mask_offset(&p, b, i, j)]);
  return ct_sdpa_hidden(&p, i, j) ? (A)-INFINITY : s;
}

template <class A>
__device__ __forceinline__ A row_drop(const ct_sdpa_params &p, int64_t b, int64_t i, int64_t j) {
  if (p.dropout_p <= 0) return (A)1;
  return ct_sdpa_keep(&p, b, i, j) ? (A)ct_sdpa_keep_scale(&p) : (A)0;
}

template <class A>
__device__ __forceinline__ A row_exp(A x) {
  return exp(x);
}
template <>
__device__ __forceinline__ float row_exp<float>(float x) {
  return expf(x);
}

struct max_op {
  template <class A>
  __device__ A operator()(A x, A y) const {
    return y > x ? y : x;
  }
};
struct add_op {
  template <class A>
  __device__ A operator()(A x, A y) const {
    return x + y;
  }
};

/* v merged over the warp, the result in every lane. */
template <class A, class M>
__device__ __forceinline__ A warp_all(A v, M merge) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = merge(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* Forward, a warp per row: lse = max + log sum exp(s - max) over the row
 * (each lane an online max and sum over its elements, then merged), and the
 * weights exp(s - lse) times the dropout factor. A row whose keys are all
 * masked gets lse -inf and nan weights (hence a nan output, as the fused
 * kernels and the CPU). */
template <class T, class A>
__global__ void __launch_bounds__(SDPA_ROW_THREADS) sdpa_row_softmax_kernel(row_args a) {
  const ct_sdpa_params &p = a.p;
  int lane = threadIdx.x & 31, warps = SDPA_ROW_THREADS / 32;
  for (int64_t r = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); r < a.rows;
       r += (int64_t)gridDim.x * warps) {
    int64_t b = a.b0 + r / p.L, i = r % p.L;
    const A *s = (const A *)a.s + r * p.S;
    A m = (A)-INFINITY, l = 0;
    for (int64_t j = lane; j < p.S; j += 32) {
      A x = row_score<T, A>(a, b, i, j, s[j]);
      if (x == (A)-INFINITY) continue;
      if (x > m)
        l = l * row_exp<A>(m - x) + 1, m = x;
      else
        l += row_exp<A>(x - m);
    }
    A mr = warp_all(m, max_op());
    A lr = warp_all(m == (A)-INFINITY ? (A)0 : l * row_exp<A>(m - mr), add_op());
    A lse = lr > 0 ? mr + log(lr) : (A)-INFINITY;
    if (lane == 0) ((A *)a.lse)[b * p.L + i] = lse;
    T *w = (T *)a.pw + r * p.S;
    for (int64_t j = lane; j < p.S; j += 32) {
      A x = row_score<T, A>(a, b, i, j, s[j]);
      w[j] = ctc_out<T>(row_exp<A>(x - lse) * row_drop<A>(p, b, i, j));
    }
  }
}

/* Backward, a warp per row: D = dO . O, P = exp(s - lse), then the dropped
 * weights P F and dS = scale P (F dP - D). */
template <class T, class A>
__global__ void __launch_bounds__(SDPA_ROW_THREADS) sdpa_row_grad_kernel(row_args a) {
  const ct_sdpa_params &p = a.p;
  int lane = threadIdx.x & 31, warps = SDPA_ROW_THREADS / 32;
  for (int64_t r = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); r < a.rows;
       r += (int64_t)gridDim.x * warps) {
    int64_t b = a.b0 + r / p.L, i = r % p.L;
    const T *g = (const T *)a.g + r * p.Ev, *o = (const T *)a.o + r * p.Ev;
    A d = 0;
    for (int64_t e = lane; e < p.Ev; e += 32) d += ctc_in<A>(g[e]) * ctc_in<A>(o[e]);
    d = warp_all(d, add_op());
    A lse = ((const A *)a.lse)[b * p.L + i];
    const A *s = (const A *)a.s + r * p.S, *dp = (const A *)a.dp + r * p.S;
    T *w = (T *)a.pw + r * p.S, *ds = (T *)a.ds + r * p.S;
    for (int64_t j = lane; j < p.S; j += 32) {
      A pr = row_exp<A>(row_score<T, A>(a, b, i, j, s[j]) - lse);
      A f = row_drop<A>(p, b, i, j), dpj = dp[j];
      w[j] = ctc_out<T>(pr * f);
      ds[j] = ctc_out<T>((A)p.scale * pr * (f * dpj - d));
    }
  }
}

/* Offsets into a chunk's operands: problem b0's first element. */
static char *at(const ctc_t *t, int64_t b0, int64_t per) {
  return t->data + (size_t)(b0 * per) * ctc_elsize(t->dtype);
}

template <class T, class A>
static ct_status fwd(const char *op, int dev, const ctc_t *out, const ctc_t *lse, const ctc_t *q,
                     const ctc_t *k, const ctc_t *v, const ctc_t *mask, const ct_sdpa_params *p) {
  const int64_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;
  int dt = q->dtype, acc = sizeof(A) == 8 ? CT_F64 : CT_F32;
  bool in_place = sizeof(T) == sizeof(A);
  int64_t nb = chunk_problems(p, dt, false);
  ctc_scratch sbuf(dev), pbuf(dev);
  char *sc = (char *)sbuf.get(sizeof(A) * (size_t)(nb * L * S));
  char *pw = in_place || !sc ? sc : (char *)pbuf.get(sizeof(T) * (size_t)(nb * L * S));
  if (!pw) return ct_last_error();
  cudaStream_t st = ctc_stream(dev);
  row_args a = {};
  a.p = *p, a.mask = mask ? mask->data : nullptr, a.s = sc, a.pw = pw, a.lse = lse->data;
  for (int64_t b0 = 0; b0 < p->BH; b0 += nb) {
    int64_t n = p->BH - b0 < nb ? p->BH - b0 : nb;
    ct_status rc = rm_gemm(op, dev, L, S, E, {at(q, b0, L * E), false, E, L * E},
                           {at(k, b0, S * E), true, E, S * E}, sc, S, L * S, n, dt, acc);
    if (rc != CT_OK) return rc;
    a.b0 = b0, a.rows = n * L;
    sdpa_row_softmax_kernel<T, A><<<row_blocks(a.rows, dev), SDPA_ROW_THREADS, 0, st>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, st);
    rc = rm_gemm(op, dev, L, Ev, S, {pw, false, S, L * S}, {at(v, b0, S * Ev), false, Ev, S * Ev},
                 at(out, b0, L * Ev), Ev, L * Ev, n, dt, dt);
    if (rc != CT_OK) return rc;
  }
  return CT_OK;
}

template <class T, class A>
static ct_status bwd(const char *op, int dev, const ctc_t *gq, const ctc_t *gk, const ctc_t *gv,
                     const ctc_t *g, const ctc_t *q, const ctc_t *k, const ctc_t *v,
                     const ctc_t *out, const ctc_t *lse, const ctc_t *mask,
                     const ct_sdpa_params *p) {
  const int64_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;
  int dt = q->dtype, acc = sizeof(A) == 8 ? CT_F64 : CT_F32;
  bool in_place = sizeof(T) == sizeof(A);
  int64_t nb = chunk_problems(p, dt, true);
  size_t n_el = (size_t)(nb * L * S);
  ctc_scratch sbuf(dev), dpbuf(dev), pbuf(dev), dsbuf(dev);
  char *sc = (char *)sbuf.get(sizeof(A) * n_el);
  char *dp = sc ? (char *)dpbuf.get(sizeof(A) * n_el) : nullptr, *pw = sc, *ds = dp;
  if (!in_place && dp) {
    pw = (char *)pbuf.get(sizeof(T) * n_el);
    ds = pw ? (char *)dsbuf.get(sizeof(T) * n_el) : nullptr;
  }
  if (!sc || !dp || !pw || !ds) return ct_last_error();
  cudaStream_t st = ctc_stream(dev);
  row_args a = {};
  a.p = *p, a.mask = mask ? mask->data : nullptr, a.s = sc, a.dp = dp, a.pw = pw, a.ds = ds;
  a.lse = lse->data;
  for (int64_t b0 = 0; b0 < p->BH; b0 += nb) {
    int64_t n = p->BH - b0 < nb ? p->BH - b0 : nb;
    rm_operand qo = {at(q, b0, L * E), false, E, L * E}, ko = {at(k, b0, S * E), false, E, S * E};
    rm_operand vo = {at(v, b0, S * Ev), true, Ev, S * Ev};
    rm_operand go = {at(g, b0, L * Ev), false, Ev, L * Ev};
    rm_operand kt = ko;
    kt.trans = true;
    ct_status rc = rm_gemm(op, dev, L, S, E, qo, kt, sc, S, L * S, n, dt, acc);
    if (rc == CT_OK) rc = rm_gemm(op, dev, L, S, Ev, go, vo, dp, S, L * S, n, dt, acc);
    if (rc != CT_OK) return rc;
    a.b0 = b0, a.rows = n * L, a.g = at(g, b0, L * Ev), a.o = at(out, b0, L * Ev);
    sdpa_row_grad_kernel<T, A><<<row_blocks(a.rows, dev), SDPA_ROW_THREADS, 0, st>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, st);
    rm_operand pwt = {pw, true, S, L * S}, dso = {ds, false, S, L * S}, dst = {ds, true, S, L * S};
    rc = rm_gemm(op, dev, S, Ev, L, pwt, go, at(gv, b0, S * Ev), Ev, S * Ev, n, dt, dt);
    if (rc == CT_OK)
      rc = rm_gemm(op, dev, L, E, S, dso, ko, at(gq, b0, L * E), E, L * E, n, dt, dt);
    if (rc == CT_OK)
      rc = rm_gemm(op, dev, S, E, L, dst, qo, at(gk, b0, S * E), E, S * E, n, dt, dt);
    if (rc != CT_OK) return rc;
  }
  return CT_OK;
}

ct_status ct__cuda_sdpa_gemm(const ctc_t *out, const ctc_t *lse, const ctc_t *q, const ctc_t *k,
                             const ctc_t *v, const ctc_t *mask, const ct_sdpa_params *p) {
  const char *op = "scaled_dot_product_attention";
  int dev = q->device;
  switch (q->dtype) {
    case CT_F64:
      return fwd<double, double>(op, dev, out, lse, q, k, v, mask, p);
    case CT_F16:
      return fwd<__half, float>(op, dev, out, lse, q, k, v, mask, p);
    case CT_BF16:
      return fwd<__nv_bfloat16, float>(op, dev, out, lse, q, k, v, mask, p);
    default:
      return fwd<float, float>(op, dev, out, lse, q, k, v, mask, p);
  }
}

ct_status ct__cuda_sdpa_gemm_backward(const ctc_t *gq, const ctc_t *gk, const ctc_t *gv,
                                      const ctc_t *g, const ctc_t *q, const ctc_t *k,
                                      const ctc_t *v, const ctc_t *out, const ctc_t *lse,
                                      const ctc_t *mask, const ct_sdpa_params *p) {
  const char *op = "scaled_dot_product_attention_backward";
  int dev = q->device;
  switch (q->dtype) {
    case CT_F64:
      return bwd<double, double>(op, dev, gq, gk, gv, g, q, k, v, out, lse, mask, p);
    case CT_F16:
      return bwd<__half, float>(op, dev, gq, gk, gv, g, q, k, v, out, lse, mask, p);
    case CT_BF16:
      return bwd<__nv_bfloat16, float>(op, dev, gq, gk, gv, g, q, k, v, out, lse, mask, p);
    default:
      return bwd<float, float>(op, dev, gq, gk, gv, g, q, k, v, out, lse, mask, p);
  }
}
