/* CUDA 2-d convolution through cuDNN (legacy convolution API, NCHW).
 *
 * Forward: cudnnConvolutionForward, then the bias added by the binary kernel
 * (out += bias broadcast over N, H, W). Backward: cudnnConvolutionBackwardData
 * (grad_x), cudnnConvolutionBackwardFilter (grad_w), and grad_b = the sum of
 * grad_out over (N, H, W) by the reduce kernel (double accumulation,
 * deterministic). Groups via cudnnSetConvolutionGroupCount.
 *
 * Algorithms: cudnnGet*Algorithm_v7 (heuristics, no benchmarking); among the
 * candidates it reports as supported, deterministic ones first, then the
 * others, in the heuristics' order; a candidate whose workspace query or run
 * says NOT_SUPPORTED (any sub-code), or whose workspace doesn't fit in device
 * memory, is skipped. Workspace from the caching allocator.
 * Math: f32 uses CUDNN_FMA_MATH (exact f32, no TF32) unless
 * ct_cuda_set_allow_tf32(true); f16/bf16 take the candidate's math type
 * (tensor cores) with f32 compute; f64 computes in double.
 *
 * cuDNN handles: one per device, created lazily; a mutex serializes
 * cudnnSetStream + the calls, since threads share the handle. */
#include <cudnn.h>
#include <limits.h>
#include <pthread.h>

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

/* Descriptors of one call, destroyed on every return path. */
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

struct cand {
  int algo;
  cudnnMathType_t math;
};

/* Supported candidates of a perf list: deterministic first, each group in the
 * heuristics' order. */
template <class Perf> static int candidates(const Perf *perf, int n, cand *out) {
  int k = 0;
  for (int pass = 0; pass < 2; pass++)
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

enum { K_FWD, K_BWD_DATA, K_BWD_FILTER };

/* Runs one convolution kind, trying the candidates in order. The caller holds
 * dnn_mu. Forward: out = y from x, w. Backward data: out = x-grad from w, y
 * (= grad_out). Backward filter: out = w-grad from x, y. */
static ct_status run_conv(const char *op, int dev, cudnnHandle_t h, int kind, dnn_descs &d, int dt,
                          const void *xp, const void *wp, const void *yp, void *outp) {
  cand c[16];
  int nc = 0, got = 0;
  /* the math the heuristics rank for: exact f32 (FMA) unless TF32 is allowed,
   * tensor cores for halves */
  cudnnMathType_t want = dt == CT_F16 || dt == CT_BF16 ? CUDNN_TENSOR_OP_MATH : math_for(dt, CUDNN_DEFAULT_MATH);
  DNN_CHECK(op, dev, cudnnSetConvolutionMathType(d.conv, want));
  if (kind == K_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN_CHECK(op, dev, cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    nc = candidates(perf, got, c);
  } else if (kind == K_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN_CHECK(op, dev, cudnnGetConvolutionBackwardDataAlgorithm_v7(
                           h, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf));
    nc = candidates(perf, got, c);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN_CHECK(op, dev, cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                           h, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf));
    nc = candidates(perf, got, c);
  }
  double one_d = 1.0, zero_d = 0.0;
  float one_f = 1.0f, zero_f = 0.0f;
  const void *one = dt == CT_F64 ? (const void *)&one_d : (const void *)&one_f;
  const void *zero = dt == CT_F64 ? (const void *)&zero_d : (const void *)&zero_f;
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  const char *call = "cudnnGetConvolution*Algorithm_v7 (no supported algorithm)";
  bool ws_oom = false; /* a candidate's workspace didn't fit: try the next */
  ct_status prior = ct_last_error();
  for (int i = 0; i < nc; i++) {
    DNN_CHECK(op, dev, cudnnSetConvolutionMathType(d.conv, math_for(dt, c[i].math)));
    size_t wsz = 0;
    cudnnStatus_t s;
    if (kind == K_FWD)
      s = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, (cudnnConvolutionFwdAlgo_t)c[i].algo, &wsz);
    else if (kind == K_BWD_DATA)
      s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                       (cudnnConvolutionBwdDataAlgo_t)c[i].algo, &wsz);
    else
      s = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                         (cudnnConvolutionBwdFilterAlgo_t)c[i].algo, &wsz);
    if (s != CUDNN_STATUS_SUCCESS) {
      last = s;
      call = "cudnnGetConvolution*WorkspaceSize";
      if (dnn_not_supported(s) || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_BAD_PARAM) continue;
      return dnn_fail(op, call, s, dev);
    }
    void *ws = nullptr;
    if (wsz > 0 && !(ws = ct__cuda_alloc(dev, wsz, false))) {
      if (ct_last_error() != CT_ERR_OOM) return ct_last_error();
      ws_oom = true;
      continue;
    }
    if (kind == K_FWD) {
      call = "cudnnConvolutionForward";
      s = cudnnConvolutionForward(h, one, d.x, xp, d.w, wp, d.conv, (cudnnConvolutionFwdAlgo_t)c[i].algo, ws, wsz,
                                  zero, d.y, outp);
    } else if (kind == K_BWD_DATA) {
      call = "cudnnConvolutionBackwardData";
      s = cudnnConvolutionBackwardData(h, one, d.w, wp, d.y, yp, d.conv, (cudnnConvolutionBwdDataAlgo_t)c[i].algo,
                                       ws, wsz, zero, d.x, outp);
    } else {
      call = "cudnnConvolutionBackwardFilter";
      s = cudnnConvolutionBackwardFilter(h, one, d.x, xp, d.y, yp, d.conv,
                                         (cudnnConvolutionBwdFilterAlgo_t)c[i].algo, ws, wsz, zero, d.w, outp);
    }
    /* stream-ordered: freeing right after the enqueued call is safe (allocator.cu) */
    if (ws) ct__cuda_free(dev, ws, wsz, false);
    if (s == CUDNN_STATUS_SUCCESS) {
      if (ws_oom && prior == CT_OK) ct_clear_error(); /* the OOM of a skipped candidate */
      return CT_OK;
    }
    last = s;
    if (!dnn_not_supported(s)) return dnn_fail(op, call, s, dev);
  }
  if (ws_oom) return CT_ERR_OOM; /* recorded by the allocator */
  return dnn_fail(op, call, last, dev);
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

