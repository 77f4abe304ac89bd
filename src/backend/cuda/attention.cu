/* CUDA fused scaled dot-product attention, forward and backward, with the
 * CPU's semantics (backend/cpu/attention.c; the shared rules, mask layout
 * and dropout stream in core/sdpa_math.h). Storage f32/f16/bf16 computed in
 * f32, f64 in f64. The entry points send the shapes the GEMM path takes
 * (attention_gemm.cu: tensor cores, every dtype) there; these kernels
 * remain for the others (no keys or features, a problem whose (L, S)
 * scores exceed that path's scratch).
 *
 * Every kernel gives one thread one row (a query, or a key for grad_k/v) and
 * a block 32 rows (fewer when the rows' accumulators would not fit in shared
 * memory: the other threads then only help load tiles). The block walks the
 * other side in tiles of up to 32 rows staged in shared memory; the (L, S)
 * scores exist only as one row's tile in a thread's registers.
 *  - forward: online softmax per query row (running max m and sum l, the
 *    accumulator rescaled when m grows); writes out and lse = m + log l;
 *  - backward: D_i = dO_i . O_i (a thread per row), then grad_k / grad_v (a
 *    thread per key, summing over query tiles) and grad_q (a thread per
 *    query, summing over key tiles), P recomputed as exp(s - lse). Each
 *    output element has one writer: no atomics, deterministic.
 * Blocks are numbered (problem, tile) on grid.x, so BH is not bounded by
 * grid.y's 65535. */
#include <math.h>

#include "backend/cuda/attention_gemm.cuh"
#include "core/sdpa_math.h"

#define SDPA_THREADS 32
#define SDPA_TILE_MAX 32
#define SDPA_SMEM_MAX (48 * 1024)

struct sdpa_args {
  ct_sdpa_params p;
  const char *q, *k, *v, *mask, *g, *out_in, *lse_in;
  char *out, *lse, *gq, *gk, *gv;
  void *delta;
  int br, bc;    /* rows per block, tile rows */
  int64_t tiles; /* blocks per problem */
};

template <class A>
__device__ __forceinline__ A sdpa_exp(A x) {
  return exp(x);
}
template <>
__device__ __forceinline__ float sdpa_exp<float>(float x) {
  return expf(x);
}

template <class T, class A>
__device__ __forceinline__ A ld(const char *base, int64_t i) {
  return ctc_in<A>(((const T *)base)[i]);
}

/* Scaled, masked, hidden score of (query row qrow, smem key row kr) for query i, key j. */
template <class T, class A>
__device__ __forceinline__ A score(const sdpa_args &a, int64_t b, int64_t i, int64_t j, A dot) {
  const ct_sdpa_params &p = a.p;
  A s = dot * (A)p.scale;
  if (a.mask) s += ld<T, A>(a.mask, ct_sdpa_mask_offset(&p, b, i, j));
  return ct_sdpa_hidden(&p, i, j) ? (A)-INFINITY : s;
}

/* Dropout factor of weight (b, i, j): 1 / (1 - p) or 0; 1 without dropout. */
template <class A>
__device__ __forceinline__ A drop_factor(const ct_sdpa_params &p, int64_t b, int64_t i, int64_t j) {
  if (p.dropout_p <= 0) return (A)1;
  return ct_sdpa_keep(&p, b, i, j) ? (A)ct_sdpa_keep_scale(&p) : (A)0;
}

/* Stages rows [r0, r0 + n) of a (rows, width) matrix of problem b into dst. */
template <class T, class A>
__device__ __forceinline__ void stage(A *dst, const char *src, int64_t b, int64_t rows, int64_t r0,
                                      int64_t n, int64_t width) {
  const char *base = src + ((b * rows + r0) * width) * (int64_t)sizeof(T);
  for (int64_t t = threadIdx.x; t < n * width; t += blockDim.x) dst[t] = ld<T, A>(base, t);
}

/* ---- forward ---- */

