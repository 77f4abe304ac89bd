/* CUDA indexing kernels: index_select, gather, scatter(_add), masked_select,
 * count_nonzero, triangle (tril/triu). Contracts: backend/backend.h.
 *
 * Index checks: the kernels check every index as they use it; a bad one is
 * skipped and raises a fault, reported by the next synchronization with the
 * device (fault.cu), so index_select/gather/scatter return at once like every
 * other op. masked_select and count_nonzero synchronize because their results
 * size the output / return a host value (and so report pending faults).
 * Elements move by size; scatter_add uses atomics (f16/bf16 native atomicAdd,
 * narrow integers a compare-and-swap on the containing 32-bit word; integer
 * sums wrap). scatter (no add) with repeated indices leaves one of the
 * written values, unspecified which (as torch on CUDA). */
#include <cub/device/device_scan.cuh>

#include "backend/cuda/atomic_add.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/coords.cuh"

/* ---- index_select, gather: out[e] = x[coords of e with dim replaced] -------------------- */

/* gather: the replacement is index at e's coords; index_select: index[c[dim]].
 * An index outside [0, size) raises a fault (fault.cu) and leaves zeros. */
__global__ void select_kernel(ctc_t out, ctc_t x, ctc_t index, int dim, bool gather, ctc_fault *fault,
                              const char *op) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(x.dtype);
  int64_t size = x.shape[dim];
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < out.numel; e += stride) {
    ctc_coords(out, e, c);
    int64_t oo = ctc_dot(out, c);
    int64_t v = gather ? *(const int64_t *)(index.data + ctc_dot(index, c) * 8)
                       : *(const int64_t *)(index.data + c[dim] * index.strides[0] * 8);
    if (v < 0 || v >= size) {
      ctc_fault_raise(fault, CTC_FAULT_INDEX, op, dim, v, size);
      const uint64_t zero = 0;
      ct_move_elem(out.data + oo * es, (const char *)&zero, es);
      continue;
    }
    c[dim] = v;
    ct_move_elem(out.data + oo * es, x.data + ctc_dot(x, c) * es, es);
  }
}

static ct_status run_select(const char *op, const ctc_t *out, const ctc_t *x, int dim, const ctc_t *index,
                            bool gather) {
  int dev = out->device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || out->numel == 0) return st;
  ctc_fault *fault = ctc_fault_record(op, dev);
  if (!fault) return ct_last_error();
  cudaStream_t s = ctc_stream(dev);
  select_kernel<<<ctc_blocks(out->numel, dev), CTC_THREADS, 0, s>>>(*out, *x, *index, dim, gather, fault, op);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_index_select(ct_tensor *out_t, const ct_tensor *x_t, int dim,
                                           const ct_tensor *index_t) {
  const ctc_view out(out_t), x(x_t), index(index_t);
  return run_select("index_select", out, x, dim, index, false);
}
extern "C" ct_status ct__cuda_gather(const char *op, ct_tensor *out_t, const ct_tensor *x_t,
                                     int dim, const ct_tensor *index_t) {
  const ctc_view out(out_t), x(x_t), index(index_t);
  return run_select(op, out, x, dim, index, true);
}

/* ---- scatter / scatter_add ------------------------------------------------------------------ */

/* An index outside [0, size) raises a fault (fault.cu); its element is skipped. */
__global__ void scatter_kernel(ctc_t self, ctc_t index, ctc_t src, int dim, bool add, ctc_fault *fault,
                               const char *op) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(self.dtype);
  int64_t size = self.shape[dim];
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < index.numel; e += stride) {
    ctc_coords(index, e, c);
    const char *sp = src.data + ctc_dot(src, c) * es;
    int64_t v = *(const int64_t *)(index.data + ctc_dot(index, c) * 8);
    if (v < 0 || v >= size) {
      ctc_fault_raise(fault, CTC_FAULT_INDEX, op, dim, v, size);
      continue;
    }
    c[dim] = v;
    char *dp = self.data + ctc_dot(self, c) * es;
    if (!add) {
      ct_move_elem(dp, sp, es);
      continue;
    }
    ctc_atomic_add_elem(dp, sp, self.dtype, es);
  }
}

extern "C" ct_status ct__cuda_scatter(ct_tensor *self_t, int dim, const ct_tensor *index_t,
                                      const ct_tensor *src_t, bool add) {
  const ctc_view self(self_t), index(index_t), src(src_t);
  if (ct_are_deterministic_algorithms_enabled()) /* sort-based, no atomics: deterministic.cu */
    return ct__cuda_scatter_sorted(self, dim, index, src, add);
  int dev = self->device;
  const char *op = add ? "scatter_add" : "scatter";
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  if (index->numel == 0) return CT_OK;
  ctc_fault *fault = ctc_fault_record(op, dev);
  if (!fault) return ct_last_error();
  cudaStream_t s = ctc_stream(dev);
  scatter_kernel<<<ctc_blocks(index->numel, dev), CTC_THREADS, 0, s>>>(*self, *index, *src, dim, add, fault, op);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

/* ---- masked_select, count_nonzero ------------------------------------------------------------- */

/* flags[e] = mask at row-major e (x's shape). */
__global__ void flags_kernel(ctc_t mask, int64_t *flags) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < mask.numel; e += stride) {
    ctc_coords(mask, e, c);
    flags[e] = *(const uint8_t *)(mask.data + ctc_dot(mask, c)) != 0;
  }
}

