/* Element coordinates for the generic strided kernels (one thread per
 * element of any shape and strides): index.cu, adv_index.cu. */
#ifndef CT_CUDA_COORDS_CUH
#define CT_CUDA_COORDS_CUH

#include "backend/cuda/common.cuh"

/* Coordinates c of row-major element e of t's shape. */
__device__ __forceinline__ void ctc_coords(const ctc_t &t, int64_t e, int64_t *c) {
  for (int d = t.ndim - 1; d >= 0; d--) {
    int64_t q = e / t.shape[d];
    c[d] = e - q * t.shape[d];
    e = q;
  }
}
/* The element offset of coordinates c in t. */
__device__ __forceinline__ int64_t ctc_dot(const ctc_t &t, const int64_t *c) {
  int64_t o = 0;
  for (int d = 0; d < t.ndim; d++) o += c[d] * t.strides[d];
  return o;
}

#endif /* CT_CUDA_COORDS_CUH */
