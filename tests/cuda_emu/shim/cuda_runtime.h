/* Host EMULATION of the CUDA runtime and device built-ins that ctensor's
 * kernels use: no GPU is involved (tests/cuda_emu/README.md).
 *
 * A kernel launch (rewritten by cu2cpp.py into emu_launch) runs the grid's
 * blocks one after the other on the calling thread; a block's threads are
 * fibers (one stack each) that run until they finish or wait at a barrier.
 * Synchronization is strict: __syncthreads needs every thread of the block,
 * a full-mask warp primitive (__shfl_*_sync, __ballot_sync...) all 32 lanes
 * of the warp; a thread that exits early or waits elsewhere is reported as a
 * deadlock. Blocks run in ascending, descending or shuffled order and a
 * block's threads are scheduled in the same orders, round-robin or greedily
 * (changing per launch), so results that depend on the order of threads
 * show up. __shared__ arrays are poisoned at
 * every block's start, device scratch is garbage, 16-byte vector accesses
 * (uint4, uint2, __ldg) check their alignment. Memory is host memory:
 * "device" pointers are plain pointers. */
#ifndef CT_EMU_CUDA_RUNTIME_H
#define CT_EMU_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#define CT_CUDA_EMULATION 1

/* ---- Keywords ------------------------------------------------------------------- */
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __constant__ static
#define __managed__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __grid_constant__

/* ---- Vector types ------------------------------------------------------------------ */
void emu_misaligned(const void *p, int align, const char *what);
static inline const void *emu_opaque(const void *p) {
  asm("" : "+r"(p)); /* the compiler may not assume the type's alignment */
  return p;
}
static inline void emu_check_align(const void *p, int align, const char *what) {
  if ((uintptr_t)p % (uintptr_t)align != 0) emu_misaligned(p, align, what);
}

/* The 8- and 16-byte vectors: every copy checks the addresses' alignment, so
 * that a misaligned vector load or store (a fault on the GPU) is reported. */
#define EMU_VEC_TYPE(NAME, T, N, ALIGN, ...)                      \
  struct alignas(ALIGN) NAME {                                    \
    T __VA_ARGS__;                                                \
    NAME() = default;                                             \
    NAME(const NAME &o) { emu_copy(this, &o); }                   \
    NAME &operator=(const NAME &o) {                              \
      emu_copy(this, &o);                                         \
      return *this;                                               \
    }                                                             \
    static void emu_copy(NAME *d, const NAME *s) {                \
      emu_check_align(s, ALIGN, "load of " #NAME);                \
      emu_check_align(d, ALIGN, "store of " #NAME);               \
      memcpy((void *)emu_opaque(d), emu_opaque(s), sizeof(NAME)); \
    }                                                             \
  };
EMU_VEC_TYPE(uint4, unsigned, 4, 16, x, y, z, w)
EMU_VEC_TYPE(int4, int, 4, 16, x, y, z, w)
EMU_VEC_TYPE(float4, float, 4, 16, x, y, z, w)
EMU_VEC_TYPE(double2, double, 2, 16, x, y)
EMU_VEC_TYPE(longlong2, long long, 2, 16, x, y)
EMU_VEC_TYPE(ulonglong2, unsigned long long, 2, 16, x, y)
EMU_VEC_TYPE(uint2, unsigned, 2, 8, x, y)
EMU_VEC_TYPE(int2, int, 2, 8, x, y)
EMU_VEC_TYPE(float2, float, 2, 8, x, y)
#undef EMU_VEC_TYPE
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  uint4 r;
  r.x = x, r.y = y, r.z = z, r.w = w;
  return r;
}
static inline uint2 make_uint2(unsigned x, unsigned y) {
  uint2 r;
  r.x = x, r.y = y;
  return r;
}
static inline float4 make_float4(float x, float y, float z, float w) {
  float4 r;
  r.x = x, r.y = y, r.z = z, r.w = w;
  return r;
}
static inline float2 make_float2(float x, float y) {
  float2 r;
  r.x = x, r.y = y;
  return r;
}

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
static constexpr int warpSize = 32;

/* ---- Errors, streams, memory: the runtime API, shared with C callers -------------- */
#include "cuda_runtime_api.h"

/* ---- Device built-ins ------------------------------------------------------------------- */
namespace emu {
struct Barrier {
  int arrived = 0;
  uint64_t gen = 0;
};
struct Fiber {
  void *sp = nullptr;    /* saved stack pointer (or ucontext) */
  void *ctx = nullptr;   /* ucontext_t when not on x86-64 */
  char *stack = nullptr; /* usable stack [stack, stack + stack_size) */
  size_t stack_size = 0;
  uint3 tid{0, 0, 0};
  int lin = 0; /* linear thread index in the block */
  bool done = false;
  const Barrier *wait = nullptr;
  uint64_t wait_gen = 0;
  void *asan_fake = nullptr;
};
struct Warp {
  Barrier bar;
  unsigned char slot[2][32][8]; /* shuffle exchange, double-buffered by the barrier's parity */
};
extern Fiber *cur;
extern uint3 block_idx;
extern dim3 block_dim, grid_dim;
extern int nthreads; /* of the block */
extern Barrier block_bar;
extern int block_acc[2]; /* __syncthreads_count/and/or */
extern Warp warps[32];
void wait(Barrier &b, int n); /* arrive; returns once n threads have */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warp_sync(const char *what, unsigned mask);
}  // namespace emu

#define threadIdx (::emu::cur->tid)
#define blockIdx (::emu::block_idx)
#define blockDim (::emu::block_dim)
#define gridDim (::emu::grid_dim)

static inline void __syncthreads(void) { emu::wait(emu::block_bar, emu::nthreads); }
static inline int emu_syncthreads_acc(int pred, int how) {
  int par = (int)(emu::block_bar.gen & 1);
  emu::block_acc[par] += how == 0 ? (pred != 0) : how == 1 ? (pred == 0) : (pred != 0);
  __syncthreads();
  return emu::block_acc[par];
}
static inline int __syncthreads_count(int pred) { return emu_syncthreads_acc(pred, 0); }
static inline int __syncthreads_and(int pred) { return emu_syncthreads_acc(pred, 1) == 0; }
static inline int __syncthreads_or(int pred) { return emu_syncthreads_acc(pred, 2) != 0; }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::warp_sync("__syncwarp", mask); }
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}
static inline void __threadfence_system(void) {}
static inline unsigned __activemask(void) { return 0xffffffffu; }

