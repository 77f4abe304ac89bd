/* Shared helpers of the CUDA backend's .cu files: error checking (every CUDA
 * call goes through CT_CUDA_CHECK, naming the op, the call, the device, file
 * and line), the device/stream of the calling thread, dtype loads and stores,
 * and the elementwise geometry (offset calculator over coalesced dims). */
#ifndef CT_CUDA_COMMON_CUH
#define CT_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "backend/cuda/cuda_kernels.h"

/* The op-table enums without core/internal.h (C11 atomics; see cuda_kernels.h):
 * op_table.h needs nothing from it but what C++ has. */
#ifndef CT_CORE_INTERNAL_H
#define CT_CORE_INTERNAL_H
#define CT_CUDA_FAKE_INTERNAL
#endif
extern "C" {
#include "ops/op_table.h"
}

extern "C" {
ct_status ct__fail_status(ct_status code, const char *fmt, ...);
}

/* ---- Device, stream, launch checks ---------------------------------------- */

/* Makes dev the runtime's device on this thread (cached; the user's current
 * device, ct_cuda_current_device, is tracked apart and is not changed). */
ct_status ctc_use_device(const char *op, int dev);
/* The calling thread's current stream on dev (NULL: the legacy default stream). */
cudaStream_t ctc_stream(int dev);
/* CT_LAUNCH_BLOCKING=1 in the environment: synchronize after every launch. */
bool ctc_launch_blocking(void);
/* Records CT_ERR_CUDA (CT_ERR_OOM for cudaErrorMemoryAllocation). */
ct_status ctc_cuda_fail(const char *op, const char *call, cudaError_t e, int dev, const char *file,
                        int line);
/* Multiprocessors of dev (cached). */
int ctc_sm_count(int dev);

#define CT_CUDA_CHECK(op, dev, call)                                                   \
  do {                                                                                 \
    cudaError_t ctc_e_ = (call);                                                       \
    if (ctc_e_ != cudaSuccess) return ctc_cuda_fail(op, #call, ctc_e_, dev, __FILE__, __LINE__); \
  } while (0)

/* After a kernel launch: the launch error, and with CT_LAUNCH_BLOCKING the
 * kernel's own error. */
#define CT_CUDA_LAUNCH_CHECK(op, dev, stream)                                          \
  do {                                                                                 \
    cudaError_t ctc_e_ = cudaGetLastError();                                           \
    if (ctc_e_ != cudaSuccess) return ctc_cuda_fail(op, "kernel launch", ctc_e_, dev, __FILE__, __LINE__); \
    if (ctc_launch_blocking()) CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(stream));  \
  } while (0)

/* Device scratch memory from the caching allocator (stream-ordered: freeing
 * right after the launches that use it is safe, see allocator.cu). */
struct ctc_scratch {
  int dev;
  void *p;
  size_t n;
  ctc_scratch(int d) : dev(d), p(nullptr), n(0) {}
  void *get(size_t bytes) {
    n = bytes ? bytes : 1;
    p = ct__cuda_alloc(dev, n, false);
    return p;
  }
  ~ctc_scratch() {
    if (p) ct__cuda_free(dev, p, n, false);
  }
};

/* ---- Launch shapes ------------------------------------------------------------ */

#define CTC_THREADS 256
static inline unsigned ctc_blocks(int64_t work, int dev, int per_thread = 1) {
  int64_t b = (work + (int64_t)CTC_THREADS * per_thread - 1) / ((int64_t)CTC_THREADS * per_thread);
  int64_t cap = (int64_t)ctc_sm_count(dev) * 16; /* grid-stride beyond this */
  if (b > cap) b = cap;
  return (unsigned)(b < 1 ? 1 : b);
}

/* ---- Dtypes -------------------------------------------------------------------- */

__host__ __device__ inline size_t ctc_elsize(int dt) {
  switch (dt) {
  case CT_F64: case CT_I64: return 8;
  case CT_F32: case CT_I32: return 4;
  case CT_F16: case CT_BF16: case CT_I16: return 2;
  default: return 1;
  }
}
__host__ __device__ inline bool ctc_is_float(int dt) { return dt <= CT_BF16; }
__host__ __device__ inline bool ctc_is_half(int dt) { return dt == CT_F16 || dt == CT_BF16; }

