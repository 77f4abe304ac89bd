/* CUDA matrix products: out (B, n, m) = a (B, n, k) @ b (B, k, m) [+ out].
 *
 * f32/f64/f16/bf16 go to cublasGemmStridedBatchedEx, one call for all
 * batches (batch stride 0 for broadcast batches). cuBLAS is column-major, so
 * the row-major product is computed as out^T = b^T a^T: out (contiguous) is
 * the column-major (m, n) matrix with ld m. An operand stored row-major or
 * column-major is passed as it lies (NoTrans / Trans with its leading
 * dimension): transposed views cost no copy. Other layouts (steps, broadcast
 * rows) are first copied to contiguous scratch by the copy kernel.
 * f16/bf16 accumulate in f32. TF32 is off by default (CUBLAS_COMPUTE_32F,
 * exact f32 products); ct_cuda_set_allow_tf32(true) switches f32 to
 * CUBLAS_COMPUTE_32F_FAST_TF32. Integers use a plain kernel with wrap-around
 * arithmetic (one thread per output element), as the CPU's loop.
 *
 * cuBLAS handles: one per device, created lazily; a mutex serializes
 * cublasSetStream + the call, since threads share the handle. Each call gets
 * its workspace from the stream-ordered caching allocator (cublasSetWorkspace
 * after cublasSetStream, which resets it): calls on different streams never
 * share one, as they could with the handle's default pool. Split-K reductions
 * stay in f32 for f16/bf16 (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION). */
#include <cublas_v2.h>
#include <pthread.h>

#include "backend/cuda/gemm.cuh"

static bool allow_tf32 = false;
/* The set_allow_tf32 slot (ct_cuda_set_allow_tf32): cuBLAS here, cuDNN in conv.cu. */
extern "C" void ct__cuda_set_allow_tf32(bool allow) {
  allow_tf32 = allow;
  ct__cuda_conv_set_allow_tf32(allow);
}

#define CTC_MAX_DEV 64
static cublasHandle_t handles[CTC_MAX_DEV];
static size_t ws_bytes[CTC_MAX_DEV]; /* workspace per call, set with the handle */
static pthread_mutex_t handle_mu = PTHREAD_MUTEX_INITIALIZER;

static ct_status cublas_fail(const char *call, cublasStatus_t s, int dev) {
  return ct__fail_status(s == CUBLAS_STATUS_ALLOC_FAILED ? CT_ERR_OOM : CT_ERR_CUDA,
                         "matmul: %s failed on cuda:%d: %s (%s)", call, dev, cublasGetStatusName(s),
                         cublasGetStatusString(s));
}

/* How cuBLAS sees one (rows, cols) row-major-indexed matrix with element
 * strides (rs, cs): as the column-major (cols, rows) matrix (row-major
 * storage, op N) or the column-major (rows, cols) one (op T). */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *col_major, int64_t *ld) {
  int64_t rmin = rows > 1 ? rows : 1, cmin = cols > 1 ? cols : 1;
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cmin)) {
    *col_major = false;
    *ld = rows > 1 ? rs : cmin;
    return *ld <= INT32_MAX; /* cuBLAS takes an int ld: else packed */
  }
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rmin)) {
    *col_major = true;
    *ld = cols > 1 ? cs : rmin;
    return *ld <= INT32_MAX;
  }
  return false;
}

/* The device's handle (created on first use), with the
 * workspace size its calls get. The caller holds handle_mu. */
static cublasStatus_t get_handle(int dev, const char **call) {
  if (handles[dev]) return CUBLAS_STATUS_SUCCESS;
  *call = "cublasCreate";
  cublasHandle_t h;
  cublasStatus_t cs = cublasCreate(&h);
  if (cs != CUBLAS_STATUS_SUCCESS) return cs;
  *call = "cublasSetMathMode";
  cs = cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  if (cs != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    return cs;
  }
  /* cuBLAS's own default pool sizes: 32 MiB on Hopper and later, else 4 MiB */
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    major = 9;
  }
  ws_bytes[dev] = (size_t)(major >= 9 ? 32 : 4) << 20;
  handles[dev] = h;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- Integers ------------------------------------------------------------------- */

