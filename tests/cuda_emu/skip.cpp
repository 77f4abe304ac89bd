/* Stands in for the emulated CUDA kernel test where it cannot be built
 * (CMakeLists.txt says why): skipped (exit 77, ctest's SKIP_RETURN_CODE)
 * when the toolchain lacks what it needs, failed when the sources it
 * compiles are gone. */
#include <stdio.h>

int main(void) {
  printf("cuda_kernels_emulated: %s: %s (the CPU emulation of the CUDA kernels)\n",
         CT_EMU_SKIP_CODE == 77 ? "skipped" : "FAILED", CT_EMU_SKIP_REASON);
  return CT_EMU_SKIP_CODE;
}