/* A value loaded from any dtype: floating dtypes as double (halves exact),
 * integers and bool as int64. */
struct ctc_val {
  double d;
  int64_t i;
  bool is_int;
};

__device__ __forceinline__ ctc_val ctc_load_val(const char *p, int dt) {
  ctc_val v;
  v.is_int = true;
  v.d = 0;
  v.i = 0;
  switch (dt) {
  case CT_F32: v.d = *(const float *)p; v.is_int = false; break;
  case CT_F64: v.d = *(const double *)p; v.is_int = false; break;
  case CT_F16: v.d = __half2float(*(const __half *)p); v.is_int = false; break;
  case CT_BF16: v.d = __bfloat162float(*(const __nv_bfloat16 *)p); v.is_int = false; break;
  case CT_I8: v.i = *(const int8_t *)p; break;
  case CT_U8: v.i = *(const uint8_t *)p; break;
  case CT_I16: v.i = *(const int16_t *)p; break;
  case CT_I32: v.i = *(const int32_t *)p; break;
  case CT_I64: v.i = *(const int64_t *)p; break;
  default: v.i = *(const uint8_t *)p != 0; break;
  }
  return v;
}

/* Loads as a compute type C (float, double or int64_t). Callers use the
 * compute type of the operand's class (float for f32/f16/bf16, double for
 * f64, int64 for integers and bool), so no cross-class conversion happens. */
template <class C> __device__ __forceinline__ C ctc_load(const char *p, int dt) {
  switch (dt) {
  case CT_F32: return (C) * (const float *)p;
  case CT_F64: return (C) * (const double *)p;
  case CT_F16: return (C)__half2float(*(const __half *)p);
  case CT_BF16: return (C)__bfloat162float(*(const __nv_bfloat16 *)p);
  case CT_I8: return (C) * (const int8_t *)p;
  case CT_U8: return (C) * (const uint8_t *)p;
  case CT_I16: return (C) * (const int16_t *)p;
  case CT_I32: return (C) * (const int32_t *)p;
  case CT_I64: return (C) * (const int64_t *)p;
  default: return (C)(*(const uint8_t *)p != 0);
  }
}

/* Stores a compute value: floats convert (halves round to nearest even),
 * integers truncate to their width (wrap-around), bool takes "nonzero". */
template <class C> __device__ __forceinline__ void ctc_store(char *p, int dt, C v) {
  switch (dt) {
  case CT_F32: *(float *)p = (float)v; break;
  case CT_F64: *(double *)p = (double)v; break;
  case CT_F16: *(__half *)p = __float2half_rn((float)v); break;
  case CT_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
  case CT_I8: *(int8_t *)p = (int8_t)(uint64_t)(int64_t)v; break;
  case CT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)(int64_t)v; break;
  case CT_I16: *(int16_t *)p = (int16_t)(uint64_t)(int64_t)v; break;
  case CT_I32: *(int32_t *)p = (int32_t)(uint64_t)(int64_t)v; break;
  case CT_I64: *(int64_t *)p = (int64_t)v; break;
  default: *(uint8_t *)p = v != (C)0; break;
  }
}

/* Moves one element of es bytes. */
__device__ __forceinline__ void ctc_move(char *dst, const char *src, int es) {
  switch (es) {
  case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
  case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
  case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
  default: *(uint64_t *)dst = *(const uint64_t *)src; break;
  }
}

/* ---- Elementwise geometry ----------------------------------------------------- *
 * Up to 4 operands of one shape (operand 0 the output). Dims of size 1 are
 * dropped and neighbours contiguous in every operand merged (host side), so
 * most tensors become 1 dim. `contig`: every operand is contiguous (stride 1
 * after merging) or a broadcast scalar (all strides 0): then element i of an
 * operand is at i (or 0) and no offset arithmetic runs. */