__global__ void int_matmul_kernel(ctc_t out, ctc_t a, ctc_t b, bool beta_one) {
  int64_t n = out.shape[1], m = out.shape[2], k = a.shape[2];
  int64_t abs_ = a.shape[0] > 1 ? a.strides[0] : 0, bbs = b.shape[0] > 1 ? b.strides[0] : 0;
  int aes = (int)ctc_elsize(a.dtype), oes = (int)ctc_elsize(out.dtype);
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < out.numel; e += stride) {
    int64_t q = e % m, r = e / m, i = r % n, bt = r / n;
    char *c = out.data + e * oes; /* out is contiguous */
    uint64_t acc = beta_one ? (uint64_t)ctc_load<int64_t>(c, out.dtype) : 0;
    const char *arow = a.data + (bt * abs_ + i * a.strides[1]) * aes;
    const char *bcol = b.data + (bt * bbs + q * b.strides[2]) * aes;
    for (int64_t p = 0; p < k; p++)
      acc += (uint64_t)ctc_load<int64_t>(arow + p * a.strides[2] * aes, a.dtype) *
             (uint64_t)ctc_load<int64_t>(bcol + p * b.strides[1] * aes, b.dtype);
    ctc_store<int64_t>(c, out.dtype, (int64_t)acc);
  }
}

/* A contiguous copy of t in scratch (for layouts cuBLAS can't take). */
static ct_status packed(int dev, const ctc_t *t, ctc_scratch &buf, ctc_t *out) {
  *out = *t;
  size_t es = ctc_elsize(t->dtype);
  if (!(out->data = (char *)buf.get((size_t)t->numel * es))) return ct_last_error();
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) out->strides[d] = s, s *= t->shape[d];
  ctc_tensor dst(*out), src(*t);
  return ct__cuda_copy(dst, src);
}

/* The device's handle on stream s with a workspace from ws (handle_mu
 * held): the status and the call it comes from; *no_ws when the workspace
 * could not be allocated (the error is recorded). */
static cublasStatus_t bind_handle(int dev, cudaStream_t s, ctc_scratch &ws, const char **call,
                                  bool *no_ws) {
  *no_ws = false;
  *call = "cublasCreate";
  cublasStatus_t cs = get_handle(dev, call);
  if (cs != CUBLAS_STATUS_SUCCESS) return cs;
  void *wsp = ws.get(ws_bytes[dev]);
  if (!wsp) return *no_ws = true, CUBLAS_STATUS_ALLOC_FAILED;
  *call = "cublasSetStream";
  if ((cs = cublasSetStream(handles[dev], s)) != CUBLAS_STATUS_SUCCESS) return cs;
  *call = "cublasSetWorkspace";
  return cublasSetWorkspace(handles[dev], wsp, ws_bytes[dev]);
}

