/* The emulator's core (emu_runtime.cpp: fibers, barriers, grids) as its two
 * runtimes see it: emu_standalone.cpp for the kernel tests and
 * lib/lib_runtime.cpp for the whole library. */
#ifndef CT_EMU_CORE_H
#define CT_EMU_CORE_H

#include <cuda_runtime.h>

namespace emu {
/* The runtime's last error (cudaGetLastError); the core sets it on a fault. */
extern cudaError_t last_error;
/* The kernel (or runtime call) that errors are reported in. */
extern const char *kernel_name;
}  // namespace emu

#endif