template <class T, class A>
__global__ void sdpa_fwd_kernel(sdpa_args a) {
  extern __shared__ double sdpa_smem[];
  const ct_sdpa_params &p = a.p;
  const int BR = a.br, BC = a.bc;
  A *acc = (A *)sdpa_smem;        /* [Ev][BR] */
  A *ks = acc + p.Ev * BR;        /* [BC][E] */
  A *vs = ks + (int64_t)BC * p.E; /* [BC][Ev] */
  int64_t b = blockIdx.x / a.tiles, i0 = (blockIdx.x % a.tiles) * BR;
  int r = threadIdx.x;
  int64_t i = i0 + r;
  bool active = r < BR && i < p.L;
  A m = (A)-INFINITY, l = 0;
  if (active)
    for (int64_t e = 0; e < p.Ev; e++) acc[e * BR + r] = 0;
  int64_t s_end = p.causal && i0 + BR < p.S ? i0 + BR : p.S;
  const T *qr = (const T *)a.q + (b * p.L + i) * p.E;
  for (int64_t j0 = 0; j0 < s_end; j0 += BC) {
    int64_t nc = s_end - j0 < BC ? s_end - j0 : BC;
    __syncthreads(); /* the previous tile is consumed */
    stage<T, A>(ks, a.k, b, p.S, j0, nc, p.E);
    stage<T, A>(vs, a.v, b, p.S, j0, nc, p.Ev);
    __syncthreads();
    if (!active) continue;
    A s[SDPA_TILE_MAX], mt = (A)-INFINITY;
    for (int c = 0; c < nc; c++) {
      A dot = 0;
      for (int64_t e = 0; e < p.E; e++) dot += ctc_in<A>(qr[e]) * ks[c * p.E + e];
      s[c] = score<T, A>(a, b, i, j0 + c, dot);
      mt = s[c] > mt ? s[c] : mt;
    }
    A mn = m > mt ? m : mt;
    if (mn == (A)-INFINITY) continue; /* nothing seen yet */
    A alpha = sdpa_exp<A>(m - mn);
    l *= alpha;
    if (alpha != (A)1)
      for (int64_t e = 0; e < p.Ev; e++) acc[e * BR + r] *= alpha;
    for (int c = 0; c < nc; c++) {
      A pc = sdpa_exp<A>(s[c] - mn);
      l += pc;
      pc *= drop_factor<A>(p, b, i, j0 + c);
      for (int64_t e = 0; e < p.Ev; e++) acc[e * BR + r] += pc * vs[c * p.Ev + e];
    }
    m = mn;
  }
  if (!active) return;
  /* every key masked: nan, as softmax; no key at all: zeros */
  A inv = l > 0 ? (A)1 / l : p.S == 0 ? (A)0 : (A)NAN;
  T *o = (T *)a.out + (b * p.L + i) * p.Ev;
  for (int64_t e = 0; e < p.Ev; e++) o[e] = ctc_out<T>(acc[e * BR + r] * inv);
  ((A *)a.lse)[b * p.L + i] = l > 0 ? m + log(l) : (A)-INFINITY;
}

/* ---- backward ---- */

/* D_i = dO_i . O_i, one thread per row of BH * L. */
template <class T, class A>
__global__ void sdpa_delta_kernel(sdpa_args a) {
  const ct_sdpa_params &p = a.p;
  for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < p.BH * p.L;
       row += (int64_t)gridDim.x * blockDim.x) {
    const T *g = (const T *)a.g + row * p.Ev, *o = (const T *)a.out_in + row * p.Ev;
    A d = 0;
    for (int64_t e = 0; e < p.Ev; e++) d += ctc_in<A>(g[e]) * ctc_in<A>(o[e]);
    ((A *)a.delta)[row] = d;
  }
}

