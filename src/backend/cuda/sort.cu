/* CUDA sort: stable argsort of rows by a bitonic network over (key, index)
 * pairs, with the keys of core/sort_math.h (the CPU's). Contract: backend.h,
 * `argsort`. Comparing the pair (key, original index) makes every element
 * distinct, so the network's result is the stable order.
 *
 * Each row is padded to P = the next power of two (keys all ones, indices
 * past every real one, so padding sorts last) in scratch memory. Segments of
 * SEG = min(P, 2048) elements are sorted in shared memory by one block each
 * (every stage k <= SEG). Longer rows then merge: for each k > SEG, the steps
 * with j >= SEG run over global memory (a thread per compared pair), and the
 * remaining steps j < SEG of that stage run in shared memory again, one block
 * per segment. So a row of 2^24 elements takes 66 launches, not 300, and
 * most compare-exchanges happen in shared memory. A thread block per segment
 * gives the GPU rows * P / SEG blocks: many short rows and one long row both
 * fill it. */
#include "backend/cuda/common.cuh"
#include "core/sort_math.h"

#define SEG 2048
#define SORT_THREADS 256

template <typename K>
__device__ __forceinline__ K key_of(const void *x, int dtype, int64_t e, bool desc);
template <>
__device__ __forceinline__ uint32_t key_of<uint32_t>(const void *x, int dtype, int64_t e,
                                                     bool desc) {
  return ct_sort_key_f32(((const float *)x)[e], desc);
}
template <>
__device__ __forceinline__ uint64_t key_of<uint64_t>(const void *x, int dtype, int64_t e,
                                                     bool desc) {
  if (dtype == CT_F64) return ct_sort_key_f64(((const double *)x)[e], desc);
  return ct_sort_key_i64(((const int64_t *)x)[e], desc);
}

/* keys[r * P + i], ids[r * P + i]: row r's element i, or padding. */
template <typename K>
__global__ void init_kernel(const void *x, int dtype, bool desc, K *keys, int64_t *ids,
                            int64_t rows, int64_t n, int64_t P) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * P; e += stride) {
    int64_t r = e / P, i = e - r * P;
    bool real = i < n;
    keys[e] = real ? key_of<K>(x, dtype, r * n + i, desc) : (K) ~(K)0;
    ids[e] = real ? i : INT64_MAX;
  }
}

/* Orders a[i] and a[l] (i < l) ascending (or descending) by (key, id). */
template <typename K>
__device__ __forceinline__ void compare_swap(K *k, int64_t *id, int64_t i, int64_t l,
                                             bool ascending) {
  K ki = k[i], kl = k[l];
  int64_t ii = id[i], il = id[l];
  bool greater = ki > kl || (ki == kl && ii > il);
  if (greater == ascending) {
    k[i] = kl, k[l] = ki;
    id[i] = il, id[l] = ii;
  }
}

/* Stages k_lo..k_hi (powers of two <= SEG) of the network on each segment
 * of SEG (or P, if smaller) elements, in shared memory; stage k_lo starts at
 * step j_first. Directions come from the element's index in its row. */
template <typename K>
__global__ void __launch_bounds__(SORT_THREADS)
    local_kernel(K *keys, int64_t *ids, int64_t segments, int64_t P, int64_t k_lo, int64_t k_hi,
                 int64_t j_first) {
  __shared__ K sk[SEG];
  __shared__ int64_t si[SEG];
  int64_t seg = P < SEG ? P : SEG;
  for (int64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    int64_t base = s * seg, row_i0 = base % P; /* first element: global, and within its row */
    for (int64_t t = threadIdx.x; t < seg; t += blockDim.x) {
      sk[t] = keys[base + t];
      si[t] = ids[base + t];
    }
    __syncthreads();
    for (int64_t k = k_lo; k <= k_hi; k *= 2)
      for (int64_t j = k == k_lo ? j_first : k / 2; j >= 1; j /= 2) {
        for (int64_t t = threadIdx.x; t < seg / 2; t += blockDim.x) {
          int64_t i = 2 * j * (t / j) + (t % j);
          compare_swap(sk, si, i, i + j, ((row_i0 + i) & k) == 0);
        }
        __syncthreads();
      }
    for (int64_t t = threadIdx.x; t < seg; t += blockDim.x) {
      keys[base + t] = sk[t];
      ids[base + t] = si[t];
    }
    __syncthreads(); /* sk, si are reused by the next segment */
  }
}

