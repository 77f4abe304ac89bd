/* CUDA devices, streams and events, and the helpers of common.cuh.
 *
 * Streams: each device's default stream is the legacy default stream (stream
 * 0), as PyTorch's; it orders itself with every other blocking stream of the
 * device. ct_stream_new creates non-blocking streams (cudaStreamNonBlocking,
 * as torch.cuda.Stream), so work on them overlaps the default stream unless
 * ordered with events. The current stream is per thread and per device
 * (thread-local), set by ct_stream_set_current.
 *
 * Devices: the user's current device (ct_cuda_set_device) is a thread-local
 * value; ops run on their tensors' device, switching the runtime's device
 * with cudaSetDevice when it differs, and never change the user's current
 * device. Every entry checks its device index first, so that without a driver
 * or a GPU a request fails with CT_ERR_UNAVAILABLE before any CUDA call. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"

#define CTC_MAX_DEV 64 /* also allocator.cu's */

/* ---- Device count ------------------------------------------------------------ */

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count = 0;
static cudaError_t count_error = cudaSuccess; /* why there are none, if so */
static int sm_counts[CTC_MAX_DEV];
static int capabilities[CTC_MAX_DEV]; /* 10 * major + minor */

/* The architectures this build has code for (CMAKE_CUDA_ARCHITECTURES, via
 * the generated ct_cuda_archs.h; the emulator's build has the default): a GPU
 * that none of them runs would fail every launch with "no kernel image", so it
 * is reported unusable up front instead. */
#if __has_include("ct_cuda_archs.h")
#include "ct_cuda_archs.h"
#else
#define CT_CUDA_ARCHS "80-real;90-real;90-virtual"
#define CT_CUDA_ARCHS_KNOWN 1
#define CT_CUDA_SASS_ARCHS 80, 90,
#define CT_CUDA_PTX_ARCH 90
#endif
static const int sass_archs[] = {CT_CUDA_SASS_ARCHS 0};

/* Machine code for sm_XY runs on X.Z for Z >= Y; PTX for compute_XY, compiled
 * by the driver, on every capability >= X.Y. */
static bool build_runs_on(int cc) {
  if (!CT_CUDA_ARCHS_KNOWN) return true;
  for (int i = 0; sass_archs[i]; i++)
    if (sass_archs[i] / 10 == cc / 10 && sass_archs[i] <= cc) return true;
  return CT_CUDA_PTX_ARCH > 0 && CT_CUDA_PTX_ARCH <= cc;
}

static void count_devices(void) {
  int n = 0;
  /* No driver or no GPU: an error, which means 0 devices; clear it so that it
   * doesn't surface in a later cudaGetLastError. CUDA_VISIBLE_DEVICES is
   * honoured by the runtime itself (read once, at its initialization). */
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    count_error = e;
    n = 0;
  }
  if (n > CTC_MAX_DEV) n = CTC_MAX_DEV;
  for (int d = 0; d < n; d++) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d) != cudaSuccess) {
      (void)cudaGetLastError();
      v = 0;
    }
    sm_counts[d] = v > 0 ? v : 1;
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess)
      (void)cudaGetLastError();
    capabilities[d] = 10 * major + minor;
  }
  device_count = n;
}

extern "C" int ct__cuda_device_count(void) {
  pthread_once(&count_once, count_devices);
  return device_count;
}

extern "C" bool ct__cuda_device_usable(int dev) {
  int n = ct__cuda_device_count();
  return dev >= 0 && dev < n && build_runs_on(capabilities[dev]);
}

int ctc_sm_count(int dev) {
  ct__cuda_device_count();
  return dev >= 0 && dev < device_count ? sm_counts[dev] : 1;
}

/* Why the CUDA driver could not be used: the system loader's own message
 * when libcuda cannot be loaded (the driver is not installed, or not where
 * the loader looks), else the runtime's error. */
static void driver_reason(char *buf, size_t n) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(buf, n, "the CUDA driver is not installed (%s)", e ? e : "libcuda.so.1 not found");
    return;
  }
  dlclose(h);
  snprintf(buf, n, "the CUDA driver (libcuda.so.1) did not start: %s",
           cudaGetErrorString(count_error));
}

/* Why no GPU is visible, for a person: the runtime's error, in words that
 * point at the fix where the usual causes are recognized. */
