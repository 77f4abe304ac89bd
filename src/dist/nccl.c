/* The NCCL engine: collectives between the GPUs of the ranks, one GPU per
 * rank. Built only with CUDA, NCCL (2.10 or newer: ncclAvg, ncclBfloat16) and
 * MPI; NOT YET RUN ON GPUs (it compiles with -Werror in the CUDA build; see
 * docs/design-notes.md, "Distributed data parallel").
 *
 * Streams, as PyTorch's ProcessGroupNCCL: the collectives run on a stream of
 * their own (created through the CUDA backend's stream_new slot), ordered
 * with the device's current stream by events in both directions: the NCCL
 * stream waits for what the caller queued before the call, and the current
 * stream waits for the collective before anything queued after it. The
 * backend's slots take a NULL stream to mean the current one, which is how
 * this file reaches it without seeing the core's stream handles. The buffer
 * is recorded on the NCCL stream (record_stream) so the caching allocator
 * does not reuse it for other streams' work before the collective ends.
 *
 * The time limit (ct_dist_opts.timeout_s, as the MPI engine's): a collective
 * returns once queued and the GPU spins in it while another rank is stopped,
 * so a watchdog thread (watchdog.c, started with the communicator) queries
 * the event recorded after each collective; past the limit, or on an error
 * NCCL reports asynchronously (ncclCommGetAsyncError), it aborts the
 * communicator (ncclCommAbort, which ends the spinning kernels and may be
 * called from another thread) and ends the job with a message. The
 * communicator is nonblocking (NCCL 2.14 or newer), so that no NCCL call
 * holds the main thread past the limit either: its creation, a collective
 * still being queued (ncclInProgress) and its finalization are waited for
 * here against the same limit. MPI is the main thread's only
 * (MPI_THREAD_FUNNELED), so unlike the MPI engine the watchdog cannot ask
 * the other ranks which one stopped; the message says so.
 *
 * A plugin of its own (libctensor-nccl.so; linked into libctensor.a), so that
 * the CUDA backend loads where NCCL is not installed. It reaches the CUDA
 * backend through the registry and MPI through ct__mpi_broadcast. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backend/plugin.h"
#include "dist/watchdog.h"

#if NCCL_VERSION_CODE < 21000
#error "ctensor's NCCL engine needs NCCL 2.10 or newer (ncclAvg, ncclBfloat16)"
#endif
/* nonblocking communicators (ncclCommInitRankConfig, ncclCommFinalize) */
#define CT_NCCL_NONBLOCKING (NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0))

static ncclComm_t comm;
static ct_device comm_dev;
static int comm_rank, comm_size;
static double limit_s;    /* the collectives' time limit */
static void *nccl_stream; /* native cudaStream_t of the CUDA backend */
static void *ev_ready;
static ct_watchdog *watchdog; /* watches one event per collective */

/* Polling the main thread's waits: spin this long, then nap between polls. */
#define CT_NCCL_SPIN_S 1e-3
#define CT_NCCL_NAP_NS 50000

static ct_status nccl_fail(const char *op, const char *call, ncclResult_t r) {
  const char *detail = comm ? ncclGetLastError(comm) : NULL;
  return ct__fail_status(r == ncclUnhandledCudaError ? CT_ERR_CUDA : CT_ERR_UNAVAILABLE,
                         "%s: %s failed on %s: %s%s%s", op, call, ct_device_name(comm_dev),
                         ncclGetErrorString(r), detail && *detail ? ": " : "",
                         detail ? detail : "");
}
#define NCCL_CHECK(op, call)                                \
  do {                                                      \
    ncclResult_t r_ = (call);                               \
    if (r_ != ncclSuccess) return nccl_fail(op, #call, r_); \
  } while (0)

static ct_status cuda_fail(const char *op, const char *call, cudaError_t e) {
  return ct__fail_status(CT_ERR_CUDA, "%s: %s failed on %s: %s", op, call, ct_device_name(comm_dev),
                         cudaGetErrorString(e));
}

/* ---- Ending the job (the watchdog's hooks, and the main thread's waits) ---- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Prints why (one line), aborts the communicator so that this rank's
 * kernels stop spinning, and ends the process with status 1, which makes
 * the launcher end the other ranks (the MPI engine calls MPI_Abort instead,
 * which only the main thread may). The first caller wins: a second one (the
 * watchdog and the main thread at once) waits for the exit. */
static _Noreturn void end_job(const char *why) {
  static atomic_flag ending = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&ending))
    for (;;) pause();
  fprintf(stderr, "%s; aborting the NCCL communicator and ending the job\n", why);
  fflush(stderr);
  if (comm) ncclCommAbort(comm);
  _Exit(1);
}