/* One step (k, j >= SEG) of stage k over every row: a thread per pair. */
template <typename K>
__global__ void global_step_kernel(K *keys, int64_t *ids, int64_t rows, int64_t P, int64_t k,
                                   int64_t j) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x, half = P / 2;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < rows * half; t += stride) {
    int64_t r = t / half, q = t - r * half;
    int64_t i = 2 * j * (q / j) + (q % j);
    compare_swap(keys + r * P, ids + r * P, i, i + j, (i & k) == 0);
  }
}

__global__ void copy_ids_kernel(int64_t *out, const int64_t *ids, int64_t rows, int64_t n,
                                int64_t P) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * n; e += stride) {
    int64_t r = e / n;
    out[e] = ids[r * P + (e - r * n)];
  }
}

/* The bitonic network over rows of P (a power of two) (key, id) pairs. */
template <typename K>
static ct_status sort_network(const char *op, int dev, K *keys, int64_t *ids, int64_t rows,
                              int64_t P) {
  cudaStream_t s = ctc_stream(dev);
  int64_t seg = P < SEG ? P : SEG, segments = rows * P / seg;
  int64_t cap = (int64_t)ctc_sm_count(dev) * 16;
  unsigned grid = (unsigned)(segments < cap ? segments : cap);
  if (seg > 1) {
    local_kernel<K><<<grid, SORT_THREADS, 0, s>>>(keys, ids, segments, P, 2, seg, 1);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  for (int64_t k = 2 * SEG; k <= P; k *= 2) {
    for (int64_t j = k / 2; j >= SEG; j /= 2) {
      global_step_kernel<K>
          <<<ctc_blocks(rows * P / 2, dev), CTC_THREADS, 0, s>>>(keys, ids, rows, P, k, j);
      CT_CUDA_LAUNCH_CHECK(op, dev, s);
    }
    local_kernel<K><<<grid, SORT_THREADS, 0, s>>>(keys, ids, segments, P, k, k, SEG / 2);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return CT_OK;
}

template <typename K>
static ct_status run_sort(const char *op, const ctc_t *indices, const ctc_t *x, bool desc) {
  int dev = x->device;
  cudaStream_t s = ctc_stream(dev);
  int64_t n = x->shape[x->ndim - 1], rows = x->numel / n, P = 1;
  while (P < n) P *= 2;
  ctc_scratch kbuf(dev), ibuf(dev);
  K *keys = (K *)kbuf.get((size_t)(rows * P) * sizeof(K));
  int64_t *ids = keys ? (int64_t *)ibuf.get((size_t)(rows * P) * sizeof(int64_t)) : nullptr;
  if (!ids) return ct_last_error();
  init_kernel<K><<<ctc_blocks(rows * P, dev), CTC_THREADS, 0, s>>>(x->data, x->dtype, desc, keys,
                                                                   ids, rows, n, P);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  ct_status st = sort_network<K>(op, dev, keys, ids, rows, P);
  if (st != CT_OK) return st;
  copy_ids_kernel<<<ctc_blocks(rows * n, dev), CTC_THREADS, 0, s>>>((int64_t *)indices->data, ids,
                                                                    rows, n, P);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_argsort(ct_tensor *indices_t, const ct_tensor *x_t, bool descending) {
  const ctc_view indices(indices_t), x(x_t);
  const char *op = "sort";
  if (x->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(op, x->device);
  if (st != CT_OK) return st;
  if (x->dtype == CT_F32) return run_sort<uint32_t>(op, indices, x, descending);
  return run_sort<uint64_t>(op, indices, x, descending);
}

/* ---- Sort of computed (key, id) pairs (deterministic.cu) ---------------------------------- */

/* keys[e], ids[e] for e in [n, P): padding that sorts last. */
__global__ void pad_pairs_kernel(uint64_t *keys, int64_t *ids, int64_t n, int64_t P) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = n + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < P; e += stride) {
    keys[e] = ~(uint64_t)0;
    ids[e] = INT64_MAX;
  }
}

extern "C" ct_status ct__cuda_sort_pairs(const char *op, int dev, uint64_t *keys, int64_t *ids,
                                         int64_t n, int64_t P) {
  if (P > n) {
    cudaStream_t s = ctc_stream(dev);
    pad_pairs_kernel<<<ctc_blocks(P - n, dev), CTC_THREADS, 0, s>>>(keys, ids, n, P);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return sort_network<uint64_t>(op, dev, keys, ids, 1, P);
}

/* ---- Top-k ------------------------------------------------------------------------------ */
/* The first k indices of the argsort above without sorting whole rows
 * (backend.h, `topk`; the op layer asks only for k <= TOPK_MAX, see
 * ct__cuda_topk_wanted). One block per row:
 *  1. radix selection of the k-th smallest key, 8 bits a pass from the top:
 *     a histogram (shared-memory atomics: counts do not depend on their
 *     order) of the next digit of the keys that match the prefix so far, and
 *     the bucket where the running count reaches k; it stops early when that
 *     bucket's keys are all wanted (at most 4 passes for f32, 8 for 64-bit);
 *  2. the k candidates, in shared memory: every key whose prefix is below the
 *     threshold's, and the first `need` keys equal to it in index order (a
 *     block-wide rank by warp ballots, chunk by chunk of the row), so ties
 *     are those of the stable sort;
 *  3. a bitonic sort of the k (key, index) pairs (padded to a power of two)
 *     in shared memory, and their indices out. */
#define TOPK_MAX 1024
#define TOPK_THREADS 256
#define TOPK_WARPS (TOPK_THREADS / 32)

/* Block-wide exclusive ranks of two flags (blockDim.x == TOPK_THREADS, every
 * thread calls): *ra / *rb, and the block's totals *ta / *tb. */
__device__ __forceinline__ void topk_rank2(bool a, bool b, int *ra, int *rb, int *ta, int *tb,
                                           int *sa, int *sb) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  unsigned ma = __ballot_sync(0xffffffffu, a), mb = __ballot_sync(0xffffffffu, b);
  unsigned below = (1u << lane) - 1u;
  __syncthreads(); /* the previous chunk's reads of sa, sb are done */
  if (lane == 0) sa[w] = __popc(ma), sb[w] = __popc(mb);
  __syncthreads();
  int xa = __popc(ma & below), xb = __popc(mb & below), na = 0, nb = 0;
  for (int j = 0; j < TOPK_WARPS; j++) {
    if (j < w) xa += sa[j], xb += sb[j];
    na += sa[j], nb += sb[j];
  }
  *ra = xa, *rb = xb, *ta = na, *tb = nb;
}

template <typename K>
__global__ void __launch_bounds__(TOPK_THREADS)
    topk_kernel(const void *x, int dtype, bool desc, int64_t rows, int64_t n, int64_t k, int64_t P,
                int64_t *out) {
  __shared__ unsigned hist[256];
  __shared__ K sk[TOPK_MAX];
  __shared__ int64_t si[TOPK_MAX];
  __shared__ int sa[TOPK_WARPS], sb[TOPK_WARPS];
  __shared__ K s_prefix;
  __shared__ int64_t s_need;
  __shared__ bool s_done;
  const int bits = (int)sizeof(K) * 8;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * n, need = k;
    K prefix = 0; /* the threshold's bits at and above `shift` */
    int shift = bits;
    while (shift > 0) {
      int sh = shift - 8;
      for (int t = threadIdx.x; t < 256; t += blockDim.x) hist[t] = 0;
      __syncthreads();
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        K key = key_of<K>(x, dtype, base + i, desc);
        if (shift == bits || (key >> shift) == (prefix >> shift))
          atomicAdd(&hist[(unsigned)(key >> sh) & 255u], 1u);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        int64_t below = 0;
        int d = 0;
        while (d < 255 && below + hist[d] < need) below += hist[d++];
        s_prefix = prefix | ((K)d << sh);
        s_need = need - below;
        s_done = hist[d] == s_need;
      }
      __syncthreads();
      prefix = s_prefix, need = s_need, shift = sh;
      bool done = s_done;
      __syncthreads(); /* every thread has read them before thread 0 writes again */
      if (done) break;
    }
    /* keys below the threshold go to slots [0, k - need), the first `need`
     * equal to it to [k - need, k) */
    K top = prefix >> shift;
    int64_t lt_seen = 0, eq_seen = 0;
    for (int64_t i0 = 0; i0 < n; i0 += blockDim.x) {
      int64_t i = i0 + threadIdx.x;
      K key = 0;
      bool lt = false, eq = false;
      if (i < n) {
        key = key_of<K>(x, dtype, base + i, desc);
        lt = (key >> shift) < top;
        eq = (key >> shift) == top;
      }
      int rl, re, nl, ne;
      topk_rank2(lt, eq, &rl, &re, &nl, &ne, sa, sb);
      int64_t slot = lt ? lt_seen + rl : eq && eq_seen + re < need ? k - need + eq_seen + re : -1;
      if (slot >= 0) sk[slot] = key, si[slot] = i;
      lt_seen += nl, eq_seen += ne;
    }
    for (int64_t t = k + threadIdx.x; t < P; t += blockDim.x) sk[t] = (K) ~(K)0, si[t] = INT64_MAX;
    __syncthreads();
    for (int64_t s = 2; s <= P; s *= 2)
      for (int64_t j = s / 2; j >= 1; j /= 2) {
        for (int64_t t = threadIdx.x; t < P / 2; t += blockDim.x) {
          int64_t i = 2 * j * (t / j) + (t % j);
          compare_swap(sk, si, i, i + j, (i & s) == 0);
        }
        __syncthreads();
      }
    for (int64_t t = threadIdx.x; t < k; t += blockDim.x) out[r * k + t] = si[t];
    __syncthreads(); /* sk, si, hist are reused by the next row */
  }
}

