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
 * A plugin of its own (libctensor-nccl.so; linked into libctensor.a), so that
 * the CUDA backend loads where NCCL is not installed. It reaches the CUDA
 * backend through the registry and MPI through ct__mpi_broadcast. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>

#include "backend/plugin.h"

#if NCCL_VERSION_CODE < 21000
#error "ctensor's NCCL engine needs NCCL 2.10 or newer (ncclAvg, ncclBfloat16)"
#endif

static ncclComm_t comm;
static ct_device comm_dev;
static void *nccl_stream; /* native cudaStream_t of the CUDA backend */
static void *ev_ready, *ev_done;

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

static void nccl_finalize(void);

static ct_status nccl_init(int rank, int world_size, ct_device dev) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->stream_new || !be->event_new)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "dist_init: no CUDA backend for NCCL");
  comm_dev = dev;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) NCCL_CHECK("dist_init", ncclGetUniqueId(&id));
  ct_status st = ct__mpi_broadcast("dist_init", &id, (int64_t)sizeof id, 0);
  if (st != CT_OK) return st;
  int prev = 0;
  cudaError_t e = cudaGetDevice(&prev);
  if (e == cudaSuccess) e = cudaSetDevice(dev.index);
  if (e != cudaSuccess) return cuda_fail("dist_init", "cudaSetDevice", e);
  ncclResult_t r = ncclCommInitRank(&comm, world_size, id, rank);
  (void)cudaSetDevice(prev);
  if (r != ncclSuccess) {
    comm = NULL;
    return nccl_fail("dist_init", "ncclCommInitRank", r);
  }
  if (!(nccl_stream = be->stream_new(dev.index)) || !(ev_ready = be->event_new(dev.index, false)) ||
      !(ev_done = be->event_new(dev.index, false))) {
    st = ct_last_error();
    nccl_finalize();
    return st;
  }
  return CT_OK;
}

static void nccl_finalize(void) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (comm) ncclCommDestroy(comm); /* waits for its pending work */
  comm = NULL;
  if (be && ev_ready) be->event_free(comm_dev.index, ev_ready);
  if (be && ev_done) be->event_free(comm_dev.index, ev_done);
  if (be && nccl_stream) be->stream_free(comm_dev.index, nccl_stream);
  ev_ready = ev_done = nccl_stream = NULL;
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

/* The current stream waits for the collective just queued. */
static ct_status order_after(void) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  ct_status st = be->event_record(comm_dev.index, ev_done, nccl_stream);
  return st == CT_OK ? be->stream_wait_event(comm_dev.index, NULL, ev_done) : st;
}

static ct_status nccl_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                                 ct_dist_op rop, ct_device dev) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no NCCL type for %s", op, ct_dtype_name(dtype));
  ct_status st = order_before(op);
  if (st != CT_OK) return st;
  NCCL_CHECK(op, ncclAllReduce(buf, buf, (size_t)count, t, nccl_op(rop, dtype), comm,
                               (cudaStream_t)nccl_stream));
  return order_after();
}

static ct_status nccl_broadcast(const char *op, void *buf, int64_t count, ct_dtype dtype, int root,
                                ct_device dev) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no NCCL type for %s", op, ct_dtype_name(dtype));
  ct_status st = order_before(op);
  if (st != CT_OK) return st;
  NCCL_CHECK(op, ncclBroadcast(buf, buf, (size_t)count, t, root, comm, (cudaStream_t)nccl_stream));
  return order_after();
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
