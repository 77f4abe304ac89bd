/* The runtime of the kernel tests (emu_test.cpp): the runtime API on host
 * memory with launches run at once, and host stand-ins for what device.cu,
 * allocator.cu and the rest of the library give the kernels' files (the
 * device and stream of the calling thread, device scratch with guard bytes,
 * error recording, the op tables). The whole library on an emulated GPU uses
 * lib/lib_runtime.cpp instead. */
#include <stdarg.h>

#include "backend/cuda/common.cuh"
#include "emu_control.h"
#include "emu_core.h"

namespace emu {
static char message[1024];
static ct_status message_code = CT_OK;
static long nscratch;
const char *last_message(void) { return message; }
void clear_message(void) {
  message[0] = 0;
  message_code = CT_OK;
}
long scratch_live(void) { return nscratch; }

void launch(const char *name, const emu_cfg &c, std::function<void()> body) {
  if (config_ok(name, c)) run_grid(name, c, body);
}
}  // namespace emu

/* ---- The runtime API on host memory -----------------------------------------------------------
 */
cudaError_t cudaGetLastError(void) {
  cudaError_t e = emu::last_error;
  emu::last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return emu::last_error; }
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind, cudaStream_t) {
  if (n && ((char *)dst < (const char *)src + n && (const char *)src < (char *)dst + n)) {
    emu::kernel_name = "cudaMemcpyAsync";
    emu::cur = nullptr;
    emu::fail("overlapping source and destination (%zu bytes)", n);
  }
  memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t) {
  memset(dst, value, n);
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) {
  *p = ct__cuda_alloc(0, n, false);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p) {
  if (p) ct__cuda_free(0, p, 0, false);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned) {
  *p = aligned_alloc(64, (n + 63) / 64 * 64);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void *p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaPeekAtLastError(); }
cudaError_t cudaDeviceSynchronize(void) { return cudaPeekAtLastError(); }
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, n, kind, 0);
}
cudaError_t cudaHostGetDevicePointer(void **dp, void *p, unsigned) {
  *dp = p; /* unified addressing */
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }

/* ---- What device.cu gives the kernels' files (but ctc_ew_init, extracted from it) -------------
 */
ct_status ctc_use_device(const char *op, int dev) {
  if (dev < 0 || dev >= 64)
    return ct__fail_status(CT_ERR_DEVICE, "%s: no device cuda:%d (emulated)", op, dev);
  return CT_OK;
}
cudaStream_t ctc_stream(int) { return nullptr; }
bool ctc_launch_blocking(void) { return emu::launch_blocking; }
ct_status ctc_cuda_fail(const char *op, const char *call, cudaError_t e, int dev, const char *file,
                        int line) {
  return ct__fail_status(e == cudaErrorMemoryAllocation ? CT_ERR_OOM : CT_ERR_CUDA,
                         "%s: %s failed on cuda:%d: %s (%s:%d)", op, call, dev,
                         cudaGetErrorString(e), file, line);
}
int ctc_sm_count(int) { return emu::sm_count; }

/* ---- The allocator: garbage-filled blocks with guard bytes ---------------------------------- */
#define EMU_GUARD 256 /* keeps the caching allocator's 256-byte alignment */
struct scratch_head {
  size_t n;
  uint64_t magic;
};
extern "C" void *ct__cuda_alloc(int, size_t n, bool pinned) {
  size_t total = EMU_GUARD + (n + EMU_GUARD - 1) / EMU_GUARD * EMU_GUARD + EMU_GUARD;
  unsigned char *m = (unsigned char *)aligned_alloc(EMU_GUARD, total);
  if (!m) return nullptr;
  memset(m, 0x5c, total);
  unsigned char *p = m + EMU_GUARD;
  /* garbage: nan as doubles and floats, -1 as integers... */
  memset(p, pinned ? 0 : 0xff, n);
  scratch_head h = {n, 0xc0ffee5c7a7c4ull};
  memcpy(m, &h, sizeof h);
  emu::poison(m, EMU_GUARD);
  emu::poison(p + n, total - EMU_GUARD - n);
  emu::nscratch++;
  return p;
}
extern "C" void ct__cuda_free(int, void *ptr, size_t, bool) {
  if (!ptr) return;
  unsigned char *p = (unsigned char *)ptr, *m = p - EMU_GUARD;
  emu::unpoison(m, EMU_GUARD);
  scratch_head h;
  memcpy(&h, m, sizeof h);
  if (h.magic != 0xc0ffee5c7a7c4ull) {
    emu::kernel_name = "ct__cuda_free";
    emu::cur = nullptr;
    emu::fail("not a block of ct__cuda_alloc, or its head was overwritten");
    return;
  }
  size_t total = EMU_GUARD + (h.n + EMU_GUARD - 1) / EMU_GUARD * EMU_GUARD + EMU_GUARD;
  emu::unpoison(p + h.n, total - EMU_GUARD - h.n);
  bool ok = true;
  for (size_t i = sizeof h; i < EMU_GUARD; i++) ok = ok && m[i] == 0x5c;
  for (size_t i = EMU_GUARD + h.n; i < total; i++) ok = ok && m[i] == 0x5c;
  if (!ok) {
    emu::kernel_name = "device scratch";
    emu::cur = nullptr;
    emu::fail("a kernel wrote outside its %zu-byte scratch block", h.n);
  }
  emu::nscratch--;
  free(m);
}

/* Host memory here is plain aligned_alloc (cudaHostAlloc above): no pinned
 * cache to tell about a non-blocking copy's use of it. */
extern "C" void ct__cuda_pinned_in_use(int, const void *) {}

/* ---- The library's error recording, settings and op tables ------------------------------------
 */
/* The scatter and index_put entry points take the sort-based paths of
 * deterministic.cu under this setting; the kernel tests drive the default
 * ones. */
extern "C" bool ct_are_deterministic_algorithms_enabled(void) { return false; }
extern "C" ct_status ct__fail_status(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(emu::message, sizeof emu::message, fmt, ap);
  va_end(ap);
  emu::message_code = code;
  return code;
}
extern "C" ct_status ct_last_error(void) {
  return emu::message_code != CT_OK ? emu::message_code : CT_ERR_INTERNAL;
}
extern "C" const char *ct_dtype_name(ct_dtype dt) {
  static const char *const names[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                      "uint8",   "int16",   "int32",   "int64",    "bool"};
  return (unsigned)dt < CT_DTYPE_COUNT ? names[dt] : "?";
}
/* ct__data (core/internal.h), by which the entry points find a tensor's first element */
extern "C" size_t ct_dtype_size(ct_dtype dt) {
  static const size_t sizes[] = {4, 8, 2, 2, 1, 1, 2, 4, 8, 1};
  return (unsigned)dt < CT_DTYPE_COUNT ? sizes[dt] : 0;
}
extern "C" {
const ct_unary_info ct__unary_info[CT_UOP_COUNT] = {
#define X(E, n, r, ...) {#n, CT_RULE_##r},
    CT_UNARY_OPS(X)
#undef X
};
const ct_binary_info ct__binary_info[CT_BOP_COUNT] = {
#define X(E, n, r, ...) {#n, CT_BRULE_##r},
    CT_BINARY_OPS(X)
#undef X
};
const char *const ct__reduce_names[CT_ROP_COUNT] = {
#define X(E, n) #n,
    CT_REDUCE_OPS(X)
#undef X
};
}