extern "C" bool ct__cuda_topk_wanted(int64_t n, int64_t k) { return k <= TOPK_MAX && k <= n; }

extern "C" ct_status ct__cuda_topk(ct_tensor *indices_t, const ct_tensor *x_t, int64_t k,
                                   bool largest) {
  const ctc_view indices(indices_t), x(x_t);
  const char *op = "topk";
  int dev = x->device;
  int64_t n = x->ndim > 0 ? x->shape[x->ndim - 1] : 1, rows = n > 0 ? x->numel / n : 0;
  if (k < 1 || k > n || k > TOPK_MAX)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: k %lld for rows of %lld (at most %d here)", op,
                           (long long)k, (long long)n, TOPK_MAX);
  if (rows == 0) return CT_OK;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  int64_t P = 1;
  while (P < k) P *= 2;
  int64_t cap = (int64_t)ctc_sm_count(dev) * 8;
  unsigned grid = (unsigned)(rows < cap ? rows : cap);
  int64_t *out = (int64_t *)indices->data;
  if (x->dtype == CT_F32)
    topk_kernel<uint32_t>
        <<<grid, TOPK_THREADS, 0, s>>>(x->data, x->dtype, largest, rows, n, k, P, out);
  else
    topk_kernel<uint64_t>
        <<<grid, TOPK_THREADS, 0, s>>>(x->data, x->dtype, largest, rows, n, k, P, out);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}
