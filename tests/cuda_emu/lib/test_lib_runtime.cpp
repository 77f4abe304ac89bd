/* The emulated GPU's runtime (lib_runtime.cpp) does what the [cuda_emulated]
 * tests rely on: without these properties they could pass vacuously.
 * - queued work does not run before the host waits for it;
 * - a copy from pageable memory is staged at the call, one into pageable
 *   memory is done when the call returns;
 * - cudaStreamWaitEvent and the legacy default stream order streams;
 * - host code that dereferences device memory crashes;
 * - an event query that answers "not ready" leaves cudaErrorNotReady as the
 *   thread's last error, as the real runtime does (a caller must clear it). */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

static int failures = 0;
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                     \
    }                                                                 \
  } while (0)

static void queued_work_waits_for_the_host(void) {
  cudaStream_t s;
  EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  unsigned char *d = nullptr, *h = nullptr;
  EXPECT(cudaMalloc((void **)&d, 64) == cudaSuccess);
  EXPECT(cudaHostAlloc((void **)&h, 64, cudaHostAllocPortable) == cudaSuccess);
  memset(h, 0, 64);
  EXPECT(cudaMemsetAsync(d, 7, 64, s) == cudaSuccess);
  EXPECT(cudaMemcpyAsync(h, d, 64, cudaMemcpyDeviceToHost, s) == cudaSuccess); /* pinned: queued */
  EXPECT(h[0] == 0 && h[63] == 0);
  cudaEvent_t e;
  EXPECT(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess);
  EXPECT(cudaStreamSynchronize(s) == cudaSuccess);
  EXPECT(h[0] == 7 && h[63] == 7);
  EXPECT(cudaEventQuery(e) == cudaSuccess);

  /* pageable source: staged, so changing it after the call changes nothing */
  unsigned char src[64], back[64];
  memset(src, 3, sizeof src);
  EXPECT(cudaMemcpyAsync(d, src, 64, cudaMemcpyHostToDevice, s) == cudaSuccess);
  memset(src, 4, sizeof src);
  /* pageable destination: done when the call returns */
  EXPECT(cudaMemcpyAsync(back, d, 64, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  EXPECT(back[0] == 3 && back[63] == 3);
  EXPECT(cudaEventDestroy(e) == cudaSuccess);
  EXPECT(cudaStreamDestroy(s) == cudaSuccess);
  EXPECT(cudaFreeHost(h) == cudaSuccess);
  EXPECT(cudaFree(d) == cudaSuccess);
}

static void events_and_the_default_stream_order_streams(void) {
  cudaStream_t a, b;
  EXPECT(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  EXPECT(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  unsigned char *x = nullptr, *y = nullptr, *h = nullptr;
  EXPECT(cudaMalloc((void **)&x, 4096) == cudaSuccess);
  EXPECT(cudaMalloc((void **)&y, 4096) == cudaSuccess);
  EXPECT(cudaHostAlloc((void **)&h, 4096, 0) == cudaSuccess);
  for (int round = 0; round < 50; round++) { /* the streams' order is random: try many */
    cudaEvent_t e;
    EXPECT(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
    EXPECT(cudaMemsetAsync(x, round, 4096, a) == cudaSuccess);
    EXPECT(cudaEventRecord(e, a) == cudaSuccess);
    EXPECT(cudaStreamWaitEvent(b, e, 0) == cudaSuccess);
    EXPECT(cudaMemcpyAsync(y, x, 4096, cudaMemcpyDeviceToDevice, b) == cudaSuccess);
    EXPECT(cudaEventDestroy(e) == cudaSuccess); /* queued waits keep it */
    /* the legacy default stream waits for nothing here (non-blocking
     * streams), so order it after b by hand again */
    cudaEvent_t f;
    EXPECT(cudaEventCreateWithFlags(&f, cudaEventDisableTiming) == cudaSuccess);
    EXPECT(cudaEventRecord(f, b) == cudaSuccess);
    EXPECT(cudaStreamWaitEvent(0, f, 0) == cudaSuccess);
    EXPECT(cudaMemcpyAsync(h, y, 4096, cudaMemcpyDeviceToHost, 0) == cudaSuccess);
    EXPECT(cudaStreamSynchronize(0) == cudaSuccess);
    EXPECT(h[0] == round && h[4095] == round);
    EXPECT(cudaEventDestroy(f) == cudaSuccess);
  }
  /* a blocking stream and the legacy default stream order each other */
  cudaStream_t blocking;
  EXPECT(cudaStreamCreateWithFlags(&blocking, cudaStreamDefault) == cudaSuccess);
  EXPECT(cudaMemsetAsync(x, 9, 4096, blocking) == cudaSuccess);
  EXPECT(cudaMemcpyAsync(h, x, 4096, cudaMemcpyDeviceToHost, 0) == cudaSuccess);
  EXPECT(cudaStreamSynchronize(0) == cudaSuccess);
  EXPECT(h[0] == 9);
  EXPECT(cudaStreamDestroy(blocking) == cudaSuccess);
  EXPECT(cudaStreamDestroy(a) == cudaSuccess);
  EXPECT(cudaStreamDestroy(b) == cudaSuccess);
  EXPECT(cudaFree(x) == cudaSuccess);
  EXPECT(cudaFree(y) == cudaSuccess);
  EXPECT(cudaFreeHost(h) == cudaSuccess);
}

static void host_access_to_device_memory_crashes(void) {
  unsigned char *d = nullptr;
  EXPECT(cudaMalloc((void **)&d, 64) == cudaSuccess);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    volatile unsigned char v = d[0];
    (void)v;
    _exit(0); /* reached only if the read did not fault */
  }
  int status = 0;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
  EXPECT(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0));
  EXPECT(cudaFree(d) == cudaSuccess);
}

static void out_of_memory_is_an_error(void) {
  void *p = nullptr;
  size_t free_b = 0, total = 0;
  EXPECT(cudaMemGetInfo(&free_b, &total) == cudaSuccess);
  EXPECT(cudaMalloc(&p, total + 1) == cudaErrorMemoryAllocation && p == nullptr);
  EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation);
  EXPECT(cudaGetLastError() == cudaSuccess);
}

static void not_ready_is_the_last_error(void) {
  cudaStream_t s;
  EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  unsigned char *d = nullptr;
  EXPECT(cudaMalloc((void **)&d, 64) == cudaSuccess);
  for (int i = 0; i < 16; i++) EXPECT(cudaMemsetAsync(d, i, 64, s) == cudaSuccess);
  cudaEvent_t e;
  EXPECT(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess);
  EXPECT(cudaGetLastError() == cudaSuccess);
  EXPECT(cudaEventQuery(e) == cudaErrorNotReady); /* at most 3 of the 17 items ran */
  EXPECT(cudaGetLastError() == cudaErrorNotReady);
  EXPECT(cudaGetLastError() == cudaSuccess);
  EXPECT(cudaEventSynchronize(e) == cudaSuccess);
  EXPECT(cudaEventQuery(e) == cudaSuccess);
  EXPECT(cudaGetLastError() == cudaSuccess);
  EXPECT(cudaEventDestroy(e) == cudaSuccess);
  EXPECT(cudaStreamDestroy(s) == cudaSuccess);
  EXPECT(cudaFree(d) == cudaSuccess);
}

int main(void) {
  int n = 0;
  EXPECT(cudaGetDeviceCount(&n) == cudaSuccess && n >= 1);
  queued_work_waits_for_the_host();
  events_and_the_default_stream_order_streams();
  host_access_to_device_memory_crashes();
  out_of_memory_is_an_error();
  not_ready_is_the_last_error();
  printf("emulated GPU runtime (a CPU emulation, not a GPU run): %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
