/* CUDA 2-d convolution through cuDNN (legacy convolution API, NCHW).
 *
 * Forward: cudnnConvolutionForward, then the bias added by the binary kernel
 * (out += bias broadcast over N, H, W). Backward: cudnnConvolutionBackwardData
 * (grad_x), cudnnConvolutionBackwardFilter (grad_w), and grad_b = the sum of
 * grad_out over (N, H, W) by the reduce kernel (double accumulation,
 * deterministic). Groups via cudnnSetConvolutionGroupCount.
 *
 * Plans: the first call of a problem (kind, shapes, strides, padding,
 * stride, dilation, groups, dtype, math mode, device, and the alignment of
 * the data pointers, since some algorithms need 16-byte aligned data) creates
 * its descriptors, asks cudnnGet*Algorithm_v7 (heuristics, no benchmarking)
 * and tries the candidates it reports as supported, deterministic ones
 * first, then the others (none with ct_use_deterministic_algorithms: then a
 * problem without a deterministic one fails with CT_ERR_UNAVAILABLE), in the
 * heuristics' order; a candidate whose workspace query or run says
 * NOT_SUPPORTED (any sub-code) is skipped. The
 * one that ran is kept with its math type and workspace size: later calls of
 * the same problem make no descriptor, query or workspace-size call (as
 * PyTorch's benchmark cache). A kept plan that cuDNN refuses, or whose
 * workspace no longer fits, is searched again.
 * Workspace from the caching allocator: a candidate whose workspace does not
 * fit in free memory is passed over without emptying the cache
 * (ct__cuda_alloc_workspace); only when every candidate wants more than is
 * free does the first of them get the allocator's out-of-memory path, once.
 * Math: f32 uses CUDNN_FMA_MATH (exact f32, no TF32) unless
 * ct_cuda_set_allow_tf32(true); f16/bf16 take the candidate's math type
 * (tensor cores) with f32 compute; f64 computes in double.
 *
 * cuDNN handles: one per device, created lazily; a mutex serializes
 * cudnnSetStream + the calls, since threads share the handle. */
#include <cudnn.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <new>

#include "backend/cuda/common.cuh"

#define CTC_DNN_MAX_DEV 64
static cudnnHandle_t dnn_handles[CTC_DNN_MAX_DEV];
static pthread_mutex_t dnn_mu = PTHREAD_MUTEX_INITIALIZER;
static bool conv_allow_tf32 = false;

extern "C" void ct__cuda_conv_set_allow_tf32(bool allow) { conv_allow_tf32 = allow; }

/* cuDNN 9 returns sub-codes of a category (3002 NOT_SUPPORTED_SHAPE, ...):
 * compare categories, not codes. */
static bool dnn_not_supported(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED ||
         s == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER; /* an algorithm that wants aligned data */
}

static ct_status dnn_fail(const char *op, const char *call, cudnnStatus_t s, int dev) {
  bool oom = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
             s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
  char detail[256];
  detail[0] = 0;
  cudnnGetLastErrorString(detail, sizeof detail);
  return ct__fail_status(oom ? CT_ERR_OOM : CT_ERR_CUDA, "%s: %s failed on cuda:%d: %s (%d)%s%s", op, call, dev,
                         cudnnGetErrorString(s), (int)s, detail[0] ? ": " : "", detail);
}

