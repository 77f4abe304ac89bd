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

extern "C" ct_status ct__cuda_searchsorted(ct_tensor *out_t, const ct_tensor *sorted_t,
                                           const ct_tensor *values_t, bool right) {
  const ctc_view out(out_t), sorted(sorted_t), values(values_t);
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

/* ---- sort_flat: merge sort, one launch per doubling of the sorted runs ---- *
 * Each thread places one element of a pair of neighbouring runs of width w:
 * its place is its index in its own run plus its rank in the other run
 * (elements of the left run count the right run's smaller elements, those of
 * the right run the left run's smaller or equal ones, so equal elements keep
 * their order and every place is taken once). log2(n) launches of n threads,
 * n log^2 n comparisons. */
template <class T>
__global__ void merge_pass_kernel(const T *src, T *dst, int64_t n, int64_t w) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
    int64_t start = e / (2 * w) * (2 * w), mid = start + w < n ? start + w : n;
    int64_t end = start + 2 * w < n ? start + 2 * w : n;
    T v = src[e];
    int64_t pos = e < mid ? e + ct_sorted_rank(src + mid, end - mid, v, false)
                          : start + (e - mid) + ct_sorted_rank(src + start, mid - start, v, true);
    dst[pos] = v;
  }
}

template <class T>
static ct_status sort_flat(const char *op, int dev, T *out, const T *x, int64_t n) {
  cudaStream_t s = ctc_stream(dev);
  int passes = 0;
  for (int64_t w = 1; w < n; w *= 2) passes++;
  if (passes == 0) {
    CT_CUDA_CHECK(op, dev,
                  cudaMemcpyAsync(out, x, (size_t)n * sizeof(T), cudaMemcpyDeviceToDevice, s));
    return CT_OK;
  }
  ctc_scratch buf(dev);
  T *tmp = (T *)buf.get((size_t)n * sizeof(T));
  if (!tmp) return ct_last_error();
  /* ping-pong so that the last pass writes out */
  T *dst = passes % 2 ? out : tmp;
  const T *src = x;
  for (int64_t w = 1; w < n; w *= 2) {
    merge_pass_kernel<T><<<ctc_blocks(n, dev), CTC_THREADS, 0, s>>>(src, dst, n, w);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
    src = dst;
    dst = dst == out ? tmp : out;
  }
  return CT_OK;
}

extern "C" ct_status ct__cuda_sort_flat(ct_tensor *out_t, const ct_tensor *x_t) {
  const ctc_view out(out_t), x(x_t);
  const char *op = "unique";
  int dev = out->device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || x->numel == 0) return st;
  if (x->dtype == CT_F64)
    return sort_flat(op, dev, (double *)out->data, (const double *)x->data, x->numel);
  return sort_flat(op, dev, (int64_t *)out->data, (const int64_t *)x->data, x->numel);
}