extern "C" ct_status ct__cuda_matmul(ct_tensor *out_t, const ct_tensor *a_t, const ct_tensor *b_t,
                                     bool beta_one) {
  const ctc_view out(out_t), a(a_t), b(b_t);
  int dev = out->device, dt = out->dtype;
  if (out->numel == 0) return CT_OK;
  ct_status st = ctc_use_device("matmul", dev);
  if (st != CT_OK) return st;
  cudaStream_t s = ctc_stream(dev);
  int64_t B = out->shape[0], n = out->shape[1], m = out->shape[2], k = a->shape[2];
  if (!ctc_is_float(dt)) {
    if (dt == CT_BOOL)
      return ct__fail_status(CT_ERR_DTYPE, "matmul: no CUDA kernel for %s", ct_dtype_name((ct_dtype)dt));
    int_matmul_kernel<<<ctc_blocks(out->numel, dev), CTC_THREADS, 0, s>>>(*out, *a, *b, beta_one);
    CT_CUDA_LAUNCH_CHECK("matmul", dev, s);
    return CT_OK;
  }
  if (k == 0) {
    if (!beta_one)
      CT_CUDA_CHECK("matmul", dev, cudaMemsetAsync(out->data, 0, (size_t)out->numel * ctc_elsize(dt), s));
    return CT_OK;
  }
  if (dev < 0 || dev >= CTC_MAX_DEV)
    return ct__fail_status(CT_ERR_CUDA, "matmul: cuda:%d beyond the %d devices supported", dev, CTC_MAX_DEV);
  if (n > INT32_MAX || m > INT32_MAX || k > INT32_MAX || B > INT32_MAX)
    return ct__fail_status(CT_ERR_ARG, "matmul: dims (%lld, %lld, %lld) exceed cuBLAS's int range",
                           (long long)n, (long long)k, (long long)m);
  /* operands as cuBLAS takes them, packing the ones it can't */
  ctc_scratch abuf(dev), bbuf(dev);
  ctc_t A = *a, Bm = *b;
  bool acm = false, bcm = false;
  int64_t lda = 1, ldb = 1;
  if (!blas_layout(n, k, A.strides[1], A.strides[2], &acm, &lda)) {
    if ((st = packed(dev, a, abuf, &A)) != CT_OK) return st;
    blas_layout(n, k, A.strides[1], A.strides[2], &acm, &lda);
  }
  if (!blas_layout(k, m, Bm.strides[1], Bm.strides[2], &bcm, &ldb)) {
    if ((st = packed(dev, b, bbuf, &Bm)) != CT_OK) return st;
    blas_layout(k, m, Bm.strides[1], Bm.strides[2], &bcm, &ldb);
  }
  long long sa = A.shape[0] > 1 ? A.strides[0] : 0, sb = Bm.shape[0] > 1 ? Bm.strides[0] : 0;
  cudaDataType_t type;
  cublasComputeType_t compute;
  switch (dt) {
  case CT_F64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; break;
  case CT_F16: type = CUDA_R_16F; compute = CUBLAS_COMPUTE_32F; break;
  case CT_BF16: type = CUDA_R_16BF; compute = CUBLAS_COMPUTE_32F; break;
  default: type = CUDA_R_32F; compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; break;
  }
  double alpha_d = 1.0, beta_d = beta_one ? 1.0 : 0.0;
  float alpha_f = 1.0f, beta_f = beta_one ? 1.0f : 0.0f;
  const void *alpha = dt == CT_F64 ? (const void *)&alpha_d : (const void *)&alpha_f;
  const void *beta = dt == CT_F64 ? (const void *)&beta_d : (const void *)&beta_f;
  ctc_scratch ws(dev); /* freed (stream-ordered) after the unlock */
  pthread_mutex_lock(&handle_mu);
  const char *call;
  bool no_ws;
  cublasStatus_t cs = bind_handle(dev, s, ws, &call, &no_ws);
  if (no_ws) {
    pthread_mutex_unlock(&handle_mu);
    return ct_last_error();
  }
  if (cs == CUBLAS_STATUS_SUCCESS) {
    call = "cublasGemmStridedBatchedEx";
    /* out^T (m, n) = op(b^T) (m, k) @ op(a^T) (k, n) */
    cs = cublasGemmStridedBatchedEx(handles[dev], bcm ? CUBLAS_OP_T : CUBLAS_OP_N, acm ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    (int)m, (int)n, (int)k, alpha, Bm.data, type, (int)ldb, sb, A.data, type,
                                    (int)lda, sa, beta, out->data, type, (int)m, (long long)(n * m), (int)B,
                                    compute, CUBLAS_GEMM_DEFAULT);
  }
  pthread_mutex_unlock(&handle_mu);
  if (cs != CUBLAS_STATUS_SUCCESS) return cublas_fail(call, cs, dev);
  if (ctc_launch_blocking()) CT_CUDA_CHECK("matmul", dev, cudaStreamSynchronize(s));
  return CT_OK;
}