#define CTC_EW_MAX 4
struct ctc_ew {
  int nargs, ndim;
  bool contig;
  int64_t numel;
  int64_t shape[CTC_MAX_DIMS];
  int64_t st[CTC_EW_MAX][CTC_MAX_DIMS]; /* elements */
  char *data[CTC_EW_MAX];
  int dt[CTC_EW_MAX];
  int es[CTC_EW_MAX];
  bool scalar[CTC_EW_MAX]; /* contig path: operand is one repeated value */
};

/* Host: builds the geometry of ts[0..nargs) (all of ts[0]'s shape). */
void ctc_ew_init(ctc_ew *g, int nargs, const ctc_t *const *ts);

/* Element offsets (in elements) of linear index i for each operand. */
template <int N>
__device__ __forceinline__ void ctc_ew_offsets(const ctc_ew &g, int64_t i, int64_t *off) {
  if (g.contig) {
#pragma unroll
    for (int a = 0; a < N; a++) off[a] = g.scalar[a] ? 0 : i;
    return;
  }
#pragma unroll
  for (int a = 0; a < N; a++) off[a] = 0;
  for (int d = g.ndim - 1; d >= 0; d--) {
    int64_t s = g.shape[d];
    int64_t q = i / s, r = i - q * s;
    i = q;
#pragma unroll
    for (int a = 0; a < N; a++) off[a] += r * g.st[a][d];
  }
}

__device__ __forceinline__ char *ctc_ew_ptr(const ctc_ew &g, int a, int64_t off) {
  return g.data[a] + off * g.es[a];
}

/* Runs f(g, off) for every element: grid-stride loop, 4 independent elements
 * per thread per iteration (strided by the grid, so each load instruction of a
 * warp is coalesced on contiguous operands). */
template <int N, class F> __global__ void ctc_ew_kernel(ctc_ew g, F f) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < g.numel; i += 4 * stride) {
#pragma unroll
    for (int u = 0; u < 4; u++) {
      int64_t off[N];
      ctc_ew_offsets<N>(g, i + u * stride, off);
      f(g, off);
    }
  }
  for (; i < g.numel; i += stride) {
    int64_t off[N];
    ctc_ew_offsets<N>(g, i, off);
    f(g, off);
  }
}

template <int N, class F>
static ct_status ctc_ew_launch(const char *op, int dev, const ctc_ew &g, F f) {
  if (g.numel == 0) return CT_OK;
  cudaStream_t s = ctc_stream(dev);
  ctc_ew_kernel<N, F><<<ctc_blocks(g.numel, dev, 4), CTC_THREADS, 0, s>>>(g, f);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

/* ---- Warp and block reductions -------------------------------------------------- */

template <class T, class M> __device__ __forceinline__ T ctc_warp_reduce(T v, M merge) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = merge(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

/* Reduces v over the block (blockDim.x a multiple of 32, <= 1024); the result
 * is valid in thread 0. shared: 32 slots. */
template <class T, class M>
__device__ __forceinline__ T ctc_block_reduce(T v, M merge, T identity, T *shared) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = ctc_warp_reduce(v, merge);
  __syncthreads(); /* shared may be reused by the caller's previous reduction */
  if (lane == 0) shared[w] = v;
  __syncthreads();
  int nw = blockDim.x >> 5;
  v = threadIdx.x < nw ? shared[threadIdx.x] : identity;
  if (w == 0) v = ctc_warp_reduce(v, merge);
  return v;
}

/* Broadcasts thread 0's value to the block. */
template <class T> __device__ __forceinline__ T ctc_block_bcast(T v, T *shared) {
  __syncthreads();
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  return shared[0];
}

/* ---- Lines along one dim ------------------------------------------------------------ *
 * t with `dim` removed (its size-1 stand-in keeps the other dims' strides):
 * the elementwise geometry over such descriptors gives each line's first
 * element; the line then steps by t->strides[dim]. */
static inline ctc_t ctc_line_desc(const ctc_t *t, int dim) {
  ctc_t l = *t;
  if (t->ndim > 0) {
    l.shape[dim] = 1;
    l.strides[dim] = 0;
    l.numel = 1;
    for (int d = 0; d < t->ndim; d++) l.numel *= l.shape[d];
  }
  return l;
}

#endif /* CT_CUDA_COMMON_CUH */
