/* The versions of the libraries the CUDA backend runs on, for
 * ct_backend_get_info and `ctensor info`: the ones loaded at run time, which
 * may be newer than the headers the backend was built with. None of these
 * calls creates a CUDA context. */
#include <cublas_v2.h>
#include <cudnn.h>
#include <stdio.h>

#include "backend/cuda/common.cuh"

extern "C" void ct__cuda_library_versions(char *buf, size_t size) {
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) {
    (void)cudaGetLastError();
    rt = 0;
  }
  int bv[3] = {0, 0, 0}, dv[3] = {0, 0, 0};
  const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; i++) {
    if (cublasGetProperty(parts[i], &bv[i]) != CUBLAS_STATUS_SUCCESS) bv[i] = 0;
    if (cudnnGetProperty(parts[i], &dv[i]) != CUDNN_STATUS_SUCCESS) dv[i] = 0;
  }
  snprintf(buf, size, "CUDA runtime %d.%d, cuBLAS %d.%d.%d, cuDNN %d.%d.%d", rt / 1000,
           rt % 1000 / 10, bv[0], bv[1], bv[2], dv[0], dv[1], dv[2]);
}