/* ---- Batched GEMMs for other ops ------------------------------------------------ */

/* One cublasGemmStridedBatchedEx (gemm.cuh's ctc_gemm) on the device's
 * handle, stream and a workspace of its own, as ct__cuda_matmul's call:
 * f16/bf16 accumulate in f32, f32 follows the TF32 setting. */
ct_status ct__cuda_gemm(const char *op, int dev, const ctc_gemm *g) {
  if (dev < 0 || dev >= CTC_MAX_DEV)
    return ct__fail_status(CT_ERR_CUDA, "%s: cuda:%d beyond the %d devices supported", op, dev,
                           CTC_MAX_DEV);
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX || g->batch > INT32_MAX ||
      g->lda > INT32_MAX || g->ldb > INT32_MAX || g->ldc > INT32_MAX)
    return ct__fail_status(CT_ERR_ARG, "%s: GEMM dims (%lld, %lld, %lld) exceed cuBLAS's int range",
                           op, (long long)g->m, (long long)g->n, (long long)g->k);
  bool f64 = g->ab_dtype == CT_F64;
  cudaDataType_t ab = f64                         ? CUDA_R_64F
                      : g->ab_dtype == CT_F16     ? CUDA_R_16F
                      : g->ab_dtype == CT_BF16    ? CUDA_R_16BF
                                                  : CUDA_R_32F;
  cudaDataType_t ct = g->c_dtype == g->ab_dtype ? ab : CUDA_R_32F;
  cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F
                                : ab == CUDA_R_32F && allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                 : CUBLAS_COMPUTE_32F;
  double alpha_d = g->alpha, beta_d = g->beta;
  float alpha_f = (float)g->alpha, beta_f = (float)g->beta;
  const void *alpha = f64 ? (const void *)&alpha_d : (const void *)&alpha_f;
  const void *beta = f64 ? (const void *)&beta_d : (const void *)&beta_f;
  cudaStream_t s = ctc_stream(dev);
  ctc_scratch ws(dev); /* freed (stream-ordered) after the unlock */
  pthread_mutex_lock(&handle_mu);
  const char *call;
  bool no_ws;
  cublasStatus_t cs = bind_handle(dev, s, ws, &call, &no_ws);
  if (no_ws) {
    pthread_mutex_unlock(&handle_mu);
    return ct_last_error();
  }
  if (cs == CUBLAS_STATUS_SUCCESS) {
    call = "cublasGemmStridedBatchedEx";
    cs = cublasGemmStridedBatchedEx(
        handles[dev], g->ta ? CUBLAS_OP_T : CUBLAS_OP_N, g->tb ? CUBLAS_OP_T : CUBLAS_OP_N,
        (int)g->m, (int)g->n, (int)g->k, alpha, g->a, ab, (int)g->lda, (long long)g->sa, g->b, ab,
        (int)g->ldb, (long long)g->sb, beta, g->c, ct, (int)g->ldc, (long long)g->sc, (int)g->batch,
        compute, CUBLAS_GEMM_DEFAULT);
  }
  pthread_mutex_unlock(&handle_mu);
  if (cs != CUBLAS_STATUS_SUCCESS)
    return ct__fail_status(cs == CUBLAS_STATUS_ALLOC_FAILED ? CT_ERR_OOM : CT_ERR_CUDA,
                           "%s: %s failed on cuda:%d: %s (%s)", op, call, dev,
                           cublasGetStatusName(cs), cublasGetStatusString(cs));
  if (ctc_launch_blocking()) CT_CUDA_CHECK(op, dev, cudaStreamSynchronize(s));
  return CT_OK;
}
