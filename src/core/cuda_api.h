/* What the core asks of the CUDA runtime side. registry.c answers for builds
 * without CUDA (no devices); the CUDA backend answers otherwise. */
#ifndef CT_CORE_CUDA_API_H
#define CT_CORE_CUDA_API_H

#include "core/internal.h"

bool ct__cuda_compiled(void);
int ct__cuda_device_count(void);
/* dev is visible and has code in this build (compute capability 8.0+). */
bool ct__cuda_device_usable(int dev);
ct_status ct__cuda_set_device(int index);
int ct__cuda_current_device(void);
/* Threads of the CPU BLAS (OpenBLAS), kept equal to ctensor's. */
void ct__blas_set_num_threads(int n);

#endif /* CT_CORE_CUDA_API_H */