static _Noreturn void timed_out(const char *op, double waited, double limit) {
  char why[768];
  snprintf(why, sizeof why,
           "%s: NCCL timed out on rank %d (of %d, %s) after %.0f s waiting for the other ranks "
           "(the limit, %g s, is ct_dist_opts.timeout_s or CT_DIST_TIMEOUT): a rank is stopped, "
           "hung or not calling the same collectives in the same order (the ranks that report "
           "no timeout are the suspects: NCCL's watchdog cannot ask the others over MPI)",
           op, comm_rank, comm_size, ct_device_name(comm_dev), waited, limit);
  end_job(why);
}

static void on_timeout(void *ctx, const char *op, double waited, double limit) {
  (void)ctx;
  timed_out(op, waited, limit);
}

static void on_failure(void *ctx, const char *op, const char *msg) {
  (void)ctx;
  char why[768];
  snprintf(why, sizeof why, "%s: NCCL failed on rank %d (of %d, %s): %s",
           op ? op : "NCCL communicator", comm_rank, comm_size, ct_device_name(comm_dev), msg);
  end_job(why);
}

/* NCCL's asynchronous error (a network failure, a remote rank gone), as
 * "unhandled system error: <NCCL's last error>"; false while there is none. */
static bool async_error(char *msg, size_t size) {
  ncclResult_t r = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &r) != ncclSuccess || r == ncclSuccess || r == ncclInProgress)
    return false;
  const char *detail = ncclGetLastError(comm);
  snprintf(msg, size, "%s%s%s", ncclGetErrorString(r), detail && *detail ? ": " : "",
           detail ? detail : "");
  return true;
}

static bool watch_group_failed(void *ctx, char *msg, size_t size) {
  (void)ctx;
  return async_error(msg, size);
}

static void watch_thread_start(void *ctx) {
  (void)ctx;
  (void)cudaSetDevice(comm_dev.index); /* the events' device, for their queries */
}

static ct_watch_state watch_poll(void *ctx, void *event, char *msg, size_t size) {
  (void)ctx;
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaSuccess) return CT_WATCH_DONE;
  if (e == cudaErrorNotReady) return CT_WATCH_PENDING;
  snprintf(msg, size, "cudaEventQuery after the collective: %s", cudaGetErrorString(e));
  return CT_WATCH_FAILED;
}

static void watch_release(void *ctx, void *event) {
  (void)ctx;
  (void)cudaEventDestroy((cudaEvent_t)event);
}

/* Waits, on the calling thread, for a nonblocking call that returned
 * ncclInProgress (the communicator's creation, a collective being queued,
 * finalization), against the time limit; returns the call's final result. */
