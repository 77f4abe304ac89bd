/* The seam between the host stand-ins of cuBLAS and cuDNN (cublas_emu.cpp,
 * cudnn_emu.cpp: tests/cuda_emu/lib) and the emulated CUDA runtime.
 *
 * The stand-ins compute on the host, so a host pointer handed to them would
 * "work" here and fault on a GPU: every data pointer they touch (gemm's A, B,
 * C and workspace; the convolutions' x, w, y and workspace) goes through
 * emu_lib_check_device first, with the extent the call touches, and a false
 * answer makes the call fail (CUBLAS_STATUS_INVALID_VALUE,
 * CUDNN_STATUS_BAD_PARAM). Like the real libraries, a call that passes its
 * checks only queues its computation on the handle's stream
 * (emu_lib_enqueue): device memory is touched there, never by the call
 * itself. The runtime implements both; a standalone test (test_shims.cpp)
 * brings its own. */
#ifndef CT_EMU_LIB_H
#define CT_EMU_LIB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#else
#include <stdbool.h>
#endif

/* true when [p, p+bytes) lies in emulated device memory or mapped pinned host
 * memory; otherwise records a failure naming `what`. */
bool emu_lib_check_device(const void *p, size_t bytes, const char *what);

/* Whether (visible) device dev has a context: cudaSetDevice made it current,
 * or a call that needs one (allocation, stream, event, copy, launch) ran
 * while it was current. */
bool emu_lib_has_context(int dev);

/* The size cudaMalloc was asked for, of the device block that starts at p;
 * 0 if none does. */
size_t emu_lib_device_block_size(const void *p);

/* The cuDNN algorithm (a cudnnConvolution*Algo_t value) of the last
 * cudnnConvolutionForward (kind 0), cudnnConvolutionBackwardData (kind 1) or
 * cudnnConvolutionBackwardFilter (kind 2) on this thread that succeeded
 * (queued its work); -1 before any. Lets a test see which candidate a caller
 * settled on. */
int emu_cudnn_last_algo(int kind);

#ifdef __cplusplus
}

#include <functional>

typedef struct CUstream_st *cudaStream_t; /* as the runtime shim's */

/* Queues fn, the computation of a library call named `name`, on `stream`
 * (nullptr: the legacy default stream of the current device); it runs in
 * stream order, when the runtime runs the stream's work. fn captures by
 * value everything it needs: once the call returns, the caller may destroy
 * its descriptors and reuse its alpha/beta variables. */
void emu_lib_enqueue(cudaStream_t stream, const char *name, std::function<void()> fn);
#endif

#endif /* CT_EMU_LIB_H */
