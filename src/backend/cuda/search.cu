/* CUDA searchsorted: one thread per value, a binary search in its row
 * (core/search_math.h, the CPU's formula). Contract: backend/backend.h. */
#include "backend/cuda/common.cuh"
#include "core/search_math.h"

__global__ void searchsorted_kernel(ctc_t out, ctc_t sorted, ctc_t values, bool right) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x, M = values.shape[1], L = sorted.shape[1];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < out.numel; e += stride) {
    int64_t r = e / M, m = e - r * M;
    int64_t so = r * sorted.strides[0], vo = r * values.strides[0] + m * values.strides[1];
    int64_t *o = (int64_t *)out.data + r * out.strides[0] + m * out.strides[1];
    if (sorted.dtype == CT_F64)
      *o = ct_searchsorted((const double *)sorted.data + so, sorted.strides[1], L,
                           ((const double *)values.data)[vo], right);
    else
      *o = ct_searchsorted((const int64_t *)sorted.data + so, sorted.strides[1], L,
                           ((const int64_t *)values.data)[vo], right);
  }
}

extern "C" ct_status ct__cuda_searchsorted(const ctc_t *out, const ctc_t *sorted,
                                           const ctc_t *values, bool right) {
  const char *op = "searchsorted";
  int dev = out->device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || out->numel == 0) return st;
  cudaStream_t s = ctc_stream(dev);
  searchsorted_kernel<<<ctc_blocks(out->numel, dev), CTC_THREADS, 0, s>>>(*out, *sorted, *values,
                                                                          right);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}