static void no_gpu_reason(char *buf, size_t n) {
  int drv = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) (void)cudaGetLastError();
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) (void)cudaGetLastError();
  if (drv == 0)
    driver_reason(buf, n);
  else if (count_error == cudaErrorInsufficientDriver)
    snprintf(buf, n, "the driver supports CUDA %d.%d, older than this build's runtime %d.%d",
             drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
  else if (count_error == cudaErrorNoDevice || count_error == cudaSuccess)
    snprintf(buf, n, "the CUDA driver %d.%d sees no GPU", drv / 1000, drv % 1000 / 10);
  else
    snprintf(buf, n, "%s", cudaGetErrorString(count_error));
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  size_t len = strlen(buf);
  if (vis && len < n) snprintf(buf + len, n - len, "; CUDA_VISIBLE_DEVICES=\"%s\"", vis);
}

/* The plugin's reason (backend/plugin.h): why no GPU can be used, "" when
 * one can: none visible (no_gpu_reason), or only GPUs this build has no
 * code for. */
extern "C" void ct__cuda_unavailable_reason(char *buf, size_t n) {
  int count = ct__cuda_device_count();
  if (n) buf[0] = '\0';
  if (count == 0) {
    no_gpu_reason(buf, n);
    return;
  }
  for (int d = 0; d < count; d++)
    if (build_runs_on(capabilities[d])) return;
  size_t len = (size_t)snprintf(buf, n, "%s", count == 1 ? "the GPU" : "every GPU");
  for (int d = 0; d < count && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s cuda:%d (compute capability %d.%d)",
                            d ? "," : "", d, capabilities[d] / 10, capabilities[d] % 10);
  if (len < n)
    snprintf(buf + len, n - len,
             " is older than this build's code (CMAKE_CUDA_ARCHITECTURES \"%s\")", CT_CUDA_ARCHS);
}

/* CT_OK if dev is a visible GPU, else CT_ERR_UNAVAILABLE saying why: no GPU
 * (no driver, no device, CUDA_VISIBLE_DEVICES) or an index out of range. */
static ct_status check_index(const char *op, int dev) {
  int n = ct__cuda_device_count();
  if (dev >= 0 && dev < n) return CT_OK;
  if (n > 0)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: cuda:%d requested but only %d GPU%s visible",
                           op, dev, n, n == 1 ? " is" : "s are");
  char why[256];
  no_gpu_reason(why, sizeof why);
  return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: no CUDA GPU is visible: %s", op, why);
}

/* check_index, and the GPU is one this build has code for. */
static ct_status check_usable(const char *op, int dev) {
  ct_status st = check_index(op, dev);
  if (st != CT_OK || build_runs_on(capabilities[dev])) return st;
  return ct__fail_status(CT_ERR_UNAVAILABLE,
                         "%s: cuda:%d has compute capability %d.%d; this build has no code for it "
                         "(CMAKE_CUDA_ARCHITECTURES \"%s\")",
                         op, dev, capabilities[dev] / 10, capabilities[dev] % 10, CT_CUDA_ARCHS);
}

static thread_local int user_device = 0;

extern "C" ct_status ct__cuda_set_device(int index) {
  ct_status st = check_usable("cuda_set_device", index);
  if (st != CT_OK) return st;
  user_device = index;
  return CT_OK;
}

extern "C" int ct__cuda_current_device(void) { return user_device; }

/* Asks the runtime for its current device rather than caching it: code
 * outside ctensor (the application, NCCL) may call cudaSetDevice on this
 * thread too, and a stale cache would launch on the wrong GPU. Called once
 * per op (the caching allocator needs no device on a cache hit), it costs one
 * cudaGetDevice, a read of the runtime's thread state.
 *
 * Every launch of an op comes after this call, so it also clears the
 * thread's last error: one that another library, or the application, left
 * there would otherwise be reported by the launch check as this op's. */
ct_status ctc_use_device(const char *op, int dev) {
  ct_status st = check_usable(op, dev);
  if (st != CT_OK) return st;
  (void)cudaGetLastError();
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess) (void)cudaGetLastError();
  if (cur == dev) return CT_OK;
  CT_CUDA_CHECK(op, dev, cudaSetDevice(dev));
  return CT_OK;
}

/* ---- Properties and versions --------------------------------------------------- */

static void format_uuid(char *buf, size_t n, const cudaUUID_t *u) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  snprintf(buf, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
}

extern "C" ct_status ct__cuda_device_properties(int dev, ct_cuda_device_properties *out) {
  const char *op = "cuda_get_device_properties";
  ct_status st = check_index(op, dev);
  if (st != CT_OK) return st;
  cudaDeviceProp p; /* no context needed: the driver's attribute queries */
  CT_CUDA_CHECK(op, dev, cudaGetDeviceProperties(&p, dev));
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", p.name);
  format_uuid(out->uuid, sizeof out->uuid, &p.uuid);
  out->total_memory = p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->multiprocessor_count = p.multiProcessorCount;
  out->max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
  out->max_threads_per_block = p.maxThreadsPerBlock;
  out->warp_size = p.warpSize;
  out->shared_memory_per_block = p.sharedMemPerBlockOptin > p.sharedMemPerBlock
                                     ? p.sharedMemPerBlockOptin
                                     : p.sharedMemPerBlock;
  out->shared_memory_per_multiprocessor = p.sharedMemPerMultiprocessor;
  out->l2_cache_size = p.l2CacheSize;
  out->memory_bus_width = p.memoryBusWidth;
  out->pci_domain_id = p.pciDomainID;
  out->pci_bus_id = p.pciBusID;
  out->pci_device_id = p.pciDeviceID;
  out->is_integrated = p.integrated != 0;
  out->ecc_enabled = p.ECCEnabled != 0;
  return CT_OK;
}