/* Warp shuffles: every lane writes its value, the warp meets, each reads its source. */
enum { EMU_SHFL_IDX, EMU_SHFL_UP, EMU_SHFL_DOWN, EMU_SHFL_XOR };
template <class T>
static inline T emu_shfl(const char *what, unsigned mask, T v, int kind, int arg, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "shuffles move up to 8 bytes");
  int lin = emu::cur->lin, lane = lin & 31;
  emu::Warp &w = emu::warps[lin >> 5];
  int par = (int)(w.bar.gen & 1);
  memcpy(w.slot[par][lane], &v, sizeof v);
  emu::warp_sync(what, mask);
  if (width <= 0 || width > 32 || (width & (width - 1))) emu::fail("%s: width %d", what, width);
  int base = lane & ~(width - 1), src = lane;
  switch (kind) {
    case EMU_SHFL_IDX:
      src = base + (arg & (width - 1));
      break;
    case EMU_SHFL_UP:
      src = lane - base >= arg ? lane - arg : lane;
      break;
    case EMU_SHFL_DOWN:
      src = lane - base + arg < width ? lane + arg : lane;
      break;
    default:
      src = ((lane ^ arg) & ~(width - 1)) <= base ? (lane ^ arg) & 31 : lane;
      break;
  }
  T r;
  memcpy(&r, w.slot[par][src & 31], sizeof r);
  return r;
}
template <class T>
static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return emu_shfl("__shfl_sync", mask, v, EMU_SHFL_IDX, src, width);
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return emu_shfl("__shfl_up_sync", mask, v, EMU_SHFL_UP, (int)d, width);
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return emu_shfl("__shfl_down_sync", mask, v, EMU_SHFL_DOWN, (int)d, width);
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lm, int width = 32) {
  return emu_shfl("__shfl_xor_sync", mask, v, EMU_SHFL_XOR, lm, width);
}
static inline unsigned emu_vote(const char *what, unsigned mask, int pred) {
  int lin = emu::cur->lin, lane = lin & 31;
  emu::Warp &w = emu::warps[lin >> 5];
  int par = (int)(w.bar.gen & 1);
  w.slot[par][lane][0] = pred != 0;
  emu::warp_sync(what, mask);
  unsigned r = 0;
  for (int l = 0; l < 32; l++) r |= (unsigned)w.slot[par][l][0] << l;
  return r;
}
static inline unsigned __ballot_sync(unsigned mask, int pred) {
  return emu_vote("__ballot_sync", mask, pred);
}
static inline int __any_sync(unsigned mask, int pred) {
  return emu_vote("__any_sync", mask, pred) != 0;
}
static inline int __all_sync(unsigned mask, int pred) {
  return emu_vote("__all_sync", mask, pred) == 0xffffffffu;
}

/* Read-only loads: the pointer must be aligned to the type. */
template <class T>
static inline T __ldg(const T *p) {
  emu_check_align(p, alignof(T), "__ldg");
  T r;
  memcpy(&r, emu_opaque(p), sizeof r);
  return r;
}

/* Integer intrinsics. */
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static inline int __mul24(int a, int b) { return a * b; }
static inline long long __mul64hi(long long a, long long b) {
  return (long long)(((__int128)a * b) >> 64);
}
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}