/* grad_k, grad_v: a thread per key j, summing over the query tiles. */
template <class T, class A>
__global__ void sdpa_dkdv_kernel(sdpa_args a) {
  extern __shared__ double sdpa_smem[];
  const ct_sdpa_params &p = a.p;
  const int BR = a.br, BC = a.bc;
  A *dk = (A *)sdpa_smem;          /* [E][BR] */
  A *dv = dk + p.E * BR;           /* [Ev][BR] */
  A *kr = dv + p.Ev * BR;          /* [E][BR]: this block's keys */
  A *vr = kr + p.E * BR;           /* [Ev][BR] */
  A *qs = vr + p.Ev * BR;          /* [BC][E] */
  A *gs = qs + (int64_t)BC * p.E;  /* [BC][Ev] */
  A *ls = gs + (int64_t)BC * p.Ev; /* [BC] lse */
  A *ds = ls + BC;                 /* [BC] D */
  int64_t b = blockIdx.x / a.tiles, j0b = (blockIdx.x % a.tiles) * BR;
  int r = threadIdx.x;
  int64_t j = j0b + r;
  bool active = r < BR && j < p.S;
  if (active) {
    for (int64_t e = 0; e < p.E; e++)
      dk[e * BR + r] = 0, kr[e * BR + r] = ld<T, A>(a.k, (b * p.S + j) * p.E + e);
    for (int64_t e = 0; e < p.Ev; e++)
      dv[e * BR + r] = 0, vr[e * BR + r] = ld<T, A>(a.v, (b * p.S + j) * p.Ev + e);
  }
  const A *lse = (const A *)a.lse_in + b * p.L, *dl = (const A *)a.delta + b * p.L;
  for (int64_t i0 = p.causal ? j0b : 0; i0 < p.L; i0 += BC) {
    int64_t nr = p.L - i0 < BC ? p.L - i0 : BC;
    __syncthreads();
    stage<T, A>(qs, a.q, b, p.L, i0, nr, p.E);
    stage<T, A>(gs, a.g, b, p.L, i0, nr, p.Ev);
    for (int64_t t = threadIdx.x; t < nr; t += blockDim.x) ls[t] = lse[i0 + t], ds[t] = dl[i0 + t];
    __syncthreads();
    if (!active) continue;
    for (int c = 0; c < nr; c++) {
      int64_t i = i0 + c;
      A dot = 0, dp = 0;
      for (int64_t e = 0; e < p.E; e++) dot += qs[c * p.E + e] * kr[e * BR + r];
      for (int64_t e = 0; e < p.Ev; e++) dp += gs[c * p.Ev + e] * vr[e * BR + r];
      A pw = sdpa_exp<A>(score<T, A>(a, b, i, j, dot) - ls[c]);
      A f = drop_factor<A>(p, b, i, j);
      A dsc = (A)p.scale * pw * (f * dp - ds[c]);
      for (int64_t e = 0; e < p.Ev; e++) dv[e * BR + r] += pw * f * gs[c * p.Ev + e];
      for (int64_t e = 0; e < p.E; e++) dk[e * BR + r] += dsc * qs[c * p.E + e];
    }
  }
  if (!active) return;
  T *gk = (T *)a.gk + (b * p.S + j) * p.E, *gv = (T *)a.gv + (b * p.S + j) * p.Ev;
  for (int64_t e = 0; e < p.E; e++) gk[e] = ctc_out<T>(dk[e * BR + r]);
  for (int64_t e = 0; e < p.Ev; e++) gv[e] = ctc_out<T>(dv[e * BR + r]);
}

