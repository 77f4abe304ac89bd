/* Call counts of the emulated GPU: how many times the library called each
 * function of the emulated CUDA runtime (lib_runtime.cpp), cuBLAS
 * (cublas_emu.cpp) and cuDNN (cudnn_emu.cpp), how many kernels it launched
 * ("kernel launch"; per kernel "kernel launch: NAME") and how many times it took a mutex in the
 * backend's .cu files ("pthread_mutex_lock (allocator.cu)", ...: emu_lock_count.h).
 *
 * What a GPU run cannot show cheaply and the emulator can count exactly: the
 * host-side work per op and per training step. Counts are process-wide
 * (every thread), since the last emu_calls_reset():
 *
 *   emu_calls_reset();
 *   ct_free(ct_add(a, b));
 *   long launches = emu_calls("kernel launch");
 *   long get_device = emu_calls("cudaGetDevice");
 *
 * Declared for C and C++ (the tests that read them are C programs). */
#ifndef CT_EMU_CALLS_H
#define CT_EMU_CALLS_H

#include <stdio.h>

#ifdef __cplusplus
#include <atomic>
extern "C" {
#endif

/* Calls of `name` (a function name as written in C, or "kernel launch")
 * since the last reset; 0 for a name never called. */
long emu_calls(const char *name);
/* Calls of every name that starts with `prefix` ("cudnn", "cublas", "cuda"). */
long emu_calls_prefixed(const char *prefix);
/* Counts a launch of the kernel `name` (as cu2cpp.py names it) under
 * "kernel launch: NAME", template arguments dropped: which kernels an op ran,
 * e.g. emu_calls("kernel launch: topk_kernel"). */
void emu_calls_kernel(const char *name);
/* Sets every count to 0. */
void emu_calls_reset(void);
/* Writes "  name: count" lines, sorted by name, of the nonzero counts, each
 * divided by `per` (the number of repetitions counted). */
void emu_calls_print(FILE *f, int per);

#ifdef __cplusplus
}

namespace emu_count {
/* One counter per counted function, registered at its first call. */
struct counter {
  const char *name;
  std::atomic<long> n{0};
  counter *next = nullptr;
  explicit counter(const char *fn);
  void hit() { n.fetch_add(1, std::memory_order_relaxed); }
};
}  // namespace emu_count

/* The first statement of a counted function. */
#define EMU_CALL_NAMED(name)                         \
  static emu_count::counter emu_call_counter_(name); \
  emu_call_counter_.hit()
#define EMU_CALL() EMU_CALL_NAMED(__func__)
#endif

#endif /* CT_EMU_CALLS_H */