extern "C" ct_status ct__cuda_driver_version(int *version) {
  int v = 0;
  cudaError_t e = cudaDriverGetVersion(&v); /* 0 when no driver is installed */
  if (e != cudaSuccess) (void)cudaGetLastError();
  *version = e == cudaSuccess ? v : 0;
  if (*version > 0) return CT_OK;
  if (e != cudaSuccess)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "cuda_driver_version: %s", cudaGetErrorString(e));
  return ct__fail_status(CT_ERR_UNAVAILABLE,
                         "cuda_driver_version: no CUDA driver (libcuda.so) is installed");
}

extern "C" ct_status ct__cuda_runtime_version(int *version) {
  int v = 0;
  cudaError_t e = cudaRuntimeGetVersion(&v);
  if (e != cudaSuccess) (void)cudaGetLastError();
  *version = e == cudaSuccess ? v : 0;
  if (*version > 0) return CT_OK;
  return ct__fail_status(CT_ERR_UNAVAILABLE, "cuda_runtime_version: %s", cudaGetErrorString(e));
}

/* ---- Errors and launch mode -------------------------------------------------- */

ct_status ctc_cuda_fail(const char *op, const char *call, cudaError_t e, int dev, const char *file,
                        int line) {
  (void)cudaGetLastError(); /* clear a sticky-free error so later calls don't see it */
  const char *base = strrchr(file, '/');
  return ct__fail_status(e == cudaErrorMemoryAllocation ? CT_ERR_OOM : CT_ERR_CUDA,
                         "%s: %s failed on cuda:%d: %s (%s:%d)", op, call, dev,
                         cudaGetErrorString(e), base ? base + 1 : file, line);
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static bool launch_blocking = false;
static void read_env(void) {
  const char *v = getenv("CT_LAUNCH_BLOCKING");
  launch_blocking = v && *v && strcmp(v, "0") != 0;
}
bool ctc_launch_blocking(void) {
  pthread_once(&env_once, read_env);
  return launch_blocking;
}

/* ---- Streams ------------------------------------------------------------------ */

static thread_local cudaStream_t current_stream[CTC_MAX_DEV];

cudaStream_t ctc_stream(int dev) { return dev >= 0 && dev < CTC_MAX_DEV ? current_stream[dev] : 0; }

extern "C" void *ct__cuda_stream_new(int dev) {
  if (ctc_use_device("stream_new", dev) != CT_OK) return NULL;
  cudaStream_t s;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    ctc_cuda_fail("stream_new", "cudaStreamCreateWithFlags", e, dev, __FILE__, __LINE__);
    return NULL;
  }
  return (void *)s;
}