/* grad_q: a thread per query i, summing over the key tiles. */
template <class T, class A>
__global__ void sdpa_dq_kernel(sdpa_args a) {
  extern __shared__ double sdpa_smem[];
  const ct_sdpa_params &p = a.p;
  const int BR = a.br, BC = a.bc;
  A *dq = (A *)sdpa_smem;         /* [E][BR] */
  A *ks = dq + p.E * BR;          /* [BC][E] */
  A *vs = ks + (int64_t)BC * p.E; /* [BC][Ev] */
  int64_t b = blockIdx.x / a.tiles, i0 = (blockIdx.x % a.tiles) * BR;
  int r = threadIdx.x;
  int64_t i = i0 + r;
  bool active = r < BR && i < p.L;
  if (active)
    for (int64_t e = 0; e < p.E; e++) dq[e * BR + r] = 0;
  A lse = active ? ((const A *)a.lse_in)[b * p.L + i] : (A)0,
    dl = active ? ((const A *)a.delta)[b * p.L + i] : (A)0;
  const T *qr = (const T *)a.q + (b * p.L + i) * p.E, *gr = (const T *)a.g + (b * p.L + i) * p.Ev;
  int64_t s_end = p.causal && i0 + BR < p.S ? i0 + BR : p.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += BC) {
    int64_t nc = s_end - j0 < BC ? s_end - j0 : BC;
    __syncthreads();
    stage<T, A>(ks, a.k, b, p.S, j0, nc, p.E);
    stage<T, A>(vs, a.v, b, p.S, j0, nc, p.Ev);
    __syncthreads();
    if (!active) continue;
    for (int c = 0; c < nc; c++) {
      A dot = 0, dp = 0;
      for (int64_t e = 0; e < p.E; e++) dot += ctc_in<A>(qr[e]) * ks[c * p.E + e];
      for (int64_t e = 0; e < p.Ev; e++) dp += ctc_in<A>(gr[e]) * vs[c * p.Ev + e];
      A pw = sdpa_exp<A>(score<T, A>(a, b, i, j0 + c, dot) - lse);
      A dsc = (A)p.scale * pw * (drop_factor<A>(p, b, i, j0 + c) * dp - dl);
      for (int64_t e = 0; e < p.E; e++) dq[e * BR + r] += dsc * ks[c * p.E + e];
    }
  }
  if (!active) return;
  T *o = (T *)a.gq + (b * p.L + i) * p.E;
  for (int64_t e = 0; e < p.E; e++) o[e] = ctc_out<T>(dq[e * BR + r]);
}

/* ---- launchers ---- */

/* Rows per block and tile rows for `per_row` accumulator elements per row
 * and `per_tile` staged elements per tile row, in shared memory of at most
 * SDPA_SMEM_MAX bytes; false when not even one row fits. */
static bool plan(int64_t per_row, int64_t per_tile, size_t es, int *br, int *bc, size_t *bytes) {
  for (int min_c = 8; min_c >= 1; min_c -= 7) /* tiles of 8 rows or more if possible */
    for (int r = SDPA_THREADS; r >= 1; r /= 2) {
      int64_t left = SDPA_SMEM_MAX / (int64_t)es - per_row * r;
      int64_t c = left / per_tile;
      if (c > SDPA_TILE_MAX) c = SDPA_TILE_MAX;
      if (c < min_c) continue;
      *br = r, *bc = (int)c;
      *bytes = (size_t)(per_row * r + per_tile * c) * es;
      return true;
    }
  return false;
}

static ct_status too_large(const char *op, const ct_sdpa_params *p) {
  return ct__fail_status(
      CT_ERR_UNAVAILABLE,
      "%s: head dims E=%lld, Ev=%lld need more shared memory than the CUDA kernel's %d KiB", op,
      (long long)p->E, (long long)p->Ev, SDPA_SMEM_MAX / 1024);
}

static ct_status check_dtype(const char *op, int dt) {
  if (!ctc_is_float(dt))
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op,
                           ct_dtype_name((ct_dtype)dt));
  return CT_OK;
}

