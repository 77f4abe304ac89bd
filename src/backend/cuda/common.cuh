/* Shared helpers of the CUDA backend's .cu files: error checking (every CUDA
 * call goes through CT_CUDA_CHECK, naming the op, the call, the device, file
 * and line), the device/stream of the calling thread, dtype loads and stores,
 * the elementwise geometry (offset calculator over coalesced dims) with its
 * generic kernel, and the 16-byte vector kernel for contiguous operands. */
#ifndef CT_CUDA_COMMON_CUH
#define CT_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "backend/cuda/cuda_kernels.h"
#include "core/convert.h" /* ct_move_elem */

extern "C" {
ct_status ct__fail_status(ct_status code, const char *fmt, ...);
}

/* ---- Device, stream, launch checks ---------------------------------------- */

/* Makes dev the runtime's device on this thread (the user's current device,
 * ct_cuda_current_device, is tracked apart and is not changed) and clears the
 * thread's last CUDA error, so that the launch checks that follow see only
 * the op's own. Every launcher calls it first. */
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
    if (ctc_launch_blocking()) {                                                       \
      CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(stream));                           \
      ct_status ctc_f_ = ctc_fault_check(dev);                                         \
      if (ctc_f_ != CT_OK) return ctc_f_;                                              \
    }                                                                                  \
  } while (0)

/* ---- Faults (fault.cu) ----------------------------------------------------------- *
 * A kernel that meets a bad value in the data (an index out of range, an integer
 * division by zero) skips the element and raises a fault; the next
 * synchronization with the device reports it (ctc_fault_check). */
enum { CTC_FAULT_INDEX = 1, CTC_FAULT_DIV_ZERO = 2, CTC_FAULT_NEG_POW = 3 };
struct ctc_fault {
  int flag, kind, dim, pad;
  long long value, size;
  const char *op; /* a static host string, only stored by the device */
};
/* dev's record (pinned, mapped; the same address on host and device); NULL
 * with the error recorded if it cannot be allocated. */
ctc_fault *ctc_fault_record(const char *op, int dev);
/* After a synchronization with dev: CT_ERR_ARG naming the fault raised since
 * the last check (and clears it), else CT_OK. */
ct_status ctc_fault_check(int dev);

/* flag: 0 none, 1 claimed (fields being written), 2 complete. The plain read
 * first keeps a kernel full of bad elements from sending one PCIe atomic per
 * element; the fence orders the fields before the completion mark for the
 * host, which reports only complete records. */
__device__ __forceinline__ void ctc_fault_raise(ctc_fault *f, int kind, const char *op, int dim, long long value,
                                                long long size) {
  if (*(volatile int *)&f->flag != 0 || atomicCAS(&f->flag, 0, 1) != 0) return; /* the first fault wins */
  f->kind = kind;
  f->op = op;
  f->dim = dim;
  f->value = value;
  f->size = size;
  __threadfence_system();
  atomicExch(&f->flag, 2);
}

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

/* ---- Static dtypes and the element conversions ------------------------------- *
 * The one definition of how an element converts to and from a compute type C
 * (float for f32/f16/bf16, double for f64, int64 for integers and bool),
 * shared by the generic kernel (ctc_load/ctc_store, the dtype known at run
 * time) and the vector kernels (the dtype a template parameter). */

/* bool's storage: one byte, any nonzero byte reads as true. */
struct ctc_bool8 {
  uint8_t v;
};
template <class T> struct ctc_type {
  using type = T;
};

/* Calls fn(ctc_type<T>()) with T the storage type of dtype dt. */
template <class Fn> __device__ __forceinline__ auto ctc_visit_dtype(int dt, Fn &&fn) {
  switch (dt) {
  case CT_F32: return fn(ctc_type<float>());
  case CT_F64: return fn(ctc_type<double>());
  case CT_F16: return fn(ctc_type<__half>());
  case CT_BF16: return fn(ctc_type<__nv_bfloat16>());
  case CT_I8: return fn(ctc_type<int8_t>());
  case CT_U8: return fn(ctc_type<uint8_t>());
  case CT_I16: return fn(ctc_type<int16_t>());
  case CT_I32: return fn(ctc_type<int32_t>());
  case CT_I64: return fn(ctc_type<int64_t>());
  default: return fn(ctc_type<ctc_bool8>());
  }
}

