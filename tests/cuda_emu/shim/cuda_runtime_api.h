/* The CUDA runtime API of the EMULATED GPU: types, constants and functions,
 * declared for C and C++ alike (with C linkage, as the real runtime's), so
 * that C programs calling the runtime directly (bench/bench_gpu.c's raw
 * baselines) run on the emulator too. The emulated kernels' side (built-ins,
 * vector types, launches) is in cuda_runtime.h, which includes this file.
 * Definitions: emu_standalone.cpp (kernel tests: host memory, immediate
 * execution) or lib/lib_runtime.cpp (the whole library: queued streams,
 * protected device memory). Only what ctensor and its benchmarks use. */
#ifndef CT_EMU_CUDA_RUNTIME_API_H
#define CT_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
#define CT_EMU_DEFAULT(v) = v
extern "C" {
#else
#define CT_EMU_DEFAULT(v)
#endif

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
typedef enum cudaMemcpyKind cudaMemcpyKind;
#define cudaHostAllocDefault 0
#define cudaHostAllocPortable 1
#define cudaHostAllocMapped 2
#define cudaHostAllocWriteCombined 4
#define cudaStreamDefault 0
#define cudaStreamNonBlocking 1
#define cudaEventDefault 0
#define cudaEventBlockingSync 1
#define cudaEventDisableTiming 2

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76
};
typedef enum cudaDeviceAttr cudaDeviceAttr;
typedef struct CUuuid_st {
  char bytes[16];
} cudaUUID_t;
/* The fields of the real struct that the backend and the benchmarks read. */
struct cudaDeviceProp {
  char name[256];
  cudaUUID_t uuid;
  size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
  int major, minor, multiProcessorCount, maxThreadsPerMultiProcessor, maxThreadsPerBlock, warpSize;
  int l2CacheSize, memoryBusWidth, pciDomainID, pciBusID, pciDeviceID, integrated, ECCEnabled;
};
typedef struct cudaDeviceProp cudaDeviceProp;

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags CT_EMU_DEFAULT(0));
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
static inline cudaError_t cudaEventCreate(cudaEvent_t *e) {
  return cudaEventCreateWithFlags(e, cudaEventDefault);
}
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s CT_EMU_DEFAULT(0));
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t s CT_EMU_DEFAULT(0));
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s CT_EMU_DEFAULT(0));
/* On the legacy default stream, asynchronous to the host as the real one is. */
static inline cudaError_t cudaMemset(void *dst, int value, size_t n) {
  return cudaMemsetAsync(dst, value, n, 0);
}
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags);
static inline cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, 0); }
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostGetDevicePointer(void **dp, void *p, unsigned flags);

#ifdef __cplusplus
}
#endif
#undef CT_EMU_DEFAULT

#endif /* CT_EMU_CUDA_RUNTIME_API_H */
