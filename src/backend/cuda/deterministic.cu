/* Deterministic CUDA paths of the ops that write with atomics
 * (ct_use_deterministic_algorithms, include/ctensor/device.h): scatter,
 * scatter_add, index_put with and without accumulate. Contracts: those of
 * index.cu's and adv_index.cu's kernels; their entry points (the scatter and
 * index_put slots) take these paths when the flag is on.
 *
 * Each source element e gets a key, its destination's element offset
 * (order-preserving as uint64), and its id e; a stable sort of the pairs
 * (sort.cu) groups equal destinations with their sources in source order.
 * One thread per run of equal keys then adds the run's sources in that
 * order into the destination, rounding to the dtype after each addition, as
 * the CPU's serial loop (backend/cpu/elem_add.h): the result is the CPU's bit
 * for bit, whatever the order the blocks run in. Without add the run's last
 * source wins, as on the CPU. A bad index raises a fault (fault.cu) and its
 * element is skipped (key CTC_DET_SKIP sorts after every real one).
 *
 * A run is summed by one thread: an index repeated m times costs m serial
 * additions (an all-same index is a serial loop), the price of the CPU's
 * order. */
#include "backend/cuda/common.cuh"
#include "backend/cuda/coords.cuh"

#define CTC_DET_SKIP (~(uint64_t)0)

/* An element offset as an unsigned key of the same order (offsets of
 * flipped views are negative). */
__device__ __forceinline__ uint64_t det_key(int64_t off) { return (uint64_t)off ^ (1ull << 63); }
__device__ __forceinline__ int64_t det_offset(uint64_t key) {
  return (int64_t)(key ^ (1ull << 63));
}

/* a + b in the CPU's arithmetic: floats in their own type (halves through
 * f32, rounded back), integers wrapping, bool "or". */
template <class T>
__device__ __forceinline__ T det_add(T a, T b) {
  if constexpr (std::is_same<T, ctc_bool8>::value)
    return ctc_bool8{(uint8_t)(a.v || b.v)};
  else if constexpr (std::is_same<T, double>::value)
    return a + b;
  else if constexpr (ctc_dtype_of<T>() <= CT_BF16)
    return ctc_out<T>(ctc_in<float>(a) + ctc_in<float>(b));
  else
    return ctc_out<T>((int64_t)((uint64_t)(int64_t)a + (uint64_t)(int64_t)b));
}

/* Scratch for the (key, id) pairs of n source elements, P (the next power of
 * two) long for the sort. */
struct det_pairs {
  ctc_scratch kbuf, ibuf;
  uint64_t *keys = nullptr;
  int64_t *ids = nullptr;
  int64_t n = 0, P = 1;
  explicit det_pairs(int dev) : kbuf(dev), ibuf(dev) {}
  bool get(int64_t count) {
    n = count;
    while (P < n) P *= 2;
    keys = (uint64_t *)kbuf.get((size_t)P * sizeof(uint64_t));
    ids = keys ? (int64_t *)ibuf.get((size_t)P * sizeof(int64_t)) : nullptr;
    return ids != nullptr;
  }
};

/* For each run of equal keys (sorted): dst[offset] = (dst[offset] + ...) +
 * the run's sources in id order (add), else its last source. A source id e
 * is the element at the coordinates of row-major e of `shape` in src. */
__global__ void det_runs_kernel(char *dst, int dtype, const uint64_t *keys, const int64_t *ids,
                                int64_t n, ctc_t shape, ctc_t src, bool add) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(dtype);
  int64_t c[CTC_MAX_DIMS];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint64_t k = keys[i];
    if (k == CTC_DET_SKIP || (i > 0 && keys[i - 1] == k)) continue; /* not a run's start */
    int64_t end = i + 1;
    while (end < n && keys[end] == k) end++;
    char *dp = dst + det_offset(k) * es;
    if (!add) {
      ctc_coords(shape, ids[end - 1], c);
      ct_move_elem(dp, src.data + ctc_dot(src, c) * es, es);
      continue;
    }
    ctc_visit_dtype(dtype, [&](auto t) {
      using T = typename decltype(t)::type;
      T acc = *(const T *)dp;
      for (int64_t j = i; j < end; j++) {
        ctc_coords(shape, ids[j], c);
        acc = det_add(acc, *(const T *)(src.data + ctc_dot(src, c) * es));
      }
      *(T *)dp = acc;
    });
  }
}

