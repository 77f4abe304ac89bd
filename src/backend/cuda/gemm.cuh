/* One strided batched GEMM for the backend's ops beyond matmul (defined in
 * matmul.cu, which owns the cuBLAS handles, their workspace and math mode).
 * Column-major as cuBLAS: c = alpha op(a) op(b) + beta c for `batch`
 * problems, op(a) (m, k), op(b) (k, n), c (m, n), with leading dims ld* and
 * problem strides s* in elements. a and b have dtype ab_dtype (a floating
 * dtype); c has that dtype or f32 (f16/bf16 operands: f32 accumulate either
 * way). f32 follows ct_cuda_set_allow_tf32, as matmul. */
#ifndef CT_CUDA_GEMM_CUH
#define CT_CUDA_GEMM_CUH

#include "backend/cuda/common.cuh"

struct ctc_gemm {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc, sa, sb, sc, batch;
  const void *a, *b;
  void *c;
  int ab_dtype, c_dtype;
  double alpha, beta;
};
ct_status ct__cuda_gemm(const char *op, int dev, const ctc_gemm *g);

#endif /* CT_CUDA_GEMM_CUH */
