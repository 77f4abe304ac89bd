/* 16-byte vector access for the kernels of the reduction family (reduce.cu,
 * softmax.cu, softmax_backward.cu): dtype traits with the dtype a template
 * parameter (no per-element switch), aligned 16-byte loads and stores, and
 * the split of a contiguous run into a scalar head, 16-byte vectors and a
 * scalar tail.
 *
 * Why 16 bytes: a warp then moves 512 bytes per load instruction, and with a
 * few such loads in flight per thread every SM keeps enough bytes in flight
 * to saturate HBM (Little's law: ~4 TB/s x ~0.7 us is ~3 MB over the GPU). */
#ifndef CT_CUDA_REDUCE_VEC_CUH
#define CT_CUDA_REDUCE_VEC_CUH

#include "backend/cuda/common.cuh"

/* ---- Dtype traits ------------------------------------------------------------ *
 * raw: the stored type; lane: the type computed in (exact: halves widen to
 * float, integers and bool to int64); get: raw -> lane; put: lane -> raw with
 * ctc_store's rounding (floats only). */
template <int DT>
struct rv_dt;
template <>
struct rv_dt<CT_F32> {
  typedef float raw;
  typedef float lane;
  static __device__ __forceinline__ lane get(raw r) { return r; }
  static __device__ __forceinline__ raw put(lane v) { return v; }
};
template <>
struct rv_dt<CT_F64> {
  typedef double raw;
  typedef double lane;
  static __device__ __forceinline__ lane get(raw r) { return r; }
  static __device__ __forceinline__ raw put(lane v) { return v; }
};
template <>
struct rv_dt<CT_F16> {
  typedef uint16_t raw;
  typedef float lane;
  static __device__ __forceinline__ lane get(raw r) { return __half2float(__ushort_as_half(r)); }
  static __device__ __forceinline__ raw put(lane v) { return __half_as_ushort(__float2half_rn(v)); }
};
template <>
struct rv_dt<CT_BF16> {
  typedef uint16_t raw;
  typedef float lane;
  static __device__ __forceinline__ lane get(raw r) { return __uint_as_float((uint32_t)r << 16); }
  static __device__ __forceinline__ raw put(lane v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
};
template <class R>
struct rv_int {
  typedef R raw;
  typedef int64_t lane;
  static __device__ __forceinline__ lane get(raw r) { return (lane)r; }
};
template <>
struct rv_dt<CT_I8> : rv_int<int8_t> {};
template <>
struct rv_dt<CT_U8> : rv_int<uint8_t> {};
template <>
struct rv_dt<CT_I16> : rv_int<int16_t> {};
template <>
struct rv_dt<CT_I32> : rv_int<int32_t> {};
template <>
struct rv_dt<CT_I64> : rv_int<int64_t> {};
template <>
struct rv_dt<CT_BOOL> {
  typedef uint8_t raw;
  typedef int64_t lane;
  static __device__ __forceinline__ lane get(raw r) { return r != 0; }
};

/* ---- Vectors ------------------------------------------------------------------ */

/* 16 bytes of raw elements; N = 16 / sizeof(T) of them. */
template <class T>
struct alignas(16) rv_vec {
  static constexpr int N = 16 / (int)sizeof(T);
  T v[N];
};

/* Through the read-only data path: only for data no thread of the kernel
 * writes (LDG.E.128.CONSTANT). */
template <class T>
__device__ __forceinline__ rv_vec<T> rv_ldg(const rv_vec<T> *p) {
  uint4 u = __ldg(reinterpret_cast<const uint4 *>(p));
  rv_vec<T> r;
  memcpy(&r, &u, 16);
  return r;
}
/* Plain load: for data the kernel may also write (out may alias x). */
template <class T>
__device__ __forceinline__ rv_vec<T> rv_ld(const rv_vec<T> *p) {
  uint4 u = *reinterpret_cast<const uint4 *>(p);
  rv_vec<T> r;
  memcpy(&r, &u, 16);
  return r;
}
template <class T>
__device__ __forceinline__ void rv_st(rv_vec<T> *p, const rv_vec<T> &r) {
  uint4 u;
  memcpy(&u, &r, 16);
  *reinterpret_cast<uint4 *>(p) = u;
}

/* Elements of the run [p, p + n) before its first 16-byte boundary (p is
 * aligned to its element size): the run is head scalars, then vectors, then
 * fewer than N tail scalars. */
template <class T>
__device__ __forceinline__ int64_t rv_head(const T *p, int64_t n) {
  int64_t h = (int64_t)((16 - ((uintptr_t)p & 15)) & 15) / (int64_t)sizeof(T);
  return h < n ? h : n;
}

/* Whether two runs of T can be walked with the same vector indices: their
 * starts lie equally far from a 16-byte boundary. */
template <class T>
__device__ __forceinline__ bool rv_same_phase(const T *a, const T *b) {
  return (((uintptr_t)a ^ (uintptr_t)b) & 15) == 0;
}

/* ---- Rows walked by a warp ------------------------------------------------------ *
 * rv_warp_map<D, NIN, WRITE>(in, out, n, lane, fn) applies fn to every
 * element e < n of NIN input rows in[a][e] (rv_dt D's raw type), fn taking
 * the NIN lane values (D::lane v[NIN]); with WRITE it stores fn's result to
 * out[e] (which may be one of the inputs: each element is read before it is
 * written, by the same lane). The warp's lanes share the row: 16-byte
 * vectors strided by 32 lanes, RV_ROW_UNROLL / NIN of them loaded before any
 * is used or stored, with a scalar head and tail; when the rows' starts lie
 * at different distances from a 16-byte boundary (rv_same_phase), one
 * element per lane at a time. Plain loads: out may alias an input. */
#define RV_ROW_UNROLL 4

template <class D, int NIN, bool WRITE, class Fn>
__device__ __forceinline__ void rv_warp_one(const typename D::raw *const (&in)[NIN],
                                            typename D::raw *out, int64_t e, Fn &fn) {
  typename D::lane v[NIN];
#pragma unroll
  for (int a = 0; a < NIN; a++) v[a] = D::get(in[a][e]);
  if constexpr (WRITE)
    out[e] = D::put(fn(v));
  else
    fn(v);
}

/* Applies fn to the elements of one vector per input, r[a]; with WRITE the
 * results go to w. */
template <class D, int NIN, bool WRITE, class Fn>
__device__ __forceinline__ void rv_vec_apply(const rv_vec<typename D::raw> (&r)[NIN],
                                             rv_vec<typename D::raw> &w, Fn &fn) {
#pragma unroll
  for (int j = 0; j < rv_vec<typename D::raw>::N; j++) {
    typename D::lane v[NIN];
#pragma unroll
    for (int a = 0; a < NIN; a++) v[a] = D::get(r[a].v[j]);
    if constexpr (WRITE)
      w.v[j] = D::put(fn(v));
    else
      fn(v);
  }
}

template <class D, int NIN, bool WRITE, class Fn>
__device__ __forceinline__ void rv_warp_map(const typename D::raw *const (&in)[NIN],
                                            typename D::raw *out, int64_t n, int lane, Fn &&fn) {
  typedef typename D::raw T;
  typedef rv_vec<T> V;
  constexpr int U = RV_ROW_UNROLL / NIN > 0 ? RV_ROW_UNROLL / NIN : 1;
  bool vec = true;
#pragma unroll
  for (int a = 1; a < NIN; a++) vec = vec && rv_same_phase(in[0], in[a]);
  if (WRITE) vec = vec && rv_same_phase(in[0], (const T *)out);
  if (!vec) {
#pragma unroll 1
    for (int64_t e = lane; e < n; e += 32) rv_warp_one<D, NIN, WRITE>(in, out, e, fn);
    return;
  }
  int64_t head = rv_head(in[0], n), nv = (n - head) / V::N, tail = head + nv * V::N;
  if (lane < head) rv_warp_one<D, NIN, WRITE>(in, out, lane, fn);
  if (lane < n - tail) rv_warp_one<D, NIN, WRITE>(in, out, tail + lane, fn);
  const V *vin[NIN];
#pragma unroll
  for (int a = 0; a < NIN; a++) vin[a] = reinterpret_cast<const V *>(in[a] + head);
  V *vout = WRITE ? reinterpret_cast<V *>(out + head) : nullptr;
  int64_t i = lane;
#pragma unroll 1 /* the loads of one iteration are the ones in flight */
  for (; i + (U - 1) * 32 < nv; i += U * 32) {
    V r[U][NIN], w[U]; /* all loads first: U * NIN in flight */
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int a = 0; a < NIN; a++) r[u][a] = rv_ld(vin[a] + i + u * 32);
#pragma unroll
    for (int u = 0; u < U; u++) {
      rv_vec_apply<D, NIN, WRITE>(r[u], w[u], fn);
      if constexpr (WRITE) rv_st(vout + i + u * 32, w[u]);
    }
  }
#pragma unroll 1
  for (; i < nv; i += 32) {
    V r[NIN], w;
#pragma unroll
    for (int a = 0; a < NIN; a++) r[a] = rv_ld(vin[a] + i);
    rv_vec_apply<D, NIN, WRITE>(r, w, fn);
    if constexpr (WRITE) rv_st(vout + i, w);
  }
}

