/* CUDA optimizer updates: SGD (momentum, dampening, nesterov, weight decay),
 * Adam and AdamW (amsgrad), RMSprop and Adagrad for all parameters in one multi-tensor launch per
 * dtype (several for more than a pack holds, multi_tensor.cuh).
 *
 * The parameters' pointers (param, grad and state buffers) and sizes travel
 * in the kernel's argument, with the list of chunks (tensor, chunk) of
 * CTC_OPT_CHUNK elements; block b updates chunk b (grid-stride beyond the
 * grid). The formulas are core/optim_math.h's, the CPU's (torch.optim's
 * single-tensor implementations op by op in the parameter's dtype). Each
 * parameter's gradient and state are contiguous and of its dtype (f32 or
 * f64); parameters of both
 * dtypes may come in one call (the op layer groups by device and step only):
 * the f32 ones are launched first, then the f64 ones. */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/multi_tensor.cuh"
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
                             ctc_mt_pack<5> pk, int64_t nchunks) {
  for (int64_t b = blockIdx.x; b < nchunks; b += gridDim.x) {
    int k = pk.tensor[b];
    opt_chunk ch = {k, (int64_t)pk.chunk[b] * CTC_OPT_CHUNK};
    opt_tensor t = {(char *)pk.ptr[0][k], (char *)pk.ptr[1][k], (char *)pk.ptr[2][k],
                    (char *)pk.ptr[3][k], (char *)pk.ptr[4][k], pk.numel[k]};
    int64_t end = ch.start + CTC_OPT_CHUNK < t.n ? ch.start + CTC_OPT_CHUNK : t.n;
    T *p = (T *)t.p, *s0 = (T *)t.s0, *s1 = (T *)t.s1, *s2 = (T *)t.s2;
    const T *g = (const T *)t.g;
    for (int64_t i = ch.start + threadIdx.x; i < end; i += blockDim.x) {
      if (kind == CT_OPTIM_SGD)
        p[i] = ct_sgd_update(&c, p[i], g[i], s0 ? s0 + i : nullptr);
      else if (kind == CT_OPTIM_RMSPROP)
        p[i] =
            ct_rmsprop_update(&c, p[i], g[i], s0 + i, s1 ? s1 + i : nullptr, s2 ? s2 + i : nullptr);
      else if (kind == CT_OPTIM_ADAGRAD)
        p[i] = ct_adagrad_update(&c, p[i], g[i], s0 + i);
      else
        p[i] = ct_adam_update(&c, p[i], g[i], s0 + i, s1 + i, s2 ? s2 + i : nullptr);
    }
  }
}

/* The multi-tensor launches need only each tensor's data, size and dtype:
 * read from the tensors themselves (state arrays and their entries may be
 * NULL, as the slot says). */
extern "C" ct_status ct__cuda_optimizer_step(const ct_optim_params *o, ct_tensor *const *params,
                                             ct_tensor *const *grads, ct_tensor *const *s0,
                                             ct_tensor *const *s1, ct_tensor *const *s2, int n) {
  const char *op = "optimizer_step";
  if (n <= 0) return CT_OK;
  int dev = params[0]->storage->device.index;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  int64_t cap = (int64_t)ctc_sm_count(dev) * 8;
  for (int pass = 0; pass < 2 && st == CT_OK; pass++) {
    bool f64 = pass == 1;
    /* this pass's parameters, by their index in the call */
    auto get = [&](int i, void **ptrs, int64_t *numel, int *dtype) {
      bool mine = (params[i]->dtype == CT_F64) == f64;
      ptrs[0] = ct__data(params[i]);
      ptrs[1] = ct__data(grads[i]);
      ptrs[2] = s0 && s0[i] ? ct__data(s0[i]) : nullptr;
      ptrs[3] = s1 && s1[i] ? ct__data(s1[i]) : nullptr;
      ptrs[4] = s2 && s2[i] ? ct__data(s2[i]) : nullptr;
      *numel = mine ? params[i]->numel : 0;
      *dtype = params[i]->dtype;
    };
    auto launch = [&](const ctc_mt_pack<5> &pk, int blocks) -> ct_status {
      unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
      if (f64)
        optim_kernel<double>
            <<<grid, CTC_THREADS, 0, s>>>(o->kind, opt_consts_of<double>::make(o), pk, blocks);
      else
        optim_kernel<float>
            <<<grid, CTC_THREADS, 0, s>>>(o->kind, opt_consts_of<float>::make(o), pk, blocks);
      CT_CUDA_LAUNCH_CHECK(op, dev, s);
      return CT_OK;
    };
    st = ctc_mt_apply<5>(n, CTC_OPT_CHUNK, get, launch);
  }
  return st;
}