static ncclResult_t wait_in_progress(const char *op, ncclResult_t r) {
  double start = now_s();
  while (r == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) break;
    if (r != ncclInProgress) break;
    double waited = now_s() - start;
    if (waited > limit_s) timed_out(op, waited, limit_s);
    if (waited > CT_NCCL_SPIN_S) nanosleep(&(struct timespec){0, CT_NCCL_NAP_NS}, NULL);
  }
  return r;
}
#define NCCL_WAIT(op, call)                                 \
  do {                                                      \
    ncclResult_t r_ = wait_in_progress(op, (call));         \
    if (r_ != ncclSuccess) return nccl_fail(op, #call, r_); \
  } while (0)

/* ---- The communicator ---- */

static void nccl_finalize(void);

static ncclResult_t comm_create(int rank, int world_size, ncclUniqueId id) {
#if CT_NCCL_NONBLOCKING
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; /* no call holds the thread: abortable from the watchdog */
  return wait_in_progress("dist_init",
                          ncclCommInitRankConfig(&comm, world_size, id, rank, &config));
#else
  return ncclCommInitRank(&comm, world_size, id, rank);
#endif
}

static ct_status nccl_init(int rank, int world_size, ct_device dev, double timeout_s) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->stream_new || !be->event_new)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "dist_init: no CUDA backend for NCCL");
  comm_dev = dev;
  comm_rank = rank;
  comm_size = world_size;
  limit_s = timeout_s;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) NCCL_CHECK("dist_init", ncclGetUniqueId(&id));
  ct_status st = ct__mpi_broadcast("dist_init", &id, (int64_t)sizeof id, 0);
  if (st != CT_OK) return st;
  int prev = 0;
  cudaError_t e = cudaGetDevice(&prev);
  if (e == cudaSuccess) e = cudaSetDevice(dev.index);
  if (e != cudaSuccess) return cuda_fail("dist_init", "cudaSetDevice", e);
  ncclResult_t r = comm_create(rank, world_size, id);
  (void)cudaSetDevice(prev);
  if (r != ncclSuccess) {
    st = nccl_fail("dist_init", CT_NCCL_NONBLOCKING ? "ncclCommInitRankConfig" : "ncclCommInitRank",
                   r);
    if (comm) ncclCommAbort(comm); /* a nonblocking one exists even when it failed */
    comm = NULL;
    return st;
  }
  ct_watchdog_hooks hooks = {.thread_start = watch_thread_start,
                             .poll = watch_poll,
                             .group_failed = watch_group_failed,
                             .timed_out = on_timeout,
                             .failed = on_failure,
                             .release = watch_release};
  /* polls 10 times a second (PyTorch's watchdog too), more often for short limits */
  double period = timeout_s / 10 < 0.1 ? timeout_s / 10 : 0.1;
  if (!(nccl_stream = be->stream_new(dev.index)) || !(ev_ready = be->event_new(dev.index, false)) ||
      !(watchdog = ct__watchdog_start("dist_init", &hooks, timeout_s, period))) {
    st = ct_last_error();
    nccl_finalize();
    return st;
  }
  return CT_OK;
}

static void nccl_finalize(void) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  /* Flushes the communicator's work while the watchdog still watches it (a
   * rank that never arrives ends the job instead of hanging it), then stops
   * the watchdog before the communicator it polls goes. */
#if CT_NCCL_NONBLOCKING
  if (comm) (void)wait_in_progress("dist_finalize", ncclCommFinalize(comm));
#endif
  ct__watchdog_stop(watchdog);
  watchdog = NULL;
  if (comm) ncclCommDestroy(comm); /* waits for its pending work */
  comm = NULL;
  if (be && ev_ready) be->event_free(comm_dev.index, ev_ready);
  if (be && nccl_stream) be->stream_free(comm_dev.index, nccl_stream);
  ev_ready = nccl_stream = NULL;
}

static bool nccl_type(ct_dtype d, ncclDataType_t *out) {
  switch (d) {
    case CT_F32:
      *out = ncclFloat32;
      return true;
    case CT_F64:
      *out = ncclFloat64;
      return true;
    case CT_F16:
      *out = ncclFloat16;
      return true;
    case CT_BF16:
      *out = ncclBfloat16;
      return true;
    case CT_I8:
      *out = ncclInt8;
      return true;
    case CT_U8:
      *out = ncclUint8;
      return true;
    case CT_BOOL:
      *out = ncclUint8;
      return true;
    case CT_I32:
      *out = ncclInt32;
      return true;
    case CT_I64:
      *out = ncclInt64;
      return true;
    default:
      return false; /* i16: dist.c reduces it as i32 */
  }
}

