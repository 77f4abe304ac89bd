/* Host stand-in of the cuBLAS calls of src/backend/cuda/matmul.cu (declared
 * in shim/cublas_v2.h): handles and cublasGemmStridedBatchedEx computed on
 * the CPU, column-major, for the emulated CUDA runtime (tests/cuda_emu).
 *
 * Arguments are validated as cuBLAS documents it: an unknown (never created
 * or destroyed) handle is CUBLAS_STATUS_NOT_INITIALIZED; negative sizes, a
 * leading dimension below its minimum, an unknown op, null alpha/beta, a
 * misaligned workspace are CUBLAS_STATUS_INVALID_VALUE; a type / compute
 * type combination or algorithm the emulation doesn't compute is
 * CUBLAS_STATUS_NOT_SUPPORTED. Every pointer the call touches (A, B, C over
 * all batches, the user workspace) must pass emu_lib_check_device, else
 * CUBLAS_STATUS_INVALID_VALUE (a GPU would fault on it).
 *
 * Arithmetic: products accumulate in the compute type in ascending k (float
 * for CUBLAS_COMPUTE_32F*, double for CUBLAS_COMPUTE_64F), then
 * alpha * acc + beta * C, rounded once to C's type. TF32 (compute
 * CUBLAS_COMPUTE_32F_FAST_TF32, or CUBLAS_COMPUTE_32F under the math mode
 * CUBLAS_TF32_TENSOR_OP_MATH) rounds A and B to TF32 first, as the tensor
 * cores do, so a test sees the lost bits. beta == 0 never reads C; alpha == 0
 * or k == 0 never reads A and B (BLAS semantics).
 *
 * Asynchrony: a call that passes its checks queues the computation on the
 * handle's stream (emu_lib_enqueue), with its arguments and alpha/beta (read
 * when called, host pointer mode) captured by value, as cuBLAS returns before
 * the GPU has run it. */
#include "cublas_v2.h"

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <new>
#include <unordered_set>
#include <vector>

#include "emu_calls.h"
#include "emu_lib.h"
#include "host_math.h"

using emu_lib::Elem;

struct cublasContext {
  cudaStream_t stream = nullptr;
  void *ws = nullptr; /* the user workspace; nullptr: the library's own pool */
  size_t ws_size = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

/* Live handles: a destroyed or made-up handle is refused, not dereferenced. */
std::mutex live_mu;
std::unordered_set<const cublasContext *> &live() {
  static std::unordered_set<const cublasContext *> s;
  return s;
}
bool alive(cublasHandle_t h) {
  std::lock_guard<std::mutex> lock(live_mu);
  return h && live().count(h) != 0;
}

bool elem_of(cudaDataType t, Elem *e) {
  switch (t) {
    case CUDA_R_16F:
      *e = Elem::F16;
      return true;
    case CUDA_R_16BF:
      *e = Elem::BF16;
      return true;
    case CUDA_R_32F:
      *e = Elem::F32;
      return true;
    case CUDA_R_64F:
      *e = Elem::F64;
      return true;
    default:
      return false;
  }
}

/* The combinations the emulation computes (a subset of cuBLAS's table):
 * 32F: A = B in {16F, 16BF, 32F}, C = A or (for halves) 32F; FAST_TF32:
 * all 32F; 64F: all 64F. */
bool supported(cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t compute) {
  if (at != bt) return false;
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
      if (at == CUDA_R_32F) return ct == CUDA_R_32F;
      return (at == CUDA_R_16F || at == CUDA_R_16BF) && (ct == at || ct == CUDA_R_32F);
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return at == CUDA_R_32F && ct == CUDA_R_32F;
    case CUBLAS_COMPUTE_64F:
      return at == CUDA_R_64F && ct == CUDA_R_64F;
    default:
      return false;
  }
}