/* This warp's share [*b, *e) of [0, n) when the nw warps of a block split a
 * row into contiguous pieces (w: the warp's index). */
__device__ __forceinline__ void rv_warp_piece(int64_t n, int w, int nw, int64_t *b, int64_t *e) {
  *b = n * w / nw;
  *e = n * (w + 1) / nw;
}

/* v reduced over the warp, lane 0's result in every lane (a butterfly could
 * leave lanes with different zeros: max(+0, -0) depends on the order). */
template <class T, class M>
__device__ __forceinline__ T rv_warp_allreduce(T v, M merge) {
  return __shfl_sync(0xffffffffu, ctc_warp_reduce(v, merge), 0);
}

/* ---- Line kernels (softmax, its backward) --------------------------------------- */

/* The lines this thread's team (its warp, or the block) walks, and the piece
 * [b, e) of each line its warp takes (the whole line when a warp has it). */
struct rv_line_team {
  int64_t team, nteams, b, e;
};
__device__ __forceinline__ rv_line_team rv_line_team_of(int64_t n, bool warp_lines) {
  int warp = (int)threadIdx.x >> 5, nwarps = (int)blockDim.x >> 5;
  rv_line_team t = {warp_lines ? (int64_t)blockIdx.x * nwarps + warp : (int64_t)blockIdx.x,
                    warp_lines ? (int64_t)gridDim.x * nwarps : (int64_t)gridDim.x, 0, n};
  if (!warp_lines) rv_warp_piece(n, warp, nwarps, &t.b, &t.e);
  return t;
}

/* Blocks for `lines` lines of a line kernel: a warp per line (threads / 32
 * lines per block) or a block per line, at most 8 blocks per SM (the kernels
 * stride over the remaining lines). */
static inline unsigned rv_line_blocks(int64_t lines, bool warp_lines, int threads, int dev) {
  int64_t per_block = warp_lines ? threads / 32 : 1, cap = (int64_t)ctc_sm_count(dev) * 8;
  int64_t want = (lines + per_block - 1) / per_block;
  return (unsigned)(want < cap ? want : cap);
}

/* Calls f(std::integral_constant<int, DT>()) for a floating dtype dt, so a
 * launcher can name its kernel's instantiation once. */
template <class F> static inline void rv_float_dtype(int dt, F f) {
  switch (dt) {
  case CT_F32: f(std::integral_constant<int, CT_F32>()); break;
  case CT_F64: f(std::integral_constant<int, CT_F64>()); break;
  case CT_F16: f(std::integral_constant<int, CT_F16>()); break;
  default: f(std::integral_constant<int, CT_BF16>()); break;
  }
}

#endif /* CT_CUDA_REDUCE_VEC_CUH */
