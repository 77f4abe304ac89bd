/* CUDA optimizer updates: SGD (momentum, dampening, nesterov, weight decay),
 * Adam and AdamW (amsgrad) for all parameters in ONE multi-tensor launch.
 *
 * The host packs, into one device buffer, a table of the parameters (data
 * pointers of param, grad and state buffers, numel) and a list of chunks
 * (tensor, first element) of CTC_OPT_CHUNK elements; block b updates chunk b.
 * The formulas are core/optim_math.h's, the CPU's (torch.optim's
 * single-tensor implementations op by op in the parameter's dtype). Each
 * parameter's gradient and
 * state are contiguous and of its dtype (f32 or f64); parameters of both
 * dtypes may come in one call (the op layer groups by device and step only):
 * the f32 chunks come first in the list, then the f64 ones, one launch each. */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/common.cuh"
#include "core/optim_math.h"
#include "core/alloc.h"

#define CTC_OPT_CHUNK 8192

struct opt_tensor {
  char *p, *g, *s0, *s1, *s2;
  int64_t n;
};
struct opt_chunk {
  int64_t t, start;
};

/* The constants of core/optim_math.h for T (its struct is named per type). */
template <class T>
struct opt_consts_of;
template <>
struct opt_consts_of<float> {
  typedef ct_optim_consts_f32 type;
  static type make(const ct_optim_params *o) { return ct_optim_consts_of_f32(o); }
};
template <>
struct opt_consts_of<double> {
  typedef ct_optim_consts_f64 type;
  static type make(const ct_optim_params *o) { return ct_optim_consts_of_f64(o); }
};

/* Block b updates chunk b (grid-stride over the chunks) with the formulas of
 * core/optim_math.h, the CPU's. */
template <class T>
__global__ void optim_kernel(ct_optim_kind kind, typename opt_consts_of<T>::type c,
                             const opt_tensor *ts, const opt_chunk *chunks, int64_t nchunks) {
  for (int64_t b = blockIdx.x; b < nchunks; b += gridDim.x) {
    opt_chunk ch = chunks[b];
    opt_tensor t = ts[ch.t];
    int64_t end = ch.start + CTC_OPT_CHUNK < t.n ? ch.start + CTC_OPT_CHUNK : t.n;
    T *p = (T *)t.p, *s0 = (T *)t.s0, *s1 = (T *)t.s1, *s2 = (T *)t.s2;
    const T *g = (const T *)t.g;
    for (int64_t i = ch.start + threadIdx.x; i < end; i += blockDim.x) {
      if (kind == CT_OPTIM_SGD)
        p[i] = ct_sgd_update(&c, p[i], g[i], s0 ? s0 + i : nullptr);
      else
        p[i] = ct_adam_update(&c, p[i], g[i], s0 + i, s1 + i, s2 ? s2 + i : nullptr);
    }
  }
}

extern "C" ct_status ct__cuda_optimizer_step(const ct_optim_params *o, const ctc_t *params,
                                             const ctc_t *grads, const ctc_t *s0, const ctc_t *s1,
                                             const ctc_t *s2, const bool *has, int n) {
  const char *op = "optimizer_step";
  int dev = params[0].device;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  int64_t nchunks = 0, n32 = 0; /* n32: chunks of f32 parameters */
  for (int i = 0; i < n; i++) {
    int64_t k = (params[i].numel + CTC_OPT_CHUNK - 1) / CTC_OPT_CHUNK;
    nchunks += k;
    if (params[i].dtype != CT_F64) n32 += k;
  }
  if (nchunks == 0) return CT_OK;
  size_t tbytes = sizeof(opt_tensor) * (size_t)n, bytes = tbytes + sizeof(opt_chunk) * (size_t)nchunks;
  char *host = (char *)ct__malloc(bytes);
  if (!host) return ct__fail_status(CT_ERR_OOM, "%s: out of host memory", op);
  opt_tensor *ts = (opt_tensor *)host;
  opt_chunk *chunks = (opt_chunk *)(host + tbytes);
  int64_t c32 = 0, c64 = n32; /* next chunk slot of each dtype */
  for (int i = 0; i < n; i++) {
    int64_t &c = params[i].dtype == CT_F64 ? c64 : c32;
    ts[i].p = params[i].data;
    ts[i].g = grads[i].data;
    ts[i].s0 = has[3 * i] ? s0[i].data : nullptr;
    ts[i].s1 = has[3 * i + 1] ? s1[i].data : nullptr;
    ts[i].s2 = has[3 * i + 2] ? s2[i].data : nullptr;
    ts[i].n = params[i].numel;
    for (int64_t e = 0; e < ts[i].n; e += CTC_OPT_CHUNK) chunks[c].t = i, chunks[c++].start = e;
  }
  ctc_scratch buf(dev);
  char *d = (char *)buf.get(bytes);
  if (!d) {
    free(host);
    return ct_last_error();
  }
  cudaStream_t s = ctc_stream(dev);
  /* pageable source: the call returns once the bytes are staged, so the host
   * buffer can be freed right after; the device buffer goes back to the
   * stream-ordered cache after the launch (reused only by later work on s) */
  cudaError_t e = cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, s);
  free(host);
  if (e != cudaSuccess) return ctc_cuda_fail(op, "cudaMemcpyAsync", e, dev, __FILE__, __LINE__);
  int64_t cap = (int64_t)ctc_sm_count(dev) * 8, n64 = nchunks - n32;
  const opt_tensor *dts = (const opt_tensor *)d;
  const opt_chunk *dch = (const opt_chunk *)(d + tbytes);
  if (n32 > 0) {
    optim_kernel<float><<<(unsigned)(n32 < cap ? n32 : cap), CTC_THREADS, 0, s>>>(
        o->kind, opt_consts_of<float>::make(o), dts, dch, n32);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  if (n64 > 0) {
    optim_kernel<double><<<(unsigned)(n64 < cap ? n64 : cap), CTC_THREADS, 0, s>>>(
        o->kind, opt_consts_of<double>::make(o), dts, dch + n32, n64);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return CT_OK;
}