bool valid_algo(cublasGemmAlgo_t a) {
  int v = (int)a;
  return v == CUBLAS_GEMM_DEFAULT || (v >= CUBLAS_GEMM_ALGO0 && v <= CUBLAS_GEMM_ALGO23) ||
         v == CUBLAS_GEMM_DEFAULT_TENSOR_OP ||
         (v >= CUBLAS_GEMM_ALGO0_TENSOR_OP && v <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

/* Checks the bytes that `count` matrices of `extent` elements, `stride`
 * elements apart from p, cover (strides may be 0 or negative). */
bool check_span(const void *p, int64_t extent, long long stride, int count, size_t es,
                const char *what) {
  __int128 last = (__int128)stride * (count - 1);
  __int128 lo = last < 0 ? last : 0, hi = (last > 0 ? last : 0) + extent;
  __int128 bytes = (hi - lo) * (__int128)es;
  if (bytes > (__int128)(SIZE_MAX / 2))
    return emu_lib_check_device(p, SIZE_MAX / 2, what); /* cannot exist */
  uintptr_t base = (uintptr_t)p + (uintptr_t)(intptr_t)(lo * (__int128)es);
  return emu_lib_check_device((const void *)base, (size_t)bytes, what);
}

struct Gemm {
  bool ta, tb; /* op T (or C: the same for real types) */
  int m, n, k;
  const void *A, *B;
  void *C;
  Elem ae, ce;
  int lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
  bool tf32;
};

/* c (m x n, row-major) = a (m x k) b^T (n x k), both row-major: the host
 * BLAS, so that the emulated GPU multiplies big matrices in reasonable time
 * (the sums' order differs from a GPU's as much as any two GEMMs'). */
void gemm_nt(size_t m, size_t n, size_t k, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b,
              (int)k, 0.0f, c, (int)n);
}
void gemm_nt(size_t m, size_t n, size_t k, const double *a, const double *b, double *c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0, a, (int)k, b,
              (int)k, 0.0, c, (int)n);
}

