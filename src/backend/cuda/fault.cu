/* Faults: errors a kernel finds in the data (an index out of range, an
 * integer division by zero), reported by the next synchronization with the
 * device instead of a synchronization at every launch.
 *
 * Checking on the host before a launch would need the indices on the host:
 * a device-to-host copy and a wait on every gather, scatter and index_select,
 * twice per training step in cross-entropy alone, and the host could no longer
 * run ahead of the GPU. PyTorch traps such errors with a device-side assert,
 * which leaves the CUDA context unusable. Here the kernel skips the bad
 * element and writes a record into a page of pinned host memory mapped into
 * the device's address space (one per device); whatever next waits for the
 * device (ct_synchronize, a stream or event synchronize, a blocking copy, so
 * ct_item and ct_to(cpu) too) reads it, clears it and fails with CT_ERR_ARG
 * naming the op and the value. The process, the context and every other
 * tensor stay intact; the faulting op's output is unspecified.
 *
 * The first fault since the last report wins (atomicCAS on the flag): the
 * value named is one of the bad ones, not always the first in row-major
 * order as on the CPU. The record is per device, so a synchronization on one
 * stream may report a fault of work queued on another stream of that device.
 * With CT_LAUNCH_BLOCKING=1 every launch synchronizes and reports its own
 * fault at once (CT_CUDA_LAUNCH_CHECK). */
#include <pthread.h>

#include "backend/cuda/common.cuh"

#define CTC_FAULT_DEVS 64 /* device.cu's CTC_MAX_DEV */

static ctc_fault *records[CTC_FAULT_DEVS]; /* host addresses; mapped, same on the device (UVA) */
static pthread_mutex_t records_mu = PTHREAD_MUTEX_INITIALIZER;

ctc_fault *ctc_fault_record(const char *op, int dev) {
  if (dev < 0 || dev >= CTC_FAULT_DEVS) {
    ct__fail_status(CT_ERR_UNAVAILABLE, "%s: cuda:%d is beyond the %d devices ctensor supports", op, dev,
                    CTC_FAULT_DEVS);
    return nullptr;
  }
  pthread_mutex_lock(&records_mu);
  ctc_fault *r = records[dev];
  if (!r) {
    void *p = nullptr, *dp = nullptr;
    cudaError_t e = cudaHostAlloc(&p, sizeof(ctc_fault), cudaHostAllocMapped | cudaHostAllocPortable);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(&dp, p, 0);
    if (e == cudaSuccess && dp != p) e = cudaErrorNotSupported; /* needs unified addressing */
    if (e != cudaSuccess) {
      if (p) cudaFreeHost(p);
      (void)cudaGetLastError();
      pthread_mutex_unlock(&records_mu);
      ctc_cuda_fail(op, "cudaHostAlloc (fault record)", e, dev, __FILE__, __LINE__);
      return nullptr;
    }
    memset(p, 0, sizeof(ctc_fault));
    r = (ctc_fault *)p;
    __atomic_store_n(&records[dev], r, __ATOMIC_RELEASE); /* read unlocked by ctc_fault_check */
  }
  pthread_mutex_unlock(&records_mu);
  return r;
}

ct_status ctc_fault_check(int dev) {
  if (dev < 0 || dev >= CTC_FAULT_DEVS) return CT_OK;
  /* every ct_item passes here: no lock unless there is a fault to report */
  ctc_fault *seen = __atomic_load_n(&records[dev], __ATOMIC_ACQUIRE);
  if (!seen || __atomic_load_n(&seen->flag, __ATOMIC_ACQUIRE) != 2) return CT_OK;
  pthread_mutex_lock(&records_mu);
  volatile ctc_fault *r = records[dev];
  ctc_fault f = {};
  /* The record is per device, so a kernel on a stream this synchronization
   * did not wait for may be raising a fault right now: flag 1 means its
   * fields are being written (common.cuh, ctc_fault_raise); leave it to the
   * next check rather than report or wipe half a record. */
  if (r && r->flag == 2) {
    f.flag = r->flag;
    f.kind = r->kind;
    f.dim = r->dim;
    f.value = r->value;
    f.size = r->size;
    f.op = r->op;
    /* Fields first, the flag last (a release store, so they are visible
     * before it): a kernel that wins the flag afterwards writes its fields
     * after our zeros, never before them. */
    r->kind = 0;
    r->dim = 0;
    r->value = 0;
    r->size = 0;
    r->op = nullptr;
    __atomic_store_n(&r->flag, 0, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&records_mu);
  if (!f.flag) return CT_OK;
  const char *op = f.op ? f.op : "a kernel";
  switch (f.kind) {
  case CTC_FAULT_INDEX:
    return ct__fail_status(CT_ERR_ARG,
                           "%s: index %lld is out of bounds for dim %d with size %lld (found on cuda:%d "
                           "by the kernel, reported at this synchronization)",
                           op, f.value, f.dim, f.size, dev);
  case CTC_FAULT_NEG_POW:
    return ct__fail_status(CT_ERR_ARG,
                           "%s: integers to negative integer powers are not allowed (found on cuda:%d by "
                           "the kernel, reported at this synchronization)",
                           op, dev);
  default:
    return ct__fail_status(CT_ERR_ARG,
                           "%s: integer division by zero (found on cuda:%d by the kernel, reported at "
                           "this synchronization)",
                           op, dev);
  }
}