extern "C" void ct__cuda_stream_free(int dev, void *stream) {
  if (!stream || ctc_use_device("stream_free", dev) != CT_OK) return;
  if (current_stream[dev] == (cudaStream_t)stream) current_stream[dev] = 0;
  /* Wait for its work, then let the allocator move the blocks it keeps for
   * this stream (or records it in) to the default stream: otherwise they stay
   * cached for a stream no one can name again. */
  if (cudaStreamSynchronize((cudaStream_t)stream) != cudaSuccess) (void)cudaGetLastError();
  ct__cuda_forget_stream(dev, stream);
  if (cudaStreamDestroy((cudaStream_t)stream) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" ct_status ct__cuda_stream_set_current(int dev, void *stream) {
  ct_status st = check_usable("stream_set_current", dev);
  if (st != CT_OK) return st;
  current_stream[dev] = (cudaStream_t)stream;
  return CT_OK;
}

static cudaStream_t stream_or_current(int dev, void *stream) {
  return stream ? (cudaStream_t)stream : ctc_stream(dev);
}

extern "C" ct_status ct__cuda_stream_synchronize(int dev, void *stream) {
  ct_status st = ctc_use_device("stream_synchronize", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("stream_synchronize", dev, cudaStreamSynchronize(stream_or_current(dev, stream)));
  return ctc_fault_check(dev);
}

extern "C" ct_status ct__cuda_synchronize(int dev) {
  ct_status st = ctc_use_device("synchronize", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("synchronize", dev, cudaDeviceSynchronize());
  return ctc_fault_check(dev);
}

/* ---- Events -------------------------------------------------------------------- */

extern "C" void *ct__cuda_event_new(int dev, bool timing) {
  if (ctc_use_device("event_new", dev) != CT_OK) return NULL;
  cudaEvent_t e;
  cudaError_t r = cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming);
  if (r != cudaSuccess) {
    ctc_cuda_fail("event_new", "cudaEventCreateWithFlags", r, dev, __FILE__, __LINE__);
    return NULL;
  }
  return (void *)e;
}

extern "C" void ct__cuda_event_free(int dev, void *event) {
  if (!event || ctc_use_device("event_free", dev) != CT_OK) return;
  if (cudaEventDestroy((cudaEvent_t)event) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" ct_status ct__cuda_event_record(int dev, void *event, void *stream) {
  ct_status st = ctc_use_device("event_record", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("event_record", dev, cudaEventRecord((cudaEvent_t)event, stream_or_current(dev, stream)));
  return CT_OK;
}

extern "C" ct_status ct__cuda_event_synchronize(int dev, void *event) {
  ct_status st = ctc_use_device("event_synchronize", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("event_synchronize", dev, cudaEventSynchronize((cudaEvent_t)event));
  return ctc_fault_check(dev);
}

extern "C" ct_status ct__cuda_stream_wait_event(int dev, void *stream, void *event) {
  ct_status st = ctc_use_device("stream_wait_event", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("stream_wait_event", dev,
                cudaStreamWaitEvent(stream_or_current(dev, stream), (cudaEvent_t)event, 0));
  return CT_OK;
}

extern "C" ct_status ct__cuda_event_elapsed_ms(int dev, void *start, void *end, float *ms) {
  ct_status st = ctc_use_device("event_elapsed_ms", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("event_elapsed_ms", dev, cudaEventSynchronize((cudaEvent_t)end));
  CT_CUDA_CHECK("event_elapsed_ms", dev,
                cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
  return CT_OK;
}

/* ---- Elementwise geometry (common.cuh) ----------------------------------------- */

void ctc_ew_init(ctc_ew *g, int nargs, const ctc_t *const *ts) {
  memset(g, 0, sizeof *g);
  g->nargs = nargs;
  g->numel = ts[0]->numel;
  for (int a = 0; a < nargs; a++) {
    g->data[a] = ts[a]->data;
    g->dt[a] = ts[a]->dtype;
    g->es[a] = (int)ctc_elsize(ts[a]->dtype);
  }
  /* no element: one empty dim and no merging, whose products of a stride
   * and a size overflow beside a 0 (a (2^40, 0, 2^40) tensor transposed) */
  if (g->numel == 0) {
    g->ndim = 1;
    g->shape[0] = 0;
    for (int a = 0; a < nargs; a++) g->st[a][0] = 1;
    g->contig = true;
    ctc_ew_set_dividers(g);
    return;
  }
  /* keep dims of size > 1, outer to inner */
  int nd = 0;
  for (int d = 0; d < ts[0]->ndim; d++) {
    if (ts[0]->shape[d] == 1) continue;
    g->shape[nd] = ts[0]->shape[d];
    for (int a = 0; a < nargs; a++) g->st[a][nd] = ts[a]->strides[d];
    nd++;
  }
  /* merge dim d into d-1 when contiguous for every operand */
  int m = 0;
  for (int d = 0; d < nd; d++) {
    if (m > 0) {
      bool ok = true;
      for (int a = 0; a < nargs && ok; a++) ok = g->st[a][m - 1] == g->st[a][d] * g->shape[d];
      if (ok) {
        g->shape[m - 1] *= g->shape[d];
        for (int a = 0; a < nargs; a++) g->st[a][m - 1] = g->st[a][d];
        continue;
      }
    }
    g->shape[m] = g->shape[d];
    for (int a = 0; a < nargs; a++) g->st[a][m] = g->st[a][d];
    m++;
  }
  g->ndim = m;
  bool contig = m <= 1;
  for (int a = 0; a < nargs && contig; a++) {
    bool unit = m == 0 || g->st[a][0] == 1, zero = m == 0 || g->st[a][0] == 0;
    if (a == 0 && !unit) contig = false; /* the output is never a broadcast */
    if (!unit && !zero) contig = false;
    g->scalar[a] = m == 1 && !unit && zero;
  }
  if (m == 0)
    for (int a = 0; a < nargs; a++) g->scalar[a] = false; /* one element: offset 0 anyway */
  g->contig = contig;
  ctc_ew_set_dividers(g);
}
