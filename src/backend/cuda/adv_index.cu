/* CUDA kernels of advanced indexing: index_linearize, index_gather,
 * index_put. Contracts: backend/backend.h; the index encoding:
 * backend/params.h. One thread per element (grid-stride), coordinates from
 * the row-major element number.
 *
 * A bad index raises a fault (fault.cu), reported at the next
 * synchronization, as index_select's; its point is left out. index_put with
 * accumulate adds with atomics (atomic_add.cuh): sums of floats may differ in
 * their last bits from run to run when indices repeat, as torch's
 * index_put_(accumulate=True) on CUDA without deterministic algorithms. */
#include "backend/cuda/atomic_add.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/coords.cuh"

/* The index tensors of one call, passed by value. */
struct adv_idx_set {
  ctc_t t[CTC_MAX_DIMS];
};

__global__ void linearize_kernel(ctc_t lin, adv_idx_set idx, ct_adv_index_params p,
                                 ctc_fault *fault) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < lin.numel; e += stride) {
    ctc_coords(lin, e, c);
    int64_t v = 0;
    bool ok = true;
    for (int k = 0; k < p.n && ok; k++) {
      int64_t i = *(const int64_t *)(idx.t[k].data + ctc_dot(idx.t[k], c) * 8), size = p.sizes[k];
      if (i < -size || i >= size) {
        ctc_fault_raise(fault, CTC_FAULT_INDEX, "index", p.dims[k], i, size);
        ok = false;
      }
      v += (i < 0 ? i + size : i) * p.radix[k];
    }
    *(int64_t *)(lin.data + e * 8) = ok ? v : 0;
  }
}

/* put: dst[.. + offset] = (or +=) val; else out = src[.. + offset]. */
__global__ void move_kernel(ctc_t a, ctc_t b, ctc_t lin, ct_adv_index_params p, bool put,
                            bool accumulate) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(a.dtype);
  int64_t c[CTC_MAX_DIMS];
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < a.numel; e += stride) {
    ctc_coords(a, e, c);
    int64_t off = ct_adv_index_offset(&p, *(const int64_t *)(lin.data + ctc_dot(lin, c) * 8));
    char *pa = a.data + (ctc_dot(a, c) + (put ? off : 0)) * es;
    const char *pb = b.data + (ctc_dot(b, c) + (put ? 0 : off)) * es;
    if (put && accumulate)
      ctc_atomic_add_elem(pa, pb, a.dtype, es);
    else
      ct_move_elem(pa, pb, es);
  }
}

extern "C" ct_status ct__cuda_index_linearize(ct_tensor *lin_t, const ct_tensor *const *idx,
                                              const ct_adv_index_params *p) {
  const ctc_view lin(lin_t);
  const char *op = "index";
  int dev = lin->device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || lin->numel == 0) return st;
  ctc_fault *fault = ctc_fault_record(op, dev);
  if (!fault) return ct_last_error();
  adv_idx_set set;
  for (int k = 0; k < p->n; k++) set.t[k] = ctc_desc(idx[k]);
  cudaStream_t s = ctc_stream(dev);
  linearize_kernel<<<ctc_blocks(lin->numel, dev), CTC_THREADS, 0, s>>>(*lin, set, *p, fault);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

static ct_status run_move(const char *op, const ctc_t *a, const ctc_t *b, const ctc_t *lin,
                          const ct_adv_index_params *p, bool put, bool accumulate) {
  int dev = a->device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK || a->numel == 0) return st;
  cudaStream_t s = ctc_stream(dev);
  move_kernel<<<ctc_blocks(a->numel, dev), CTC_THREADS, 0, s>>>(*a, *b, *lin, *p, put, accumulate);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_index_gather(ct_tensor *out_t, const ct_tensor *src_t,
                                           const ct_tensor *lin_t, const ct_adv_index_params *p) {
  const ctc_view out(out_t), src(src_t), lin(lin_t);
  return run_move("index", out, src, lin, p, false, false);
}
extern "C" ct_status ct__cuda_index_put(ct_tensor *dst_t, const ct_tensor *values_t,
                                        const ct_tensor *lin_t, const ct_adv_index_params *p,
                                        bool accumulate) {
  const ctc_view dst(dst_t), values(values_t), lin(lin_t);
  if (ct_are_deterministic_algorithms_enabled()) /* sort-based, no atomics: deterministic.cu */
    return ct__cuda_index_put_sorted(dst, values, lin, p, accumulate);
  return run_move("index_put_", dst, values, lin, p, true, accumulate);
}