#define DNN_CHECK(op, dev, call)                                                       \
  do {                                                                                 \
    cudnnStatus_t dnn_s_ = (call);                                                     \
    if (dnn_s_ != CUDNN_STATUS_SUCCESS) return dnn_fail(op, #call, dnn_s_, dev);       \
  } while (0)

/* The descriptors of one problem (a plan's, below), destroyed with it. */
struct dnn_descs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~dnn_descs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

static cudnnDataType_t dnn_type(int dt) {
  switch (dt) {
  case CT_F64: return CUDNN_DATA_DOUBLE;
  case CT_F16: return CUDNN_DATA_HALF;
  case CT_BF16: return CUDNN_DATA_BFLOAT16;
  default: return CUDNN_DATA_FLOAT;
  }
}

/* x (N, C, H, W), w (Co, C/g, kH, kW), y (N, Co, Ho, Wo): all contiguous. */
static ct_status make_descs(const char *op, int dev, dnn_descs &d, const ctc_t *x, const ctc_t *w,
                            const ctc_t *y, const ct_conv2d_params *p) {
  for (int k = 0; k < 4; k++)
    if (!fits_int(x->shape[k]) || !fits_int(w->shape[k]) || !fits_int(y->shape[k]))
      return ct__fail_status(CT_ERR_ARG, "%s: dims exceed cuDNN's int range", op);
  for (int k = 0; k < 2; k++)
    if (!fits_int(p->stride[k]) || !fits_int(p->padding[k]) || !fits_int(p->dilation[k]))
      return ct__fail_status(CT_ERR_ARG, "%s: stride/padding/dilation exceed cuDNN's int range", op);
  if (!fits_int(p->groups)) return ct__fail_status(CT_ERR_ARG, "%s: groups exceed cuDNN's int range", op);
  cudnnDataType_t t = dnn_type(x->dtype);
  DNN_CHECK(op, dev, cudnnCreateTensorDescriptor(&d.x));
  DNN_CHECK(op, dev, cudnnCreateTensorDescriptor(&d.y));
  DNN_CHECK(op, dev, cudnnCreateFilterDescriptor(&d.w));
  DNN_CHECK(op, dev, cudnnCreateConvolutionDescriptor(&d.conv));
  DNN_CHECK(op, dev, cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, t, (int)x->shape[0], (int)x->shape[1],
                                                (int)x->shape[2], (int)x->shape[3]));
  DNN_CHECK(op, dev, cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, t, (int)y->shape[0], (int)y->shape[1],
                                                (int)y->shape[2], (int)y->shape[3]));
  DNN_CHECK(op, dev, cudnnSetFilter4dDescriptor(d.w, t, CUDNN_TENSOR_NCHW, (int)w->shape[0], (int)w->shape[1],
                                                (int)w->shape[2], (int)w->shape[3]));
  DNN_CHECK(op, dev, cudnnSetConvolution2dDescriptor(
                         d.conv, (int)p->padding[0], (int)p->padding[1], (int)p->stride[0], (int)p->stride[1],
                         (int)p->dilation[0], (int)p->dilation[1], CUDNN_CROSS_CORRELATION,
                         x->dtype == CT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
  DNN_CHECK(op, dev, cudnnSetConvolutionGroupCount(d.conv, (int)p->groups));
  return CT_OK;
}

/* The device's handle on the current stream; the caller holds dnn_mu. */
static ct_status dnn_handle(const char *op, int dev, cudaStream_t s, cudnnHandle_t *h) {
  if (dev < 0 || dev >= CTC_DNN_MAX_DEV)
    return ct__fail_status(CT_ERR_CUDA, "%s: cuda:%d beyond the %d devices supported", op, dev, CTC_DNN_MAX_DEV);
  if (!dnn_handles[dev]) { /* set only on success: a failed create leaves no half handle */
    cudnnHandle_t fresh = nullptr;
    DNN_CHECK(op, dev, cudnnCreate(&fresh));
    dnn_handles[dev] = fresh;
  }
  DNN_CHECK(op, dev, cudnnSetStream(dnn_handles[dev], s));
  *h = dnn_handles[dev];
  return CT_OK;
}

enum { K_FWD, K_BWD_DATA, K_BWD_FILTER };

/* ---- Plans ------------------------------------------------------------------------------ */

/* What decides the algorithm: zeroed before filling, so it hashes and
 * compares as bytes. */
struct plan_key {
  int64_t x[4], w[4], y[4];    /* shapes: x (N, C, H, W), w (Co, C/g, kH, kW), y (N, Co, Ho, Wo) */
  int64_t xs[4], ws[4], ys[4]; /* their strides */
  int64_t stride[2], padding[2], dilation[2], groups;
  int32_t dev, kind, dtype, align; /* align: of the data pointers, up to 16 bytes */
  int32_t tf32, deterministic;     /* deterministic: ct_use_deterministic_algorithms */
};

/* A problem's descriptors and the algorithm that ran it. */
struct plan {
  plan_key key;
  dnn_descs d;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH; /* set on d.conv */
  size_t workspace = 0;
  plan *next = nullptr; /* hash chain */
};

#define PLAN_BUCKETS 256
#define PLAN_LIMIT 4096           /* beyond it the cache starts over (shapes that never repeat) */
static plan *plans[PLAN_BUCKETS]; /* under dnn_mu */
static int nplans;
static uint64_t plan_hits, plan_misses;

static unsigned key_hash(const plan_key &k) {
  const unsigned char *p = (const unsigned char *)&k;
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < sizeof k; i++) h = (h ^ p[i]) * 1099511628211ull;
  return (unsigned)(h >> 32) % PLAN_BUCKETS;
}