/* out[pos[e]] = x[e] where mask (pos: exclusive scan of the flags). */
__global__ void compact_kernel(ctc_t out, ctc_t x, const int64_t *flags, const int64_t *pos) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(x.dtype);
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < x.numel; e += stride) {
    if (!flags[e] || pos[e] >= out.numel) continue;
    ctc_coords(x, e, c);
    ct_move_elem(out.data + pos[e] * out.strides[0] * es, x.data + ctc_dot(x, c) * es, es);
  }
}

/* DeviceScan of older CUB (before NVIDIA/cccl#2171, 2024; CUDA 12.x toolkits)
 * takes `int num_items` and would silently truncate an int64 count: the scan
 * runs over chunks that fit an int. */
#define SCAN_CHUNK ((int64_t)1 << 30)

/* A chunk's exclusive scan pos[0, n) continued from the previous chunk:
 * += the count before it (pos[-1] + flags[-1], final: stream-ordered). */
__global__ void scan_carry_kernel(int64_t *pos, const int64_t *flags, int64_t n) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x, carry = pos[-1] + flags[-1];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride)
    pos[e] += carry;
}

extern "C" ct_status ct__cuda_masked_select(ct_tensor *out_t, const ct_tensor *x_t,
                                            const ct_tensor *mask_t) {
  const ctc_view out(out_t), x(x_t), mask(mask_t);
  int dev = x->device;
  const char *op = "masked_select";
  if (out->numel == 0 || x->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  int64_t n = x->numel;
  ctc_scratch fbuf(dev), tbuf(dev);
  int64_t *flags = (int64_t *)fbuf.get((size_t)n * 16);
  if (!flags) return ct_last_error();
  int64_t *pos = flags + n;
  flags_kernel<<<ctc_blocks(n, dev), CTC_THREADS, 0, s>>>(*mask, flags);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  int chunk = (int)(n < SCAN_CHUNK ? n : SCAN_CHUNK);
  size_t tmp = 0; /* the largest chunk's needs cover the others' */
  CT_CUDA_CHECK(op, dev, cub::DeviceScan::ExclusiveSum(nullptr, tmp, flags, pos, chunk, s));
  void *t = tbuf.get(tmp);
  if (!t) return ct_last_error();
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    int len = (int)(n - c0 < chunk ? n - c0 : chunk);
    size_t bytes = tmp;
    CT_CUDA_CHECK(op, dev, cub::DeviceScan::ExclusiveSum(t, bytes, flags + c0, pos + c0, len, s));
    if (c0 == 0) continue;
    scan_carry_kernel<<<ctc_blocks(len, dev), CTC_THREADS, 0, s>>>(pos + c0, flags + c0, len);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  compact_kernel<<<ctc_blocks(n, dev), CTC_THREADS, 0, s>>>(*out, *x, flags, pos);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

__global__ void count_kernel(ctc_t mask, unsigned long long *total) {
  __shared__ unsigned long long sh[32];
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t c[CTC_MAX_DIMS];
  unsigned long long k = 0;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < mask.numel; e += stride) {
    ctc_coords(mask, e, c);
    k += *(const uint8_t *)(mask.data + ctc_dot(mask, c)) != 0;
  }
  struct add_op {
    __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a + b; }
  };
  k = ctc_block_reduce(k, add_op(), 0ull, sh);
  if (threadIdx.x == 0) atomicAdd(total, k);
}

extern "C" ct_status ct__cuda_count_nonzero(const ct_tensor *mask_t, int64_t *count) {
  const ctc_view mask(mask_t);
  int dev = mask->device;
  const char *op = "count_nonzero";
  *count = 0;
  if (mask->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  ctc_scratch buf(dev);
  unsigned long long *total = (unsigned long long *)buf.get(8), host = 0;
  if (!total) return ct_last_error();
  CT_CUDA_CHECK(op, dev, cudaMemsetAsync(total, 0, 8, s));
  count_kernel<<<ctc_blocks(mask->numel, dev), CTC_THREADS, 0, s>>>(*mask, total);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  CT_CUDA_CHECK(op, dev, cudaMemcpyAsync(&host, total, 8, cudaMemcpyDeviceToHost, s));
  CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(s));
  *count = (int64_t)host;
  /* a value read on the host, like ct_item: the mask may come from a kernel
   * that met a bad index, whose fault this synchronization reports */
  return ctc_fault_check(dev);
}

/* ---- triangle: out[.., i, j] = keep(i, j) ? x : 0 (out may be x) ---------------------------------- */

__global__ void triangle_kernel(ctc_t out, ctc_t x, int64_t k, bool upper) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(out.dtype), nd = out.ndim;
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < out.numel; e += stride) {
    ctc_coords(out, e, c);
    int64_t i = c[nd - 2], j = c[nd - 1];
    bool keep = upper ? j - i >= k : j - i <= k;
    char *o = out.data + ctc_dot(out, c) * es;
    if (keep)
      ct_move_elem(o, x.data + ctc_dot(x, c) * es, es);
    else {
      const uint64_t zero = 0;
      ct_move_elem(o, (const char *)&zero, es);
    }
  }
}

extern "C" ct_status ct__cuda_triangle(ct_tensor *out_t, const ct_tensor *x_t, int64_t k,
                                       bool upper) {
  const ctc_view out(out_t), x(x_t);
  int dev = out->device;
  const char *op = upper ? "triu" : "tril";
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  triangle_kernel<<<ctc_blocks(out->numel, dev), CTC_THREADS, 0, s>>>(*out, *x, k, upper);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}
