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
 * with cudaSetDevice when it differs (cached per thread), and never change
 * the user's current device. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"

#define CTC_MAX_DEV 64

/* ---- Device count ------------------------------------------------------------ */

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count = 0;
static int sm_counts[CTC_MAX_DEV];

static void count_devices(void) {
  int n = 0;
  /* No driver or no GPU: an error, which means 0 devices; clear it so that it
   * doesn't surface in a later cudaGetLastError. CUDA_VISIBLE_DEVICES is
   * honoured by the runtime itself. */
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
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
  }
  device_count = n;
}

extern "C" bool ct__cuda_compiled(void) { return true; }

extern "C" int ct__cuda_device_count(void) {
  pthread_once(&count_once, count_devices);
  return device_count;
}

int ctc_sm_count(int dev) {
  ct__cuda_device_count();
  return dev >= 0 && dev < device_count ? sm_counts[dev] : 1;
}

static thread_local int user_device = 0;
static thread_local int runtime_device = -1;

extern "C" ct_status ct__cuda_set_device(int index) {
  int n = ct__cuda_device_count();
  if (index < 0 || index >= n)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "cuda_set_device(%d): %d GPU(s) are visible", index, n);
  user_device = index;
  return CT_OK;
}

extern "C" int ct__cuda_current_device(void) { return user_device; }

ct_status ctc_use_device(const char *op, int dev) {
  if (runtime_device == dev) return CT_OK;
  CT_CUDA_CHECK(op, dev, cudaSetDevice(dev));
  runtime_device = dev;
  return CT_OK;
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
  /* Pending work completes; the runtime releases the stream afterwards. */
  if (cudaStreamDestroy((cudaStream_t)stream) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" ct_status ct__cuda_stream_set_current(int dev, void *stream) {
  if (dev < 0 || dev >= CTC_MAX_DEV)
    return ct__fail_status(CT_ERR_DEVICE, "stream_set_current: bad device index %d", dev);
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
  return CT_OK;
}

extern "C" ct_status ct__cuda_synchronize(int dev) {
  ct_status st = ctc_use_device("synchronize", dev);
  if (st != CT_OK) return st;
  CT_CUDA_CHECK("synchronize", dev, cudaDeviceSynchronize());
  return CT_OK;
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
  return CT_OK;
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
}