/* The dtype of a storage type (host and device). */
template <class T> constexpr int ctc_dtype_of() {
  if constexpr (std::is_same<T, float>::value) return CT_F32;
  else if constexpr (std::is_same<T, double>::value) return CT_F64;
  else if constexpr (std::is_same<T, __half>::value) return CT_F16;
  else if constexpr (std::is_same<T, __nv_bfloat16>::value) return CT_BF16;
  else if constexpr (std::is_same<T, int8_t>::value) return CT_I8;
  else if constexpr (std::is_same<T, uint8_t>::value) return CT_U8;
  else if constexpr (std::is_same<T, int16_t>::value) return CT_I16;
  else if constexpr (std::is_same<T, int32_t>::value) return CT_I32;
  else if constexpr (std::is_same<T, int64_t>::value) return CT_I64;
  else return CT_BOOL;
}

/* A stored element as compute type C. Callers use the compute type of the
 * operand's class, so no cross-class conversion happens. */
template <class C, class T> __device__ __forceinline__ C ctc_in(T v) {
  if constexpr (std::is_same<T, __half>::value) return (C)__half2float(v);
  else if constexpr (std::is_same<T, __nv_bfloat16>::value) return (C)__bfloat162float(v);
  else if constexpr (std::is_same<T, ctc_bool8>::value) return (C)(v.v != 0);
  else return (C)v;
}

/* A compute value as stored type T: floats convert (halves round to nearest
 * even), integers truncate to their width (wrap-around), bool takes "nonzero". */
template <class T, class C> __device__ __forceinline__ T ctc_out(C v) {
  if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) return (T)v;
  else if constexpr (std::is_same<T, __half>::value) return __float2half_rn((float)v);
  else if constexpr (std::is_same<T, __nv_bfloat16>::value) return __float2bfloat16_rn((float)v);
  else if constexpr (std::is_same<T, ctc_bool8>::value) return ctc_bool8{(uint8_t)(v != (C)0)};
  else if constexpr (std::is_same<T, int64_t>::value) return (int64_t)v;
  else return (T)(uint64_t)(int64_t)v;
}

/* Loads the element at p of run-time dtype dt as compute type C. */
template <class C> __device__ __forceinline__ C ctc_load(const char *p, int dt) {
  return ctc_visit_dtype(dt, [&](auto t) {
    using T = typename decltype(t)::type;
    return ctc_in<C>(*(const T *)p);
  });
}

/* Stores compute value v at p as run-time dtype dt (see ctc_out). */
template <class C> __device__ __forceinline__ void ctc_store(char *p, int dt, C v) {
  ctc_visit_dtype(dt, [&](auto t) {
    using T = typename decltype(t)::type;
    *(T *)p = ctc_out<T>(v);
  });
}

/* ---- Elementwise geometry ----------------------------------------------------- *
 * Up to 4 operands of one shape (operand 0 the output). Dims of size 1 are
 * dropped and neighbours contiguous in every operand merged (host side), so
 * most tensors become 1 dim. `contig`: every operand is contiguous (stride 1
 * after merging) or a broadcast scalar (all strides 0): then element i of an
 * operand is at i (or 0) and no offset arithmetic runs. */
#define CTC_EW_MAX 4