/* Sorts the pairs and writes each run (det_runs_kernel). */
static ct_status det_write(const char *op, int dev, det_pairs &pr, char *dst, int dtype,
                           const ctc_t &shape, const ctc_t &src, bool add) {
  ct_status st = ct__cuda_sort_pairs(op, dev, pr.keys, pr.ids, pr.n, pr.P);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  det_runs_kernel<<<ctc_blocks(pr.n, dev), CTC_THREADS, 0, s>>>(dst, dtype, pr.keys, pr.ids, pr.n,
                                                                shape, src, add);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

/* ---- scatter / scatter_add ------------------------------------------------------------------ */

/* Source e (row-major in index): self's offset at index's coordinates with
 * dim replaced by the index. */
__global__ void det_scatter_keys_kernel(uint64_t *keys, int64_t *ids, ctc_t self, ctc_t index,
                                        int dim, ctc_fault *fault, const char *op) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x, size = self.shape[dim];
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < index.numel; e += stride) {
    ctc_coords(index, e, c);
    int64_t v = *(const int64_t *)(index.data + ctc_dot(index, c) * 8);
    ids[e] = e;
    if (v < 0 || v >= size) {
      ctc_fault_raise(fault, CTC_FAULT_INDEX, op, dim, v, size);
      keys[e] = CTC_DET_SKIP;
      continue;
    }
    c[dim] = v;
    keys[e] = det_key(ctc_dot(self, c));
  }
}

extern "C" ct_status ct__cuda_scatter_sorted(const ctc_t *self, int dim, const ctc_t *index,
                                             const ctc_t *src, bool add) {
  int dev = self->device;
  const char *op = add ? "scatter_add" : "scatter";
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || index->numel == 0) return st;
  ctc_fault *fault = ctc_fault_record(op, dev);
  if (!fault) return ct_last_error();
  det_pairs pr(dev);
  if (!pr.get(index->numel)) return ct_last_error();
  cudaStream_t s = ctc_stream(dev);
  det_scatter_keys_kernel<<<ctc_blocks(pr.n, dev), CTC_THREADS, 0, s>>>(pr.keys, pr.ids, *self,
                                                                        *index, dim, fault, op);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return det_write(op, dev, pr, self->data, self->dtype, *index, *src, add);
}

/* ---- index_put ------------------------------------------------------------------------------ */

/* Source e (row-major in dst's view): the view's offset plus the index
 * point's (lin: index_linearize's, already checked). */
__global__ void det_put_keys_kernel(uint64_t *keys, int64_t *ids, ctc_t dst, ctc_t lin,
                                    ct_adv_index_params p) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < dst.numel; e += stride) {
    ctc_coords(dst, e, c);
    int64_t off = ct_adv_index_offset(&p, *(const int64_t *)(lin.data + ctc_dot(lin, c) * 8));
    keys[e] = det_key(ctc_dot(dst, c) + off);
    ids[e] = e;
  }
}

extern "C" ct_status ct__cuda_index_put_sorted(const ctc_t *dst, const ctc_t *values,
                                               const ctc_t *lin, const ct_adv_index_params *p,
                                               bool accumulate) {
  int dev = dst->device;
  const char *op = "index_put_";
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || dst->numel == 0) return st;
  det_pairs pr(dev);
  if (!pr.get(dst->numel)) return ct_last_error();
  cudaStream_t s = ctc_stream(dev);
  det_put_keys_kernel<<<ctc_blocks(pr.n, dev), CTC_THREADS, 0, s>>>(pr.keys, pr.ids, *dst, *lin,
                                                                    *p);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return det_write(op, dev, pr, dst->data, dst->dtype, *dst, *values, accumulate);
}