/* The largest power of two up to 16 dividing every pointer. */
static int32_t alignment(const void *a, const void *b, const void *c) {
  uintptr_t v = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | 16;
  return (int32_t)(v & (~v + 1));
}

static plan_key make_key(int dev, int kind, const ctc_t *x, const ctc_t *w, const ctc_t *y,
                         const ct_conv2d_params *p, const void *p0, const void *p1, const void *p2) {
  plan_key k;
  memset(&k, 0, sizeof k);
  for (int i = 0; i < 4; i++) {
    k.x[i] = x->shape[i], k.w[i] = w->shape[i], k.y[i] = y->shape[i];
    k.xs[i] = x->strides[i], k.ws[i] = w->strides[i], k.ys[i] = y->strides[i];
  }
  for (int i = 0; i < 2; i++)
    k.stride[i] = p->stride[i], k.padding[i] = p->padding[i], k.dilation[i] = p->dilation[i];
  k.groups = p->groups;
  k.dev = dev;
  k.kind = kind;
  k.dtype = x->dtype;
  k.align = alignment(p0, p1, p2);
  k.tf32 = conv_allow_tf32;
  k.deterministic = ct_are_deterministic_algorithms_enabled();
  return k;
}

static plan *plan_find(const plan_key &k) {
  for (plan *p = plans[key_hash(k)]; p; p = p->next)
    if (memcmp(&p->key, &k, sizeof k) == 0) return p;
  return nullptr;
}

static void plan_unlink(plan *p) {
  for (plan **pp = &plans[key_hash(p->key)]; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      nplans--;
      return;
    }
}

static void plan_insert(plan *p) {
  if (nplans >= PLAN_LIMIT)
    for (int b = 0; b < PLAN_BUCKETS; b++)
      while (plans[b]) {
        plan *q = plans[b];
        plans[b] = q->next;
        delete q;
        nplans--;
      }
  unsigned b = key_hash(p->key);
  p->next = plans[b];
  plans[b] = p;
  nplans++;
}

extern "C" void ct__cuda_conv_plan_stats(uint64_t *hits, uint64_t *misses, int *entries) {
  pthread_mutex_lock(&dnn_mu);
  *hits = plan_hits;
  *misses = plan_misses;
  *entries = nplans;
  pthread_mutex_unlock(&dnn_mu);
}

/* ---- Running a plan ------------------------------------------------------------------------ */

struct cand {
  int algo;
  cudnnMathType_t math;
};

/* Supported candidates of a perf list: deterministic first, each group in the
 * heuristics' order (only those with det_only). */
template <class Perf>
static int candidates(const Perf *perf, int n, cand *out, bool det_only) {
  int k = 0;
  for (int pass = 0; pass < (det_only ? 1 : 2); pass++)
    for (int i = 0; i < n; i++)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && ((perf[i].determinism == CUDNN_DETERMINISTIC) == (pass == 0)))
        out[k++] = cand{(int)perf[i].algo, perf[i].mathType};
  return k;
}

static cudnnMathType_t math_for(int dt, cudnnMathType_t suggested) {
  if (dt == CT_F32) return conv_allow_tf32 ? suggested : CUDNN_FMA_MATH;
  if (dt == CT_F64) return CUDNN_DEFAULT_MATH;
  return suggested;
}

/* The data of one call. Forward: out = y from x, w. Backward data: out =
 * x-grad from w, y (= grad_out). Backward filter: out = w-grad from x, y. */
struct conv_args {
  const char *op;
  int dev, kind, dt;
  cudnnHandle_t h;
  const void *xp, *wp, *yp;
  void *outp;
};

static const char *conv_call(int kind) {
  return kind == K_FWD        ? "cudnnConvolutionForward"
         : kind == K_BWD_DATA ? "cudnnConvolutionBackwardData"
                              : "cudnnConvolutionBackwardFilter";
}

