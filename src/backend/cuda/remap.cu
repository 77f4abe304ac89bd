/* CUDA remaps: out[c] = x[src(c)] with src given per dim (flip, roll, tile,
 * interleave, reflect/replicate padding;
 * backend/params.h, ct_remap_source, the CPU's formula). Contract:
 * backend.h, `remap`. A thread per output element (grid-stride): its
 * coordinates, the source's, one element moved by size. Consecutive threads
 * write consecutive outputs and, except along a flipped last dim, read
 * consecutive or wrapped-around inputs. */
#include "backend/cuda/common.cuh"

__global__ void remap_kernel(ctc_t out, ctc_t x, ct_remap_params p) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(out.dtype);
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < out.numel; e += stride) {
    int64_t rest = e, oo = 0, xo = 0;
    for (int d = out.ndim - 1; d >= 0; d--) {
      int64_t q = rest / out.shape[d], c = rest - q * out.shape[d];
      rest = q;
      oo += c * out.strides[d];
      xo += ct_remap_source(&p, d, c, x.shape[d]) * x.strides[d];
    }
    ct_move_elem(out.data + oo * es, x.data + xo * es, es);
  }
}

extern "C" ct_status ct__cuda_remap(ct_tensor *out_t, const ct_tensor *x_t,
                                    const ct_remap_params *p) {
  const ctc_view out(out_t), x(x_t);
  const char *op = "remap";
  int dev = out->device;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  remap_kernel<<<ctc_blocks(out->numel, dev), CTC_THREADS, 0, s>>>(*out, *x, *p);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}