static ncclRedOp_t nccl_op(ct_dist_op op, ct_dtype d) {
  if (d == CT_BOOL) return op == CT_DIST_MIN ? ncclMin : ncclMax;
  switch (op) {
    case CT_DIST_AVG:
      return ncclAvg;
    case CT_DIST_MAX:
      return ncclMax;
    case CT_DIST_MIN:
      return ncclMin;
    default:
      return ncclSum;
  }
}

/* The NCCL stream waits for the work queued so far on the current stream. */
static ct_status order_before(const char *op) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!comm) return ct__fail_status(CT_ERR_STATE, "%s: no NCCL communicator", op);
  ct_status st = be->event_record(comm_dev.index, ev_ready, NULL);
  return st == CT_OK ? be->stream_wait_event(comm_dev.index, nccl_stream, ev_ready) : st;
}

/* The current stream waits for the collective just queued, and the watchdog
 * watches it: both through an event of its own, recorded after it on the
 * NCCL stream (the watchdog destroys it once it has completed). */
static ct_status order_after(const char *op) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  void *done = be->event_new(comm_dev.index, false);
  if (!done) return ct_last_error();
  ct_status st = be->event_record(comm_dev.index, done, nccl_stream);
  if (st == CT_OK) st = be->stream_wait_event(comm_dev.index, NULL, done);
  if (st == CT_OK) st = ct__watchdog_watch(watchdog, op, done);
  if (st != CT_OK) be->event_free(comm_dev.index, done);
  return st;
}

static ct_status nccl_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                                 ct_dist_op rop, ct_device dev) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no NCCL type for %s", op, ct_dtype_name(dtype));
  ct_status st = order_before(op);
  if (st != CT_OK) return st;
  NCCL_WAIT(op, ncclAllReduce(buf, buf, (size_t)count, t, nccl_op(rop, dtype), comm,
                              (cudaStream_t)nccl_stream));
  return order_after(op);
}

static ct_status nccl_broadcast(const char *op, void *buf, int64_t count, ct_dtype dtype, int root,
                                ct_device dev) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no NCCL type for %s", op, ct_dtype_name(dtype));
  ct_status st = order_before(op);
  if (st != CT_OK) return st;
  NCCL_WAIT(op, ncclBroadcast(buf, buf, (size_t)count, t, root, comm, (cudaStream_t)nccl_stream));
  return order_after(op);
}

static ct_status nccl_synchronize(const char *op, ct_device dev) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!comm) return ct__fail_status(CT_ERR_STATE, "%s: no NCCL communicator", op);
  ct_status st = be->stream_synchronize(dev.index, nccl_stream);
  return st == CT_OK ? be->synchronize(dev.index) : st;
}

static ct_status nccl_record(ct_device dev, void *data) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  return be->record_stream ? be->record_stream(dev.index, data, false, nccl_stream) : CT_OK;
}

/* "NCCL 2.27.7" (the library loaded, not the header built against). */
static void nccl_library_versions(char *buf, size_t size) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) v = 0;
  /* NCCL_VERSION_CODE: 10000 * major + 100 * minor + patch since 2.9 */
  snprintf(buf, size, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

static const ct_nccl_engine nccl_engine = {
    .init = nccl_init,
    .finalize = nccl_finalize,
    .all_reduce = nccl_all_reduce,
    .broadcast = nccl_broadcast,
    .synchronize = nccl_synchronize,
    .record = nccl_record,
};

const ct_plugin *ct__nccl_plugin(void) {
  static const ct_plugin plugin = {
      CT_PLUGIN_HEADER,
      .name = "nccl",
      .library_versions = nccl_library_versions,
      .nccl = &nccl_engine,
  };
  return &plugin;
}