/* Float bit casts and fast math (the host's libm: not the GPU's ulp bounds). */
static inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float __int_as_float(int u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline int __float_as_int(float f) {
  int u;
  memcpy(&u, &f, 4);
  return u;
}
static inline double __longlong_as_double(long long u) {
  double f;
  memcpy(&f, &u, 8);
  return f;
}
static inline long long __double_as_longlong(double f) {
  long long u;
  memcpy(&u, &f, 8);
  return u;
}
/* glibc declares __expf & co. as its own internal names: macros, not functions */
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __powf(x, y) powf(x, y)
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __saturatef(float x) { return x != x ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

/* Atomics: a fiber switch happens only at a barrier, so a plain
 * read-modify-write is atomic here (a spin-wait on another block, which
 * would never run, is not emulated). */
#define EMU_ATOMIC_RMW(NAME, T, EXPR) \
  static inline T NAME(T *p, T v) {   \
    T old = *p;                       \
    *p = (T)(EXPR);                   \
    return old;                       \
  }
#define EMU_ATOMIC_INTS(NAME, EXPR)     \
  EMU_ATOMIC_RMW(NAME, int, EXPR)       \
  EMU_ATOMIC_RMW(NAME, unsigned, EXPR)  \
  EMU_ATOMIC_RMW(NAME, long long, EXPR) \
  EMU_ATOMIC_RMW(NAME, unsigned long long, EXPR)
EMU_ATOMIC_RMW(atomicAdd, int, (unsigned)old + (unsigned)v)
EMU_ATOMIC_RMW(atomicAdd, unsigned, old + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned long long, old + v)
EMU_ATOMIC_RMW(atomicAdd, float, old + v)
EMU_ATOMIC_RMW(atomicAdd, double, old + v)
EMU_ATOMIC_RMW(atomicSub, int, (unsigned)old - (unsigned)v)
EMU_ATOMIC_RMW(atomicSub, unsigned, old - v)
EMU_ATOMIC_INTS(atomicExch, v)
EMU_ATOMIC_RMW(atomicExch, float, v)
EMU_ATOMIC_INTS(atomicMax, old > v ? old : v)
EMU_ATOMIC_INTS(atomicMin, old < v ? old : v)
EMU_ATOMIC_INTS(atomicAnd, old &v)
EMU_ATOMIC_INTS(atomicOr, old | v)
EMU_ATOMIC_INTS(atomicXor, old ^ v)
#undef EMU_ATOMIC_INTS
#undef EMU_ATOMIC_RMW
#define EMU_ATOMIC_CAS(T)                       \
  static inline T atomicCAS(T *p, T cmp, T v) { \
    T old = *p;                                 \
    if (old == cmp) *p = v;                     \
    return old;                                 \
  }
EMU_ATOMIC_CAS(int)
EMU_ATOMIC_CAS(unsigned)
EMU_ATOMIC_CAS(unsigned long long)
EMU_ATOMIC_CAS(unsigned short)
#undef EMU_ATOMIC_CAS
static inline unsigned atomicInc(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old >= v ? 0 : old + 1;
  return old;
}
static inline unsigned atomicDec(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = (old == 0 || old > v) ? v : old - 1;
  return old;
}

/* ---- Launches ---------------------------------------------------------------------------- */
/* <<<grid, block, shared bytes, stream>>>: sizes as any integer or dim3. */
struct emu_cfg {
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  bool bad;
  template <class G, class B>
  emu_cfg(G g, B b, size_t sm = 0, cudaStream_t s = 0) : smem(sm), stream(s), bad(false) {
    grid = dim_of(g);
    block = dim_of(b);
  }
  template <class D>
  dim3 dim_of(D d) {
    if constexpr (std::is_integral<D>::value) {
      if (d < 1 || (unsigned long long)d > 0xffffffffull) bad = true;
      return dim3((unsigned)d);
    } else {
      return dim3(d);
    }
  }
};

namespace emu {
/* A launch's configuration is valid (else the error is recorded: fail(),
 * cudaErrorInvalidConfiguration). */
bool config_ok(const char *name, const emu_cfg &c);
/* Runs body as every thread of the grid of a valid configuration. */
void run_grid(const char *name, const emu_cfg &c, const std::function<void()> &body);
/* A launch: run at once (kernel tests) or queued on c.stream (the library). */
void launch(const char *name, const emu_cfg &c, std::function<void()> body);
}  // namespace emu

/* The rewrite of kernel<<<c>>>(args...): the arguments are evaluated once and
 * converted to the kernel's parameter types; every thread gets its own copy. */
template <class... P, class... A>
static void emu_launch(const char *name, void (*k)(P...), const emu_cfg &c, A &&...a) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launch: argument count");
  auto args = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(a)...);
  emu::launch(name, c, [k, args] { std::apply(k, *args); });
}

/* Poisons a __shared__ array when this block first reaches its declaration. */
void emu_shared_fresh(void *p, size_t n);
/* extern __shared__: the launch's dynamic shared memory. */
void *emu_dynamic_shared(void);

/* The __global__ functions of a translated file (for the coverage report). */
struct emu_kernel_registrar {
  emu_kernel_registrar(const char *file, const char *kernel);
};

#endif /* CT_EMU_CUDA_RUNTIME_H */
