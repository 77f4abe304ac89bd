/* The backend registry: the one place that knows which backends are built. */
#include "backend/backend.h"

#ifdef CT_USE_CUDA
extern const ct_backend ct__cuda_backend;
#endif

const ct_backend *ct__backend(ct_device_type type) {
  switch (type) {
  case CT_DEVICE_CPU:
    return &ct__cpu_backend;
#ifdef CT_USE_CUDA
  case CT_DEVICE_CUDA:
    return &ct__cuda_backend;
#endif
  default:
    return NULL;
  }
}

#ifndef CT_USE_CUDA
/* A build without CUDA sees no GPU; every request for one is refused with
 * CT_ERR_UNAVAILABLE by the callers of these. */
#include "core/cuda_api.h"
bool ct__cuda_compiled(void) { return false; }
int ct__cuda_device_count(void) { return 0; }
bool ct__cuda_device_usable(int dev) {
  (void)dev;
  return false;
}
ct_status ct__cuda_set_device(int index) {
  return ct__fail_status(CT_ERR_UNAVAILABLE, "cuda_set_device(%d): this build has no CUDA support",
                         index);
}
int ct__cuda_current_device(void) { return 0; }
/* Nothing to switch without cuBLAS. */
void ct_cuda_set_allow_tf32(bool allow) { (void)allow; }
#endif
