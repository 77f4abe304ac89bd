/* One element added atomically into another of the same dtype, for the
 * accumulating writes of several kernels (scatter_add, index_put with
 * accumulate): f16/bf16 native atomicAdd, narrow integers a compare-and-swap
 * on the containing 32-bit word; integer sums wrap; bool is "or". */
#ifndef CT_CUDA_ATOMIC_ADD_CUH
#define CT_CUDA_ATOMIC_ADD_CUH

#include "backend/cuda/common.cuh"

/* *p += v for a narrow integer (1 or 2 bytes) through the containing word. */
__device__ __forceinline__ void ctc_atomic_add_narrow(char *p, int64_t v, int es) {
  uintptr_t a = (uintptr_t)p;
  unsigned int *w = (unsigned int *)(a & ~(uintptr_t)3);
  unsigned shift = (unsigned)(a & 3) * 8, mask = (es == 1 ? 0xffu : 0xffffu) << shift;
  unsigned old = *w, assumed;
  do {
    assumed = old;
    unsigned cur = (assumed & mask) >> shift;
    unsigned nv = ((cur + (unsigned)(uint64_t)v) << shift) & mask;
    old = atomicCAS(w, assumed, (assumed & ~mask) | nv);
  } while (old != assumed);
}

/* *dp += *sp, both of dtype (es bytes). */
__device__ __forceinline__ void ctc_atomic_add_elem(char *dp, const char *sp, int dtype, int es) {
  switch (dtype) {
    case CT_F32:
      atomicAdd((float *)dp, *(const float *)sp);
      break;
    case CT_F64:
      atomicAdd((double *)dp, *(const double *)sp);
      break;
    case CT_F16:
      atomicAdd((__half *)dp, *(const __half *)sp);
      break;
    case CT_BF16:
      atomicAdd((__nv_bfloat16 *)dp, *(const __nv_bfloat16 *)sp);
      break;
    case CT_I32:
      atomicAdd((unsigned int *)dp, (unsigned int)*(const int32_t *)sp);
      break;
    case CT_I64:
      atomicAdd((unsigned long long *)dp, (unsigned long long)*(const int64_t *)sp);
      break;
    case CT_BOOL: /* or: only ever stores 1, so plain stores can't lose an update */
      if (*(const uint8_t *)sp) *(volatile uint8_t *)dp = 1;
      break;
    default:
      ctc_atomic_add_narrow(dp, ctc_load<int64_t>(sp, dtype), es);
      break;
  }
}

#endif /* CT_CUDA_ATOMIC_ADD_CUH */
