/* Multi-tensor launches: one kernel launch works on many tensors (the
 * optimizers' updates, the gradient scaler's unscale), their pointers and
 * sizes passed as the kernel's argument. Nothing is copied to the device per
 * launch (an earlier design uploaded a table from pageable memory at every
 * step, a staging copy on the host's critical path).
 *
 * The tensors are cut into chunks of `chunk` elements; a pack holds up to
 * ctc_mt_pack<D>::TENSORS tensors and BLOCKS chunks, block b of a launch
 * working on chunk b: elements [start, min(start + chunk, numel)) of tensor
 * tensor[b]. A tensor whose chunks do not all fit continues in the next
 * pack. The sizes keep the argument within 4 KiB, the kernel parameter limit
 * of every toolkit and architecture (PyTorch's multi_tensor_apply uses the
 * same numbers). */
#ifndef CT_CUDA_MULTI_TENSOR_CUH
#define CT_CUDA_MULTI_TENSOR_CUH

#include "backend/cuda/common.cuh"

/* D pointers per tensor (its operands: parameter, gradient, states...). */
template <int D>
struct ctc_mt_pack {
  static constexpr int TENSORS = D == 1 ? 110 : D == 2 ? 64 : D == 3 ? 48 : D == 4 ? 36 : 30;
  static constexpr int BLOCKS = 320;
  void *ptr[D][TENSORS];
  int64_t numel[TENSORS];
  int8_t dtype[TENSORS];
  uint8_t tensor[BLOCKS]; /* block b: the tensor (index in this pack) ... */
  int32_t chunk[BLOCKS];  /* ... and the chunk within it */
};
static_assert(sizeof(ctc_mt_pack<5>) <= 3 * 1024 + 512,
              "a pack leaves room for other arguments in 4 KiB");
static_assert(sizeof(ctc_mt_pack<1>) <= 3 * 1024 + 512,
              "a pack leaves room for other arguments in 4 KiB");

/* Launches over the n tensors: get(i, ptrs, &numel, &dtype) gives tensor i's
 * D pointers, element count and dtype; launch(pack, blocks) launches one
 * kernel of `blocks` blocks over a pack and returns its status. Tensors of
 * numel 0 take no block; no tensor with elements, no launch. */
template <int D, class Get, class Launch>
static ct_status ctc_mt_apply(int n, int64_t chunk, Get get, Launch launch) {
  using pack_t = ctc_mt_pack<D>;
  pack_t pk;
  int nt = 0, nb = 0;
  for (int i = 0; i < n; i++) {
    void *ptrs[D];
    int64_t numel = 0;
    int dtype = 0;
    get(i, ptrs, &numel, &dtype);
    if (numel == 0) continue;
    for (int d = 0; d < D; d++) pk.ptr[d][nt] = ptrs[d];
    pk.numel[nt] = numel;
    pk.dtype[nt] = (int8_t)dtype;
    int64_t nchunks = (numel + chunk - 1) / chunk;
    for (int64_t c = 0; c < nchunks; c++) {
      pk.tensor[nb] = (uint8_t)nt;
      pk.chunk[nb] = (int32_t)c;
      nb++;
      bool last_chunk = c == nchunks - 1;
      if (nb == pack_t::BLOCKS || (last_chunk && nt + 1 == pack_t::TENSORS)) {
        ct_status st = launch(pk, nb);
        if (st != CT_OK) return st;
        nb = 0;
        if (last_chunk) {
          nt = -1; /* the next tensor starts a fresh pack */
        } else {   /* this tensor goes on in the next pack, as its entry 0 */
          for (int d = 0; d < D; d++) pk.ptr[d][0] = ptrs[d];
          pk.numel[0] = numel;
          pk.dtype[0] = (int8_t)dtype;
          nt = 0;
        }
      }
    }
    nt++;
  }
  return nb > 0 ? launch(pk, nb) : CT_OK;
}

#endif /* CT_CUDA_MULTI_TENSOR_CUH */