/* Division by a run-time constant, for the strided path's index-to-coordinates
 * step. A 64-bit integer division has no instruction on the GPU: it is a
 * software routine of dozens of instructions, run once per dim per element.
 * While every index fits in 31 bits, the division by dim size d becomes a
 * multiply-high, an add and a shift by a magic number computed once on the
 * host (Granlund & Montgomery, "Division by invariant integers using
 * multiplication", 1994; PyTorch's IntDivider): q = (umulhi(n, mul) + n) >> shift
 * with shift = ceil(log2 d) and mul = 2^32 (2^shift - d) / d + 1, exact for every
 * n < 2^31 and 1 <= d < 2^31 (the sum then fits in 32 bits). */
struct ctc_div32 {
  uint32_t mul, shift;
};
__host__ __device__ inline ctc_div32 ctc_div32_make(uint32_t d) {
  uint32_t shift = 0;
  while (shift < 31 && ((uint32_t)1 << shift) < d) shift++;
  uint64_t mul = ((uint64_t)1 << 32) * (((uint64_t)1 << shift) - d) / d + 1;
  return ctc_div32{(uint32_t)mul, shift};
}
__host__ __device__ __forceinline__ uint32_t ctc_div32_apply(ctc_div32 v, uint32_t n) {
#ifdef __CUDA_ARCH__
  uint32_t hi = __umulhi(n, v.mul);
#else
  uint32_t hi = (uint32_t)(((uint64_t)n * v.mul) >> 32);
#endif
  return (hi + n) >> v.shift;
}

struct ctc_ew {
  int nargs, ndim;
  bool contig;
  bool idx32; /* numel < 2^31: coordinates through div32 (set by ctc_ew_set_dividers) */
  int64_t numel;
  ctc_div32 div[CTC_MAX_DIMS]; /* dividers of shape[1..ndim) (dim 0 is never divided) */
  int64_t shape[CTC_MAX_DIMS];
  int64_t st[CTC_EW_MAX][CTC_MAX_DIMS]; /* elements */
  char *data[CTC_EW_MAX];
  int dt[CTC_EW_MAX];
  int es[CTC_EW_MAX];
  bool scalar[CTC_EW_MAX]; /* contig path: operand is one repeated value */
};

/* Host: builds the geometry of ts[0..nargs) (all of ts[0]'s shape). */
void ctc_ew_init(ctc_ew *g, int nargs, const ctc_t *const *ts);
/* Host: fills idx32 and div from numel and shape; ctc_ew_init calls it, and a
 * caller that changes the shape or numel after init calls it again. */