/* Runs algorithm `algo` of d (its math type set) with workspace ws. */
static cudnnStatus_t convolve(const conv_args &a, dnn_descs &d, int algo, void *ws, size_t wsz) {
  double one_d = 1.0, zero_d = 0.0;
  float one_f = 1.0f, zero_f = 0.0f;
  const void *one = a.dt == CT_F64 ? (const void *)&one_d : (const void *)&one_f;
  const void *zero = a.dt == CT_F64 ? (const void *)&zero_d : (const void *)&zero_f;
  if (a.kind == K_FWD)
    return cudnnConvolutionForward(a.h, one, d.x, a.xp, d.w, a.wp, d.conv,
                                   (cudnnConvolutionFwdAlgo_t)algo, ws, wsz, zero, d.y, a.outp);
  if (a.kind == K_BWD_DATA)
    return cudnnConvolutionBackwardData(a.h, one, d.w, a.wp, d.y, a.yp, d.conv,
                                        (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsz, zero, d.x,
                                        a.outp);
  return cudnnConvolutionBackwardFilter(a.h, one, d.x, a.xp, d.y, a.yp, d.conv,
                                        (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsz, zero, d.w,
                                        a.outp);
}

static cudnnStatus_t workspace_size(const conv_args &a, dnn_descs &d, int algo, size_t *wsz) {
  if (a.kind == K_FWD)
    return cudnnGetConvolutionForwardWorkspaceSize(a.h, d.x, d.w, d.conv, d.y,
                                                   (cudnnConvolutionFwdAlgo_t)algo, wsz);
  if (a.kind == K_BWD_DATA)
    return cudnnGetConvolutionBackwardDataWorkspaceSize(a.h, d.w, d.y, d.conv, d.x,
                                                        (cudnnConvolutionBwdDataAlgo_t)algo, wsz);
  return cudnnGetConvolutionBackwardFilterWorkspaceSize(a.h, d.x, d.y, d.conv, d.w,
                                                        (cudnnConvolutionBwdFilterAlgo_t)algo, wsz);
}

/* The supported candidates of the heuristics for p's problem (math type
 * `want` on its descriptor). */
static ct_status query_candidates(const conv_args &a, plan *p, cand *c, int *nc) {
  int got = 0;
  cudnnMathType_t want =
      a.dt == CT_F16 || a.dt == CT_BF16 ? CUDNN_TENSOR_OP_MATH : math_for(a.dt, CUDNN_DEFAULT_MATH);
  dnn_descs &d = p->d;
  DNN_CHECK(a.op, a.dev, cudnnSetConvolutionMathType(d.conv, want));
  if (a.kind == K_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN_CHECK(a.op, a.dev,
              cudnnGetConvolutionForwardAlgorithm_v7(a.h, d.x, d.w, d.conv, d.y,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    *nc = candidates(perf, got, c, p->key.deterministic);
  } else if (a.kind == K_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN_CHECK(a.op, a.dev,
              cudnnGetConvolutionBackwardDataAlgorithm_v7(
                  a.h, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf));
    *nc = candidates(perf, got, c, p->key.deterministic);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN_CHECK(a.op, a.dev,
              cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                  a.h, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf));
    *nc = candidates(perf, got, c, p->key.deterministic);
  }
  return CT_OK;
}

/* Runs candidate c with a workspace of wsz bytes from `ws` (freed here,
 * stream-ordered); on success p keeps it. */
static cudnnStatus_t run_candidate(const conv_args &a, plan *p, cand c, void *ws, size_t wsz) {
  cudnnStatus_t s = convolve(a, p->d, c.algo, ws, wsz);
  /* stream-ordered: freeing right after the enqueued call is safe (allocator.cu) */
  if (ws) ct__cuda_free(a.dev, ws, wsz, false);
  if (s == CUDNN_STATUS_SUCCESS) {
    p->algo = c.algo;
    p->math = math_for(a.dt, c.math);
    p->workspace = wsz;
  }
  return s;
}

/* Finds the first candidate that runs p's problem, running it. */
static ct_status search(const conv_args &a, plan *p) {
  cand c[16];
  int nc = 0;
  ct_status st = query_candidates(a, p, c, &nc);
  if (st != CT_OK) return st;
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  const char *call = "cudnnGetConvolution*Algorithm_v7 (no supported algorithm)";
  int starved = -1; /* the first candidate whose workspace did not fit */
  size_t starved_size = 0;
  for (int i = 0; i < nc; i++) {
    DNN_CHECK(a.op, a.dev, cudnnSetConvolutionMathType(p->d.conv, math_for(a.dt, c[i].math)));
    size_t wsz = 0;
    cudnnStatus_t s = workspace_size(a, p->d, c[i].algo, &wsz);
    if (s != CUDNN_STATUS_SUCCESS) {
      last = s;
      call = "cudnnGetConvolution*WorkspaceSize";
      if (dnn_not_supported(s) || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_BAD_PARAM) continue;
      return dnn_fail(a.op, call, s, a.dev);
    }
    void *ws = nullptr;
    if (wsz > 0 && !(ws = ct__cuda_alloc_workspace(a.dev, wsz))) {
      if (starved < 0) starved = i, starved_size = wsz;
      continue; /* the next candidate may need less: the cache stays */
    }
    s = run_candidate(a, p, c[i], ws, wsz);
    if (s == CUDNN_STATUS_SUCCESS) return CT_OK;
    last = s;
    call = conv_call(a.kind);
    if (!dnn_not_supported(s)) return dnn_fail(a.op, call, s, a.dev);
  }
  if (starved >= 0) { /* every runnable candidate wants more than is free: empty the cache, once */
    DNN_CHECK(a.op, a.dev, cudnnSetConvolutionMathType(p->d.conv, math_for(a.dt, c[starved].math)));
    void *ws = ct__cuda_alloc(a.dev, starved_size, false);
    if (!ws) return ct_last_error(); /* CT_ERR_OOM, recorded by the allocator */
    cudnnStatus_t s = run_candidate(a, p, c[starved], ws, starved_size);
    if (s == CUDNN_STATUS_SUCCESS) return CT_OK;
    last = s;
    call = conv_call(a.kind);
  }
  if (p->key.deterministic && dnn_not_supported(last)) /* the others were left out */
    return ct__fail_status(CT_ERR_UNAVAILABLE,
                           "%s: cuDNN has no deterministic %s algorithm for this problem, and "
                           "ct_use_deterministic_algorithms is on",
                           a.op, conv_call(a.kind));
  return dnn_fail(a.op, call, last, a.dev);
}

/* Runs one convolution kind through its plan (made on the first call). The
 * caller holds dnn_mu. */
static ct_status run_conv(const conv_args &a, const ctc_t *x, const ctc_t *w, const ctc_t *y,
                          const ct_conv2d_params *cp) {
  const void *outer = a.kind == K_FWD ? a.xp : a.yp, *mid = a.kind == K_BWD_FILTER ? a.xp : a.wp;
  plan_key k = make_key(a.dev, a.kind, x, w, y, cp, outer, mid, a.outp);
  plan *p = plan_find(k);
  if (p) {
    plan_hits++;
    void *ws = p->workspace ? ct__cuda_alloc_workspace(a.dev, p->workspace) : nullptr;
    if (!p->workspace || ws) {
      cudnnStatus_t s = convolve(a, p->d, p->algo, ws, p->workspace);
      if (ws) ct__cuda_free(a.dev, ws, p->workspace, false);
      if (s == CUDNN_STATUS_SUCCESS) return CT_OK;
      if (!dnn_not_supported(s)) return dnn_fail(a.op, conv_call(a.kind), s, a.dev);
    }
    /* refused now, or its workspace does not fit: choose again */
    ct_status st = search(a, p);
    if (st != CT_OK) {
      plan_unlink(p);
      delete p;
    }
    return st;
  }
  plan_misses++;
  p = new (std::nothrow) plan;
  if (!p) return ct__fail_status(CT_ERR_OOM, "%s: out of host memory", a.op);
  p->key = k;
  ct_status st = make_descs(a.op, a.dev, p->d, x, w, y, cp);
  if (st == CT_OK) st = search(a, p);
  if (st != CT_OK) {
    delete p;
    return st;
  }
  plan_insert(p);
  return CT_OK;
}

static ct_status check_dtype(const char *op, int dt) {
  if (!ctc_is_float(dt))
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op, ct_dtype_name((ct_dtype)dt));
  return CT_OK;
}

/* bias (C) viewed as (N, C, H, W) with strides (0, 1, 0, 0). */
static ctc_t bias_view(const ctc_t *bias, const ctc_t *out) {
  ctc_t b = *out;
  b.data = bias->data;
  b.dtype = bias->dtype;
  b.strides[0] = 0;
  b.strides[1] = bias->strides[0];
  b.strides[2] = 0;
  b.strides[3] = 0;
  return b;
}

static ct_status fill0(ct_tensor *t) { return t && t->numel > 0 ? ct__cuda_fill(t, 0.0) : CT_OK; }

extern "C" ct_status ct__cuda_conv2d(ct_tensor *out_t, const ct_tensor *x_t, const ct_tensor *w_t,
                                     const ct_tensor *bias_t, const ct_conv2d_params *p) {
  const ctc_view out(out_t), x(x_t), w(w_t), bias(bias_t);
  const char *op = "conv2d";
  int dev = out->device, dt = out->dtype;
  ct_status st = check_dtype(op, dt);
  if (st != CT_OK) return st;
  if (out->numel == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (x->numel == 0 || w->numel == 0) {
    /* an empty sum: the output is the bias (or zero) */
    if ((st = fill0(out_t)) != CT_OK) return st;
  } else {
    pthread_mutex_lock(&dnn_mu);
    conv_args a = {op, dev, K_FWD, dt, nullptr, x->data, w->data, nullptr, out->data};
    st = dnn_handle(op, dev, ctc_stream(dev), &a.h);
    if (st == CT_OK) st = run_conv(a, x, w, out, p);
    pthread_mutex_unlock(&dnn_mu);
    if (st != CT_OK) return st;
  }
  if (bias) {
    ctc_tensor b(bias_view(bias, out));
    if ((st = ct__cuda_binary(CT_BOP_ADD, out_t, out_t, b)) != CT_OK) return st;
  }
  if (ctc_launch_blocking()) CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(ctc_stream(dev)));
  return CT_OK;
}

extern "C" ct_status ct__cuda_conv2d_backward(ct_tensor *gx_t, ct_tensor *gw_t, ct_tensor *gb_t,
                                              const ct_tensor *g_t, const ct_tensor *x_t,
                                              const ct_tensor *w_t, const ct_conv2d_params *p) {
  const ctc_view gx(gx_t), gw(gw_t), gb(gb_t), g(g_t), x(x_t), w(w_t);
  const char *op = "conv2d_backward";
  int dev = g->device, dt = g->dtype;
  ct_status st = check_dtype(op, dt);
  if (st != CT_OK) return st;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (gb && gb->numel > 0) {
    /* grad_b (C) = sum of grad_out over (N, H, W): reduce into the keepdim shape */
    ctc_t o = *g;
    o.data = gb->data;
    o.dtype = gb->dtype;
    o.numel = gb->numel;
    o.shape[0] = o.shape[2] = o.shape[3] = 1;
    o.strides[0] = gb->numel;
    o.strides[1] = gb->strides[0];
    o.strides[2] = o.strides[3] = 1;
    bool mask[CTC_MAX_DIMS] = {true, false, true, true};
    ctc_tensor ot(o);
    if (g->numel == 0)
      st = fill0(gb_t);
    else
      st = ct__cuda_reduce(CT_ROP_SUM, ot, g_t, mask, 0.0);
    if (st != CT_OK) return st;
  }
  bool want_x = gx && gx->numel > 0, want_w = gw && gw->numel > 0;
  if (!want_x && !want_w) return CT_OK;
  if (g->numel == 0 || x->numel == 0 || w->numel == 0) {
    /* an empty sum somewhere: the gradients are zero */
    if (want_x && (st = fill0(gx_t)) != CT_OK) return st;
    if (want_w && (st = fill0(gw_t)) != CT_OK) return st;
    return CT_OK;
  }
  pthread_mutex_lock(&dnn_mu);
  cudnnHandle_t h = nullptr;
  st = dnn_handle(op, dev, ctc_stream(dev), &h);
  if (st == CT_OK && want_x) {
    conv_args a = {op, dev, K_BWD_DATA, dt, h, nullptr, w->data, g->data, gx->data};
    st = run_conv(a, x, w, g, p);
  }
  if (st == CT_OK && want_w) {
    conv_args a = {op, dev, K_BWD_FILTER, dt, h, x->data, nullptr, g->data, gw->data};
    st = run_conv(a, x, w, g, p);
  }
  pthread_mutex_unlock(&dnn_mu);
  if (st != CT_OK) return st;
  if (ctc_launch_blocking()) CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(ctc_stream(dev)));
  return CT_OK;
}