template <class T, class A>
static ct_status fwd(const char *op, int dev, sdpa_args a) {
  size_t bytes;
  if (!plan(a.p.Ev, a.p.E + a.p.Ev, sizeof(A), &a.br, &a.bc, &bytes)) return too_large(op, &a.p);
  a.tiles = (a.p.L + a.br - 1) / a.br;
  cudaStream_t s = ctc_stream(dev);
  sdpa_fwd_kernel<T, A><<<(unsigned)(a.p.BH * a.tiles), SDPA_THREADS, bytes, s>>>(a);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

template <class T, class A>
static ct_status bwd(const char *op, int dev, sdpa_args a) {
  size_t kv_bytes, q_bytes;
  sdpa_args kv = a, qa = a;
  if (!plan(2 * (a.p.E + a.p.Ev), a.p.E + a.p.Ev + 2, sizeof(A), &kv.br, &kv.bc, &kv_bytes) ||
      !plan(a.p.E, a.p.E + a.p.Ev, sizeof(A), &qa.br, &qa.bc, &q_bytes))
    return too_large(op, &a.p);
  cudaStream_t s = ctc_stream(dev);
  ctc_scratch buf(dev);
  if (!(a.delta = buf.get(sizeof(A) * (size_t)(a.p.BH * a.p.L)))) return ct_last_error();
  kv.delta = qa.delta = a.delta;
  if (a.p.BH * a.p.L > 0) {
    sdpa_delta_kernel<T, A><<<ctc_blocks(a.p.BH * a.p.L, dev), CTC_THREADS, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  kv.tiles = (a.p.S + kv.br - 1) / kv.br;
  if (a.p.BH * kv.tiles > 0) {
    sdpa_dkdv_kernel<T, A><<<(unsigned)(a.p.BH * kv.tiles), SDPA_THREADS, kv_bytes, s>>>(kv);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  qa.tiles = (a.p.L + qa.br - 1) / qa.br;
  if (a.p.BH * qa.tiles > 0) {
    sdpa_dq_kernel<T, A><<<(unsigned)(a.p.BH * qa.tiles), SDPA_THREADS, q_bytes, s>>>(qa);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return CT_OK;
}

extern "C" ct_status ct__cuda_sdpa(ct_tensor *out_t, ct_tensor *lse_t, const ct_tensor *q_t,
                                   const ct_tensor *k_t, const ct_tensor *v_t,
                                   const ct_tensor *mask_t, const ct_sdpa_params *p) {
  const ctc_view out(out_t), lse(lse_t), q(q_t), k(k_t), v(v_t), mask(mask_t);
  const char *op = "scaled_dot_product_attention";
  int dev = q->device;
  ct_status st = check_dtype(op, q->dtype);
  if (st != CT_OK) return st;
  if (p->BH * p->L == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (ct__cuda_sdpa_gemm_fits(p, q->dtype, false))
    return ct__cuda_sdpa_gemm(out, lse, q, k, v, mask, p);
  sdpa_args a = {};
  a.p = *p;
  a.q = q->data, a.k = k->data, a.v = v->data, a.mask = mask ? mask->data : nullptr;
  a.out = out->data, a.lse = lse->data;
  switch (q->dtype) {
    case CT_F64:
      return fwd<double, double>(op, dev, a);
    case CT_F16:
      return fwd<__half, float>(op, dev, a);
    case CT_BF16:
      return fwd<__nv_bfloat16, float>(op, dev, a);
    default:
      return fwd<float, float>(op, dev, a);
  }
}

extern "C" ct_status ct__cuda_sdpa_backward(ct_tensor *gq_t, ct_tensor *gk_t, ct_tensor *gv_t,
                                            const ct_tensor *g_t, const ct_tensor *q_t,
                                            const ct_tensor *k_t, const ct_tensor *v_t,
                                            const ct_tensor *out_t, const ct_tensor *lse_t,
                                            const ct_tensor *mask_t, const ct_sdpa_params *p) {
  const ctc_view gq(gq_t), gk(gk_t), gv(gv_t), g(g_t), q(q_t), k(k_t), v(v_t), out(out_t),
      lse(lse_t), mask(mask_t);
  const char *op = "scaled_dot_product_attention_backward";
  int dev = q->device;
  ct_status st = check_dtype(op, q->dtype);
  if (st != CT_OK) return st;
  if (p->BH == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (ct__cuda_sdpa_gemm_fits(p, q->dtype, true))
    return ct__cuda_sdpa_gemm_backward(gq, gk, gv, g, q, k, v, out, lse, mask, p);
  sdpa_args a = {};
  a.p = *p;
  a.q = q->data, a.k = k->data, a.v = v->data, a.mask = mask ? mask->data : nullptr;
  a.g = g->data, a.out_in = out->data, a.lse_in = lse->data;
  a.gq = gq->data, a.gk = gk->data, a.gv = gv->data;
  switch (q->dtype) {
    case CT_F64:
      return bwd<double, double>(op, dev, a);
    case CT_F16:
      return bwd<__half, float>(op, dev, a);
    case CT_BF16:
      return bwd<__nv_bfloat16, float>(op, dev, a);
    default:
      return bwd<float, float>(op, dev, a);
  }
}