inline void ctc_ew_set_dividers(ctc_ew *g) {
  g->idx32 = g->numel <= INT32_MAX;
  for (int d = 0; d < g->ndim; d++)
    g->div[d] =
        g->idx32 && g->shape[d] >= 1 ? ctc_div32_make((uint32_t)g->shape[d]) : ctc_div32{1, 0};
}

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
  /* innermost dim first; what is left after dim 1 is dim 0's coordinate
   * (i < numel), so dim 0 costs no division */
  if (g.idx32) {
    uint32_t j = (uint32_t)i;
    for (int d = g.ndim - 1; d >= 1; d--) {
      uint32_t q = ctc_div32_apply(g.div[d], j), r = j - q * (uint32_t)g.shape[d];
      j = q;
#pragma unroll
      for (int a = 0; a < N; a++) off[a] += (int64_t)r * g.st[a][d];
    }
    i = j;
  } else {
    for (int d = g.ndim - 1; d >= 1; d--) {
      int64_t s = g.shape[d];
      int64_t q = i / s, r = i - q * s;
      i = q;
#pragma unroll
      for (int a = 0; a < N; a++) off[a] += r * g.st[a][d];
    }
  }
  if (g.ndim > 0) {
#pragma unroll
    for (int a = 0; a < N; a++) off[a] += i * g.st[a][0];
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

/* ---- Value functors ---------------------------------------------------------------- *
 * Most elementwise ops are a value functor: `C operator()(C x1, ..., C xK) const`
 * in a compute type C, with no memory access, so that one functor serves both
 * kernels below: the generic strided kernel (ctc_ew_map adapts it to
 * ctc_ew_kernel, loading and storing through run-time dtypes) and the vector
 * kernel for contiguous operands (ctc_vec_kernel, dtypes known at compile
 * time). Operand 0 is the output, 1..K the inputs. */

template <class F, class C> __device__ __forceinline__ C ctc_call(const F &f, const C (&v)[1]) {
  return f(v[0]);
}
template <class F, class C> __device__ __forceinline__ C ctc_call(const F &f, const C (&v)[2]) {
  return f(v[0], v[1]);
}
template <class F, class C> __device__ __forceinline__ C ctc_call(const F &f, const C (&v)[3]) {
  return f(v[0], v[1], v[2]);
}

/* The generic kernel's form of value functor f. */
template <class C, int K, class F> struct ctc_ew_map {
  F f;
  __device__ void operator()(const ctc_ew &g, const int64_t *off) const {
    C v[K];
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = ctc_load<C>(ctc_ew_ptr(g, k + 1, off[k + 1]), g.dt[k + 1]);
    ctc_store<C>(ctc_ew_ptr(g, 0, off[0]), g.dt[0], ctc_call(f, v));
  }
};

/* f over any geometry with the generic kernel. */
template <class C, int K, class F>
static ct_status ctc_ew_map_launch(const char *op, int dev, const ctc_ew &g, F f) {
  return ctc_ew_launch<K + 1>(op, dev, g, ctc_ew_map<C, K, F>{f});
}

/* ---- Contiguous fast path: 16-byte vectors ----------------------------------------- *
 * When the geometry is `contig`, every input has one dtype S and every
 * non-scalar pointer is aligned to its vector, a thread moves V = 16 /
 * sizeof(S) consecutive elements of each input with one 16-byte load
 * (LDG.E.128; PyTorch's aligned_vector idiom) and V * sizeof(O) bytes of
 * output with one store (several when the output is wider than 16 bytes).
 * The generic kernel issues one access of the element's size per element and
 * operand behind a run-time dtype switch; here the loop body is the loads,
 * the op and the stores only, with 4 (f32) to 16 (u8) times fewer memory
 * instructions, which a bandwidth-bound op needs to reach DRAM speed.
 *
 * Decomposition: vector j covers elements [j*V, j*V + V); grid-stride over
 * the n / V vectors (grid: ctc_blocks), U vectors per thread per step (all
 * loads issued before any use, for memory-level parallelism; consecutive
 * threads take consecutive vectors, so a warp's load is 512 contiguous bytes);
 * the n % V tail elements by the first threads of the grid, one each. A
 * broadcast-scalar input is loaded once per thread and not read again. */
#define CTC_VEC_BYTES 16
#define CTC_VEC_UNROLL 2

/* V elements of T, moved as one unsigned word of the same size. */
template <class T, int V> struct ctc_pack {
  T v[V];
};
template <int B> struct ctc_raw { /* wider than 16 bytes: several 16-byte words */
  struct type {
    uint4 w[B / 16];
  };
};
template <> struct ctc_raw<1> { using type = uint8_t; };
template <> struct ctc_raw<2> { using type = uint16_t; };
template <> struct ctc_raw<4> { using type = uint32_t; };
template <> struct ctc_raw<8> { using type = uint2; };
template <> struct ctc_raw<16> { using type = uint4; };

/* Pack i of base (base aligned to min(16, sizeof(P))). The copy through the
 * raw word makes the access one instruction whatever T is (a struct of eight
 * __half may otherwise be moved piecewise); the copy itself is register moves. */
template <class P> __device__ __forceinline__ P ctc_vec_ld(const char *base, int64_t i) {
  using R = typename ctc_raw<sizeof(P)>::type;
  R r = reinterpret_cast<const R *>(base)[i];
  P p;
  memcpy(&p, &r, sizeof p);
  return p;
}
template <class P> __device__ __forceinline__ void ctc_vec_st(char *base, int64_t i, const P &p) {
  using R = typename ctc_raw<sizeof(P)>::type;
  R r;
  memcpy(&r, &p, sizeof r);
  reinterpret_cast<R *>(base)[i] = r;
}

/* The vector kernel's operands: out[0, n) of O and K inputs of S, each
 * contiguous, or (scalar[k]) one value standing for every element. */
template <int K> struct ctc_vec_args {
  char *out;
  const char *in[K];
  bool scalar[K];
  int64_t n;
};

/* One pack of outputs from one pack of each input (sv: the scalar inputs). */
template <class O, class C, int K, class S, int V, class F>
__device__ __forceinline__ ctc_pack<O, V> ctc_vec_apply(const F &f, const ctc_pack<S, V> (&x)[K],
                                                        const C (&sv)[K], const bool (&sc)[K]) {
  ctc_pack<O, V> r;
#pragma unroll
  for (int e = 0; e < V; e++) {
    C v[K];
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = sc[k] ? sv[k] : ctc_in<C>(x[k].v[e]);
    r.v[e] = ctc_out<O>(ctc_call(f, v));
  }
  return r;
}

/* Pack i of every non-scalar input (scalar inputs read as zeros, unused). */
template <int K, class P>
__device__ __forceinline__ void ctc_vec_load_all(const ctc_vec_args<K> &a, int64_t i, P (&x)[K]) {
#pragma unroll
  for (int k = 0; k < K; k++) x[k] = a.scalar[k] ? P{} : ctc_vec_ld<P>(a.in[k], i);
}

template <class S, class O, class C, int K, int U, class F>
__global__ void __launch_bounds__(CTC_THREADS) ctc_vec_kernel(ctc_vec_args<K> a, F f) {
  constexpr int V = CTC_VEC_BYTES / sizeof(S);
  using In = ctc_pack<S, V>;
  C sv[K];
#pragma unroll
  for (int k = 0; k < K; k++) sv[k] = a.scalar[k] ? ctc_in<C>(*(const S *)a.in[k]) : C(0);
  const int64_t nvec = a.n / V, stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  /* One copy of the op per (u, element): the last step's missing vectors are
   * predicated off rather than handled by a second loop. */
  for (int64_t i = tid; i < nvec; i += U * stride) {
    In x[U][K];
#pragma unroll
    for (int u = 0; u < U; u++)
      if (u == 0 || i + u * stride < nvec) ctc_vec_load_all(a, i + u * stride, x[u]);
#pragma unroll
    for (int u = 0; u < U; u++)
      if (u == 0 || i + u * stride < nvec)
        ctc_vec_st(a.out, i + u * stride, ctc_vec_apply<O>(f, x[u], sv, a.scalar));
  }
  const int64_t t = nvec * V + tid; /* the tail */
  if (t < a.n) {
    C v[K];
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = a.scalar[k] ? sv[k] : ctc_in<C>(((const S *)a.in[k])[t]);
    ((O *)a.out)[t] = ctc_out<O>(ctc_call(f, v));
  }
}

/* Host: whether g takes the vector path with inputs of S and output of O
 * (fills a). Alignment is the vector's size, capped at 16 bytes. */
template <class S, class O, int K> static bool ctc_vec_init(const ctc_ew &g, ctc_vec_args<K> *a) {
  constexpr size_t V = CTC_VEC_BYTES / sizeof(S);
  constexpr size_t out_align = V * sizeof(O) < 16 ? V * sizeof(O) : 16;
  if (g.nargs != K + 1 || !g.contig || g.dt[0] != ctc_dtype_of<O>()) return false;
  if ((uintptr_t)g.data[0] % out_align != 0) return false;
  a->out = g.data[0];
  a->n = g.numel;
  for (int k = 0; k < K; k++) {
    if (g.dt[k + 1] != ctc_dtype_of<S>()) return false;
    if (!g.scalar[k + 1] && (uintptr_t)g.data[k + 1] % CTC_VEC_BYTES != 0) return false;
    a->in[k] = g.data[k + 1];
    a->scalar[k] = g.scalar[k + 1];
  }
  return true;
}

template <class S, class O, class C, int K, int U, class F>
static ct_status ctc_vec_start(const char *op, int dev, const ctc_vec_args<K> &a, F f) {
  if (a.n == 0) return CT_OK;
  int64_t nvec = a.n / (int64_t)(CTC_VEC_BYTES / sizeof(S));
  cudaStream_t s = ctc_stream(dev);
  unsigned blocks = ctc_blocks(nvec > 0 ? nvec : 1, dev, U);
  ctc_vec_kernel<S, O, C, K, U, F><<<blocks, CTC_THREADS, 0, s>>>(a, f);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

/* Launches f on the vector path when g qualifies for (S, O): true, with the
 * launch's status in *st; false (nothing launched) otherwise. */
template <class S, class O, class C, int K, int U = CTC_VEC_UNROLL, class F>
static bool ctc_vec_launch(const char *op, int dev, const ctc_ew &g, F f, ct_status *st) {
  ctc_vec_args<K> a;
  if (!ctc_vec_init<S, O>(g, &a)) return false;
  *st = ctc_vec_start<S, O, C, K, U>(op, dev, a, f);
  return true;
}

/* The dtypes with a vector path in each compute class, as storage types:
 * f32, f16 and bf16 compute in float, f64 in double, i32 and i64 in int64.
 * Calls fn(ctc_type<S>()) when dt is one of C's, else returns false. */
template <class C, class Fn> static bool ctc_vec_dtype(int dt, Fn &&fn) {
  if constexpr (std::is_same<C, float>::value) {
    if (dt == CT_F32) return fn(ctc_type<float>());
    if (dt == CT_F16) return fn(ctc_type<__half>());
    if (dt == CT_BF16) return fn(ctc_type<__nv_bfloat16>());
  } else if constexpr (std::is_same<C, double>::value) {
    if (dt == CT_F64) return fn(ctc_type<double>());
  } else {
    if (dt == CT_I32) return fn(ctc_type<int32_t>());
    if (dt == CT_I64) return fn(ctc_type<int64_t>());
  }
  return false;
}

/* Vector path for value functor f of K inputs of one dtype (g.dt[1]) of
 * compute class C; the output of that dtype, or bool when OutBool. U: vectors
 * per thread per step; 1 for functors with a run-time switch over heavy math
 * (pow, atan2, erf...), whose code is inlined U * V times. */
template <class C, int K, bool OutBool, int U = CTC_VEC_UNROLL, class F>
static bool ctc_vec_run(const char *op, int dev, const ctc_ew &g, F f, ct_status *st) {
  return ctc_vec_dtype<C>(g.dt[1], [&](auto t) {
    using S = typename decltype(t)::type;
    using O = typename std::conditional<OutBool, ctc_bool8, S>::type;
    return ctc_vec_launch<S, O, C, K, U>(op, dev, g, f, st);
  });
}

/* f over g: the vector path when it qualifies, else the generic kernel. */
template <class C, int K, bool OutBool, int U = CTC_VEC_UNROLL, class F>
static ct_status ctc_map(const char *op, int dev, const ctc_ew &g, F f) {
  ct_status st;
  if (ctc_vec_run<C, K, OutBool, U>(op, dev, g, f, &st)) return st;
  return ctc_ew_map_launch<C, K>(op, dev, g, f);
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
    /* 0 beside a 0 without the product of the other sizes, which can
     * overflow then ((2^40, 0, 2^40) along dim 0) */
    l.numel = 1;
    for (int d = 0; d < t->ndim; d++) l.numel = l.shape[d] == 0 ? 0 : l.numel;
    for (int d = 0; d < t->ndim && l.numel > 0; d++) l.numel *= l.shape[d];
  }
  return l;
}

#endif /* CT_CUDA_COMMON_CUH */