template <class Acc>
void run(const Gemm &g, Acc alpha, Acc beta) {
  bool products = alpha != 0 && g.k > 0;
  size_t k = (size_t)g.k, es_a = emu_lib::elem_size(g.ae), es_c = emu_lib::elem_size(g.ce);
  /* op(A) row by row and op(B) column by column, contiguous in k */
  std::vector<Acc> a(products ? (size_t)g.m * k : 0), b(products ? (size_t)g.n * k : 0),
      c(products ? (size_t)g.m * (size_t)g.n : 0);
  for (int bt = 0; bt < g.batch; bt++) {
    const char *A = (const char *)g.A + (intptr_t)((long long)bt * g.sa) * (intptr_t)es_a;
    const char *B = (const char *)g.B + (intptr_t)((long long)bt * g.sb) * (intptr_t)es_a;
    char *C = (char *)g.C + (intptr_t)((long long)bt * g.sc) * (intptr_t)es_c;
    if (products) {
      for (size_t i = 0; i < (size_t)g.m; i++)
        for (size_t p = 0; p < k; p++)
          a[i * k + p] =
              emu_lib::load<Acc>(A, g.ta ? p + i * (size_t)g.lda : i + p * (size_t)g.lda, g.ae);
      for (size_t j = 0; j < (size_t)g.n; j++)
        for (size_t p = 0; p < k; p++)
          b[j * k + p] =
              emu_lib::load<Acc>(B, g.tb ? j + p * (size_t)g.ldb : p + j * (size_t)g.ldb, g.ae);
      if (g.tf32) {
        for (Acc &v : a) v = (Acc)emu_lib::to_tf32((float)v);
        for (Acc &v : b) v = (Acc)emu_lib::to_tf32((float)v);
      }
    }
    if (products) gemm_nt((size_t)g.m, (size_t)g.n, k, a.data(), b.data(), c.data());
    for (size_t j = 0; j < (size_t)g.n; j++)
      for (size_t i = 0; i < (size_t)g.m; i++) {
        size_t ci = i + j * (size_t)g.ldc;
        Acc r = products ? alpha * c[i * (size_t)g.n + j] : (Acc)0;
        if (beta != 0)
          r += beta * emu_lib::load<Acc>(C, ci, g.ce); /* beta == 0: C may be garbage */
        emu_lib::store<Acc>(C, ci, g.ce, r);
      }
  }
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  EMU_CALL();
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  cublasContext *h = new (std::nothrow) cublasContext();
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  std::lock_guard<std::mutex> lock(live_mu);
  live().insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  EMU_CALL();
  {
    std::lock_guard<std::mutex> lock(live_mu);
    if (!handle || live().erase(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  EMU_CALL();
  if (!alive(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  handle->ws = nullptr; /* cuBLAS: setting a stream resets the user workspace */
  handle->ws_size = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                     size_t workspaceSizeInBytes) {
  EMU_CALL();
  if (!alive(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((uintptr_t)workspace % 256 != 0)
    return CUBLAS_STATUS_INVALID_VALUE; /* cuBLAS wants 256-byte alignment */
  if (!workspace && workspaceSizeInBytes > 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->ws = workspace;
  handle->ws_size = workspaceSizeInBytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  EMU_CALL();
  if (!alive(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  bool known = base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
               base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
               base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
               base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
  if (!known) return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

const char *cublasGetStatusName(cublasStatus_t status) {
  EMU_CALL();
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t status) {
  EMU_CALL();
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "the functionality requested requires some license";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  EMU_CALL();
  if (!alive(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto op_ok = [](cublasOperation_t o) {
    return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C;
  };
  if (!op_ok(transa) || !op_ok(transb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0 || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
  bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N; /* C = T for real types */
  /* rows of A and B as stored: op(A) is m x k, op(B) k x n */
  int a_rows = ta ? k : m, b_rows = tb ? n : k;
  auto at_least_1 = [](int v) { return v > 1 ? v : 1; };
  if (lda < at_least_1(a_rows) || ldb < at_least_1(b_rows) || ldc < at_least_1(m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE; /* host pointer mode: the scalars are read here */
  if (!supported(Atype, Btype, Ctype, computeType) || !valid_algo(algo))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batchCount == 0)
    return CUBLAS_STATUS_SUCCESS; /* nothing to compute or touch */

  Gemm g{};
  g.ta = ta, g.tb = tb, g.m = m, g.n = n, g.k = k, g.A = A, g.B = B, g.C = C;
  elem_of(Atype, &g.ae);
  elem_of(Ctype, &g.ce);
  g.lda = lda, g.ldb = ldb, g.ldc = ldc, g.sa = strideA, g.sb = strideB, g.sc = strideC,
  g.batch = batchCount;
  int base_math = (int)handle->math & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  g.tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32 ||
           (computeType == CUBLAS_COMPUTE_32F && Atype == CUDA_R_32F &&
            base_math == CUBLAS_TF32_TENSOR_OP_MATH);

  bool dbl = computeType == CUBLAS_COMPUTE_64F; /* alpha and beta have the compute type */
  double al = dbl ? *(const double *)alpha : (double)*(const float *)alpha;
  double be = dbl ? *(const double *)beta : (double)*(const float *)beta;

  /* the memory the call touches: A and B only when products are formed */
  size_t es_a = emu_lib::elem_size(g.ae), es_c = emu_lib::elem_size(g.ce);
  if (al != 0 && k > 0) {
    int64_t a_cols = ta ? m : k, b_cols = tb ? k : n;
    if (!check_span(A, (a_cols - 1) * (int64_t)lda + a_rows, strideA, batchCount, es_a,
                    "cublasGemmStridedBatchedEx A"))
      return CUBLAS_STATUS_INVALID_VALUE;
    if (!check_span(B, (b_cols - 1) * (int64_t)ldb + b_rows, strideB, batchCount, es_a,
                    "cublasGemmStridedBatchedEx B"))
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!check_span(C, (int64_t)(n - 1) * ldc + m, strideC, batchCount, es_c,
                  "cublasGemmStridedBatchedEx C"))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (handle->ws && handle->ws_size > 0 &&
      !emu_lib_check_device(handle->ws, handle->ws_size, "cublasGemmStridedBatchedEx workspace"))
    return CUBLAS_STATUS_INVALID_VALUE;

  if (dbl) {
    emu_lib_enqueue(handle->stream, "cublasGemmStridedBatchedEx",
                    [g, al, be] { run<double>(g, al, be); });
  } else {
    float af = (float)al, bf = (float)be;
    emu_lib_enqueue(handle->stream, "cublasGemmStridedBatchedEx",
                    [g, af, bf] { run<float>(g, af, bf); });
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- Batched LU (getrfBatched, getrsBatched) ---------------------------------------------- */
/* The matrix pointers are read from device memory when the work runs (a
 * kernel queued before may write them); one outside device memory is a
 * fault there, as on a GPU. */
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetrs_(const char *trans, const int *n, const int *nrhs, const float *a, const int *lda,
             const int *ipiv, float *b, const int *ldb, int *info, size_t len);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
             const int *ipiv, double *b, const int *ldb, int *info, size_t len);
}  // extern "C"

namespace {

void *batch_ptr(const void *const *arr, int i, size_t bytes, const char *name) {
  void *p = (void *)arr[i];
  if (!emu_lib_check_device(p, bytes, name)) {
    fprintf(stderr, "%s: matrix %d of the batch at %p is not device memory (a GPU faults)\n", name,
            i, p);
    abort();
  }
  return p;
}

template <typename T>
cublasStatus_t getrf_batched(cublasHandle_t h, int n, T *const A[], int lda, int *P, int *info,
                             int batch, const char *name) {
  if (!alive(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n < 0 || lda < (n > 1 ? n : 1) || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (batch == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (!emu_lib_check_device(A, (size_t)batch * sizeof(T *), name) ||
      !emu_lib_check_device(P, (size_t)batch * (size_t)n * sizeof(int), name) ||
      !emu_lib_check_device(info, (size_t)batch * sizeof(int), name))
    return CUBLAS_STATUS_INVALID_VALUE;
  size_t bytes = ((size_t)(n - 1) * (size_t)lda + (size_t)n) * sizeof(T);
  emu_lib_enqueue(h->stream, name, [=] {
    for (int i = 0; i < batch; i++) {
      T *a = (T *)batch_ptr((const void *const *)A, i, bytes, name);
      int inf = 0;
      if constexpr (sizeof(T) == 8)
        dgetrf_(&n, &n, (double *)a, &lda, P + (size_t)i * (size_t)n, &inf);
      else
        sgetrf_(&n, &n, (float *)a, &lda, P + (size_t)i * (size_t)n, &inf);
      info[i] = inf;
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t getrs_batched(cublasHandle_t h, cublasOperation_t trans, int n, int nrhs,
                             const T *const A[], int lda, const int *piv, T *const B[], int ldb,
                             int *info, int batch, const char *name) {
  if (!alive(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!info) return CUBLAS_STATUS_INVALID_VALUE;
  int bad = trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C ? 2
            : n < 0                                                              ? 3
            : nrhs < 0                                                           ? 4
            : lda < (n > 1 ? n : 1)                                              ? 6
            : ldb < (n > 1 ? n : 1)                                              ? 9
            : batch < 0                                                          ? 11
                                                                                 : 0;
  *info = -bad;
  if (bad) return CUBLAS_STATUS_INVALID_VALUE;
  if (batch == 0 || n == 0 || nrhs == 0) return CUBLAS_STATUS_SUCCESS;
  if (!emu_lib_check_device(A, (size_t)batch * sizeof(T *), name) ||
      !emu_lib_check_device(B, (size_t)batch * sizeof(T *), name) ||
      !emu_lib_check_device(piv, (size_t)batch * (size_t)n * sizeof(int), name))
    return CUBLAS_STATUS_INVALID_VALUE;
  size_t abytes = ((size_t)(n - 1) * (size_t)lda + (size_t)n) * sizeof(T);
  size_t bbytes = ((size_t)(nrhs - 1) * (size_t)ldb + (size_t)n) * sizeof(T);
  char t = trans == CUBLAS_OP_N ? 'N' : 'T';
  emu_lib_enqueue(h->stream, name, [=] {
    for (int i = 0; i < batch; i++) {
      const T *a = (const T *)batch_ptr((const void *const *)A, i, abytes, name);
      T *b = (T *)batch_ptr((const void *const *)B, i, bbytes, name);
      const int *p = piv + (size_t)i * (size_t)n;
      int inf = 0;
      if constexpr (sizeof(T) == 8)
        dgetrs_(&t, &n, &nrhs, (const double *)a, &lda, p, (double *)b, &ldb, &inf, 1);
      else
        sgetrs_(&t, &n, &nrhs, (const float *)a, &lda, p, (float *)b, &ldb, &inf, 1);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasSgetrfBatched(cublasHandle_t handle, int n, float *const A[], int lda, int *P,
                                   int *info, int batchSize) {
  EMU_CALL();
  return getrf_batched(handle, n, A, lda, P, info, batchSize, "cublasSgetrfBatched");
}
cublasStatus_t cublasDgetrfBatched(cublasHandle_t handle, int n, double *const A[], int lda, int *P,
                                   int *info, int batchSize) {
  EMU_CALL();
  return getrf_batched(handle, n, A, lda, P, info, batchSize, "cublasDgetrfBatched");
}
cublasStatus_t cublasSgetrsBatched(cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                                   const float *const Aarray[], int lda, const int *devIpiv,
                                   float *const Barray[], int ldb, int *info, int batchSize) {
  EMU_CALL();
  return getrs_batched(handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize,
                       "cublasSgetrsBatched");
}
cublasStatus_t cublasDgetrsBatched(cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                                   const double *const Aarray[], int lda, const int *devIpiv,
                                   double *const Barray[], int ldb, int *info, int batchSize) {
  EMU_CALL();
  return getrs_batched(handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize,
                       "cublasDgetrsBatched");
}

}  // extern "C"
