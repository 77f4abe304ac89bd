/* Self-test of the CUDA emulator (README.md), translated by cu2cpp.py like
 * the backend's files: the warp primitives' results, and the errors the
 * emulator must find (deadlocks, partial warps, misaligned vectors, bad
 * launch configurations, order-dependent results, stale shared memory).
 * If these checks stopped working, the kernel suites could pass vacuously. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "emu_control.h"

__global__ void shuffles(int *out, int width) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, v = 100 * w + lane;
  int *o = out + threadIdx.x * 8;
  o[0] = __shfl_down_sync(0xffffffffu, v, 3, width);
  o[1] = __shfl_up_sync(0xffffffffu, v, 5, width);
  o[2] = __shfl_xor_sync(0xffffffffu, v, 9, width);
  o[3] = __shfl_sync(0xffffffffu, v, 7, width);
  o[4] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
  o[5] = __any_sync(0xffffffffu, lane == 17) + 2 * __all_sync(0xffffffffu, lane < 31);
  o[6] = __syncthreads_count(threadIdx.x % 4 == 0);
  o[7] = __syncthreads_or(threadIdx.x == 77) + 2 * __syncthreads_and(threadIdx.x < 1000);
}

__global__ void dims(int *out) {
  extern __shared__ int dyn[];
  __shared__ int total;
  if (threadIdx.x == 0 && threadIdx.y == 0) total = 0;
  dyn[threadIdx.y * blockDim.x + threadIdx.x] = (int)(threadIdx.y * 1000 + threadIdx.x);
  __syncthreads();
  atomicAdd(&total, 1);
  __syncthreads();
  int b = blockIdx.y * gridDim.x + blockIdx.x, t = threadIdx.y * blockDim.x + threadIdx.x;
  int n = blockDim.x * blockDim.y;
  out[b * n + t] = dyn[(t + 1) % n] + 1000000 * total;
}

__global__ void deadlock(int *out) {
  if (threadIdx.x < 40) __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void early_exit_shuffle(int *out) {
  if ((threadIdx.x & 31) == 5) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);
}
__global__ void partial_warp(int *out) { out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0); }
/* (UBSan would stop at the misaligned reference before the emulator sees it) */
__global__ void __attribute__((no_sanitize("alignment"))) misaligned(const char *p, uint4 *out) {
  out[threadIdx.x] = *reinterpret_cast<const uint4 *>(p + 4 + 16 * threadIdx.x);
}
/* Thread 0 publishes a value in shared memory; the others read it without
 * a barrier: right only when thread 0 happens to run first. */
__global__ void racy(int *out) {
  __shared__ int v;
  if (threadIdx.x == 0) v = 42;
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
/* Reads shared memory before any thread of the block wrote it. */
__global__ void stale(int *out) {
  __shared__ int s[64];
  out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
  s[threadIdx.x] = 7;
}

static int fails;
static void check(bool ok, const char *what) {
  if (!ok) {
    fails++;
    printf("FAIL emulator self-test: %s\n", what);
  }
}
/* The emulator found an error whose message contains `want`. */
static void expect_error(const char *want, const char *what) {
  char msg[512];
  long n = emu::take_errors(msg, sizeof msg);
  char line[700];
  snprintf(line, sizeof line, "%s: expected the error '%s', got %ld errors ('%s')", what, want, n,
           msg);
  check(n > 0 && strstr(msg, want) != nullptr, line);
  (void)cudaGetLastError();
}

int run_emulator_selftest(void) {
  static int out[1024 * 8];
  for (int width : {32, 16, 8}) {
    memset(out, 0, sizeof out);
    shuffles<<<2, 128>>>(out, width);
    check(cudaGetLastError() == cudaSuccess && emu::take_errors(nullptr, 0) == 0, "shuffles ran");
    bool ok = true;
    for (int t = 0; t < 128; t++) {
      int lane = t & 31, w = t >> 5, base = lane & ~(width - 1), v = 100 * w;
      const int *o = out + t * 8;
      ok = ok && o[0] == v + (lane - base + 3 < width ? lane + 3 : lane);
      ok = ok && o[1] == v + (lane - base >= 5 ? lane - 5 : lane);
      int x = lane ^ 9;
      ok = ok && o[2] == v + ((x & ~(width - 1)) <= base ? x : lane);
      ok = ok && o[3] == v + base + 7 % width;
      ok = ok && (unsigned)o[4] == 0x49249249u && o[5] == 1 && o[6] == 32 && o[7] == 3;
    }
    char what[64];
    snprintf(what, sizeof what, "shuffle, vote and barrier results, width %d", width);
    check(ok, what);
  }
  /* 2-d grid and block, dynamic shared memory, atomics */
  memset(out, 0, sizeof out);
  dims<<<dim3(3, 2), dim3(16, 4), 64 * sizeof(int)>>>(out);
  bool ok = emu::take_errors(nullptr, 0) == 0;
  for (int b = 0; b < 6; b++)
    for (int t = 0; t < 64; t++) {
      int u = (t + 1) % 64;
      ok = ok && out[b * 64 + t] == (u / 16) * 1000 + u % 16 + 64000000;
    }
  check(ok, "2-d grid and block, dynamic shared memory, atomicAdd");
  /* the errors it must find */
  deadlock<<<1, 64>>>(out);
  expect_error("deadlock", "__syncthreads skipped by some threads");
  early_exit_shuffle<<<1, 64>>>(out);
  expect_error("deadlock", "a lane exits before a full-mask shuffle");
  partial_warp<<<1, 48>>>(out);
  expect_error("partial warp", "a full-mask shuffle in a 48-thread block");
  static uint4 vbuf[64], vout[8];
  misaligned<<<1, 8>>>((const char *)vbuf, vout);
  expect_error("misaligned", "a 16-byte load 4 bytes off");
  deadlock<<<1, 2048>>>(out);
  expect_error("invalid launch configuration", "2048 threads per block");
  check(cudaGetLastError() == cudaSuccess, "cudaGetLastError is cleared by its read");
  deadlock<<<0, 32>>>(out);
  expect_error("invalid launch configuration", "an empty grid");
  /* order dependence shows up in some launch: thread orders change per launch */
  int wrong = 0;
  for (int rep = 0; rep < 12; rep++) {
    memset(out, 0, sizeof out);
    racy<<<2, 32>>>(out);
    for (int i = 0; i < 64; i++) wrong += out[i] != 42;
  }
  check(wrong > 0, "a read of another thread's write without a barrier goes wrong in some launch");
  (void)emu::take_errors(nullptr, 0);
  memset(out, 0, sizeof out);
  stale<<<3, 64>>>(out);
  ok = true;
  for (int i = 64; i < 192; i++) ok = ok && out[i] != 7;
  check(ok, "shared memory is garbage again when the next block starts");
  emu::reset_coverage();
  printf("== emulator self-test: %s (CPU emulation, not a GPU run)\n", fails ? "FAILED" : "passed");
  return fails != 0;
}
