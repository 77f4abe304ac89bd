/* Host stand-in for CUB's device-wide scans (tests/cuda_emu/README.md): a
 * sequential scan by one emulated thread, launched on the stream (so that it
 * runs in stream order on the emulated GPU), not CUB's kernels. The first
 * call (no temporary storage) asks for the temporary bytes, as CUB's. */
#ifndef CT_EMU_CUB_DEVICE_SCAN_CUH
#define CT_EMU_CUB_DEVICE_SCAN_CUH
#include <cuda_runtime.h>

namespace cub {
struct DeviceScan {
  template <class In, class Out, class N>
  static cudaError_t ExclusiveSum(void *tmp, size_t &bytes, In in, Out out, N n, cudaStream_t s = 0,
                                  bool = false) {
    if (!tmp) {
      bytes = 256;
      return cudaSuccess;
    }
    emu::launch("cub::DeviceScan::ExclusiveSum", emu_cfg(1, 1, 0, s), [in, out, n] {
      typename std::decay<decltype(*out)>::type acc = 0;
      for (N i = 0; i < n; i++) {
        auto v = in[i]; /* in and out may be the same array */
        out[i] = acc;
        acc = acc + v;
      }
    });
    return cudaPeekAtLastError();
  }
  template <class In, class Out, class N>
  static cudaError_t InclusiveSum(void *tmp, size_t &bytes, In in, Out out, N n, cudaStream_t s = 0,
                                  bool = false) {
    if (!tmp) {
      bytes = 256;
      return cudaSuccess;
    }
    emu::launch("cub::DeviceScan::InclusiveSum", emu_cfg(1, 1, 0, s), [in, out, n] {
      typename std::decay<decltype(*out)>::type acc = 0;
      for (N i = 0; i < n; i++) out[i] = acc = acc + in[i];
    });
    return cudaPeekAtLastError();
  }
};
}  // namespace cub
#endif