static ct_status fill0(const ctc_t *t) { return t && t->numel > 0 ? ct__cuda_fill(t, 0.0) : CT_OK; }

extern "C" ct_status ct__cuda_conv2d(const ctc_t *out, const ctc_t *x, const ctc_t *w,
                                     const ctc_t *bias, const ct_conv2d_params *p) {
  const char *op = "conv2d";
  int dev = out->device, dt = out->dtype;
  ct_status st = check_dtype(op, dt);
  if (st != CT_OK) return st;
  if (out->numel == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (x->numel == 0 || w->numel == 0) {
    /* an empty sum: the output is the bias (or zero) */
    if ((st = fill0(out)) != CT_OK) return st;
  } else {
    dnn_descs d;
    if ((st = make_descs(op, dev, d, x, w, out, p)) != CT_OK) return st;
    pthread_mutex_lock(&dnn_mu);
    cudnnHandle_t h = nullptr;
    st = dnn_handle(op, dev, ctc_stream(dev), &h);
    if (st == CT_OK) st = run_conv(op, dev, h, K_FWD, d, dt, x->data, w->data, nullptr, out->data);
    pthread_mutex_unlock(&dnn_mu);
    if (st != CT_OK) return st;
  }
  if (bias) {
    ctc_t b = bias_view(bias, out);
    if ((st = ct__cuda_binary(CT_BOP_ADD, out, out, &b)) != CT_OK) return st;
  }
  if (ctc_launch_blocking()) CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(ctc_stream(dev)));
  return CT_OK;
}

extern "C" ct_status ct__cuda_conv2d_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb,
                                              const ctc_t *g, const ctc_t *x, const ctc_t *w,
                                              const ct_conv2d_params *p) {
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
    if (g->numel == 0) st = fill0(gb);
    else
      st = ct__cuda_reduce(CT_ROP_SUM, &o, g, mask, 0.0);
    if (st != CT_OK) return st;
  }
  bool want_x = gx && gx->numel > 0, want_w = gw && gw->numel > 0;
  if (!want_x && !want_w) return CT_OK;
  if (g->numel == 0 || x->numel == 0 || w->numel == 0) {
    /* an empty sum somewhere: the gradients are zero */
    if (want_x && (st = fill0(gx)) != CT_OK) return st;
    if (want_w && (st = fill0(gw)) != CT_OK) return st;
    return CT_OK;
  }
  dnn_descs d;
  if ((st = make_descs(op, dev, d, x, w, g, p)) != CT_OK) return st;
  pthread_mutex_lock(&dnn_mu);
  cudnnHandle_t h = nullptr;
  st = dnn_handle(op, dev, ctc_stream(dev), &h);
  if (st == CT_OK && want_x) st = run_conv(op, dev, h, K_BWD_DATA, d, dt, nullptr, w->data, g->data, gx->data);
  if (st == CT_OK && want_w) st = run_conv(op, dev, h, K_BWD_FILTER, d, dt, x->data, nullptr, g->data, gw->data);
  pthread_mutex_unlock(&dnn_mu);
  if (st != CT_OK) return st;
  if (ctc_launch_blocking()) CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(ctc_stream(dev)));
  return CT_OK;
}
