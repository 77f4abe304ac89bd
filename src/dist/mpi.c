/* The MPI engine (libctensor-mpi.so; linked into libctensor.a): process group
 * setup and host-memory collectives on a duplicate of MPI_COMM_WORLD (so the
 * library's messages never match the program's own). MPI counts are int:
 * larger buffers go in chunks. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "backend/plugin.h"

static MPI_Comm comm = MPI_COMM_NULL;

/* At most this many elements per MPI call (int counts; 2^30 keeps byte
 * counts of 8-byte types below 2^33 too, which some transports prefer). */
#define CT_MPI_CHUNK ((int64_t)1 << 30)

static ct_status mpi_fail(const char *op, const char *call, int rc) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: %s failed: %s", op, call, msg);
}
#define MPI_CHECK(op, call)                                  \
  do {                                                       \
    int rc_ = (call);                                        \
    if (rc_ != MPI_SUCCESS) return mpi_fail(op, #call, rc_); \
  } while (0)

static ct_status mpi_init(int *rank, int *world_size, int *local_rank, bool *owns_mpi) {
  int inited = 0, finalized = 0;
  MPI_CHECK("dist_init", MPI_Initialized(&inited));
  MPI_CHECK("dist_init", MPI_Finalized(&finalized));
  if (finalized)
    return ct__fail_status(CT_ERR_STATE,
                           "dist_init: MPI was already finalized in this process (MPI can be "
                           "initialized only once)");
  *owns_mpi = !inited;
  if (!inited) {
    int provided = 0;
    MPI_CHECK("dist_init", MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
  }
  /* Errors come back as codes (reported as ct errors), not as aborts; a
   * program that initialized MPI itself keeps its own handler on its world. */
  if (!inited) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_CHECK("dist_init", MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_CHECK("dist_init", MPI_Comm_rank(comm, rank));
  MPI_CHECK("dist_init", MPI_Comm_size(comm, world_size));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK("dist_init",
            MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node));
  int rc = MPI_Comm_rank(node, local_rank);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return mpi_fail("dist_init", "MPI_Comm_rank", rc);
  return CT_OK;
}

static ct_status mpi_finalize(bool owns_mpi) {
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
  if (owns_mpi) MPI_CHECK("dist_finalize", MPI_Finalize());
  return CT_OK;
}

static ct_status mpi_barrier(const char *op) {
  MPI_CHECK(op, MPI_Barrier(comm));
  return CT_OK;
}

/* The MPI type of a ctensor dtype (bool as bytes: its ops become max/min). */
static MPI_Datatype mpi_type(ct_dtype d) {
  switch (d) {
    case CT_F32:
      return MPI_FLOAT;
    case CT_F64:
      return MPI_DOUBLE;
    case CT_I8:
      return MPI_INT8_T;
    case CT_U8:
      return MPI_UINT8_T;
    case CT_I16:
      return MPI_INT16_T;
    case CT_I32:
      return MPI_INT32_T;
    case CT_I64:
      return MPI_INT64_T;
    case CT_BOOL:
      return MPI_UINT8_T;
    default:
      return MPI_DATATYPE_NULL; /* f16, bf16: reduced in f32 by the caller */
  }
}

static MPI_Op mpi_op(ct_dist_op op, ct_dtype d) {
  if (d == CT_BOOL) return op == CT_DIST_MIN ? MPI_MIN : MPI_MAX; /* and / or of 0-1 bytes */
  switch (op) {
    case CT_DIST_MAX:
      return MPI_MAX;
    case CT_DIST_MIN:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

static ct_status mpi_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                                ct_dist_op rop) {
  MPI_Datatype t = mpi_type(dtype);
  if (t == MPI_DATATYPE_NULL)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no MPI type for %s", op, ct_dtype_name(dtype));
  MPI_Op o = mpi_op(rop, dtype);
  size_t el = ct__elsize(dtype);
  for (int64_t at = 0; at < count; at += CT_MPI_CHUNK) {
    int64_t k = count - at < CT_MPI_CHUNK ? count - at : CT_MPI_CHUNK;
    MPI_CHECK(op, MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)at * el, (int)k, t, o, comm));
  }
  return CT_OK;
}

static ct_status mpi_broadcast(const char *op, void *buf, int64_t nbytes, int root) {
  for (int64_t at = 0; at < nbytes; at += CT_MPI_CHUNK) {
    int64_t k = nbytes - at < CT_MPI_CHUNK ? nbytes - at : CT_MPI_CHUNK;
    MPI_CHECK(op, MPI_Bcast((char *)buf + at, (int)k, MPI_BYTE, root, comm));
  }
  return CT_OK;
}

static ct_status mpi_max_min_i64(const char *op, const int64_t *in, int64_t *max, int64_t *min,
                                 int n) {
  MPI_CHECK(op, MPI_Allreduce(in, max, n, MPI_INT64_T, MPI_MAX, comm));
  MPI_CHECK(op, MPI_Allreduce(in, min, n, MPI_INT64_T, MPI_MIN, comm));
  return CT_OK;
}

/* "Open MPI v4.1.4, ..." (the first line of the library's own words). */
static void mpi_library_versions(char *buf, size_t size) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) snprintf(v, sizeof v, "unknown MPI");
  v[strcspn(v, "\n")] = '\0';
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  snprintf(buf, size, "%s (MPI %d.%d)", v, major, minor);
}

static const ct_mpi_engine mpi_engine = {
    .init = mpi_init,
    .finalize = mpi_finalize,
    .barrier = mpi_barrier,
    .all_reduce = mpi_all_reduce,
    .broadcast = mpi_broadcast,
    .max_min_i64 = mpi_max_min_i64,
};

const ct_plugin *ct__mpi_plugin(void) {
  static const ct_plugin plugin = {
      CT_PLUGIN_HEADER,
      .name = "mpi",
      .library_versions = mpi_library_versions,
      .mpi = &mpi_engine,
  };
  return &plugin;
}
